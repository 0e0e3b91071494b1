//! Tiers 0–2 of the micro suite: single thread, no runtime. Mirrors
//! rust_bench/src/sync_tiers.rs 1:1: each function times `ops` operations as one iteration
//! between `ctx.markStart()` and `mark.stop()`, creates what the spec calls untimed before
//! the bracket, and verifies its result after it.
//!
//! Tier 0 (controls) touches no runtime and is identical code in both languages; Rust's
//! `black_box(&x)` is `harness.blackBox(&x)` here.
//!
//! Tiers 1 and 2 are written as the ampere primitives they measure land in `ampere.sync` and
//! `ampere.channel` (README.md, fairness table, lists which are still missing).

const std = @import("std");
const harness = @import("harness.zig");

const Ctx = harness.Ctx;
const Error = harness.Error;
const blackBox = harness.blackBox;

/// Sum of 0..n, the checksum of channel benchmarks that move the values 0..n.
pub fn sumBelow(n: u64) u64 {
    return if (n == 0) 0 else (n - 1) * n / 2;
}

// -- Tier 0: controls -----------------------------------------------------------------------

/// One op: 32-bit CAS 0→1 (acquire; failure monotonic = Rust's Relaxed), then store 0
/// (release).
pub fn floorCasStore(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var word_storage = std.atomic.Value(u32).init(0);
    // Make the atomic escape so it cannot be promoted to a register (Rust: black_box(&word)).
    const word = blackBox(&word_storage);
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var failures: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            if (word.cmpxchgStrong(0, 1, .acquire, .monotonic) != null) failures += 1;
            word.store(0, .release);
        }
        const sample = mark.stop();
        try ctx.expectEq("failed compare-and-swaps", failures, 0);
        try ctx.expectEq("final word", word.load(.monotonic), 0);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: 64-bit fetch_add(1, acq_rel).
pub fn floorFetchAdd(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var counter_storage = std.atomic.Value(u64).init(0);
    const counter = blackBox(&counter_storage);
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        counter.store(0, .monotonic);
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            _ = counter.fetchAdd(1, .acq_rel);
        }
        const sample = mark.stop();
        try ctx.expectEq("counter", counter.load(.monotonic), ops);
        ctx.record(k, c.warmup, sample);
    }
}

const testing = std.testing;
const constants = @import("constants.zig");

pub fn tinyConstants() !constants.Constants {
    var diag = constants.Diagnostic{};
    var c = try constants.Constants.load(testing.allocator, "quick", &diag);
    for ([_][]const u8{ "warmup=1", "iterations=2", "sync_ops=100", "channel_ops=50" }) |set| {
        try c.applyOverride(set, &diag);
    }
    return c;
}

test "tier 0 controls pass their checks" {
    const c = try tinyConstants();
    var counting = harness.CountingAllocator.init(testing.allocator);
    const benches = [_]*const fn (*Ctx) Error!void{ floorCasStore, floorFetchAdd };
    for (benches) |bench| {
        var samples: [2]harness.Sample = undefined;
        const case = harness.Case.micro(0, "control", c.sync_ops);
        var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples };
        try bench(&ctx);
        try testing.expectEqual(@as(usize, 2), ctx.recorded().len);
        for (ctx.recorded()) |s| {
            try testing.expect(s.elapsed_ns > 0);
            try testing.expectEqual(@as(u64, 0), s.alloc_count);
        }
    }
}

test "sum below matches a loop" {
    try testing.expectEqual(@as(u64, 0), sumBelow(0));
    try testing.expectEqual(@as(u64, 0), sumBelow(1));
    try testing.expectEqual(@as(u64, 10), sumBelow(5));
}
