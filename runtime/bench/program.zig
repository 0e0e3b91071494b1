//! What the two Zig benchmark programs (`main.zig`, ampere_bench; `io_main.zig`, the io suite's
//! program per std.Io implementation) share as processes: how a run ends (`Exit`: the exit
//! code and the one-line message of README.md's "Program interface") and `main` itself — the
//! counting allocator, the arguments, stdout through std's single-threaded `Io`, the message on
//! stderr.

const std = @import("std");
const harness = @import("harness.zig");
const output = @import("output.zig");
const SystemAllocator = @import("SystemAllocator.zig");

const CountingAllocator = harness.CountingAllocator;

/// How a program's `run` ended: the exit code and, for codes 1 and 2, the one-line message.
pub const Exit = struct {
    code: u8,
    message_buffer: [512]u8 = undefined,
    message_len: usize = 0,

    pub fn fail(code: u8, comptime format: []const u8, args: anytype) Exit {
        var exit = Exit{ .code = code };
        const text = std.fmt.bufPrint(&exit.message_buffer, format, args) catch exit.message_buffer[0..];
        exit.message_len = text.len;
        return exit;
    }

    pub fn message(self: *const Exit) []const u8 {
        return self.message_buffer[0..self.message_len];
    }
};

/// The whole program minus process concerns; writes the table/JSON/list to `out`.
pub const RunFn = fn (gpa: std.mem.Allocator, io: std.Io, counting: *CountingAllocator, args: []const []const u8, out: *std.Io.Writer) Exit;

/// A program's `main`: runs `run` with the process's arguments (without the program name).
pub fn main(init: std.process.Init.Minimal, comptime run: RunFn) u8 {
    var counting = CountingAllocator.init(SystemAllocator.allocator);
    const gpa = counting.allocator();
    var args_arena = std.heap.ArenaAllocator.init(gpa);
    defer args_arena.deinit();
    const args = init.args.toSlice(args_arena.allocator()) catch {
        std.debug.print("error: out of memory\n", .{});
        return 1;
    };
    // Files and stdout go through std's single-threaded `Io` (blocking system calls on the
    // calling thread); the runtime or implementation under test does not use it.
    var threaded: std.Io.Threaded = .init_single_threaded;
    const io = threaded.io();
    var stdout_buffer: [16 * 1024]u8 = undefined;
    // Streaming, not positional: stdout may be a file shared with other writers (an orchestrator
    // appending to a log), and positional writes would start at offset 0 and clobber it.
    var stdout = std.Io.File.stdout().writerStreaming(io, &stdout_buffer);
    const view: []const []const u8 = @ptrCast(args[1..]);
    const exit = run(gpa, io, &counting, view, &stdout.interface);
    stdout.interface.flush() catch {};
    if (exit.code != 0) std.debug.print("error: {s}\n", .{exit.message()});
    return exit.code;
}

// -- for the programs' tests ----------------------------------------------------------------

/// A temporary folder for a program's test: absolute paths in it (what `--csv`, `--meta` and
/// `--metrics` take) and its files read back. `init` in place, then `cleanup`.
pub const TestFolder = struct {
    tmp: std.testing.TmpDir,
    dir_buffer: [std.fs.max_path_bytes]u8,
    dir_len: usize,

    pub fn init(self: *TestFolder) !void {
        self.tmp = std.testing.tmpDir(.{});
        errdefer self.tmp.cleanup();
        self.dir_len = try self.tmp.dir.realPath(std.testing.io, &self.dir_buffer);
    }

    pub fn cleanup(self: *TestFolder) void {
        self.tmp.cleanup();
    }

    /// The absolute path of `name` in the folder, formatted into `buffer`.
    pub fn path(self: *const TestFolder, buffer: []u8, name: []const u8) ![]const u8 {
        return std.fmt.bufPrint(buffer, "{s}/{s}", .{ self.dir_buffer[0..self.dir_len], name });
    }

    /// File `name` of the folder (at most 1 MiB); the caller frees it (`std.testing.allocator`).
    pub fn read(self: *const TestFolder, name: []const u8) ![]u8 {
        return self.tmp.dir.readFileAlloc(std.testing.io, name, std.testing.allocator, .limited(1 << 20));
    }
};

/// Runs a program's `run` on `args` and expects exit 0 (the message printed otherwise).
pub fn expectRun(comptime run: RunFn, args: []const []const u8) !void {
    var counting = CountingAllocator.init(std.testing.allocator);
    var aw = std.Io.Writer.Allocating.init(std.testing.allocator);
    defer aw.deinit();
    const exit = run(std.testing.allocator, std.testing.io, &counting, args, &aw.writer);
    if (exit.code != 0) std.debug.print("{s}\n", .{exit.message()});
    try std.testing.expectEqual(@as(u8, 0), exit.code);
}

/// Rows of an io-suite sweep's CSV `text` after its header (checked): every row starts with
/// `row_prefix` (runtime, invocation, suite) and names an io_ benchmark. Returns how many rows
/// there are and how many ran at 2 workers.
pub fn ioSweepRows(text: []const u8, row_prefix: []const u8) !struct { rows: usize, at_two_workers: usize } {
    var lines = std.mem.splitScalar(u8, text, '\n');
    try std.testing.expectEqualStrings(output.csv_header, lines.next().?);
    var rows: usize = 0;
    var at_two_workers: usize = 0;
    while (lines.next()) |line| {
        if (line.len == 0) break;
        try std.testing.expect(std.mem.startsWith(u8, line, row_prefix));
        var fields = std.mem.splitScalar(u8, line, ',');
        var columns: [13][]const u8 = undefined;
        for (&columns) |*column| column.* = fields.next().?;
        try std.testing.expect(std.mem.startsWith(u8, columns[4], "io_"));
        if (std.mem.eql(u8, columns[10], "2")) at_two_workers += 1; // workers
        rows += 1;
    }
    return .{ .rows = rows, .at_two_workers = at_two_workers };
}
