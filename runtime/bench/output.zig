//! Output formats: CSV rows, the summary JSON, the human table, the metadata JSON (with the
//! machine facts), and atomic file writes. Same columns, keys, key order and layout as the
//! Rust side (rust_bench/src/output.rs): JSON objects pretty-printed with two-space
//! indentation, lists inline, floats in shortest round-trip form with a `.0` when integral.

const std = @import("std");
const builtin = @import("builtin");
const ampere = @import("ampere");
const harness = @import("harness.zig");
const constants_mod = @import("constants.zig");
const variants = @import("variants.zig");

const Writer = std.Io.Writer;
const Outcome = harness.Outcome;
const Constants = constants_mod.Constants;
const Variant = variants.Variant;

/// Version of the data contract the CSV and meta.json follow (data/README.md).
pub const schema_version = 2;

/// The CSV header of schema 2, in the contract's column order.
pub const csv_header = "runtime,invocation,suite,tier,benchmark,param,iteration,ops,elapsed_ns,cpu_ns,workers,alloc_bytes,alloc_count";

/// The CSV text of all measured rows; `runtime` is the variant name (`ampere.nospin`).
pub fn writeCsv(out: *Writer, runtime: []const u8, invocation: u64, outcomes: []const Outcome) Writer.Error!void {
    try out.print("{s}\n", .{csv_header});
    for (outcomes) |outcome| {
        const case = &outcome.case;
        for (outcome.samples, 0..) |s, iteration| {
            try out.print("{s},{d},{s},{d},{s},{s},{d},{d},{d},{d},{d},{d},{d}\n", .{
                runtime,  invocation,    case.suite, case.tier,      case.name,     case.param(),
                iteration, case.ops, s.elapsed_ns, s.cpu_ns, case.workers, s.alloc_bytes, s.alloc_count,
            });
        }
    }
}

/// The header of `<runtime>.span.csv` (data/README.md): one row per case and invocation, the
/// whole measured span of the case (`harness.Span`), keyed like the CSV rows.
pub const span_header = "runtime,invocation,suite,tier,benchmark,param,workers,iterations,ops,elapsed_ns,cpu_ns";

/// The span CSV of every case (one row each; a case without samples has none).
pub fn writeSpanCsv(out: *Writer, runtime: []const u8, invocation: u64, outcomes: []const Outcome) Writer.Error!void {
    try out.print("{s}\n", .{span_header});
    for (outcomes) |outcome| {
        if (outcome.samples.len == 0) continue;
        const case = &outcome.case;
        const span = harness.Span.of(outcome.samples, case.ops);
        try out.print("{s},{d},{s},{d},{s},{s},{d},{d},{d},{d},{d}\n", .{
            runtime,         invocation, case.suite,      case.tier,   case.name, case.param(),
            case.workers, span.iterations, span.ops, span.elapsed_ns, span.cpu_ns,
        });
    }
}

/// Where the span CSV of `--csv PATH` goes: beside it, `X.csv` -> `X.span.csv` (a path not
/// ending in `.csv` gets `.span.csv` appended).
pub fn spanPath(buffer: []u8, csv_path: []const u8) error{NoSpaceLeft}![]const u8 {
    const stem = if (std.mem.endsWith(u8, csv_path, ".csv")) csv_path[0 .. csv_path.len - 4] else csv_path;
    return std.fmt.bufPrint(buffer, "{s}.span.csv", .{stem});
}

/// A JSON float as serde_json writes it: shortest round-trip digits, `.0` if integral.
fn writeFloat(out: *Writer, value: f64) Writer.Error!void {
    if (!std.math.isFinite(value)) return out.writeAll("null");
    var buffer: [64]u8 = undefined;
    const text = std.fmt.bufPrint(&buffer, "{d}", .{value}) catch unreachable; // 64 bytes suffice
    try out.writeAll(text);
    if (std.mem.indexOfAny(u8, text, ".e") == null) try out.writeAll(".0");
}

