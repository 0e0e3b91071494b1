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
//! `#[global_allocator]`.
//!
//! The bracket, in this order on both sides (rust_bench/src/alloc.rs):
//!
//!     Mark.start: reset the allocation counters → read CLOCK_PROCESS_CPUTIME_ID → read CLOCK_MONOTONIC
//!     ... the timed region ...
//!     Mark.stop:  read CLOCK_MONOTONIC → read CLOCK_PROCESS_CPUTIME_ID → read the allocation counters
//!
//! The wall-clock region nests inside the CPU-clock region, so the CPU clock's reads (a
//! system call each, not a vDSO read) are outside the wall time; the CPU time includes the
//! two monotonic reads and part of each CPU-clock call. `stop` runs after every task of the
//! iteration has been joined (the join gives the happens-before edge from the workers'
//! counter increments to the read).

const std = @import("std");
const assert = std.debug.assert;
const ampere = @import("ampere");
const constants = @import("constants.zig");
const metrics = @import("metrics.zig");

pub const Constants = constants.Constants;
pub const CountingAllocator = ampere.CountingAllocator;

/// One measured iteration (or echo batch).
pub const Sample = struct {
    elapsed_ns: u64,
    /// Process CPU time (user + system, all threads) consumed during the iteration.
    cpu_ns: u64,
    alloc_bytes: u64,
    alloc_count: u64,
    /// The clock readings that bracket the sample (`Mark`): CLOCK_MONOTONIC and the process
    /// CPU clock at the start and at the stop. `Span` joins the first sample's start to the last
    /// one's stop. Zero in samples not made by a `Mark` (unit tests).
    start_ns: u64 = 0,
    start_cpu_ns: u64 = 0,
    stop_ns: u64 = 0,
    stop_cpu_ns: u64 = 0,
};

/// The whole measured part of one case in one invocation: from the first measured sample's
/// start to the last one's stop, the gaps between samples (untimed set-up, checks, a worker
/// spinning on after the last join) included. Its CPU time is the process CPU clock (all
/// threads) over that span; `ops` the operations of its samples. The `<runtime>.span.csv`
/// row of the case (output.zig, data/README.md).
pub const Span = struct {
    iterations: u64,
    ops: u64,
    elapsed_ns: u64,
    cpu_ns: u64,

    /// The span of `samples` (in the order they were measured), each of `ops_per_sample` ops.
    pub fn of(samples: []const Sample, ops_per_sample: u64) Span {
        assert(samples.len > 0);
        const first = samples[0];
        const last = samples[samples.len - 1];
        assert(last.stop_ns >= first.start_ns);
        return .{
            .iterations = samples.len,
            .ops = samples.len * ops_per_sample,
            // Clamped to 1 like a sample's elapsed_ns (the contract: elapsed_ns >= 1).
            .elapsed_ns = @max(last.stop_ns - first.start_ns, 1),
            // The process CPU clock never goes back; saturating as in `Mark.stop`.
            .cpu_ns = last.stop_cpu_ns -| first.start_cpu_ns,
        };
    }
};

/// CLOCK_MONOTONIC in nanoseconds: the clock Rust's `Instant` reads, through the same glibc
/// function (`libcClockNs`).
pub fn monotonicNs() u64 {
    return libcClockNs(.MONOTONIC);
}

/// CLOCK_PROCESS_CPUTIME_ID in nanoseconds: CPU time (user + system) of every thread of the
/// process, living and exited. glibc serves it with a system call (the vDSO has only the
/// wall clocks); the kernel sums the threads' accounted run time, which for a thread running
/// on another CPU lags by up to one scheduler tick (README.md, "CPU time").
pub fn processCpuNs() u64 {
    return libcClockNs(.PROCESS_CPUTIME_ID);
}

