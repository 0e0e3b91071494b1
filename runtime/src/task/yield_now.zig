//! `yieldNow()`: returns pending once, after waking its own task, so the task goes to the
//! back of its worker's queue (a task woken while running is re-queued as a yield, never
//! into the LIFO slot) and every other runnable task gets a turn first.

const std = @import("std");
const future = @import("../future.zig");

pub const YieldNow = struct {
    pub const Output = void;
    yielded: bool = false,

    pub fn poll(self: *YieldNow, cx: *future.Context) future.Poll(void) {
        if (self.yielded) return .{ .ready = {} };
        self.yielded = true;
        cx.waker().wakeByRef();
        return .pending;
    }
};

pub fn yieldNow() YieldNow {
    return .{};
}

test "yields exactly once and wakes itself" {
    const Waker = @import("../Waker.zig");
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var y = yieldNow();
    try std.testing.expect(y.poll(&cx) == .pending);
    try std.testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try std.testing.expect(y.poll(&cx) == .ready);
}