fn writeString(out: *Writer, text: []const u8) Writer.Error!void {
    try out.print("{f}", .{std.json.fmt(text, .{})});
}

fn indent(out: *Writer, depth: usize) Writer.Error!void {
    try out.splatByteAll(' ', 2 * depth);
}

/// `"key": ` at `depth`, preceded by `,\n` unless it is the first field.
fn key(out: *Writer, depth: usize, first: bool, name: []const u8) Writer.Error!void {
    if (!first) try out.writeAll(",\n");
    try indent(out, depth);
    try writeString(out, name);
    try out.writeAll(": ");
}

fn writeConstants(out: *Writer, c: *const Constants, depth: usize) Writer.Error!void {
    try out.writeAll("{\n");
    inline for (Constants.fields, 0..) |field, i| {
        try key(out, depth + 1, i == 0, field.name);
        if (field.type == constants_mod.List) {
            try out.writeByte('[');
            for (@field(c, field.name).items(), 0..) |v, j| {
                if (j > 0) try out.writeAll(", ");
                try out.print("{d}", .{v});
            }
            try out.writeByte(']');
        } else {
            try out.print("{d}", .{@field(c, field.name)});
        }
    }
    try out.writeByte('\n');
    try indent(out, depth);
    try out.writeByte('}');
}

/// The variant's settings as a JSON object, in `variants.known_settings` order.
fn writeSettings(out: *Writer, variant: *const Variant, depth: usize) Writer.Error!void {
    var first = true;
    for (variants.known_settings, variant.values) |setting, value_or_null| {
        const value = value_or_null orelse continue;
        if (first) try out.writeAll("{\n");
        try key(out, depth + 1, first, setting.name);
        try out.print("{d}", .{value});
        first = false;
    }
    if (first) return out.writeAll("{}");
    try out.writeByte('\n');
    try indent(out, depth);
    try out.writeByte('}');
}

/// The summary JSON (`--json`). `worker_counts` are the Tier 3–4 counts of the run; with
/// more than one, Tier 3–4 keys get an `@w<N>` suffix.
pub fn writeSummary(
    out: *Writer,
    variant: *const Variant,
    profile: []const u8,
    invocation: u64,
    c: *const Constants,
    worker_counts: []const u64,
    outcomes: []const Outcome,
) Writer.Error!void {
    try out.writeAll("{\n");
    try key(out, 1, true, "metadata");
    try out.writeAll("{\n");
    try key(out, 2, true, "runtime");
    try writeString(out, variant.runtime);
    try key(out, 2, false, "variant");
    try writeString(out, variant.name);
    try key(out, 2, false, "variant_settings");
    try writeSettings(out, variant, 2);
    try key(out, 2, false, "profile");
    try writeString(out, profile);
    try key(out, 2, false, "invocation");
    try out.print("{d}", .{invocation});
    try key(out, 2, false, "workers");
    try out.writeByte('[');
    for (worker_counts, 0..) |count, i| {
        if (i > 0) try out.writeAll(", ");
        try out.print("{d}", .{count});
    }
    try out.writeByte(']');
    try key(out, 2, false, "constants");
    try writeConstants(out, c, 2);
    try out.writeByte('\n');
    try indent(out, 1);
    try out.writeByte('}');
    try key(out, 1, false, "benchmarks");
    if (outcomes.len == 0) {
        try out.writeAll("{}");
    } else {
        try out.writeAll("{\n");
        for (outcomes, 0..) |*outcome, i| {
            const stats = outcome.stats;
            if (i > 0) try out.writeAll(",\n");
            try indent(out, 2);
            try out.writeByte('"');
            try outcome.case.writeKey(out, worker_counts.len > 1);
            try out.writeAll("\": {\n");
            try key(out, 3, true, "suite");
            try writeString(out, outcome.case.suite);
            try key(out, 3, false, "tier");
            try out.print("{d}", .{outcome.case.tier});
            try key(out, 3, false, "param");
            try writeString(out, outcome.case.param());
            try key(out, 3, false, "workers");
            try out.print("{d}", .{outcome.case.workers});
            try key(out, 3, false, "ns_per_op");
            try writeFloat(out, stats.ns_per_op);
            try key(out, 3, false, "ops_per_sec");
            try writeFloat(out, stats.ops_per_sec);
            try key(out, 3, false, "median_ns");
            try out.print("{d}", .{stats.median_ns});
            try key(out, 3, false, "min_ns");
            try out.print("{d}", .{stats.min_ns});
            try key(out, 3, false, "cpu_ns_per_op");
            try writeFloat(out, stats.cpu_ns_per_op);
            try key(out, 3, false, "median_cpu_ns");
            try out.print("{d}", .{stats.median_cpu_ns});
            try key(out, 3, false, "ops_per_iter");
            try out.print("{d}", .{outcome.case.ops});
            try key(out, 3, false, "bytes_per_op");
            try writeFloat(out, stats.bytes_per_op);
            try key(out, 3, false, "allocs_per_op");
            try writeFloat(out, stats.allocs_per_op);
            try out.writeByte('\n');
            try indent(out, 2);
            try out.writeByte('}');
        }
        try out.writeByte('\n');
        try indent(out, 1);
        try out.writeByte('}');
    }
    try out.writeAll("\n}\n");
}

