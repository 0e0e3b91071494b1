//! ampere_bench: the ampere side of the ampere vs Tokio benchmarks.
//!
//! Same program interface, benchmarks, CSV/JSON/metadata as rust_bench (README.md in this
//! folder). Flow: parse the command line, select the runtime variant (variants.json), load
//! the constants profile and apply overrides, select the cases and plan the run (Tiers 3–4
//! once per worker count of `--workers`), then run them one by one (progress on stderr
//! between cases, never inside a timed region), and finally write the CSV and print the table
//! or the summary JSON. A benchmark that fails its own check stops the program with exit
//! code 1; a bad command line exits with 2.
//!
//! Every allocation of the program goes through one `CountingAllocator` around
//! `SystemAllocator` (glibc malloc, called the way Rust's `System` calls it), the allocator
//! the benchmarks hand to the runtime and to every primitive, so runtime-internal allocations
//! are counted as on the Rust side.
//!
//! Every benchmark of runtime/bench/README.md is registered (`benches`); none is stubbed.

const std = @import("std");
const harness = @import("harness.zig");
const SystemAllocator = @import("SystemAllocator.zig");
const constants_mod = @import("constants.zig");
const cli = @import("cli.zig");
const output = @import("output.zig");
const program = @import("program.zig");
const sync_tiers = @import("sync_tiers.zig");
const async_tiers = @import("async_tiers.zig");
const echo = @import("echo.zig");
const net = @import("net.zig");
const io_native = @import("io_native.zig");
const io_benches = @import("io_benches.zig");
const metrics = @import("metrics.zig");
const variants = @import("variants.zig");

const Constants = constants_mod.Constants;
const Case = harness.Case;
const Ctx = harness.Ctx;
const Outcome = harness.Outcome;
const CountingAllocator = harness.CountingAllocator;

/// The base runtime of this program; the default `--variant`.
const runtime_name = "ampere";

const BenchFn = *const fn (*Ctx) harness.Error!void;

const Bench = struct {
    suite: []const u8,
    tier: u8,
    name: []const u8,
    run: BenchFn,
};

/// The registered benchmarks in canonical order (README.md). echo_shared_sweep is registered
/// once `ampere` exports `RcBuffer`.
const benches = [_]Bench{
    micro(0, "floor_cas_store", sync_tiers.floorCasStore),
    micro(0, "floor_fetch_add", sync_tiers.floorFetchAdd),
    micro(1, "mutex", sync_tiers.mutex),
    micro(1, "rwlock_read", sync_tiers.rwlockRead),
    micro(1, "rwlock_write", sync_tiers.rwlockWrite),
    micro(1, "semaphore", sync_tiers.semaphore),
    micro(1, "oncecell_get", sync_tiers.oncecellGet),
    micro(1, "oncecell_set", sync_tiers.oncecellSet),
    micro(1, "notify", sync_tiers.notify),
    micro(1, "barrier", sync_tiers.barrier),
    micro(2, "channel_send", sync_tiers.channelSend),
    micro(2, "channel_recv", sync_tiers.channelRecv),
    micro(2, "channel_roundtrip", sync_tiers.channelRoundtrip),
    micro(2, "oneshot", sync_tiers.oneshot),
    micro(2, "oneshot_owned", sync_tiers.oneshotOwned),
    micro(2, "broadcast", sync_tiers.broadcast),
    micro(2, "watch", sync_tiers.watch),
    micro(2, "watch_rc", sync_tiers.watchRc),
    micro(2, "broadcast_rc", sync_tiers.broadcastRc),
    micro(3, "channel_mpmc", async_tiers.channelMpmc),
    micro(3, "channel_mpsc", async_tiers.channelMpsc),
    micro(3, "mutex_contended", async_tiers.mutexContended),
    micro(3, "rwlock_contended", async_tiers.rwlockContended),
    micro(3, "semaphore_contended", async_tiers.semaphoreContended),
    micro(4, "task_spawn", async_tiers.taskSpawn),
    micro(4, "task_spawn_batch", async_tiers.taskSpawnBatch),
    micro(4, "blocking_spawn", async_tiers.blockingSpawn),
    micro(4, "yield_many", async_tiers.yieldMany),
    micro(4, "ping_pong", async_tiers.pingPong),
    micro(4, "chained_spawn", async_tiers.chainedSpawn),
    echoBench("echo_f64"),
    echoBench("echo_string_1mib"),
    echoBench("echo_bytes_1mib"),
    echoBench("echo_bytes_sweep"),
} ++ (if (echo.has_shared) [_]Bench{echoBench("echo_shared_sweep")} else [_]Bench{}) ++ [_]Bench{
    netBench("tcp_pingpong", net.tcpPingpong),
    netBench("tcp_echo_conns", net.tcpEchoConns),
    netBench("tcp_connect", net.tcpConnect),
    netBench("tcp_stream", net.tcpStream),
    ioBench("io_queue_pingpong", io_native.queuePingpong),
    ioBench("io_fan_in", io_native.fanIn),
    ioBench("io_fan_out", io_native.fanOut),
    ioBench("io_spawn", io_native.spawn),
    ioBench("io_spawn_group", io_native.spawnGroup),
    ioBench("io_sleep", io_native.sleep),
};

