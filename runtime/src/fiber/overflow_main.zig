//! A program whose only fiber overflows its stack on purpose, for the overflow test
//! (fiber/fiber_tests.zig): it must die of SIGABRT with "fiber stack overflow" on stderr.
//! Built by build.zig in Debug, like the tests.

const std = @import("std");
const ampere = @import("ampere");

/// Recursion that cannot become a loop: every frame keeps a buffer alive across the call.
fn recurse(depth: u64) u64 {
    var buffer: [512]u8 = undefined;
    @memset(&buffer, @truncate(depth));
    std.mem.doNotOptimizeAway(&buffer);
    if (depth == std.math.maxInt(u64)) return 0;
    return recurse(depth + 1) + buffer[depth % buffer.len];
}

pub fn main() void {
    const rt = ampere.Runtime.init(std.heap.page_allocator, .{ .workers = 1, .fiber_stack_bytes = 64 * 1024 }) catch
        @panic("runtime init failed");
    const handle = rt.spawnFiber(recurse, .{0}) catch @panic("spawn failed");
    _ = rt.blockOn(handle) catch {};
    std.debug.print("not reached: the fiber returned\n", .{});
}