/// The human table (default stdout).
pub fn writeTable(out: *Writer, runtime: []const u8, outcomes: []const Outcome) Writer.Error!void {
    try out.print("{s:<6} {s:>4}  {s:<20} {s:<12} {s:>7} {s:>14} {s:>16} {s:>14} {s:>14} {s:>14} {s:>12} {s:>10}\n", .{
        "suite", "tier", "benchmark", "param", "workers", "ns/op", "ops/sec", "median_ns", "min_ns", "cpu_ns/op", "B/op", "allocs/op",
    });
    for (outcomes) |*o| {
        const s = o.stats;
        try out.print("{s:<6} {d:>4}  {s:<20} {s:<12} {d:>7} {d:>14.3} {d:>16.0} {d:>14} {d:>14} {d:>14.3} {d:>12.3} {d:>10.4}\n", .{
            o.case.suite, o.case.tier,     o.case.name, o.case.param(), o.case.workers,  s.ns_per_op,
            s.ops_per_sec, s.median_ns,    s.min_ns,    s.cpu_ns_per_op, s.bytes_per_op, s.allocs_per_op,
        });
    }
    try out.print("({d} benchmarks, runtime {s})\n", .{ outcomes.len, runtime });
}

// -- metadata -------------------------------------------------------------------------------

/// Machine facts, read the same way as the Rust side: /proc/cpuinfo (`model name`, number of
/// `processor` lines), /proc/meminfo (`MemTotal`), /proc/sys/kernel/{hostname,osrelease},
/// /etc/os-release (`PRETTY_NAME`). Unreadable facts are null.
pub const Machine = struct {
    hostname: ?[]const u8,
    arch: []const u8,
    cpu_model: ?[]const u8,
    logical_cores: ?u64,
    memory_bytes: ?u64,
    kernel: ?[]const u8,
    os: ?[]const u8,

    /// Reads the facts; the strings live in `arena`.
    pub fn read(io: std.Io, arena: std.mem.Allocator) Machine {
        const cpuinfo = readFile(io, arena, "/proc/cpuinfo") orelse "";
        const meminfo = readFile(io, arena, "/proc/meminfo") orelse "";
        const os_release = readFile(io, arena, "/etc/os-release") orelse "";
        const cores = countFields(cpuinfo, "processor");
        return .{
            .hostname = trimmed(readFile(io, arena, "/proc/sys/kernel/hostname")),
            .arch = @tagName(builtin.cpu.arch),
            .cpu_model = fieldValue(cpuinfo, "model name"),
            .logical_cores = if (cores > 0) cores else null,
            .memory_bytes = memTotalBytes(meminfo),
            .kernel = trimmed(readFile(io, arena, "/proc/sys/kernel/osrelease")),
            .os = prettyName(os_release),
        };
    }
};

