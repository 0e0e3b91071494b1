//! The measuring harness: benchmark cases, the timed-region bracket (`Mark`), samples,
//! statistics and progress lines. Mirrors rust_bench/src/harness.rs and alloc.rs.
//!
//! A benchmark function receives a `*Ctx` and records exactly `iterations` samples (echo:
//! `echo_batches`), having run and discarded its warmups itself (`Ctx.record` drops samples
//! whose index is below the warmup count). It brackets each timed region with
//! `ctx.markStart()` / `mark.stop()` and verifies its result after `stop`, failing with
//! `ctx.fail(...)` (exit 1, `error: <benchmark>: <message>`).
//!
//! Allocation counting: one `CountingAllocator` around `SystemAllocator` (glibc malloc, called
//! like Rust's `System`)
//! serves the whole program — harness, runtime and primitives — like the Rust side's
//! `#[global_allocator]`. `Mark.start` resets its counters and then reads the clock; `stop`
//! reads the clock and then the counters, after every task of the iteration has been joined
//! (the join gives the happens-before edge from the workers' increments to the read).

const std = @import("std");
const ampere = @import("ampere");
const constants = @import("constants.zig");
const metrics = @import("metrics.zig");

pub const Constants = constants.Constants;
pub const CountingAllocator = ampere.CountingAllocator;

/// One measured iteration (or echo batch).
pub const Sample = struct {
    elapsed_ns: u64,
    alloc_bytes: u64,
    alloc_count: u64,
};

/// CLOCK_MONOTONIC in nanoseconds: the clock Rust's `Instant` reads (std.time.Timer would
/// read CLOCK_BOOTTIME on Linux, so it is not used).
pub fn monotonicNs() u64 {
    const ts = std.posix.clock_gettime(.MONOTONIC) catch @panic("CLOCK_MONOTONIC is unavailable");
    return @as(u64, @intCast(ts.sec)) * std.time.ns_per_s + @as(u64, @intCast(ts.nsec));
}

/// The start of a timed region.
pub const Mark = struct {
    counting: *CountingAllocator,
    started_ns: u64,

    pub inline fn start(counting: *CountingAllocator) Mark {
        counting.reset();
        return .{ .counting = counting, .started_ns = monotonicNs() };
    }

    pub inline fn stop(self: Mark) Sample {
        const now_ns = monotonicNs();
        const counts = self.counting.snapshot();
        // Clamped to 1 like the Rust side, so the CSV contract (elapsed_ns > 0) always holds.
        return .{ .elapsed_ns = @max(now_ns - self.started_ns, 1), .alloc_bytes = counts.bytes, .alloc_count = counts.count };
    }
};

/// Rust's `std::hint::black_box` for pointers: returns `ptr` through an opaque asm statement
/// (with a memory clobber), so the optimiser can neither see where it points nor keep the
/// pointee in registers across it.
pub inline fn blackBox(ptr: anytype) @TypeOf(ptr) {
    return asm volatile (""
        : [ret] "=r" (-> @TypeOf(ptr)),
        : [in] "0" (ptr),
        : .{ .memory = true });
}

