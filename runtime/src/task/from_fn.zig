//! `fromFn(function, args)`: a future that calls `function` with `args` when first polled and
//! is ready with its result. The future behind `spawnBlocking`, and a way to run a plain
//! function as a task.

const std = @import("std");
const future = @import("../future.zig");

pub fn FromFn(comptime function: anytype) type {
    const Function = @TypeOf(function);
    const info = @typeInfo(Function).@"fn";
    const R = info.return_type orelse @compileError("fromFn needs a function with a known return type");
    return struct {
        const Self = @This();
        pub const Output = R;
        pub const Args = std.meta.ArgsTuple(Function);
        args: Args,

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(R) {
            _ = cx;
            return .{ .ready = @call(.auto, function, self.args) };
        }
    };
}

pub fn fromFn(comptime function: anytype, args: std.meta.ArgsTuple(@TypeOf(function))) FromFn(function) {
    return .{ .args = args };
}

fn add(a: u32, b: u32) u32 {
    return a + b;
}

test "calls the function once with its arguments" {
    var f = fromFn(add, .{ 2, 3 });
    try std.testing.expectEqual(@as(u32, 5), future.pollOnce(&f).ready);
}