/// Reads to the end of the file, streaming: /proc files report size 0, and std's
/// `Dir.readFileAlloc` (a positional reader) then returns nothing.
fn readFile(io: std.Io, arena: std.mem.Allocator, path: []const u8) ?[]const u8 {
    const file = std.Io.Dir.cwd().openFile(io, path, .{}) catch return null;
    defer file.close(io);
    var reader = file.readerStreaming(io, &.{});
    return reader.interface.allocRemaining(arena, .limited(4 << 20)) catch null;
}

fn trimmed(text: ?[]const u8) ?[]const u8 {
    return if (text) |t| std.mem.trim(u8, t, " \t\r\n") else null;
}

/// `name` of a `name : value` line, trimmed.
fn fieldName(line: []const u8) ?[]const u8 {
    const colon = std.mem.indexOfScalar(u8, line, ':') orelse return null;
    return std.mem.trim(u8, line[0..colon], " \t");
}

/// Value of the first `name : value` line whose name is `name`.
pub fn fieldValue(text: []const u8, name: []const u8) ?[]const u8 {
    var lines = std.mem.splitScalar(u8, text, '\n');
    while (lines.next()) |line| {
        const found = fieldName(line) orelse continue;
        if (std.mem.eql(u8, found, name)) {
            const colon = std.mem.indexOfScalar(u8, line, ':').?;
            return std.mem.trim(u8, line[colon + 1 ..], " \t\r");
        }
    }
    return null;
}

fn countFields(text: []const u8, name: []const u8) u64 {
    var count: u64 = 0;
    var lines = std.mem.splitScalar(u8, text, '\n');
    while (lines.next()) |line| {
        const found = fieldName(line) orelse continue;
        if (std.mem.eql(u8, found, name)) count += 1;
    }
    return count;
}