/// An io-suite row on the native API (io_native.zig): the io program's benchmark name,
/// parameters and ops, run at every worker count of the sweep.
fn ioBench(name: []const u8, run_fn: BenchFn) Bench {
    return .{ .suite = "io", .tier = 0, .name = name, .run = run_fn };
}

fn netBench(name: []const u8, run_fn: BenchFn) Bench {
    return .{ .suite = "net", .tier = 0, .name = name, .run = run_fn };
}

fn echoBench(name: []const u8) Bench {
    return .{ .suite = "echo", .tier = 0, .name = name, .run = echo.run };
}

fn micro(tier: u8, name: []const u8, run_fn: BenchFn) Bench {
    return .{ .suite = "micro", .tier = tier, .name = name, .run = run_fn };
}

/// Operations per iteration of a micro benchmark (README.md table; same as the Rust side).
fn microOps(name: []const u8, c: *const Constants) u64 {
    const eql = std.mem.eql;
    if (eql(u8, name, "channel_mpmc")) return c.mpmc_producers * (c.async_ops / c.mpmc_producers);
    if (eql(u8, name, "channel_mpsc")) return c.mpsc_producers * (c.async_ops / c.mpsc_producers);
    if (eql(u8, name, "mutex_contended")) return c.contended_mutex_tasks * (c.async_ops / c.contended_mutex_tasks);
    if (eql(u8, name, "rwlock_contended")) return (c.rwlock_readers + c.rwlock_writers) * c.rwlock_ops_per_task;
    if (eql(u8, name, "semaphore_contended")) return c.contended_sem_tasks * (c.async_ops / c.contended_sem_tasks);
    if (eql(u8, name, "task_spawn") or eql(u8, name, "blocking_spawn")) return c.task_ops;
    if (eql(u8, name, "task_spawn_batch")) return (c.task_ops / c.spawn_batch_size) * c.spawn_batch_size;
    if (eql(u8, name, "yield_many")) return c.yield_tasks * c.yield_per_task;
    if (eql(u8, name, "ping_pong")) return c.ping_pong_rounds;
    if (eql(u8, name, "chained_spawn")) return c.chain_length;
    const channel_benches = [_][]const u8{ "channel_send", "channel_recv", "channel_roundtrip", "oneshot", "oneshot_owned", "broadcast", "watch", "watch_rc", "broadcast_rc" };
    for (channel_benches) |channel| if (eql(u8, name, channel)) return c.channel_ops;
    return c.sync_ops;
}

const Selected = struct { case: Case, run: BenchFn };

/// Appends the cases (benchmark × param) of `bench` to `list`.
fn appendCases(gpa: std.mem.Allocator, list: *std.ArrayList(Selected), bench: Bench, c: *const Constants) !void {
    const eql = std.mem.eql;
    if (eql(u8, bench.suite, "net")) return appendNetCases(gpa, list, bench, c);
    if (eql(u8, bench.suite, "io")) {
        var buffer: [2]Case = undefined;
        for (io_benches.cases(bench.name, c, &buffer)) |case| try list.append(gpa, .{ .case = case, .run = bench.run });
        return;
    }
    if (!eql(u8, bench.suite, "echo")) {
        try list.append(gpa, .{ .case = Case.micro(bench.tier, bench.name, microOps(bench.name, c)), .run = bench.run });
        return;
    }
    if (eql(u8, bench.name, "echo_bytes_sweep") or eql(u8, bench.name, "echo_shared_sweep")) {
        const max = if (eql(u8, bench.name, "echo_bytes_sweep")) c.echo_sweep_max_bytes else c.echo_shared_max_bytes;
        var sweep = constants_mod.Sweep.init(c.echo_sweep_min_bytes, max);
        while (sweep.next()) |size| {
            try list.append(gpa, .{ .case = Case.echo(bench.name, "size={d}", size, c.echo_sweep_n, size), .run = bench.run });
        }
        return;
    }
    const size: u64 = if (eql(u8, bench.name, "echo_f64")) 8 else c.echo_payload_bytes;
    for (c.echo_batch_sizes.items()) |n| {
        try list.append(gpa, .{ .case = Case.echo(bench.name, "n={d}", n, n, size), .run = bench.run });
    }
}

