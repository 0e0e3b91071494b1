//! io_bench: the io suite's program, one source built once per `std.Io` implementation
//! (io_impl.zig; binaries `io_bench_threaded`, `io_bench_zio`, `io_bench_ampere`).
//!
//! Same program interface as ampere_bench and tokio_bench (README.md, "Program interface"):
//! `--suite io` (or `all`), `--filter`, `--workers`, `--csv`, `--meta`, `--invocation`,
//! `--set`, `--json`, `--list`, progress lines on stderr, exit codes 0 / 1 / 2. `--variant`
//! accepts only the implementation's own name (`zig.threaded`, `zio`, `ampere.io`), which is
//! the CSV's `runtime` column. Flow: parse, load the constants, select the cases, then for
//! each worker count of `--workers` build a fresh implementation instance and run every case
//! on it, each from a driver task (`io.concurrent`, then await: the driver runs where the
//! implementation runs tasks, as the Tokio twin's driver is a spawned task); then write the
//! CSV, meta and the table or summary JSON.
//!
//! `--metrics PATH` (the ampere.io build only: the other implementations expose no event
//! counts, and ask for it in vain with exit 2): Ampere's runtime event counts per benchmark over
//! its measured iterations, the JSON lines of ampere_bench's `--metrics` (metrics.zig), with
//! `runtime` = `ampere.io`.
//!
//! Every allocation goes through one `CountingAllocator` around `SystemAllocator` (glibc
//! malloc), which the implementation instance allocates through as well.

const std = @import("std");
const harness = @import("harness.zig");
const SystemAllocator = @import("SystemAllocator.zig");
const constants_mod = @import("constants.zig");
const cli = @import("cli.zig");
const output = @import("output.zig");
const program = @import("program.zig");
const variants = @import("variants.zig");
const benches = @import("io_benches.zig");
const impl = @import("io_impl.zig");
const metrics = @import("metrics.zig");

/// Whether this build records Ampere's runtime metrics (`--metrics`): the ampere.io one.
const records_metrics = std.mem.eql(u8, impl.name, "ampere.io");

const Constants = constants_mod.Constants;
const Case = harness.Case;
const Ctx = harness.Ctx;
const Outcome = harness.Outcome;
const CountingAllocator = harness.CountingAllocator;

const BenchFn = *const fn (*Ctx, std.Io) harness.Error!void;

const Bench = struct { name: []const u8, run: BenchFn };

/// The registered benchmarks in canonical order (BENCHMARKS.md, "Io suite").
const registry = [_]Bench{
    .{ .name = "io_mutex_contended", .run = benches.mutexContended },
    .{ .name = "io_queue_pingpong", .run = benches.queuePingpong },
    .{ .name = "io_fan_in", .run = benches.fanIn },
    .{ .name = "io_fan_out", .run = benches.fanOut },
    .{ .name = "io_spawn", .run = benches.spawn },
    .{ .name = "io_spawn_group", .run = benches.spawnGroup },
    .{ .name = "io_sleep", .run = benches.sleep },
    .{ .name = "io_tcp_pingpong", .run = benches.tcpPingpong },
    .{ .name = "io_tcp_echo_conns", .run = benches.tcpEchoConns },
    .{ .name = "io_tcp_connect", .run = benches.tcpConnect },
};

const Selected = struct { case: Case, run: BenchFn };

/// The cases (benchmark × param) of `bench`, with their ops per iteration (`benches.cases`;
/// the same on the Rust side, rust_bench/src/io.rs).
fn appendCases(gpa: std.mem.Allocator, list: *std.ArrayList(Selected), bench: Bench, c: *const Constants) !void {
    var buffer: [2]Case = undefined;
    for (benches.cases(bench.name, c, &buffer)) |case| try list.append(gpa, .{ .case = case, .run = bench.run });
}