/// `MemTotal:  24576000 kB` → bytes.
pub fn memTotalBytes(meminfo: []const u8) ?u64 {
    const value = fieldValue(meminfo, "MemTotal") orelse return null;
    var words = std.mem.tokenizeAny(u8, value, " \t");
    const kib = std.fmt.parseInt(u64, words.next() orelse return null, 10) catch return null;
    return kib * 1024;
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → the unquoted value.
pub fn prettyName(os_release: []const u8) ?[]const u8 {
    const prefix = "PRETTY_NAME=";
    var lines = std.mem.splitScalar(u8, os_release, '\n');
    while (lines.next()) |line| {
        if (std.mem.startsWith(u8, line, prefix)) {
            const value = std.mem.trim(u8, line[prefix.len..], " \t\r");
            return std.mem.trim(u8, std.mem.trim(u8, value, "\""), "'");
        }
    }
    return null;
}

fn writeOptString(out: *Writer, text: ?[]const u8) Writer.Error!void {
    if (text) |t| try writeString(out, t) else try out.writeAll("null");
}

fn writeOptInt(out: *Writer, value: ?u64) Writer.Error!void {
    if (value) |v| try out.print("{d}", .{v}) else try out.writeAll("null");
}

/// The runtime's version (ampere.version once the runtime exports it; build.zig.zon says 0.1.0).
pub const ampere_version: []const u8 = if (@hasDecl(ampere, "version")) ampere.version else "0.1.0";

/// The metadata JSON (`--meta`).
pub fn writeMeta(out: *Writer, variant: *const Variant, machine: Machine) Writer.Error!void {
    try out.writeAll("{\n");
    try key(out, 1, true, "schema_version");
    try out.print("{d}", .{schema_version});
    try key(out, 1, false, "runtime");
    std.debug.assert(std.mem.eql(u8, variant.runtime, "ampere"));
    try writeString(out, variant.runtime);
    try key(out, 1, false, "variant");
    try writeString(out, variant.name);
    try key(out, 1, false, "variant_settings");
    try writeSettings(out, variant, 1);
    try key(out, 1, false, "runtime_version");
    try writeString(out, ampere_version);
    try key(out, 1, false, "compiler");
    try writeString(out, "zig");
    try key(out, 1, false, "compiler_version");
    try writeString(out, builtin.zig_version_string);
    try key(out, 1, false, "tokio_version");
    try out.writeAll("null");
    try key(out, 1, false, "build_mode");
    try writeString(out, @tagName(builtin.mode));
    try key(out, 1, false, "target_cpu");
    // The CPU model the code was compiled for (build.zig's default target is the host).
    try writeString(out, builtin.cpu.model.name);
    try key(out, 1, false, "allocator");
    try writeString(out, "glibc malloc via CountingAllocator");
    try key(out, 1, false, "machine");
    try out.writeAll("{\n");
    try key(out, 2, true, "hostname");
    try writeOptString(out, machine.hostname);
    try key(out, 2, false, "arch");
    try writeString(out, machine.arch);
    try key(out, 2, false, "cpu_model");
    try writeOptString(out, machine.cpu_model);
    try key(out, 2, false, "logical_cores");
    try writeOptInt(out, machine.logical_cores);
    try key(out, 2, false, "memory_bytes");
    try writeOptInt(out, machine.memory_bytes);
    try key(out, 2, false, "kernel");
    try writeOptString(out, machine.kernel);
    try key(out, 2, false, "os");
    try writeOptString(out, machine.os);
    try out.writeAll("\n  }\n}\n");
}

// -- files ----------------------------------------------------------------------------------

pub const FileError = error{ FileExists, WriteFailed };

/// Fails when `path` exists: results are never overwritten.
pub fn checkNew(io: std.Io, path: []const u8) FileError!void {
    std.Io.Dir.cwd().access(io, path, .{}) catch |err| switch (err) {
        error.FileNotFound => return,
        else => return error.FileExists, // unreadable counts as present: never clobber it
    };
    return error.FileExists;
}

/// Whether the folder that would hold `path` exists.
pub fn parentExists(io: std.Io, path: []const u8) bool {
    const dir = std.fs.path.dirname(path) orelse return true;
    var handle = std.Io.Dir.cwd().openDir(io, dir, .{}) catch return false;
    handle.close(io);
    return true;
}

/// Writes the span CSV of `--csv csv_path` beside it (`spanPath`), atomically; the path it
/// wrote is put in `path_buffer` for the caller's error message.
pub fn writeSpanFile(
    io: std.Io,
    gpa: std.mem.Allocator,
    path_buffer: []u8,
    csv_path: []const u8,
    runtime: []const u8,
    invocation: u64,
    outcomes: []const Outcome,
) (FileError || error{ NoSpaceLeft, OutOfMemory })!void {
    const path = try spanPath(path_buffer, csv_path);
    var text = std.Io.Writer.Allocating.init(gpa);
    defer text.deinit();
    writeSpanCsv(&text.writer, runtime, invocation, outcomes) catch return error.OutOfMemory;
    try writeAtomic(io, path, text.written());
}

/// Writes `text` to `path` atomically: a temporary file in the same folder, then a rename.
/// Refuses to replace an existing file.
pub fn writeAtomic(io: std.Io, path: []const u8, text: []const u8) FileError!void {
    try checkNew(io, path);
    var tmp_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const dir = std.fs.path.dirname(path);
    const base = std.fs.path.basename(path);
    const pid = std.os.linux.getpid();
    const tmp = if (dir) |d|
        std.fmt.bufPrint(&tmp_buffer, "{s}/.{s}.{d}.tmp", .{ d, base, pid }) catch return error.WriteFailed
    else
        std.fmt.bufPrint(&tmp_buffer, ".{s}.{d}.tmp", .{ base, pid }) catch return error.WriteFailed;
    const cwd = std.Io.Dir.cwd();
    {
        const file = cwd.createFile(io, tmp, .{ .exclusive = true }) catch return error.WriteFailed;
        defer file.close(io);
        file.writeStreamingAll(io, text) catch {
            cwd.deleteFile(io, tmp) catch {};
            return error.WriteFailed;
        };
    }
    cwd.rename(tmp, cwd, path, io) catch {
        cwd.deleteFile(io, tmp) catch {};
        return error.WriteFailed;
    };
}

const testing = std.testing;

fn testOutcome(samples: []const harness.Sample) Outcome {
    return Outcome.init(harness.Case.micro(1, "mutex", 10), samples, testing.allocator) catch unreachable;
}

const test_samples = [_]harness.Sample{
    .{ .elapsed_ns = 100, .cpu_ns = 90, .alloc_bytes = 0, .alloc_count = 0 },
    .{ .elapsed_ns = 120, .cpu_ns = 130, .alloc_bytes = 20, .alloc_count = 2 },
};

const test_variant = Variant{ .name = "ampere.nospin", .runtime = "ampere", .values = .{ 0, null, null, null, null, null } };

test "csv header is schema 2 in the contract's order" {
    try testing.expectEqualStrings(
        "runtime,invocation,suite,tier,benchmark,param,iteration,ops,elapsed_ns,cpu_ns,workers,alloc_bytes,alloc_count",
        csv_header,
    );
}

test "csv has a header and one row per sample, with cpu_ns and workers" {
    var aw = Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    const spawn = try Outcome.init(harness.Case.micro(4, "task_spawn", 10).withWorkers(2), &test_samples, testing.allocator);
    const echo = try Outcome.init(harness.Case.echo("echo_f64", "n={d}", 10, 10, 8), test_samples[0..1], testing.allocator);
    try writeCsv(&aw.writer, "ampere.nospin", 2, &.{ testOutcome(&test_samples), spawn, echo });
    try testing.expectEqualStrings(csv_header ++ "\n" ++
        "ampere.nospin,2,micro,1,mutex,,0,10,100,90,0,0,0\n" ++
        "ampere.nospin,2,micro,1,mutex,,1,10,120,130,0,20,2\n" ++
        "ampere.nospin,2,micro,4,task_spawn,,0,10,100,90,2,0,0\n" ++
        "ampere.nospin,2,micro,4,task_spawn,,1,10,120,130,2,20,2\n" ++
        "ampere.nospin,2,echo,0,echo_f64,n=10,0,10,100,90,1,0,0\n", aw.written());
}

test "span csv: one row per case from the first sample's start to the last one's stop" {
    var aw = Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    const stamped = [_]harness.Sample{
        .{ .elapsed_ns = 100, .cpu_ns = 90, .alloc_bytes = 0, .alloc_count = 0, .start_ns = 5000, .start_cpu_ns = 700, .stop_ns = 5100, .stop_cpu_ns = 790 },
        .{ .elapsed_ns = 120, .cpu_ns = 130, .alloc_bytes = 0, .alloc_count = 0, .start_ns = 5400, .start_cpu_ns = 1200, .stop_ns = 5520, .stop_cpu_ns = 1330 },
    };
    const spawn = try Outcome.init(harness.Case.micro(4, "task_spawn", 10).withWorkers(2), &stamped, testing.allocator);
    const echo = try Outcome.init(harness.Case.echo("echo_f64", "n={d}", 10, 10, 8), stamped[0..1], testing.allocator);
    try writeSpanCsv(&aw.writer, "ampere", 3, &.{ spawn, echo });
    try testing.expectEqualStrings(span_header ++ "\n" ++
        "ampere,3,micro,4,task_spawn,,2,2,20,520,630\n" ++
        "ampere,3,echo,0,echo_f64,n=10,1,1,10,100,90\n", aw.written());
    var buffer: [64]u8 = undefined;
    try testing.expectEqualStrings("out/ampere.3.span.csv", try spanPath(&buffer, "out/ampere.3.csv"));
    try testing.expectEqualStrings("results.span.csv", try spanPath(&buffer, "results"));
}

test "summary is valid JSON of the documented shape" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    var aw = Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try writeSummary(&aw.writer, &test_variant, "quick", 0, &c, &.{4}, &.{testOutcome(&test_samples)});
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, aw.written(), .{});
    defer parsed.deinit();
    const root = parsed.value.object;
    const metadata = root.get("metadata").?.object;
    try testing.expectEqualStrings("ampere", metadata.get("runtime").?.string);
    try testing.expectEqualStrings("ampere.nospin", metadata.get("variant").?.string);
    try testing.expectEqual(@as(i64, 0), metadata.get("variant_settings").?.object.get("spin_before_park_ns").?.integer);
    try testing.expectEqual(@as(i64, 4), metadata.get("workers").?.array.items[0].integer);
    const sizes = metadata.get("constants").?.object.get("echo_batch_sizes").?.array;
    try testing.expectEqual(@as(i64, 10), sizes.items[1].integer);
    const m = root.get("benchmarks").?.object.get("mutex").?.object;
    try testing.expectEqual(@as(i64, 110), m.get("median_ns").?.integer);
    try testing.expectEqual(@as(f64, 11.0), m.get("ns_per_op").?.float);
    try testing.expectEqual(@as(i64, 110), m.get("median_cpu_ns").?.integer);
    try testing.expectEqual(@as(f64, 11.0), m.get("cpu_ns_per_op").?.float);
    try testing.expectEqual(@as(i64, 0), m.get("workers").?.integer);
    try testing.expectEqual(@as(f64, 0.1), m.get("allocs_per_op").?.float);
    try testing.expectEqualStrings("", m.get("param").?.string);
    try testing.expect(std.mem.indexOf(u8, aw.written(), "\"ns_per_op\": 11.0,") != null);
}