/// One row of `--list`: a benchmark with one parameter value.
pub const Case = struct {
    suite: []const u8,
    tier: u8,
    name: []const u8,
    /// Empty, `n=<batch>` or `size=<bytes>` (stored inline: no allocation).
    param_buffer: [24]u8 = undefined,
    param_len: usize = 0,
    /// Operations per iteration (echo: batch size n).
    ops: u64,
    /// Echo only: batch size and payload size; 0 in the micro suite.
    n: u64 = 0,
    size: u64 = 0,

    pub fn micro(tier: u8, name: []const u8, ops: u64) Case {
        return .{ .suite = "micro", .tier = tier, .name = name, .ops = ops };
    }

    pub fn echo(name: []const u8, comptime param_format: []const u8, param_value: u64, n: u64, size: u64) Case {
        var case = Case{ .suite = "echo", .tier = 0, .name = name, .ops = n, .n = n, .size = size };
        const text = std.fmt.bufPrint(&case.param_buffer, param_format, .{param_value}) catch unreachable; // u64 fits
        case.param_len = text.len;
        return case;
    }

    pub fn param(self: *const Case) []const u8 {
        return self.param_buffer[0..self.param_len];
    }

    /// `suite tier benchmark param` (no trailing space when param is empty).
    pub fn writeListLine(self: *const Case, out: *std.Io.Writer) std.Io.Writer.Error!void {
        try out.print("{s} {d} {s}", .{ self.suite, self.tier, self.name });
        if (self.param_len > 0) try out.print(" {s}", .{self.param()});
        try out.writeByte('\n');
    }

    /// Key in the summary JSON: `name` or `name[param]`.
    pub fn writeKey(self: *const Case, out: *std.Io.Writer) std.Io.Writer.Error!void {
        try out.writeAll(self.name);
        if (self.param_len > 0) try out.print("[{s}]", .{self.param()});
    }
};

/// The measured samples of one case and their statistics.
pub const Outcome = struct {
    case: Case,
    samples: []const Sample,
    stats: Stats,

    /// Computes the statistics; `scratch` holds a copy of the elapsed times during the call.
    pub fn init(case: Case, samples: []const Sample, scratch: std.mem.Allocator) error{OutOfMemory}!Outcome {
        const values = try scratch.alloc(u64, samples.len);
        defer scratch.free(values);
        for (samples, values) |s, *v| v.* = s.elapsed_ns;
        return .{ .case = case, .samples = samples, .stats = Stats.of(case.ops, samples, median(values)) };
    }
};

/// Derived statistics of an outcome.
pub const Stats = struct {
    median_ns: u64,
    min_ns: u64,
    ns_per_op: f64,
    ops_per_sec: f64,
    bytes_per_op: f64,
    allocs_per_op: f64,

    /// `median_ns` is the median of the samples' elapsed times (see `median`).
    pub fn of(ops: u64, samples: []const Sample, median_ns: u64) Stats {
        std.debug.assert(ops > 0);
        var min_ns: u64 = std.math.maxInt(u64);
        var bytes: u128 = 0;
        var count: u128 = 0;
        for (samples) |s| {
            min_ns = @min(min_ns, s.elapsed_ns);
            bytes += s.alloc_bytes;
            count += s.alloc_count;
        }
        const ops_f: f64 = @floatFromInt(ops);
        const ns_per_op = @as(f64, @floatFromInt(median_ns)) / ops_f;
        return .{
            .median_ns = median_ns,
            .min_ns = if (samples.len == 0) 0 else min_ns,
            .ns_per_op = ns_per_op,
            .ops_per_sec = if (ns_per_op > 0) 1e9 / ns_per_op else 0,
            .bytes_per_op = meanOf(bytes, samples.len) / ops_f,
            .allocs_per_op = meanOf(count, samples.len) / ops_f,
        };
    }
};

/// Sorts `values` in place and returns their median (see `Outcome.medianNs`).
pub fn median(values: []u64) u64 {
    if (values.len == 0) return 0;
    std.mem.sort(u64, values, {}, std.sort.asc(u64));
    const len = values.len;
    if (len % 2 == 1) return values[len / 2];
    const a = values[len / 2 - 1];
    const b = values[len / 2];
    return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
}

fn meanOf(sum: u128, count: usize) f64 {
    if (count == 0) return 0;
    return @as(f64, @floatFromInt(sum)) / @as(f64, @floatFromInt(count));
}

pub const Error = error{BenchmarkFailed};

/// The runtimes of the process, each built on first use (never inside a timed region) and
/// reused by every benchmark, like the Rust side's: `micro` with `num_workers` workers for
/// Tiers 3–4, `echo` with 1 worker for the echo suite. They allocate through `allocator`
/// (the counting allocator).
pub const Runtimes = struct {
    allocator: std.mem.Allocator,
    micro: ?*ampere.Runtime = null,
    echo: ?*ampere.Runtime = null,

    pub fn deinit(self: *Runtimes) void {
        if (self.micro) |rt| rt.deinit();
        if (self.echo) |rt| rt.deinit();
        self.* = undefined;
    }
};