/// Selected cases in canonical order.
fn select(gpa: std.mem.Allocator, options: *const cli.Options, c: *const Constants) !std.ArrayList(Selected) {
    var list: std.ArrayList(Selected) = .empty;
    errdefer list.deinit(gpa);
    if (!options.suite.includes("io")) return list;
    for (registry) |bench| {
        if (options.filter_len > 0) {
            var matched = false;
            for (options.filterList()) |filter| {
                if (std.mem.indexOf(u8, bench.name, filter) != null) matched = true;
            }
            if (!matched) continue;
        }
        try appendCases(gpa, &list, bench, c);
    }
    return list;
}

const Exit = program.Exit;

/// The metadata JSON (`--meta`): `impl.Meta`, allocations counted by the program's allocator.
fn writeMeta(io: std.Io, gpa: std.mem.Allocator, path: []const u8) Exit {
    var arena = std.heap.ArenaAllocator.init(gpa);
    defer arena.deinit();
    const text = impl.Meta.render(io, arena.allocator(), "glibc malloc via CountingAllocator", null) catch return Exit.fail(1, "out of memory", .{});
    output.writeAtomic(io, path, text) catch |err| return Exit.fail(1, "{s}: {s}", .{ path, @errorName(err) });
    return .{ .code = 0 };
}

fn driver(run_fn: BenchFn, ctx: *Ctx, io: std.Io) harness.Error!void {
    return run_fn(ctx, io);
}

/// Runs one case on `io` from a driver task; returns its outcome or the failure exit.
fn runCase(gpa: std.mem.Allocator, io: std.Io, counting: *CountingAllocator, c: *const Constants, s: *const Selected, outcomes: *std.ArrayList(Outcome), metrics_out: ?*MetricsOut) ?Exit {
    const expected: usize = @intCast(c.iterations);
    const samples = gpa.alloc(harness.Sample, expected) catch return Exit.fail(1, "out of memory", .{});
    harness.progressStart(&s.case);
    var ctx = Ctx{ .constants = c, .counting = counting, .case = &s.case, .samples = samples };
    var recorder = metrics.Recorder{};
    if (metrics_out != null) ctx.metrics = &recorder;
    var task = io.concurrent(driver, .{ s.run, &ctx, io }) catch |err| {
        gpa.free(samples);
        return Exit.fail(1, "{s}: io.concurrent(driver): {s}", .{ s.case.name, @errorName(err) });
    };
    task.await(io) catch {
        gpa.free(samples);
        return Exit.fail(1, "{s}: {s}", .{ s.case.name, ctx.message() });
    };
    if (ctx.sample_len != expected) {
        gpa.free(samples);
        return Exit.fail(1, "{s}: {d} samples, expected {d}", .{ s.case.name, ctx.sample_len, expected });
    }
    const outcome = Outcome.init(s.case, samples, gpa) catch {
        gpa.free(samples);
        return Exit.fail(1, "out of memory", .{});
    };
    harness.progressDone(&outcome.case, outcome.stats);
    outcomes.appendAssumeCapacity(outcome);
    if (metrics_out) |out| recorder.writeLine(out.text, impl.name, out.invocation, &s.case) catch return Exit.fail(1, "out of memory", .{});
    return null;
}

/// Where `--metrics` lines go (the file is written once, atomically, after the last case).
const MetricsOut = struct {
    text: *std.Io.Writer,
    invocation: u64,
};