test "summary keys get @w<N> for Tier 3-4 only when several counts run" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    const base = Variant{ .name = "ampere", .runtime = "ampere" };
    var outcomes: [3]Outcome = undefined;
    outcomes[0] = testOutcome(&test_samples);
    outcomes[1] = try Outcome.init(harness.Case.micro(4, "task_spawn", 10).withWorkers(1), &test_samples, testing.allocator);
    outcomes[2] = try Outcome.init(harness.Case.micro(4, "task_spawn", 10).withWorkers(2), &test_samples, testing.allocator);
    var aw = Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try writeSummary(&aw.writer, &base, "quick", 0, &c, &.{ 1, 2 }, &outcomes);
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, aw.written(), .{});
    defer parsed.deinit();
    const benchmarks = parsed.value.object.get("benchmarks").?.object;
    try testing.expectEqualStrings("mutex", benchmarks.keys()[0]);
    try testing.expectEqualStrings("task_spawn@w1", benchmarks.keys()[1]);
    try testing.expectEqualStrings("task_spawn@w2", benchmarks.keys()[2]);
    try testing.expectEqual(@as(i64, 2), benchmarks.get("task_spawn@w2").?.object.get("workers").?.integer);
    try testing.expect(parsed.value.object.get("metadata").?.object.get("variant_settings").?.object.count() == 0);
    aw.clearRetainingCapacity();
    try writeSummary(&aw.writer, &base, "quick", 0, &c, &.{2}, outcomes[2..]);
    try testing.expect(std.mem.indexOf(u8, aw.written(), "\"task_spawn\": {") != null);
}