/// Most workers `ampere.Runtime` supports.
pub const workers_max = 64;

/// What a benchmark function gets: constants, the counting allocator, the sample buffer and
/// the failure message.
pub const Ctx = struct {
    constants: *const Constants,
    counting: *CountingAllocator,
    case: *const Case,
    /// Capacity = the number of samples the case must produce (allocated before the case).
    samples: []Sample,
    sample_len: usize = 0,
    message_buffer: [256]u8 = undefined,
    message_len: usize = 0,
    /// Needed by Tier 3–4 and echo benchmarks only.
    runtimes: ?*Runtimes = null,
    /// Set with `--metrics`: runtime event counts over the measured iterations.
    metrics: ?*metrics.Recorder = null,

    /// The micro-suite runtime (`num_workers` workers), built on first use.
    pub fn microRuntime(self: *Ctx) Error!*ampere.Runtime {
        const runtimes = self.runtimes orelse return self.fail("no runtime available", .{});
        if (runtimes.micro == null) runtimes.micro = try self.buildRuntime(runtimes.allocator, self.constants.num_workers);
        return runtimes.micro.?;
    }

    /// The echo-suite runtime (1 worker), built on first use.
    pub fn echoRuntime(self: *Ctx) Error!*ampere.Runtime {
        const runtimes = self.runtimes orelse return self.fail("no runtime available", .{});
        if (runtimes.echo == null) runtimes.echo = try self.buildRuntime(runtimes.allocator, 1);
        return runtimes.echo.?;
    }

    fn buildRuntime(self: *Ctx, allocator_: std.mem.Allocator, workers: u64) Error!*ampere.Runtime {
        if (workers > workers_max) return self.fail("num_workers = {d}, ampere supports at most {d}", .{ workers, workers_max });
        return ampere.Runtime.init(allocator_, .{ .workers = @intCast(workers) }) catch |err|
            self.fail("cannot build the runtime: {s}", .{@errorName(err)});
    }

    /// The allocator every runtime object and primitive must use (it is counted).
    pub fn allocator(self: *Ctx) std.mem.Allocator {
        return self.counting.allocator();
    }

    pub inline fn markStart(self: *Ctx) Mark {
        return Mark.start(self.counting);
    }

    /// Runtime benchmarks: call right before `markStart` (untimed; no-op without --metrics).
    pub fn metricsBegin(self: *Ctx) void {
        if (self.metrics) |recorder| recorder.begin();
    }

    /// Right after `mark.stop` of iteration `index` (untimed; no-op without --metrics).
    pub fn metricsEnd(self: *Ctx, index: u64, warmup: u64) void {
        if (self.metrics) |recorder| recorder.end(index, warmup);
    }

    /// Keeps `sample` when iteration `index` is past the `warmup` discarded ones.
    pub fn record(self: *Ctx, index: u64, warmup: u64, sample: Sample) void {
        if (index < warmup) return;
        std.debug.assert(self.sample_len < self.samples.len);
        self.samples[self.sample_len] = sample;
        self.sample_len += 1;
    }

    pub fn recorded(self: *const Ctx) []const Sample {
        return self.samples[0..self.sample_len];
    }

    pub fn fail(self: *Ctx, comptime format: []const u8, args: anytype) Error {
        const text = std.fmt.bufPrint(&self.message_buffer, format, args) catch self.message_buffer[0..];
        self.message_len = text.len;
        return error.BenchmarkFailed;
    }

    /// Checks a benchmark's own result: fails with `<what> = <got>, expected <want>`.
    pub fn expectEq(self: *Ctx, what: []const u8, got: u64, want: u64) Error!void {
        if (got != want) return self.fail("{s} = {d}, expected {d}", .{ what, got, want });
    }

    pub fn message(self: *const Ctx) []const u8 {
        return self.message_buffer[0..self.message_len];
    }
};

