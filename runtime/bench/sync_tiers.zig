//! Tiers 0–2 of the micro suite: single thread, no runtime. Mirrors
//! rust_bench/src/sync_tiers.rs 1:1: each function times `ops` operations as one iteration
//! between `ctx.markStart()` and `mark.stop()`, creates what the spec calls untimed before
//! the bracket, and verifies its result after it.
//!
//! Tier 0 (controls) touches no runtime: its op loops are one assembly source assembled into
//! both programs (controls_x86_64.s). Elsewhere Rust's `black_box(&x)` is
//! `harness.blackBox(&x)` here.
//!
//! Tiers 1 and 2 use `ampere.sync` and `ampere.channel`; channels take the counting allocator
//! (`ctx.allocator()`), created before the timed bracket. Rust's drop of a guard or permit is
//! the matching unlock/release call here; Rust's drop of a channel half is the handle's
//! `deinit`, at the same place (after `mark.stop()` where Rust drops at the end of the
//! iteration's closure).

const std = @import("std");
const builtin = @import("builtin");
const ampere = @import("ampere");
const harness = @import("harness.zig");

const sync = ampere.sync;
const channel = ampere.channel;
const RcBuffer = ampere.RcBuffer;
const Context = ampere.Context;
const Waker = ampere.Waker;

const Ctx = harness.Ctx;
const Error = harness.Error;
const blackBox = harness.blackBox;

/// Sum of 0..n, the checksum of channel benchmarks that move the values 0..n.
pub fn sumBelow(n: u64) u64 {
    return if (n == 0) 0 else (n - 1) * n / 2;
}

// -- Tier 0: controls -----------------------------------------------------------------------
//
// The op loops are not compiled by Zig: they are the functions of controls_x86_64.s, the one
// assembly source the Rust side assembles too (global_asm! in rust_bench/src/sync_tiers.rs),
// so both programs run the same instructions at the same alignment. Each side calls them the
// same way: directly, between `markStart` and `stop`, on a word that has a cache line to itself.

// build.zig assembles the file into the bench module (`addAssemblyFile`: in every build mode;
// Zig's own x86-64 backend, used for Debug tests, drops global `asm` blocks).
comptime {
    if (builtin.cpu.arch != .x86_64) {
        @compileError("the Tier 0 controls are x86-64 assembly (runtime/bench/controls_x86_64.s); port them to " ++ @tagName(builtin.cpu.arch));
    }
}

/// `ops` × (CAS 0→1, store 0) on `word`; returns the successful CASes.
extern fn ampere_bench_floor_cas_store(word: *std.atomic.Value(u32), ops: u64) callconv(.c) u64;
/// `ops` × fetch-add 1 on `counter`.
extern fn ampere_bench_floor_fetch_add(counter: *std.atomic.Value(u64), ops: u64) callconv(.c) void;

/// A value alone on its 64-byte cache line (Rust: `CacheLine<T>`, `#[repr(align(64))]`).
fn CacheLine(comptime T: type) type {
    return struct { value: T align(64) };
}

/// One op: 32-bit CAS 0→1 (acquire; failure relaxed), then store 0 (release).
pub fn floorCasStore(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var word: CacheLine(std.atomic.Value(u32)) = .{ .value = .init(0) };
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        const mark = ctx.markStart();
        const swapped = ampere_bench_floor_cas_store(&word.value, ops);
        const sample = mark.stop();
        // Counts successes, so that a loop that did not run fails the check.
        try ctx.expectEq("successful compare-and-swaps", swapped, ops);
        try ctx.expectEq("final word", word.value.load(.monotonic), 0);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: 64-bit fetch_add(1, acq_rel).
pub fn floorFetchAdd(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var counter: CacheLine(std.atomic.Value(u64)) = .{ .value = .init(0) };
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        counter.value.store(0, .monotonic);
        const mark = ctx.markStart();
        ampere_bench_floor_fetch_add(&counter.value, ops);
        const sample = mark.stop();
        try ctx.expectEq("counter", counter.value.load(.monotonic), ops);
        ctx.record(k, c.warmup, sample);
    }
}

// -- Tier 1: sync fast paths ----------------------------------------------------------------