test "empty summary and table" {
    var diag = constants_mod.Diagnostic{};
    const c = try Constants.load(testing.allocator, "quick", &diag);
    var aw = Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try writeSummary(&aw.writer, &test_variant, "quick", 0, &c, &.{4}, &.{});
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, aw.written(), .{});
    defer parsed.deinit();
    try writeTable(&aw.writer, "ampere", &.{testOutcome(&test_samples)});
    try testing.expect(std.mem.indexOf(u8, aw.written(), "(1 benchmarks, runtime ampere)") != null);
}

test "meta is valid JSON with schema version, variant and machine facts" {
    var arena = std.heap.ArenaAllocator.init(testing.allocator);
    defer arena.deinit();
    var aw = Writer.Allocating.init(testing.allocator);
    defer aw.deinit();
    try writeMeta(&aw.writer, &test_variant, Machine.read(testing.io, arena.allocator()));
    const parsed = try std.json.parseFromSlice(std.json.Value, testing.allocator, aw.written(), .{});
    defer parsed.deinit();
    const root = parsed.value.object;
    try testing.expectEqual(@as(i64, 2), root.get("schema_version").?.integer);
    try testing.expectEqualStrings("ampere", root.get("runtime").?.string);
    try testing.expectEqualStrings("ampere.nospin", root.get("variant").?.string);
    try testing.expectEqual(@as(i64, 0), root.get("variant_settings").?.object.get("spin_before_park_ns").?.integer);
    try testing.expectEqualStrings("zig", root.get("compiler").?.string);
    try testing.expect(root.get("tokio_version").? == .null);
    try testing.expect(root.get("machine").?.object.get("logical_cores").?.integer >= 1);
}