pub fn progressStart(case: *const Case) void {
    std.debug.print("# start suite={s} benchmark={s} param={s}\n", .{ case.suite, case.name, case.param() });
}

pub fn progressDone(case: *const Case, stats: Stats) void {
    std.debug.print("# done suite={s} benchmark={s} param={s} median_ns_per_op={d:.3}\n", .{ case.suite, case.name, case.param(), stats.ns_per_op });
}

const testing = std.testing;

fn testSample(ns: u64) Sample {
    return .{ .elapsed_ns = ns, .alloc_bytes = 8, .alloc_count = 1 };
}

test "median of odd and even counts" {
    var a = [_]u64{ 5, 1, 3 };
    try testing.expectEqual(@as(u64, 3), median(&a));
    var b = [_]u64{ 4, 1, 3, 2 };
    try testing.expectEqual(@as(u64, 2), median(&b));
    var c = [_]u64{ 3, 4 };
    try testing.expectEqual(@as(u64, 3), median(&c));
    var d = [_]u64{ std.math.maxInt(u64), std.math.maxInt(u64) };
    try testing.expectEqual(@as(u64, std.math.maxInt(u64)), median(&d));
    try testing.expectEqual(@as(u64, 0), median(&[_]u64{}));
}

test "outcome statistics" {
    const samples = [_]Sample{ testSample(40), testSample(80), testSample(60) };
    const outcome = try Outcome.init(Case.micro(1, "x", 4), &samples, testing.allocator);
    const stats = outcome.stats;
    try testing.expectEqual(@as(u64, 60), stats.median_ns);
    try testing.expectEqual(@as(u64, 40), stats.min_ns);
    try testing.expectEqual(@as(f64, 15.0), stats.ns_per_op);
    try testing.expectEqual(@as(f64, 2.0), stats.bytes_per_op);
    try testing.expectEqual(@as(f64, 0.25), stats.allocs_per_op);
}

test "record discards warmups and failures carry a message" {
    var counting = CountingAllocator.init(testing.allocator);
    var buffer: [3]Sample = undefined;
    var diag = constants.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    const case = Case.micro(0, "x", 1);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &buffer };
    for (0..5) |k| ctx.record(k, 2, testSample(k + 1));
    try testing.expectEqual(@as(usize, 3), ctx.recorded().len);
    try testing.expectEqual(@as(u64, 3), ctx.recorded()[0].elapsed_ns);
    try testing.expectError(error.BenchmarkFailed, ctx.expectEq("count", 1, 2));
    try testing.expectEqualStrings("count = 1, expected 2", ctx.message());
    try ctx.expectEq("count", 2, 2);
}

test "mark counts allocations inside the bracket" {
    var counting = CountingAllocator.init(testing.allocator);
    const gpa = counting.allocator();
    const before = try gpa.alloc(u8, 10);
    defer gpa.free(before);
    const mark = Mark.start(&counting);
    const inside = try gpa.alloc(u8, 1000);
    defer gpa.free(inside);
    const s = mark.stop();
    try testing.expectEqual(@as(u64, 1), s.alloc_count);
    try testing.expectEqual(@as(u64, 1000), s.alloc_bytes);
    try testing.expect(s.elapsed_ns >= 1);
}

test "case keys and list lines" {
    var buffer: [64]u8 = undefined;
    var w = std.Io.Writer.fixed(&buffer);
    const mutex = Case.micro(1, "mutex", 10);
    try mutex.writeListLine(&w);
    try mutex.writeKey(&w);
    const echo = Case.echo("echo_f64", "n={d}", 10, 10, 8);
    try echo.writeListLine(&w);
    try echo.writeKey(&w);
    try testing.expectEqualStrings("micro 1 mutex\nmutexecho 0 echo_f64 n=10\necho_f64[n=10]", w.buffered());
}

test "black box returns the same pointer" {
    var x: u32 = 7;
    const p = blackBox(&x);
    p.* += 1;
    try testing.expectEqual(@as(u32, 8), x);
}