/// One op: `tryLock()` (must succeed), `unlock()` of its guard (Rust: drop of the guard).
pub fn mutex(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var lock = sync.Mutex.init();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var acquired: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const l = blackBox(&lock);
            if (l.tryLock()) |guard| {
                acquired += 1;
                guard.unlock();
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("successful tryLock calls", acquired, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: `tryRead()` (must succeed), `unlock()` of its guard (Rust: drop of the guard).
pub fn rwlockRead(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var lock = sync.RwLock.init();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var acquired: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const l = blackBox(&lock);
            if (l.tryRead()) |guard| {
                acquired += 1;
                guard.unlock();
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("successful tryRead calls", acquired, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: `tryWrite()` (must succeed), `unlock()` of its guard (Rust: drop of the guard).
pub fn rwlockWrite(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var lock = sync.RwLock.init();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var acquired: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const l = blackBox(&lock);
            if (l.tryWrite()) |guard| {
                acquired += 1;
                guard.unlock();
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("successful tryWrite calls", acquired, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op on a semaphore of `semaphore_permits` permits: `tryAcquire(1)` (must succeed),
/// `release(1)`.
pub fn semaphore(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    const permits: usize = @intCast(c.semaphore_permits);
    var sem = sync.Semaphore.init(permits);
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var acquired: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const s = blackBox(&sem);
            if (s.tryAcquire(1)) {
                acquired += 1;
                s.release(1);
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("successful tryAcquire calls", acquired, ops);
        try ctx.expectEq("available permits", sem.availablePermits(), permits);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: `get()` on a cell holding 42; the values read are summed.
pub fn oncecellGet(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var cell = sync.OnceCell(u64).init();
    cell.set(42) catch return ctx.fail("could not initialise the cell", .{});
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var sum: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            if (blackBox(&cell).get()) |value| sum += value.*;
        }
        const sample = mark.stop();
        try ctx.expectEq("sum of get() values", sum, 42 * ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: create a new cell, `set(i)` (must succeed); the cell is kept observable.
pub fn oncecellSet(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var stored: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            var cell = sync.OnceCell(u64).init();
            if (cell.set(i)) |_| {
                stored += 1;
            } else |_| {}
            _ = blackBox(&cell);
        }
        const sample = mark.stop();
        try ctx.expectEq("successful set() calls", stored, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: `notifyOne()`, then create the `notified()` future and poll it once with a no-op
/// waker: it must be Ready (it consumes the stored permit).
pub fn notify(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var notifier = sync.Notify.init();
    const noop = Waker.noop();
    var cx = Context.init(&noop);
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var ready: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const n = blackBox(&notifier);
            n.notifyOne();
            var notified = n.notified();
            if (notified.poll(&cx) == .ready) {
                ready += 1;
            } else {
                notified.cancel();
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("Ready polls of notified()", ready, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op on a barrier of 1 (created once, untimed): create its `wait()` future, poll it once
/// with a no-op waker: it must be Ready (and this task the leader).
pub fn barrier(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.sync_ops;
    var the_barrier = sync.Barrier.init(1);
    const noop = Waker.noop();
    var cx = Context.init(&noop);
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var ready: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            var wait = blackBox(&the_barrier).wait();
            switch (wait.poll(&cx)) {
                .ready => |result| {
                    if (result.is_leader) ready += 1;
                },
                .pending => wait.cancel(),
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("Ready (leader) polls of wait()", ready, ops);
        ctx.record(k, c.warmup, sample);
    }
}

// -- Tier 2: channel fast paths -------------------------------------------------------------

const Channel = channel.Bounded(u64);

fn boundedChannel(ctx: *Ctx, capacity: u64) Error!Channel.Pair {
    return Channel.init(ctx.allocator(), @intCast(capacity)) catch ctx.fail("out of memory creating a channel", .{});
}

/// One op: `trySend(i)` on a bounded channel of capacity `channel_ops` (created untimed per
/// iteration). Verified untimed by draining: every value, in order.
pub fn channelSend(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var tx, var rx = try boundedChannel(ctx, ops);
        defer rx.deinit();
        defer tx.deinit();
        var sent: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            if (blackBox(&tx).trySend(i)) |_| {
                sent += 1;
            } else |_| {}
        }
        const sample = mark.stop();
        try ctx.expectEq("successful trySend calls", sent, ops);
        var sum: u64 = 0;
        var received: u64 = 0;
        while (rx.tryRecv()) |v| {
            sum += v;
            received += 1;
        } else |_| {}
        try ctx.expectEq("values in the channel", received, ops);
        try ctx.expectEq("sum of values in the channel", sum, sumBelow(ops));
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: `tryRecv()` on a bounded channel pre-filled untimed with 0..channel_ops; the
/// values are summed.
pub fn channelRecv(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var tx, var rx = try boundedChannel(ctx, ops);
        defer rx.deinit();
        defer tx.deinit();
        var fill: u64 = 0;
        while (fill < ops) : (fill += 1) {
            tx.trySend(fill) catch |err| return ctx.fail("pre-fill failed: {s}", .{@errorName(err)});
        }
        var sum: u64 = 0;
        var received: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            if (blackBox(&rx).tryRecv()) |v| {
                sum += v;
                received += 1;
            } else |_| {}
        }
        const sample = mark.stop();
        try ctx.expectEq("successful tryRecv calls", received, ops);
        try ctx.expectEq("sum of received values", sum, sumBelow(ops));
        ctx.record(k, c.warmup, sample);
    }
}

/// One op on a bounded channel of capacity 1 (created untimed): `trySend(i)`, `tryRecv()`
/// which must return i.
pub fn channelRoundtrip(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var tx, var rx = try boundedChannel(ctx, 1);
        defer rx.deinit();
        defer tx.deinit();
        var matched: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            blackBox(&tx).trySend(i) catch {};
            if (blackBox(&rx).tryRecv()) |v| {
                if (v == i) matched += 1;
            } else |_| {}
        }
        const sample = mark.stop();
        try ctx.expectEq("values received back in order", matched, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: create a oneshot and split it, `send(i)`, `tryRecv()` which must return i, give
/// both halves up (Rust: drop). (ampere's oneshot state is a plain value on the stack; Tokio's
/// allocates its shared state: see the fairness table.)
pub fn oneshot(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var matched: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            var state = channel.Oneshot(u64).init();
            var tx, var rx = state.split();
            tx.send(i) catch {};
            if (blackBox(&rx).tryRecv()) |v| {
                if (v == i) matched += 1;
            } else |_| {}
            rx.deinit();
            state.deinit();
        }
        const sample = mark.stop();
        try ctx.expectEq("oneshot values received", matched, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op: `OwnedOneshot(u64).init` (the channel's one allocation), `send(i)`, `tryRecv()`
/// which must return i, give the receiver up (the sender is consumed by `send`; the last half
/// frees the state). Tokio's semantics — either half may outlive the other — and Tokio's cost
/// model (one allocation and one free per channel); the Rust side is oneshot's.
pub fn oneshotOwned(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    const gpa = ctx.allocator();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var matched: u64 = 0;
        var failed = false;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            var tx, var rx = channel.OwnedOneshot(u64).init(gpa) catch {
                failed = true;
                break;
            };
            tx.send(i) catch {};
            if (blackBox(&rx).tryRecv()) |v| {
                if (v == i) matched += 1;
            } else |_| {}
            rx.deinit();
        }
        const sample = mark.stop();
        if (failed) return ctx.fail("out of memory creating an owned oneshot", .{});
        try ctx.expectEq("owned oneshot values received", matched, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// Most broadcast receivers the benchmark supports (the receivers live in a fixed array).
pub const broadcast_receivers_max = 64;

/// One op on a broadcast channel of capacity `broadcast_capacity` with `broadcast_receivers`
/// receivers (created untimed): one `send(i)`, then one `tryRecv()` on each receiver, each of
/// which must return i.
pub fn broadcast(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    const receiver_count: usize = @intCast(c.broadcast_receivers);
    if (receiver_count == 0 or receiver_count > broadcast_receivers_max) {
        return ctx.fail("broadcast_receivers = {d}, 1 to {d} supported", .{ receiver_count, broadcast_receivers_max });
    }
    const Broadcast = channel.Broadcast(u64);
    var tx, const first = Broadcast.init(ctx.allocator(), @intCast(c.broadcast_capacity)) catch
        return ctx.fail("out of memory creating the channel", .{});
    defer tx.deinit();
    var receivers: [broadcast_receivers_max]Broadcast.Receiver = undefined;
    const active = receivers[0..receiver_count];
    active[0] = first;
    for (active[1..]) |*rx| rx.* = tx.subscribe();
    defer for (active) |*rx| rx.deinit();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var matched: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            _ = blackBox(&tx).send(i) catch {};
            for (active) |*rx| {
                if (rx.tryRecv()) |v| {
                    if (v == i) matched += 1;
                } else |_| {}
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("values received by all receivers", matched, ops * receiver_count);
        ctx.record(k, c.warmup, sample);
    }
}

/// One op with one receiver (created untimed): `send(i)`, then read the latest value with
/// `borrow()` (Tokio's `borrow_and_update`), which must be i.
pub fn watch(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    var tx, var rx = channel.Watch(u64).init(ctx.allocator(), std.math.maxInt(u64)) catch
        return ctx.fail("out of memory creating the channel", .{});
    defer rx.deinit();
    defer tx.deinit();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var matched: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            blackBox(&tx).send(i) catch {};
            if (blackBox(&rx).borrow() == i) matched += 1;
        }
        const sample = mark.stop();
        try ctx.expectEq("latest values seen", matched, ops);
        ctx.record(k, c.warmup, sample);
    }
}

/// Bytes of the payload of `watch_rc` and `broadcast_rc`: a reference-counted buffer
/// (`RcBuffer` here, `Arc<[u8]>` on the Rust side), cloned once per send and once per
/// receiver that reads it.
pub const rc_payload_bytes = 64;

/// The two prebuilt payloads of the `_rc` rows: buffer j holds `rc_payload_bytes` bytes of
/// value j + 1; op i sends buffer i mod 2, so a stale value fails the check.
const RcPayloads = struct {
    buffers: [2]*RcBuffer,

    fn init(ctx: *Ctx) Error!RcPayloads {
        var buffers: [2]*RcBuffer = undefined;
        for (&buffers, 0..) |*buffer, j| {
            buffer.* = RcBuffer.create(ctx.allocator(), rc_payload_bytes) catch {
                for (buffers[0..j]) |made| made.release();
                return ctx.fail("out of memory creating the payloads", .{});
            };
            @memset(buffer.*.bytesMut(), @intCast(j + 1));
        }
        return .{ .buffers = buffers };
    }

    fn deinit(self: *RcPayloads) void {
        for (self.buffers) |buffer| buffer.release();
    }

    fn expected(self: *const RcPayloads, i: u64) *RcBuffer {
        return self.buffers[@intCast(i & 1)];
    }

    /// Pointer identity and the first byte (read through the pointer, as Rust's `got[0]`).
    fn matches(got: *const RcBuffer, want: *const RcBuffer, i: u64) bool {
        return got == want and got.bytes()[0] == @as(u8, @intCast((i & 1) + 1));
    }
};

/// Like `watch`, with a 64-byte reference-counted payload: one op is `send(clone of buffer
/// i mod 2)` (the channel releases the value it replaces), then `borrow()`, which is the
/// receiver's own clone and must be that buffer, released at once (Rust:
/// `borrow_and_update().clone()`, dropped). After the loop each buffer has exactly the
/// references it should: ours, plus the channel's on the last one sent.
pub fn watchRc(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    var payloads = try RcPayloads.init(ctx);
    defer payloads.deinit();
    var tx, var rx = channel.Watch(*RcBuffer).init(ctx.allocator(), payloads.buffers[1].clone()) catch
        return ctx.fail("out of memory creating the channel", .{});
    defer rx.deinit();
    defer tx.deinit();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var matched: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const want = payloads.expected(i);
            const value = want.clone();
            blackBox(&tx).send(value) catch value.release();
            const got = blackBox(&rx).borrow();
            if (RcPayloads.matches(got, want, i)) matched += 1;
            got.release();
        }
        const sample = mark.stop();
        try ctx.expectEq("latest values seen", matched, ops);
        try ctx.expectEq("references to the last buffer sent", payloads.expected(ops -% 1).refCount(), 2);
        try ctx.expectEq("references to the other buffer", payloads.expected(ops).refCount(), 1);
        ctx.record(k, c.warmup, sample);
    }
}

/// Like `broadcast`, with a 64-byte reference-counted payload: one op is `send(clone of
/// buffer i mod 2)`, then `tryRecv()` on each receiver, each the receiver's own clone, which
/// must be that buffer and is released at once. After the loop every value was read by every
/// receiver, so the channel holds no reference (its last reader released it): each buffer has
/// only ours.
pub fn broadcastRc(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const ops = c.channel_ops;
    const receiver_count: usize = @intCast(c.broadcast_receivers);
    if (receiver_count == 0 or receiver_count > broadcast_receivers_max) {
        return ctx.fail("broadcast_receivers = {d}, 1 to {d} supported", .{ receiver_count, broadcast_receivers_max });
    }
    var payloads = try RcPayloads.init(ctx);
    defer payloads.deinit();
    const Broadcast = channel.Broadcast(*RcBuffer);
    var tx, const first = Broadcast.init(ctx.allocator(), @intCast(c.broadcast_capacity)) catch
        return ctx.fail("out of memory creating the channel", .{});
    defer tx.deinit();
    var receivers: [broadcast_receivers_max]Broadcast.Receiver = undefined;
    const active = receivers[0..receiver_count];
    active[0] = first;
    for (active[1..]) |*rx| rx.* = tx.subscribe();
    defer for (active) |*rx| rx.deinit();
    var k: u64 = 0;
    while (k < c.warmup + c.iterations) : (k += 1) {
        var matched: u64 = 0;
        const mark = ctx.markStart();
        var i: u64 = 0;
        while (i < ops) : (i += 1) {
            const want = payloads.expected(i);
            const value = want.clone();
            _ = blackBox(&tx).send(value) catch value.release();
            for (active) |*rx| {
                if (rx.tryRecv()) |got| {
                    if (RcPayloads.matches(got, want, i)) matched += 1;
                    got.release();
                } else |_| {}
            }
        }
        const sample = mark.stop();
        try ctx.expectEq("values received by all receivers", matched, ops * receiver_count);
        try ctx.expectEq("references to buffer 1", payloads.buffers[0].refCount(), 1);
        try ctx.expectEq("references to buffer 2", payloads.buffers[1].refCount(), 1);
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

test "every tier 0-2 benchmark passes its check" {
    const c = try tinyConstants();
    var counting = harness.CountingAllocator.init(testing.allocator);
    const benches = [_]*const fn (*Ctx) Error!void{
        floorCasStore, floorFetchAdd, mutex,       rwlockRead,  rwlockWrite,      semaphore, oncecellGet, oncecellSet,
        notify,        barrier,       channelSend, channelRecv, channelRoundtrip, oneshot,   broadcast,   watch,
        watchRc,       broadcastRc,
    };
    for (benches) |bench| {
        var samples: [2]harness.Sample = undefined;
        const case = harness.Case.micro(0, "control", c.sync_ops);
        var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples };
        try bench(&ctx);
        try testing.expectEqual(@as(usize, 2), ctx.recorded().len);
        for (ctx.recorded()) |s| {
            try testing.expect(s.elapsed_ns > 0);
            // No ampere fast path allocates.
            try testing.expectEqual(@as(u64, 0), s.alloc_count);
        }
    }
}

test "the owned oneshot benchmark allocates one state per op and frees it" {
    const c = try tinyConstants();
    // testing.allocator under the counter: a state left unfreed fails the test as a leak.
    var counting = harness.CountingAllocator.init(testing.allocator);
    var samples: [2]harness.Sample = undefined;
    const case = harness.Case.micro(2, "oneshot_owned", c.channel_ops);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples };
    try oneshotOwned(&ctx);
    try testing.expectEqual(@as(usize, 2), ctx.recorded().len);
    for (ctx.recorded()) |s| try testing.expectEqual(c.channel_ops, s.alloc_count);
}

test "sum below matches a loop" {
    try testing.expectEqual(@as(u64, 0), sumBelow(0));
    try testing.expectEqual(@as(u64, 0), sumBelow(1));
    try testing.expectEqual(@as(u64, 10), sumBelow(5));
}

test "a benchmark that loses values fails with a message" {
    // The check helpers are what every benchmark ends with: a wrong count must fail.
    const c = try tinyConstants();
    var counting = harness.CountingAllocator.init(testing.allocator);
    var samples: [2]harness.Sample = undefined;
    const case = harness.Case.micro(2, "channel_send", c.channel_ops);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples };
    var tx, var rx = try Channel.init(testing.allocator, 4);
    defer rx.deinit();
    defer tx.deinit();
    try tx.trySend(1);
    var received: u64 = 0;
    while (rx.tryRecv()) |_| received += 1 else |_| {}
    try testing.expectError(error.BenchmarkFailed, ctx.expectEq("values in the channel", received, 2));
    try testing.expectEqualStrings("values in the channel = 1, expected 2", ctx.message());
}