test "machine fact parsers" {
    try testing.expectEqualStrings("Some CPU", fieldValue("model name\t: Some CPU\nflags : x", "model name").?);
    try testing.expectEqual(@as(u64, 1_024_000), memTotalBytes("MemTotal:       1000 kB\n").?);
    try testing.expectEqualStrings("Debian 12", prettyName("NAME=x\nPRETTY_NAME=\"Debian 12\"\n").?);
    try testing.expect(prettyName("NAME=x") == null);
    try testing.expectEqual(@as(u64, 2), countFields("processor\t: 0\nx: 1\nprocessor : 1\n", "processor"));
}

test "floats are written like serde_json" {
    var buffer: [64]u8 = undefined;
    var w = Writer.fixed(&buffer);
    try writeFloat(&w, 11.0);
    try w.writeByte(' ');
    try writeFloat(&w, 0.25);
    try w.writeByte(' ');
    try writeFloat(&w, 151515151.5);
    try testing.expectEqualStrings("11.0 0.25 151515151.5", w.buffered());
}

test "atomic write renames and never overwrites" {
    const io = testing.io;
    var tmp = testing.tmpDir(.{ .iterate = true });
    defer tmp.cleanup();
    var dir_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const dir = dir_buffer[0..try tmp.dir.realPath(io, &dir_buffer)];
    var path_buffer: [std.fs.max_path_bytes]u8 = undefined;
    const path = try std.fmt.bufPrint(&path_buffer, "{s}/out.csv", .{dir});
    try writeAtomic(io, path, "a,b\n");
    const text = try tmp.dir.readFileAlloc(io, "out.csv", testing.allocator, .limited(1024));
    defer testing.allocator.free(text);
    try testing.expectEqualStrings("a,b\n", text);
    try testing.expectError(error.FileExists, writeAtomic(io, path, "x\n"));
    var count: usize = 0;
    var it = tmp.dir.iterate();
    while (try it.next(io)) |_| count += 1;
    try testing.expectEqual(@as(usize, 1), count);
    try testing.expect(parentExists(io, path));
    try testing.expect(!parentExists(io, "/definitely/not/here/x.csv"));
}