/// The net cases (BENCHMARKS.md, "Net suite"; the same on the Rust side).
fn appendNetCases(gpa: std.mem.Allocator, list: *std.ArrayList(Selected), bench: Bench, c: *const Constants) !void {
    const eql = std.mem.eql;
    const workers = c.num_workers;
    if (eql(u8, bench.name, "tcp_pingpong")) {
        for (net.pingpong_sizes) |size| try list.append(gpa, .{ .case = Case.net(bench.name, "size", size, c.net_rounds, workers), .run = bench.run });
    } else if (eql(u8, bench.name, "tcp_echo_conns")) {
        for (net.echo_conns) |conns| try list.append(gpa, .{ .case = Case.net(bench.name, "conns", conns, conns * c.net_rounds, workers), .run = bench.run });
    } else if (eql(u8, bench.name, "tcp_connect")) {
        try list.append(gpa, .{ .case = Case.net(bench.name, "", 0, c.net_connect_ops, workers), .run = bench.run });
    } else {
        std.debug.assert(eql(u8, bench.name, "tcp_stream"));
        try list.append(gpa, .{ .case = Case.net(bench.name, "size", net.stream_chunk_bytes, c.net_stream_bytes, workers), .run = bench.run });
    }
}

/// Selected cases in canonical order.
fn select(gpa: std.mem.Allocator, registry: []const Bench, options: *const cli.Options, c: *const Constants) !std.ArrayList(Selected) {
    var list: std.ArrayList(Selected) = .empty;
    errdefer list.deinit(gpa);
    for (registry) |bench| {
        if (!options.suite.includes(bench.suite)) continue;
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

/// The run order: the selected cases in canonical order, with the contiguous Tier 3–4 block
/// run once per worker count, in `worker_counts` order (one runtime per count, see
/// `Ctx.microRuntime`); every other case once.
fn plan(gpa: std.mem.Allocator, selected: []const Selected, worker_counts: []const u64) !std.ArrayList(Selected) {
    std.debug.assert(worker_counts.len >= 1);
    var list: std.ArrayList(Selected) = .empty;
    errdefer list.deinit(gpa);
    var i: usize = 0;
    while (i < selected.len) {
        if (!selected[i].case.swept()) {
            try list.append(gpa, selected[i]);
            i += 1;
            continue;
        }
        var end = i;
        while (end < selected.len and selected[end].case.swept()) end += 1;
        for (worker_counts) |workers| {
            for (selected[i..end]) |s| try list.append(gpa, .{ .case = s.case.withWorkers(workers), .run = s.run });
        }
        i = end;
    }
    return list;
}

const Exit = program.Exit;

fn usageError(comptime format: []const u8, args: anytype) Exit {
    return Exit.fail(2, format, args);
}

/// The whole program minus process concerns; writes the table/JSON/list to `out`.
fn run(gpa: std.mem.Allocator, io: std.Io, counting: *CountingAllocator, args: []const []const u8, out: *std.Io.Writer) Exit {
    var cli_diag = cli.Diagnostic{};
    const options = cli.parse(args, &cli_diag) catch return usageError("{s}", .{cli_diag.message()});
    if (options.help) {
        out.writeAll(cli.usage) catch return Exit.fail(1, "cannot write to stdout", .{});
        return .{ .code = 0 };
    }
    var variant_diag = variants.Diagnostic{};
    const variant = variants.select(gpa, runtime_name, options.variant orelse runtime_name, &variant_diag) catch
        return usageError("{s}", .{variant_diag.message()});
    var diag = constants_mod.Diagnostic{};
    var c = Constants.load(gpa, options.profile, &diag) catch return usageError("{s}", .{diag.message()});
    for (options.overrideList()) |assignment| {
        c.applyOverride(assignment, &diag) catch return usageError("{s}", .{diag.message()});
    }
    const default_counts = [_]u64{c.num_workers};
    const worker_counts: []const u64 = if (options.workers) |*w| w.items() else &default_counts;
    for (worker_counts) |count| {
        if (count > harness.workers_max) {
            return usageError("{s} {d}: ampere supports at most {d} workers", .{
                if (options.workers == null) "num_workers =" else "--workers:", count, harness.workers_max,
            });
        }
    }
    var selected = select(gpa, &benches, &options, &c) catch return Exit.fail(1, "out of memory", .{});
    defer selected.deinit(gpa);
    if (selected.items.len == 0) return usageError("no benchmark matches the suite and filters", .{});
    if (options.list) {
        for (selected.items) |*s| s.case.writeListLine(out) catch return Exit.fail(1, "cannot write to stdout", .{});
        return .{ .code = 0 };
    }
    for ([_]?[]const u8{ options.csv, options.meta, options.metrics }) |maybe_path| {
        const path = maybe_path orelse continue;
        output.checkNew(io, path) catch return usageError("{s} exists (results are never overwritten)", .{path});
        if (!output.parentExists(io, path)) return usageError("{s}: folder does not exist", .{std.fs.path.dirname(path) orelse "."});
    }
    if (options.csv) |path| {
        var span_buffer: [std.fs.max_path_bytes]u8 = undefined;
        const span = output.spanPath(&span_buffer, path) catch return Exit.fail(2, "{s}: path too long", .{path});
        output.checkNew(io, span) catch return usageError("{s} exists (results are never overwritten)", .{span});
    }
    if (options.meta) |path| {
        var arena = std.heap.ArenaAllocator.init(gpa);
        defer arena.deinit();
        var text = std.Io.Writer.Allocating.init(arena.allocator());
        output.writeMeta(&text.writer, &variant, output.Machine.read(io, arena.allocator())) catch return Exit.fail(1, "out of memory", .{});
        output.writeAtomic(io, path, text.written()) catch |err| return Exit.fail(1, "{s}: {s}", .{ path, @errorName(err) });
    }

    var planned = plan(gpa, selected.items, worker_counts) catch return Exit.fail(1, "out of memory", .{});
    defer planned.deinit(gpa);
    // Runtimes are built on first use (the micro one again whenever the worker count changes)
    // and shut down after the last benchmark. On a failure they are left running: the process
    // exits, and a failed benchmark may have left tasks behind that a shutdown would wait for.
    var runtimes = harness.Runtimes{ .allocator = gpa, .options = variant.runtimeOptions(1) };
    var outcomes: std.ArrayList(Outcome) = .empty;
    defer {
        for (outcomes.items) |o| gpa.free(o.samples);
        outcomes.deinit(gpa);
    }
    outcomes.ensureTotalCapacity(gpa, planned.items.len) catch return Exit.fail(1, "out of memory", .{});
    var metrics_text = std.Io.Writer.Allocating.init(gpa);
    defer metrics_text.deinit();
    for (planned.items) |*s| {
        const expected: usize = @intCast(if (std.mem.eql(u8, s.case.suite, "echo")) c.echo_batches else c.iterations);
        const samples = gpa.alloc(harness.Sample, expected) catch return Exit.fail(1, "out of memory", .{});
        harness.progressStart(&s.case);
        var recorder = metrics.Recorder{};
        var ctx = Ctx{ .constants = &c, .counting = counting, .case = &s.case, .samples = samples, .runtimes = &runtimes };
        if (options.metrics != null) ctx.metrics = &recorder;
        s.run(&ctx) catch {
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
        recorder.writeLine(&metrics_text.writer, variant.name, options.invocation, &s.case) catch return Exit.fail(1, "out of memory", .{});
    }
    runtimes.deinit();

    if (options.metrics) |path| {
        output.writeAtomic(io, path, metrics_text.written()) catch |err| return Exit.fail(1, "{s}: {s}", .{ path, @errorName(err) });
    }

    if (options.csv) |path| {
        var text = std.Io.Writer.Allocating.init(gpa);
        defer text.deinit();
        output.writeCsv(&text.writer, variant.name, options.invocation, outcomes.items) catch return Exit.fail(1, "out of memory", .{});
        output.writeAtomic(io, path, text.written()) catch |err| return Exit.fail(1, "{s}: {s}", .{ path, @errorName(err) });
        var span_buffer: [std.fs.max_path_bytes]u8 = undefined;
        output.writeSpanFile(io, gpa, &span_buffer, path, variant.name, options.invocation, outcomes.items) catch |err|
            return Exit.fail(1, "{s}: span file: {s}", .{ path, @errorName(err) });
    }
    const written = if (options.json)
        output.writeSummary(out, &variant, options.profile, options.invocation, &c, worker_counts, outcomes.items)
    else
        output.writeTable(out, variant.name, outcomes.items);
    written catch return Exit.fail(1, "cannot write to stdout", .{});
    return .{ .code = 0 };
}

pub fn main(init: std.process.Init.Minimal) u8 {
    return program.main(init, run);
}

test {
    _ = SystemAllocator;
    _ = program;
    _ = harness;
    _ = constants_mod;
    _ = cli;
    _ = output;
    _ = sync_tiers;
    _ = async_tiers;
    _ = echo;
    _ = net;
    _ = io_native;
    _ = metrics;
    _ = @import("LibcCopy.zig");
    _ = @import("diagnostic.zig");
    _ = variants;
}

const testing = std.testing;

fn runArgs(counting: *CountingAllocator, comptime line: []const u8, out: *std.Io.Writer) Exit {
    comptime var list: []const []const u8 = &.{};
    comptime {
        var it = std.mem.tokenizeScalar(u8, line, ' ');
        while (it.next()) |w| list = list ++ .{w};
    }
    return run(testing.allocator, testing.io, counting, list, out);
}

test "list, json and table" {
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try testing.expectEqual(@as(u8, 0), runArgs(&counting, "--quick --list", &aw.writer).code);
    try testing.expect(std.mem.startsWith(u8, aw.written(), "micro 0 floor_cas_store\nmicro 0 floor_fetch_add\nmicro 1 mutex\n"));
    try testing.expectEqual(@as(usize, 30), std.mem.count(u8, aw.written(), "\n")); // the micro suite
    aw.clearRetainingCapacity();
    try testing.expectEqual(@as(u8, 0), runArgs(&counting, "--quick --json --filter fetch", &aw.writer).code);
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, aw.written(), .{});
    defer parsed.deinit();
    const entry = parsed.value.object.get("benchmarks").?.object.get("floor_fetch_add").?.object;
    try testing.expectEqual(@as(i64, 2000), entry.get("ops_per_iter").?.integer);
    aw.clearRetainingCapacity();
    try testing.expectEqual(@as(u8, 0), runArgs(&counting, "--quick --set sync_ops=10 --set channel_ops=10 --set num_workers=2", &aw.writer).code);
    try testing.expect(std.mem.indexOf(u8, aw.written(), "(30 benchmarks, runtime ampere)") != null);
}

/// What `line` (a `--list` command line) prints; it must exit 0. The caller frees it.
fn listing(comptime line: []const u8) ![]u8 {
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try testing.expectEqual(@as(u8, 0), runArgs(&counting, line, &aw.writer).code);
    return aw.toOwnedSlice();
}

test "the net suite lists its cases in canonical order (same as the Rust side)" {
    const text = try listing("--suite net --list");
    defer testing.allocator.free(text);
    try testing.expectEqualStrings(
        \\net 0 tcp_pingpong size=64
        \\net 0 tcp_pingpong size=4096
        \\net 0 tcp_pingpong size=65536
        \\net 0 tcp_echo_conns conns=1
        \\net 0 tcp_echo_conns conns=16
        \\net 0 tcp_echo_conns conns=128
        \\net 0 tcp_connect
        \\net 0 tcp_stream size=1048576
        \\
    , text);
}

test "the io suite lists the native rows with the io program's names and params" {
    const text = try listing("--suite io --list");
    defer testing.allocator.free(text);
    try testing.expectEqualStrings(
        \\io 0 io_queue_pingpong pairs=1
        \\io 0 io_queue_pingpong pairs=100
        \\io 0 io_fan_in producers=1000
        \\io 0 io_fan_out consumers=1000
        \\io 0 io_spawn
        \\io 0 io_spawn_group n=1000
        \\io 0 io_sleep d_ms=0
        \\io 0 io_sleep d_ms=10
        \\
    , text);
    // `--suite all` runs them too, after the net suite, once per worker count.
    const all = try listing("--suite all --list");
    defer testing.allocator.free(all);
    try testing.expect(std.mem.endsWith(u8, all, "net 0 tcp_stream size=1048576\nio 0 io_queue_pingpong pairs=1\nio 0 io_queue_pingpong pairs=100\n" ++
        "io 0 io_fan_in producers=1000\nio 0 io_fan_out consumers=1000\nio 0 io_spawn\nio 0 io_spawn_group n=1000\nio 0 io_sleep d_ms=0\nio 0 io_sleep d_ms=10\n"));
}

test "a native io sweep writes suite=io rows per worker count, with metrics" {
    var folder: program.TestFolder = undefined;
    try folder.init();
    defer folder.cleanup();
    var csv_buffer: [std.fs.max_path_bytes]u8 = undefined;
    var metrics_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const args = [_][]const u8{
        "--quick", "--suite", "io", "--workers", "2,1", "--set", "io_sleep_tasks=20", "--set", "iterations=2",
        "--csv",   try folder.path(&csv_buffer, "ampere.csv"), "--metrics", try folder.path(&metrics_buffer, "ampere.metrics.jsonl"),
    };
    try program.expectRun(run, &args);
    const text = try folder.read("ampere.csv");
    defer testing.allocator.free(text);
    const counted = try program.ioSweepRows(text, "ampere,0,io,");
    // 8 cases × 2 iterations × 2 worker counts; worker count 2 first.
    try testing.expectEqual(@as(usize, 8 * 2 * 2), counted.rows);
    try testing.expectEqual(@as(usize, 8 * 2), counted.at_two_workers);
    const metrics_text = try folder.read("ampere.metrics.jsonl");
    defer testing.allocator.free(metrics_text);
    try testing.expectEqual(@as(usize, 8 * 2), std.mem.count(u8, metrics_text, "\n"));
    try testing.expect(std.mem.indexOf(u8, metrics_text, "\"benchmark\":\"io_fan_in\"") != null);
}

test "command line errors exit 2" {
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    const lines = .{
        .{ "--suite nope", "unknown suite" },
        .{ "--set nope=1", "unknown key" },
        .{ "--set sync_ops=x", "not a non-negative integer" },
        .{ "--filter zzz_no_such", "no benchmark matches" },
        .{ "--profile x", "unknown profile" },
        .{ "--workers 0", "0 is outside 1..1024" },
        .{ "--workers 1,65", "--workers: 65: ampere supports at most 64 workers" },
        .{ "--set num_workers=65", "num_workers = 65: ampere supports at most 64 workers" },
        .{ "--variant tokio", "--variant tokio: a variant of tokio; this program runs ampere variants only" },
        .{ "--variant ampere.turbo", "--variant: unknown variant 'ampere.turbo'" },
    };
    inline for (lines) |line| {
        const exit = runArgs(&counting, line[0], &aw.writer);
        try testing.expectEqual(@as(u8, 2), exit.code);
        try testing.expect(std.mem.indexOf(u8, exit.message(), line[1]) != null);
        try testing.expect(std.mem.indexOfScalar(u8, exit.message(), '\n') == null);
    }
}

test "plan: Tier 3-4 once per worker count in the given order, other tiers once" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    var options = cli.Options{ .suite = .all };
    options.filters[0] = "task_spawn";
    options.filters[1] = "mutex";
    options.filters[2] = "echo_f64";
    options.filter_len = 3;
    var selected = try select(testing.allocator, &benches, &options, &c);
    defer selected.deinit(testing.allocator);
    var planned = try plan(testing.allocator, selected.items, &.{ 4, 1 });
    defer planned.deinit(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    for (planned.items) |p| try aw.writer.print("{s}:{d} ", .{ p.case.name, p.case.workers });
    try testing.expectEqualStrings("mutex:0 mutex_contended:4 task_spawn:4 task_spawn_batch:4 " ++
        "mutex_contended:1 task_spawn:1 task_spawn_batch:1 echo_f64:1 echo_f64:1 ", aw.written());
}

test "a worker sweep runs Tier 3-4 per count; csv and json carry workers and cpu_ns" {
    var tmp = testing.tmpDir(.{});
    defer tmp.cleanup();
    var dir_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const dir = dir_buffer[0..try tmp.dir.realPath(testing.io, &dir_buffer)];
    var csv_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const csv = try std.fmt.bufPrint(&csv_buffer, "{s}/ampere.nospin.csv", .{dir});
    const args = [_][]const u8{
        "--quick",      "--suite",         "all",      "--filter", "fetch_add", "--filter", "yield_many", "--filter", "echo_f64",
        "--set",        "echo_batch_sizes=2", "--workers", "2,1",   "--variant", "ampere.nospin", "--json",   "--csv",    csv,
    };
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    const exit = run(testing.allocator, testing.io, &counting, &args, &aw.writer);
    if (exit.code != 0) std.debug.print("{s}\n", .{exit.message()});
    try testing.expectEqual(@as(u8, 0), exit.code);
    const text = try tmp.dir.readFileAlloc(testing.io, "ampere.nospin.csv", testing.allocator, .limited(1 << 20));
    defer testing.allocator.free(text);
    var lines = std.mem.splitScalar(u8, text, '\n');
    try testing.expectEqualStrings(output.csv_header, lines.next().?);
    // Expected (benchmark, workers) per row: 3 iterations each, echo 5 batches.
    const expected = [_]struct { []const u8, u64, usize }{
        .{ "floor_fetch_add", 0, 3 }, .{ "yield_many", 2, 3 }, .{ "yield_many", 1, 3 }, .{ "echo_f64", 1, 5 },
    };
    for (expected) |e| {
        for (0..e[2]) |_| {
            var fields = std.mem.splitScalar(u8, lines.next().?, ',');
            var columns: [13][]const u8 = undefined;
            for (&columns) |*column| column.* = fields.next().?;
            try testing.expect(fields.next() == null);
            try testing.expectEqualStrings("ampere.nospin", columns[0]);
            try testing.expectEqualStrings(e[0], columns[4]);
            try testing.expectEqual(e[1], try std.fmt.parseInt(u64, columns[10], 10));
            try testing.expect(try std.fmt.parseInt(u64, columns[9], 10) > 0); // cpu_ns of real work
        }
    }
    try testing.expectEqualStrings("", lines.next().?);
    try testing.expect(lines.next() == null);
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, aw.written(), .{});
    defer parsed.deinit();
    const keys = parsed.value.object.get("benchmarks").?.object.keys();
    try testing.expectEqual(@as(usize, 4), keys.len);
    try testing.expectEqualStrings("floor_fetch_add", keys[0]);
    try testing.expectEqualStrings("yield_many@w2", keys[1]);
    try testing.expectEqualStrings("yield_many@w1", keys[2]);
    try testing.expectEqualStrings("echo_f64[n=2]", keys[3]);
    const metadata = parsed.value.object.get("metadata").?.object;
    try testing.expectEqualStrings("ampere.nospin", metadata.get("variant").?.string);
    try testing.expectEqual(@as(usize, 2), metadata.get("workers").?.array.items.len);
}

test "quick run writes csv and meta, and never overwrites" {
    var tmp = testing.tmpDir(.{});
    defer tmp.cleanup();
    var dir_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const dir = dir_buffer[0..try tmp.dir.realPath(testing.io, &dir_buffer)];
    var csv_buffer: [std.fs.max_path_bytes]u8 = undefined;
    var meta_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const csv = try std.fmt.bufPrint(&csv_buffer, "{s}/ampere.csv", .{dir});
    const meta = try std.fmt.bufPrint(&meta_buffer, "{s}/ampere.meta.json", .{dir});
    const args = [_][]const u8{ "--quick", "--filter", "floor", "--invocation", "1", "--csv", csv, "--meta", meta };
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try testing.expectEqual(@as(u8, 0), run(testing.allocator, testing.io, &counting, &args, &aw.writer).code);
    const text = try tmp.dir.readFileAlloc(testing.io, "ampere.csv", testing.allocator, .limited(1 << 20));
    defer testing.allocator.free(text);
    var lines = std.mem.splitScalar(u8, text, '\n');
    try testing.expectEqualStrings(output.csv_header, lines.next().?);
    const first = lines.next().?;
    try testing.expect(std.mem.startsWith(u8, first, "ampere,1,micro,0,floor_cas_store,,0,2000,"));
    var columns = std.mem.splitScalar(u8, first, ',');
    for (0..10) |_| _ = columns.next();
    try testing.expectEqualStrings("0", columns.next().?); // workers: Tier 0 has no runtime
    try testing.expectEqual(@as(usize, 1 + 3 + 3 + 1), std.mem.count(u8, text, "\n") + 1);
    const meta_text = try tmp.dir.readFileAlloc(testing.io, "ampere.meta.json", testing.allocator, .limited(1 << 20));
    defer testing.allocator.free(meta_text);
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, meta_text, .{});
    defer parsed.deinit();
    try testing.expectEqualStrings("ampere", parsed.value.object.get("runtime").?.string);
    try testing.expectEqualStrings("ampere", parsed.value.object.get("variant").?.string);
    try testing.expectEqual(@as(i64, 2), parsed.value.object.get("schema_version").?.integer);
    // The span file beside the CSV: one row per case, its span at least its samples' sum.
    const span_text = try tmp.dir.readFileAlloc(testing.io, "ampere.span.csv", testing.allocator, .limited(1 << 20));
    defer testing.allocator.free(span_text);
    var span_lines = std.mem.splitScalar(u8, span_text, '\n');
    try testing.expectEqualStrings(output.span_header, span_lines.next().?);
    const span_first = span_lines.next().?;
    try testing.expect(std.mem.startsWith(u8, span_first, "ampere,1,micro,0,floor_cas_store,,0,3,6000,"));
    try testing.expectEqual(@as(usize, 1 + 2 + 1), std.mem.count(u8, span_text, "\n") + 1);
    var span_columns = std.mem.splitScalar(u8, span_first, ',');
    for (0..9) |_| _ = span_columns.next();
    const span_ns = try std.fmt.parseInt(u64, span_columns.next().?, 10);
    var sample_sum_ns: u64 = 0;
    var sample_lines = std.mem.splitScalar(u8, text, '\n');
    _ = sample_lines.next();
    for (0..3) |_| {
        var fields = std.mem.splitScalar(u8, sample_lines.next().?, ',');
        for (0..8) |_| _ = fields.next();
        sample_sum_ns += try std.fmt.parseInt(u64, fields.next().?, 10);
    }
    try testing.expect(span_ns >= sample_sum_ns);
    try testing.expectEqual(@as(u8, 2), run(testing.allocator, testing.io, &counting, &args, &aw.writer).code);
}