/// glibc's `clock_gettime` (libc is linked), the function the Rust side calls for both clocks,
/// so that both programs pay the same for a read. Panics if the clock is unavailable.
fn libcClockNs(clock: std.c.clockid_t) u64 {
    var ts: std.c.timespec = undefined;
    if (std.c.clock_gettime(clock, &ts) != 0) std.debug.panic("clock_gettime({d}) failed", .{@intFromEnum(clock)});
    return @as(u64, @intCast(ts.sec)) * std.time.ns_per_s + @as(u64, @intCast(ts.nsec));
}

/// The start of a timed region (the order of the reads is in the module comment).
pub const Mark = struct {
    counting: *CountingAllocator,
    started_cpu_ns: u64,
    started_ns: u64,

    pub inline fn start(counting: *CountingAllocator) Mark {
        counting.reset();
        const started_cpu_ns = processCpuNs();
        return .{ .counting = counting, .started_cpu_ns = started_cpu_ns, .started_ns = monotonicNs() };
    }

    pub inline fn stop(self: Mark) Sample {
        const now_ns = monotonicNs();
        const now_cpu_ns = processCpuNs();
        const counts = self.counting.snapshot();
        return .{
            // Clamped to 1 like the Rust side, so the CSV contract (elapsed_ns > 0) always holds.
            .elapsed_ns = @max(now_ns - self.started_ns, 1),
            // The process CPU clock never goes back (exited threads' time stays in the sum);
            // saturating all the same, so a kernel quirk cannot wrap it to 2^64.
            .cpu_ns = now_cpu_ns -| self.started_cpu_ns,
            .alloc_bytes = counts.bytes,
            .alloc_count = counts.count,
            .start_ns = self.started_ns,
            .start_cpu_ns = self.started_cpu_ns,
            .stop_ns = now_ns,
            .stop_cpu_ns = now_cpu_ns,
        };
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
    /// Echo: batch size and payload size; net: `conns` and `size`; 0 in the micro suite.
    n: u64 = 0,
    size: u64 = 0,
    /// Worker threads of the runtime the case runs on (the CSV `workers` column): 0 for
    /// Tiers 0–2 (no runtime), the sweep's count for Tiers 3–4 (`withWorkers`), 1 for echo,
    /// num_workers for net.
    workers: u64 = 0,

    pub fn micro(tier: u8, name: []const u8, ops: u64) Case {
        return .{ .suite = "micro", .tier = tier, .name = name, .ops = ops };
    }

    pub fn echo(name: []const u8, comptime param_format: []const u8, param_value: u64, n: u64, size: u64) Case {
        var case = Case{ .suite = "echo", .tier = 0, .name = name, .ops = n, .n = n, .size = size, .workers = 1 };
        const text = std.fmt.bufPrint(&case.param_buffer, param_format, .{param_value}) catch unreachable; // u64 fits
        case.param_len = text.len;
        return case;
    }

    /// A net-suite case: `param_name` is "" (no parameter), "size" or "conns"; it runs on the
    /// net runtime (`workers` = num_workers).
    pub fn net(name: []const u8, param_name: []const u8, param_value: u64, ops: u64, workers: u64) Case {
        var case = Case{ .suite = "net", .tier = 0, .name = name, .ops = ops, .workers = workers };
        if (param_name.len > 0) {
            const text = std.fmt.bufPrint(&case.param_buffer, "{s}={d}", .{ param_name, param_value }) catch unreachable; // short name, u64
            case.param_len = text.len;
        }
        if (std.mem.eql(u8, param_name, "size")) case.size = param_value;
        if (std.mem.eql(u8, param_name, "conns")) case.n = param_value;
        return case;
    }

    pub fn param(self: *const Case) []const u8 {
        return self.param_buffer[0..self.param_len];
    }

    /// Whether the case runs at every worker count of the sweep: Tiers 3–4 (on the micro
    /// suite's runtime) and every io-suite case (on a fresh `std.Io` per count, io_main.zig).
    pub fn swept(self: *const Case) bool {
        if (std.mem.eql(u8, self.suite, "io")) return true;
        return std.mem.eql(u8, self.suite, "micro") and self.tier >= 3;
    }

    /// An io-suite case: `param_name` is "" (no parameter) or the parameter's name, whose value
    /// goes to `n` (pairs, tasks, conns) or, for `size` and `d_ms`, to `size`.
    pub fn io(name: []const u8, param_name: []const u8, param_value: u64, ops: u64) Case {
        var case = Case{ .suite = "io", .tier = 0, .name = name, .ops = ops, .workers = 1 };
        if (param_name.len > 0) {
            const text = std.fmt.bufPrint(&case.param_buffer, "{s}={d}", .{ param_name, param_value }) catch unreachable; // short name, u64
            case.param_len = text.len;
        }
        const in_size = std.mem.eql(u8, param_name, "size") or std.mem.eql(u8, param_name, "d_ms");
        if (in_size) case.size = param_value else case.n = param_value;
        return case;
    }

    /// The Tier 3–4 case at `workers` workers.
    pub fn withWorkers(self: Case, workers: u64) Case {
        std.debug.assert(self.swept() and workers >= 1);
        var case = self;
        case.workers = workers;
        return case;
    }

    /// `suite tier benchmark param` (no trailing space when param is empty).
    pub fn writeListLine(self: *const Case, out: *std.Io.Writer) std.Io.Writer.Error!void {
        try out.print("{s} {d} {s}", .{ self.suite, self.tier, self.name });
        if (self.param_len > 0) try out.print(" {s}", .{self.param()});
        try out.writeByte('\n');
    }

    /// Key in the summary JSON: `name` or `name[param]`, and `@w<workers>` for a Tier 3–4
    /// case when the run sweeps more than one worker count (`sweep`).
    pub fn writeKey(self: *const Case, out: *std.Io.Writer, sweep: bool) std.Io.Writer.Error!void {
        try out.writeAll(self.name);
        if (self.param_len > 0) try out.print("[{s}]", .{self.param()});
        if (sweep and self.swept()) try out.print("@w{d}", .{self.workers});
    }
};

/// The measured samples of one case and their statistics.
pub const Outcome = struct {
    case: Case,
    samples: []const Sample,
    stats: Stats,

    /// Computes the statistics; `scratch` holds a copy of the elapsed (then CPU) times during
    /// the call.
    pub fn init(case: Case, samples: []const Sample, scratch: std.mem.Allocator) error{OutOfMemory}!Outcome {
        const values = try scratch.alloc(u64, samples.len);
        defer scratch.free(values);
        for (samples, values) |s, *v| v.* = s.elapsed_ns;
        const median_ns = median(values);
        for (samples, values) |s, *v| v.* = s.cpu_ns;
        const median_cpu_ns = median(values);
        return .{ .case = case, .samples = samples, .stats = Stats.of(case.ops, samples, median_ns, median_cpu_ns) };
    }
};

/// Derived statistics of an outcome.
pub const Stats = struct {
    median_ns: u64,
    min_ns: u64,
    ns_per_op: f64,
    ops_per_sec: f64,
    median_cpu_ns: u64,
    cpu_ns_per_op: f64,
    bytes_per_op: f64,
    allocs_per_op: f64,

    /// `median_ns` and `median_cpu_ns` are the medians of the samples' elapsed and CPU times
    /// (see `median`).
    pub fn of(ops: u64, samples: []const Sample, median_ns: u64, median_cpu_ns: u64) Stats {
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
            .median_cpu_ns = median_cpu_ns,
            .cpu_ns_per_op = @as(f64, @floatFromInt(median_cpu_ns)) / ops_f,
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

/// The runtimes of the process, each built on first use (never inside a timed region), like
/// the Rust side's: `micro` for Tiers 3–4 with the case's worker count — replaced by a fresh
/// runtime when the count changes (the worker sweep) — `echo` with 1 worker for the echo
/// suite, and `net` with `num_workers` workers for the net suite. Both get `options` (the variant's settings; `workers` is set per runtime) and
/// allocate through `allocator` (the counting allocator).
pub const Runtimes = struct {
    allocator: std.mem.Allocator,
    /// `Runtime.Options` of the selected variant (ampere's defaults unless main sets them).
    options: ampere.Runtime.Options = .{},
    micro: ?*ampere.Runtime = null,
    micro_workers: u64 = 0,
    echo: ?*ampere.Runtime = null,
    net: ?*ampere.Runtime = null,

    pub fn deinit(self: *Runtimes) void {
        if (self.micro) |rt| rt.deinit();
        if (self.echo) |rt| rt.deinit();
        if (self.net) |rt| rt.deinit();
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

    /// The micro-suite runtime with the case's worker count (a case built without one, in a
    /// unit test, gets `num_workers`), built on first use; a runtime of another count is
    /// shut down first, so every count of the sweep starts on a fresh runtime.
    pub fn microRuntime(self: *Ctx) Error!*ampere.Runtime {
        const runtimes = self.runtimes orelse return self.fail("no runtime available", .{});
        const workers = if (self.case.workers > 0) self.case.workers else self.constants.num_workers;
        if (runtimes.micro) |rt| {
            if (runtimes.micro_workers == workers) return rt;
            rt.deinit();
            runtimes.micro = null;
        }
        runtimes.micro = try self.buildRuntime(runtimes, workers);
        runtimes.micro_workers = workers;
        return runtimes.micro.?;
    }

    /// The echo-suite runtime (1 worker), built on first use.
    pub fn echoRuntime(self: *Ctx) Error!*ampere.Runtime {
        const runtimes = self.runtimes orelse return self.fail("no runtime available", .{});
        if (runtimes.echo == null) runtimes.echo = try self.buildRuntime(runtimes, 1);
        return runtimes.echo.?;
    }

    /// The net-suite runtime (`num_workers` workers), built on first use.
    pub fn netRuntime(self: *Ctx) Error!*ampere.Runtime {
        const runtimes = self.runtimes orelse return self.fail("no runtime available", .{});
        if (runtimes.net == null) runtimes.net = try self.buildRuntime(runtimes, self.constants.num_workers);
        return runtimes.net.?;
    }

    fn buildRuntime(self: *Ctx, runtimes: *Runtimes, workers: u64) Error!*ampere.Runtime {
        if (workers == 0 or workers > workers_max) return self.fail("{d} workers: ampere supports 1 to {d}", .{ workers, workers_max });
        var options = runtimes.options;
        options.workers = @intCast(workers);
        return ampere.Runtime.init(runtimes.allocator, options) catch |err|
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

/// `# start suite=S benchmark=B param=P workers=W` on stderr (before the case runs).
pub fn progressStart(case: *const Case) void {
    var buffer: [256]u8 = undefined;
    std.debug.print("{s}\n", .{startLine(&buffer, case)});
}

/// `# done ... workers=W median_ns_per_op=X median_cpu_ns_per_op=Y` on stderr (after it).
pub fn progressDone(case: *const Case, stats: Stats) void {
    var buffer: [320]u8 = undefined;
    std.debug.print("{s}\n", .{doneLine(&buffer, case, stats)});
}

fn startLine(buffer: []u8, case: *const Case) []const u8 {
    return std.fmt.bufPrint(buffer, "# start suite={s} benchmark={s} param={s} workers={d}", .{ case.suite, case.name, case.param(), case.workers }) catch buffer;
}

fn doneLine(buffer: []u8, case: *const Case, stats: Stats) []const u8 {
    return std.fmt.bufPrint(buffer, "# done suite={s} benchmark={s} param={s} workers={d} median_ns_per_op={d:.3} median_cpu_ns_per_op={d:.3}", .{
        case.suite, case.name, case.param(), case.workers, stats.ns_per_op, stats.cpu_ns_per_op,
    }) catch buffer;
}

const testing = std.testing;

fn testSample(ns: u64) Sample {
    return .{ .elapsed_ns = ns, .cpu_ns = 2 * ns, .alloc_bytes = 8, .alloc_count = 1 };
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
    try testing.expectEqual(@as(u64, 120), stats.median_cpu_ns);
    try testing.expectEqual(@as(f64, 30.0), stats.cpu_ns_per_op);
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

test "mark records the CPU time of a busy iteration" {
    var counting = CountingAllocator.init(testing.allocator);
    const mark = Mark.start(&counting);
    // Busy for at least 2 ms of wall time on this thread: the process CPU clock must see it.
    const until_ns = monotonicNs() + 2 * std.time.ns_per_ms;
    var spins: u64 = 0;
    while (monotonicNs() < until_ns) spins += 1;
    _ = blackBox(&spins);
    const s = mark.stop();
    try testing.expect(s.cpu_ns > 0);
    try testing.expect(s.elapsed_ns >= 2 * std.time.ns_per_ms);
    // Not asserted tighter than this: a preempted thread burns less CPU than wall time.
    try testing.expect(s.cpu_ns >= std.time.ns_per_ms / 10);
}

test "the CPU clock is process-wide: it counts another thread's work" {
    var counting = CountingAllocator.init(testing.allocator);
    const Busy = struct {
        fn run() void {
            const until_ns = monotonicNs() + 20 * std.time.ns_per_ms;
            var spins: u64 = 0;
            while (monotonicNs() < until_ns) spins += 1;
            _ = blackBox(&spins);
        }
    };
    const mark = Mark.start(&counting);
    const thread = try std.Thread.spawn(.{}, Busy.run, .{});
    thread.join(); // this thread sleeps in join: nearly all CPU time is the other thread's
    const s = mark.stop();
    try testing.expect(s.cpu_ns >= 2 * std.time.ns_per_ms);
}

test "a span runs from the first sample's start to the last one's stop, gaps included" {
    const samples = [_]Sample{
        .{ .elapsed_ns = 10, .cpu_ns = 8, .alloc_bytes = 0, .alloc_count = 0, .start_ns = 1000, .start_cpu_ns = 500, .stop_ns = 1010, .stop_cpu_ns = 508 },
        .{ .elapsed_ns = 20, .cpu_ns = 30, .alloc_bytes = 0, .alloc_count = 0, .start_ns = 1100, .start_cpu_ns = 600, .stop_ns = 1120, .stop_cpu_ns = 630 },
    };
    const span = Span.of(&samples, 7);
    try testing.expectEqual(Span{ .iterations = 2, .ops = 14, .elapsed_ns = 120, .cpu_ns = 130 }, span);
    // Spinning in the gap (CPU outside both samples) is in the span: 130 > 8 + 30.
    try testing.expect(span.cpu_ns > samples[0].cpu_ns + samples[1].cpu_ns);
}

test "a real mark's stamps bracket its sample" {
    var counting = CountingAllocator.init(testing.allocator);
    const first = Mark.start(&counting).stop();
    const second = Mark.start(&counting).stop();
    try testing.expect(first.start_ns > 0 and first.stop_ns - first.start_ns == @max(first.elapsed_ns, 1) or first.elapsed_ns == 1);
    try testing.expect(second.start_ns >= first.stop_ns and second.start_cpu_ns >= first.stop_cpu_ns);
    const span = Span.of(&.{ first, second }, 1);
    try testing.expect(span.elapsed_ns >= first.elapsed_ns + second.elapsed_ns);
}

test "case keys and list lines" {
    var buffer: [64]u8 = undefined;
    var w = std.Io.Writer.fixed(&buffer);
    const mutex = Case.micro(1, "mutex", 10);
    try mutex.writeListLine(&w);
    try mutex.writeKey(&w, true);
    const echo = Case.echo("echo_f64", "n={d}", 10, 10, 8);
    try echo.writeListLine(&w);
    try echo.writeKey(&w, true);
    try testing.expectEqualStrings("micro 1 mutex\nmutexecho 0 echo_f64 n=10\necho_f64[n=10]", w.buffered());
}

test "workers per tier, and the @w key suffix only for Tier 3-4 in a sweep" {
    try testing.expectEqual(@as(u64, 0), Case.micro(0, "floor_cas_store", 1).workers);
    try testing.expectEqual(@as(u64, 0), Case.micro(2, "watch", 1).workers);
    try testing.expectEqual(@as(u64, 1), Case.echo("echo_f64", "n={d}", 1, 1, 8).workers);
    const spawn = Case.micro(4, "task_spawn", 1).withWorkers(2);
    try testing.expectEqual(@as(u64, 2), spawn.workers);
    try testing.expect(spawn.swept() and !Case.micro(2, "watch", 1).swept() and !Case.echo("e", "n={d}", 1, 1, 8).swept());
    var buffer: [64]u8 = undefined;
    var w = std.Io.Writer.fixed(&buffer);
    try spawn.writeKey(&w, true);
    try w.writeByte(' ');
    try spawn.writeKey(&w, false);
    try w.writeByte(' ');
    try Case.micro(1, "mutex", 1).writeKey(&w, true);
    try testing.expectEqualStrings("task_spawn@w2 task_spawn mutex", w.buffered());
}

test "progress lines name the benchmark and the worker count" {
    var buffer: [320]u8 = undefined;
    const spawn = Case.micro(4, "task_spawn", 1).withWorkers(2);
    try testing.expectEqualStrings("# start suite=micro benchmark=task_spawn param= workers=2", startLine(&buffer, &spawn));
    const echo = Case.echo("echo_f64", "n={d}", 10, 10, 8);
    try testing.expectEqualStrings("# start suite=echo benchmark=echo_f64 param=n=10 workers=1", startLine(&buffer, &echo));
    const stats = Stats.of(10, &.{testSample(100)}, 100, 250);
    try testing.expectEqualStrings(
        "# done suite=echo benchmark=echo_f64 param=n=10 workers=1 median_ns_per_op=10.000 median_cpu_ns_per_op=25.000",
        doneLine(&buffer, &echo, stats),
    );
}

test "micro runtime: the case's worker count and the variant's options; a fresh runtime per count" {
    var counting = CountingAllocator.init(testing.allocator);
    var runtimes = Runtimes{ .allocator = counting.allocator(), .options = .{ .spin_before_park_ns = 0 } };
    defer runtimes.deinit();
    var diag = constants.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    var buffer: [1]Sample = undefined;
    const one = Case.micro(3, "x", 1).withWorkers(1);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &one, .samples = &buffer, .runtimes = &runtimes };
    const first = try ctx.microRuntime();
    try testing.expectEqual(@as(u32, 1), first.scheduler.shared.options.workers);
    try testing.expectEqual(@as(u64, 0), first.scheduler.shared.options.spin_before_park_ns);
    try testing.expectEqual(first, try ctx.microRuntime()); // same count: reused
    const two = Case.micro(3, "x", 1).withWorkers(2);
    ctx.case = &two;
    const second = try ctx.microRuntime();
    try testing.expectEqual(@as(u32, 2), second.scheduler.shared.options.workers);
    try testing.expectEqual(@as(u64, 2), runtimes.micro_workers);
    const echo_rt = try ctx.echoRuntime();
    try testing.expectEqual(@as(u32, 1), echo_rt.scheduler.shared.options.workers);
    try testing.expectEqual(@as(u64, 0), echo_rt.scheduler.shared.options.spin_before_park_ns);
    const too_many = Case.micro(3, "x", 1).withWorkers(workers_max + 1);
    ctx.case = &too_many;
    try testing.expectError(error.BenchmarkFailed, ctx.microRuntime());
}

test "black box returns the same pointer" {
    var x: u32 = 7;
    const p = blackBox(&x);
    p.* += 1;
    try testing.expectEqual(@as(u32, 8), x);
}
