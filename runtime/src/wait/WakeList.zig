//! A bounded batch of wakers, collected while a lock is held and woken after it is released.
//!
//! Waking runs arbitrary code (it may schedule a task, unpark a thread, or drop the last
//! reference to a task), so no primitive wakes or drops a waker while holding its lock. A
//! primitive that serves many waiters collects at most `capacity` wakers, releases its lock,
//! wakes the batch, and takes the lock again for the next batch: the work done under the lock
//! is bounded and nothing is allocated.
//!
//! Also home of `storeWaker` and `replaceWaker`, the one way a waiting future registers or
//! replaces its waker (in `sync` and in `channel/WaitQueue.zig`).

const std = @import("std");
const assert = std.debug.assert;
const Waker = @import("../Waker.zig");

const WakeList = @This();

pub const capacity: u32 = 32;

wakers: [capacity]Waker = undefined,
count: u32 = 0,

/// An empty list. Prefer it to `WakeList{}`: in ReleaseFast the default-initialised value is
/// copied from a constant and LLVM zero-fills all 520 bytes (a `memset` call on every use);
/// this writes only `count`.
pub fn init() WakeList {
    return .{ .wakers = undefined, .count = 0 };
}

pub fn isFull(self: *const WakeList) bool {
    return self.count == capacity;
}

/// Takes ownership of `waker` (an owned clone).
pub fn push(self: *WakeList, waker: Waker) void {
    assert(self.count < capacity);
    self.wakers[self.count] = waker;
    self.count += 1;
}

/// Wakes (and thereby consumes) every collected waker. Call without holding any lock.
pub fn wakeAll(self: *WakeList) void {
    for (self.wakers[0..self.count]) |waker| waker.wake();
    self.count = 0;
}

/// Registers `current` (the borrowed waker of a poll) in `slot`, cloning it only when the
/// stored waker would wake a different target. Returns the replaced waker, which the caller
/// must drop after releasing its lock (never under it).
pub fn storeWaker(slot: *?Waker, current: *const Waker) ?Waker {
    if (slot.*) |stored| {
        if (stored.willWakeSame(current)) return null;
    }
    const replaced = slot.*;
    slot.* = current.clone();
    return replaced;
}

/// `storeWaker` for a slot that always holds a waker (`channel/WaitQueue.zig`'s linked nodes).
pub fn replaceWaker(stored: *Waker, current: *const Waker) ?Waker {
    var slot: ?Waker = stored.*;
    const replaced = storeWaker(&slot, current);
    stored.* = slot.?;
    return replaced;
}

test "wakes every collected waker once and empties" {
    var counter = Waker.Counting{};
    var list = WakeList.init();
    for (0..capacity) |_| list.push(counter.waker());
    try std.testing.expect(list.isFull());
    list.wakeAll();
    try std.testing.expectEqual(@as(u32, capacity), counter.wakeCount());
    try std.testing.expectEqual(@as(i32, 0), counter.outstanding());
    try std.testing.expect(!list.isFull());
}

test "storeWaker clones only for a different target" {
    var a = Waker.Counting{};
    var b = Waker.Counting{};
    const wa = a.waker();
    defer wa.drop();
    const wb = b.waker();
    defer wb.drop();
    var slot: ?Waker = null;
    try std.testing.expectEqual(@as(?Waker, null), storeWaker(&slot, &wa));
    try std.testing.expectEqual(@as(i32, 2), a.outstanding());
    try std.testing.expectEqual(@as(?Waker, null), storeWaker(&slot, &wa)); // same target: kept
    try std.testing.expectEqual(@as(i32, 2), a.outstanding());
    const replaced = storeWaker(&slot, &wb).?;
    replaced.drop();
    try std.testing.expectEqual(@as(i32, 1), a.outstanding());
    slot.?.drop();
    try std.testing.expectEqual(@as(i32, 1), b.outstanding());
}