test "--metrics writes one JSON line per runtime benchmark, counting measured iterations" {
    var tmp = testing.tmpDir(.{});
    defer tmp.cleanup();
    var dir_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const dir = dir_buffer[0..try tmp.dir.realPath(testing.io, &dir_buffer)];
    var path_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const path = try std.fmt.bufPrint(&path_buffer, "{s}/ampere.metrics.jsonl", .{dir});
    const args = [_][]const u8{ "--quick", "--suite", "all", "--filter", "task_spawn", "--filter", "floor_fetch", "--filter", "echo_f64", "--set", "echo_batch_sizes=2", "--workers", "1,2", "--variant", "ampere.nospin", "--metrics", path };
    var counting = CountingAllocator.init(testing.allocator);
    var aw = std.Io.Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try testing.expectEqual(@as(u8, 0), run(testing.allocator, testing.io, &counting, &args, &aw.writer).code);
    const text = try tmp.dir.readFileAlloc(testing.io, "ampere.metrics.jsonl", testing.allocator, .limited(1 << 20));
    defer testing.allocator.free(text);
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    // task_spawn, task_spawn_batch and echo_f64 ran on a runtime; floor_fetch_add did not.
    var lines = std.mem.splitScalar(u8, std.mem.trimEnd(u8, text, "\n"), '\n');
    // The sweep runs Tier 4 at 1 worker, then at 2; echo once.
    const expected = [_]struct { name: []const u8, workers: i64, polls_at_least: i64 }{
        .{ .name = "task_spawn", .workers = 1, .polls_at_least = @intCast(2 * c.task_ops * c.iterations) },
        .{ .name = "task_spawn_batch", .workers = 1, .polls_at_least = @intCast(c.task_ops * c.iterations) },
        .{ .name = "task_spawn", .workers = 2, .polls_at_least = @intCast(2 * c.task_ops * c.iterations) },
        .{ .name = "task_spawn_batch", .workers = 2, .polls_at_least = @intCast(c.task_ops * c.iterations) },
        .{ .name = "echo_f64", .workers = 1, .polls_at_least = @intCast(2 * c.echo_batches) },
    };
    for (expected) |want| {
        const line = lines.next() orelse return error.TestUnexpectedResult;
        const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, line, .{});
        defer parsed.deinit();
        const object = parsed.value.object;
        try testing.expectEqualStrings("ampere.nospin", object.get("runtime").?.string);
        try testing.expectEqualStrings(want.name, object.get("benchmark").?.string);
        // The nospin variant's runtime never spins.
        try testing.expectEqual(@as(i64, 0), object.get("total").?.object.get("spin_ns").?.integer);
        try testing.expectEqual(want.workers, object.get("workers").?.integer);
        try testing.expectEqual(@as(usize, @intCast(want.workers)), object.get("per_worker").?.array.items.len);
        const iterations: u64 = if (std.mem.eql(u8, want.name, "echo_f64")) c.echo_batches else c.iterations;
        try testing.expectEqual(@as(i64, @intCast(iterations)), object.get("iterations").?.integer);
        // Every spawned task is polled at least once (task_spawn: the task and its driver).
        try testing.expect(object.get("total").?.object.get("polls").?.integer >= want.polls_at_least);
    }
    try testing.expect(lines.next() == null);
}