/// Every case at every worker count, a fresh implementation instance per count.
fn runAll(gpa: std.mem.Allocator, counting: *CountingAllocator, c: *const Constants, selected: []const Selected, worker_counts: []const u64, outcomes: *std.ArrayList(Outcome), metrics_out: ?*MetricsOut) ?Exit {
    outcomes.ensureTotalCapacity(gpa, selected.len * worker_counts.len) catch return Exit.fail(1, "out of memory", .{});
    for (worker_counts) |workers| {
        var instance: impl.Instance = undefined;
        instance.init(gpa, workers) catch |err| return Exit.fail(1, "{s} with {d} workers: {s}", .{ impl.name, workers, @errorName(err) });
        // On a failure the instance is left running: the process exits, and a failed
        // benchmark may have left tasks behind that a shutdown would wait for.
        for (selected) |s| {
            const at = Selected{ .case = s.case.withWorkers(workers), .run = s.run };
            if (runCase(gpa, instance.io(), counting, c, &at, outcomes, metrics_out)) |exit| return exit;
        }
        instance.deinit();
    }
    return null;
}

/// The whole program minus process concerns; writes the table/JSON/list to `out`.
fn run(gpa: std.mem.Allocator, io: std.Io, counting: *CountingAllocator, args: []const []const u8, out: *std.Io.Writer) Exit {
    var cli_diag = cli.Diagnostic{};
    const options = cli.parse(args, &cli_diag) catch return Exit.fail(2, "{s}", .{cli_diag.message()});
    if (options.help) {
        out.writeAll(cli.usage) catch return Exit.fail(1, "cannot write to stdout", .{});
        return .{ .code = 0 };
    }
    if (options.variant) |name| {
        if (!std.mem.eql(u8, name, impl.name)) return Exit.fail(2, "--variant {s}: this program runs {s} only", .{ name, impl.name });
    }
    if (options.metrics != null and !records_metrics) return Exit.fail(2, "--metrics: the io program on {s} records no runtime metrics (only ampere.io does)", .{impl.name});
    var diag = constants_mod.Diagnostic{};
    var c = Constants.load(gpa, options.profile, &diag) catch return Exit.fail(2, "{s}", .{diag.message()});
    for (options.overrideList()) |assignment| {
        c.applyOverride(assignment, &diag) catch return Exit.fail(2, "{s}", .{diag.message()});
    }
    const default_counts = [_]u64{c.num_workers};
    const worker_counts: []const u64 = if (options.workers) |*w| w.items() else &default_counts;
    for (worker_counts) |count| {
        if (count > 255) return Exit.fail(2, "--workers: {d}: the io program supports at most 255 workers", .{count});
    }
    var selected = select(gpa, &options, &c) catch return Exit.fail(1, "out of memory", .{});
    defer selected.deinit(gpa);
    if (selected.items.len == 0) return Exit.fail(2, "no benchmark matches the suite and filters (the io program runs --suite io)", .{});
    if (options.list) {
        for (selected.items) |*s| s.case.writeListLine(out) catch return Exit.fail(1, "cannot write to stdout", .{});
        return .{ .code = 0 };
    }
    for ([_]?[]const u8{ options.csv, options.meta, options.metrics }) |maybe_path| {
        const path = maybe_path orelse continue;
        output.checkNew(io, path) catch return Exit.fail(2, "{s} exists (results are never overwritten)", .{path});
        if (!output.parentExists(io, path)) return Exit.fail(2, "{s}: folder does not exist", .{std.fs.path.dirname(path) orelse "."});
    }
    if (options.csv) |path| {
        var span_buffer: [std.fs.max_path_bytes]u8 = undefined;
        const span = output.spanPath(&span_buffer, path) catch return Exit.fail(2, "{s}: path too long", .{path});
        output.checkNew(io, span) catch return Exit.fail(2, "{s} exists (results are never overwritten)", .{span});
    }
    if (options.meta) |path| {
        const exit = writeMeta(io, gpa, path);
        if (exit.code != 0) return exit;
    }
    var outcomes: std.ArrayList(Outcome) = .empty;
    defer {
        for (outcomes.items) |o| gpa.free(o.samples);
        outcomes.deinit(gpa);
    }
    var metrics_text = std.Io.Writer.Allocating.init(gpa);
    defer metrics_text.deinit();
    var metrics_out = MetricsOut{ .text = &metrics_text.writer, .invocation = options.invocation };
    if (runAll(gpa, counting, &c, selected.items, worker_counts, &outcomes, if (options.metrics != null) &metrics_out else null)) |exit| return exit;
    if (options.metrics) |path| {
        output.writeAtomic(io, path, metrics_text.written()) catch |err| return Exit.fail(1, "{s}: {s}", .{ path, @errorName(err) });
    }
    if (options.csv) |path| {
        var text = std.Io.Writer.Allocating.init(gpa);
        defer text.deinit();
        output.writeCsv(&text.writer, impl.name, options.invocation, outcomes.items) catch return Exit.fail(1, "out of memory", .{});
        output.writeAtomic(io, path, text.written()) catch |err| return Exit.fail(1, "{s}: {s}", .{ path, @errorName(err) });
        var span_buffer: [std.fs.max_path_bytes]u8 = undefined;
        output.writeSpanFile(io, gpa, &span_buffer, path, impl.name, options.invocation, outcomes.items) catch |err|
            return Exit.fail(1, "{s}: span file: {s}", .{ path, @errorName(err) });
    }
    const variant = variants.Variant{ .name = impl.name, .runtime = impl.name };
    const written = if (options.json)
        output.writeSummary(out, &variant, options.profile, options.invocation, &c, worker_counts, outcomes.items)
    else
        output.writeTable(out, impl.name, outcomes.items);
    written catch return Exit.fail(1, "cannot write to stdout", .{});
    return .{ .code = 0 };
}

