//! What the two Zig benchmark programs (`main.zig`, ampere_bench; `io_main.zig`, the io suite's
//! program per std.Io implementation) share as processes: how a run ends (`Exit`: the exit
//! code and the one-line message of README.md's "Program interface") and `main` itself — the
//! counting allocator, the arguments, stdout through std's single-threaded `Io`, the message on
//! stderr.

const std = @import("std");
const harness = @import("harness.zig");
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