test "echo cases expand like the Rust side" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "full", &diag);
    var list: std.ArrayList(Selected) = .empty;
    defer list.deinit(testing.allocator);
    const names = [_][]const u8{ "echo_f64", "echo_string_1mib", "echo_bytes_1mib", "echo_bytes_sweep", "echo_shared_sweep" };
    for (names) |name| {
        try appendCases(testing.allocator, &list, .{ .suite = "echo", .tier = 0, .name = name, .run = sync_tiers.floorCasStore }, &c);
    }
    // 3 × 3 batch sizes + 18 bytes sizes (8 B … 1 MiB) + 7 shared sizes (8 … 512 B).
    try testing.expectEqual(@as(usize, 9 + 18 + 7), list.items.len);
    try testing.expectEqualStrings("n=1", list.items[0].case.param());
    try testing.expectEqual(@as(u64, 1 << 20), list.items[9 + 17].case.size);
    try testing.expectEqualStrings("size=512", list.items[list.items.len - 1].case.param());
    try testing.expectEqual(@as(u64, 100), list.items[list.items.len - 1].case.ops);
}

test "ops follow the README table" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "full", &diag);
    try testing.expectEqual(@as(u64, 1_000_000), microOps("mutex", &c));
    try testing.expectEqual(@as(u64, 100_000), microOps("watch", &c));
    try testing.expectEqual(@as(u64, 100_000), microOps("watch_rc", &c));
    try testing.expectEqual(@as(u64, 100_000), microOps("broadcast_rc", &c));
    try testing.expectEqual(@as(u64, 100_000), microOps("oneshot_owned", &c));
    try testing.expectEqual(@as(u64, 10_002), microOps("rwlock_contended", &c));
    try testing.expectEqual(@as(u64, 1_000), microOps("task_spawn_batch", &c));
    try testing.expectEqual(@as(u64, 200_000), microOps("yield_many", &c));
    try testing.expectEqual(@as(u64, 10_000), microOps("channel_mpmc", &c));
}