pub fn main(init: std.process.Init.Minimal) u8 {
    return program.main(init, run);
}

// -- tests (zig build test-io: the harness of the program on this build's implementation) ---

const testing = std.testing;

test {
    _ = benches;
}

fn runArgs(counting: *CountingAllocator, comptime line: []const u8, out: *std.Io.Writer) Exit {
    comptime var list: []const []const u8 = &.{};
    comptime {
        var it = std.mem.tokenizeScalar(u8, line, ' ');
        while (it.next()) |w| list = list ++ .{w};
    }
    return run(testing.allocator, testing.io, counting, list, out);
}

test "the io suite lists its cases in canonical order (same as the Rust side)" {
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try testing.expectEqual(@as(u8, 0), runArgs(&counting, "--suite io --list", &aw.writer).code);
    try testing.expectEqualStrings(
        \\io 0 io_mutex_contended tasks=4
        \\io 0 io_queue_pingpong pairs=1
        \\io 0 io_queue_pingpong pairs=100
        \\io 0 io_fan_in producers=1000
        \\io 0 io_fan_out consumers=1000
        \\io 0 io_spawn
        \\io 0 io_spawn_group n=1000
        \\io 0 io_sleep d_ms=0
        \\io 0 io_sleep d_ms=10
        \\io 0 io_tcp_pingpong size=64
        \\io 0 io_tcp_pingpong size=4096
        \\io 0 io_tcp_echo_conns conns=16
        \\io 0 io_tcp_echo_conns conns=128
        \\io 0 io_tcp_connect
        \\
    , aw.written());
}

test "command line errors exit 2" {
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    const lines = .{
        .{ "--suite micro", "no benchmark matches" },
        .{ "--suite io --variant tokio", "this program runs " ++ impl.name ++ " only" },
        .{ "--suite io --workers 300", "at most 255 workers" },
        .{ "--suite io --set io_fan_tasks=0", "io_fan_tasks must be at least 1" },
    };
    inline for (lines) |line| {
        const exit = runArgs(&counting, line[0], &aw.writer);
        try testing.expectEqual(@as(u8, 2), exit.code);
        try testing.expect(std.mem.indexOf(u8, exit.message(), line[1]) != null);
    }
}

test "--metrics: only the ampere.io build records runtime metrics" {
    // The ampere.io build's --metrics is exercised end to end (tests/e2e/test_smoke.py).
    if (records_metrics) return error.SkipZigTest;
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    const exit = runArgs(&counting, "--suite io --metrics x", &aw.writer);
    try testing.expectEqual(@as(u8, 2), exit.code);
    try testing.expect(std.mem.indexOf(u8, exit.message(), "records no runtime metrics (only ampere.io does)") != null);
}

test "every io benchmark runs, checks itself and writes one row per iteration and worker count" {
    var folder: program.TestFolder = undefined;
    try folder.init();
    defer folder.cleanup();
    var csv_buffer: [std.fs.max_path_bytes]u8 = undefined;
    var meta_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const args = [_][]const u8{
        "--quick",      "--suite", "io",   "--workers", "2,1", "--set", "io_sleep_tasks=20", "--set", "iterations=2",
        "--invocation", "3",       "--csv", try folder.path(&csv_buffer, "io.csv"), "--meta", try folder.path(&meta_buffer, "io.meta.json"),
    };
    try program.expectRun(run, &args);
    const text = try folder.read("io.csv");
    defer testing.allocator.free(text);
    const counted = try program.ioSweepRows(text, impl.name ++ ",3,io,");
    // 14 cases × 2 iterations × 2 worker counts; worker count 2 first.
    try testing.expectEqual(@as(usize, 14 * 2 * 2), counted.rows);
    try testing.expectEqual(@as(usize, 14 * 2), counted.at_two_workers);
    const span_text = try folder.read("io.span.csv");
    defer testing.allocator.free(span_text);
    try testing.expect(std.mem.startsWith(u8, span_text, output.span_header ++ "\n"));
    // One span row per case and worker count.
    try testing.expectEqual(@as(usize, 1 + 14 * 2), std.mem.count(u8, span_text, "\n"));
    const meta_text = try folder.read("io.meta.json");
    defer testing.allocator.free(meta_text);
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, meta_text, .{});
    defer parsed.deinit();
    try testing.expectEqualStrings(impl.name, parsed.value.object.get("runtime").?.string);
    try testing.expectEqualStrings(impl.name, parsed.value.object.get("variant").?.string);
}

fn shortCounting(ctx: *Ctx, io: std.Io) harness.Error!void {
    // A benchmark whose task did one op too few: its own check must stop the program.
    var counter: std.atomic.Value(u64) = .init(0);
    var future = io.concurrent(struct {
        fn bump(value: *std.atomic.Value(u64)) void {
            _ = value.fetchAdd(1, .monotonic);
        }
    }.bump, .{&counter}) catch return ctx.fail("io.concurrent refused", .{});
    future.await(io);
    return ctx.expectEq("counter", counter.load(.monotonic), 2);
}

test "a benchmark that did not do its work stops the run with exit 1 and its message" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    // runAll leaves the implementation running after a failure (the process exits): an arena,
    // not the leak-checking testing allocator, and never freed — the implementation's threads
    // (ampere.io's workers, parked) use this memory until the test process ends. Freeing it
    // here was a use-after-free in a parked worker, which crashed a later test.
    // The counting allocator too (the runtime allocates through it): in the arena, not on this
    // test's stack.
    var arena = std.heap.ArenaAllocator.init(std.heap.page_allocator);
    const counting = try arena.allocator().create(CountingAllocator);
    counting.* = CountingAllocator.init(arena.allocator());
    var outcomes: std.ArrayList(Outcome) = .empty;
    const selected = [_]Selected{.{ .case = Case.io("io_spawn", "", 0, 1), .run = shortCounting }};
    const exit = runAll(counting.allocator(), counting, &c, &selected, &.{1}, &outcomes, null) orelse return error.TestUnexpectedResult;
    try testing.expectEqual(@as(u8, 1), exit.code);
    try testing.expectEqualStrings("io_spawn: counter = 1, expected 2", exit.message());
    try testing.expectEqual(@as(usize, 0), outcomes.items.len);
}
