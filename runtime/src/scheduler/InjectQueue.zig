//! The global ("inject") queue: tasks spawned or woken from outside the workers, and local
//! queue overflow. An intrusive FIFO list through `Header.queue_next` under a mutex — it is
//! the slow path; workers take from it in batches and check it only periodically or when
//! their own queue is empty.
//!
//! `count` mirrors the length so that emptiness can be checked without the lock. It is
//! written with seq_cst under the lock and read with seq_cst: a pusher stores it and then
//! checks for sleeping workers (a seq_cst read-modify-write in `Idle`), while a worker going
//! to sleep registers as sleeping and then reads `count` — two store-then-load sides, so
//! sequential consistency is what guarantees one of them sees the other.

const std = @import("std");
const Lock = @import("../Lock.zig");
const assert = std.debug.assert;
const Header = @import("../task/Header.zig");

const InjectQueue = @This();

/// Cache-line aligned, so the queue (written on every push and pop) owns its lines: it must not
/// share one with `Idle.state` or with the scheduler's read-mostly fields (`Shared.zig`).
mutex: Lock align(std.atomic.cache_line) = .{},
head: ?*Header = null,
tail: ?*Header = null,
count: std.atomic.Value(usize) = .init(0),
/// Tasks taken so far (written under the lock, read without it: a restrained searcher compares
/// two reads to see whether anybody takes from the queue; `HelpPolicy`).
popped: std.atomic.Value(u64) = .init(0),

pub fn len(self: *const InjectQueue) usize {
    return self.count.load(.seq_cst);
}

pub fn isEmpty(self: *const InjectQueue) bool {
    return self.len() == 0;
}

/// `popped`: how many tasks have been taken so far.
pub fn poppedCount(self: *const InjectQueue) u64 {
    return self.popped.load(.monotonic);
}

pub fn push(self: *InjectQueue, task: *Header) void {
    assert(task.load() & Header.scheduled != 0); // The queue takes the queue's reference.
    task.queue_next = null;
    self.pushBatch(task, task, 1);
}

/// Appends the list `first` .. `last` (linked through `queue_next`, `last.queue_next` null).
pub fn pushBatch(self: *InjectQueue, first: *Header, last: *Header, batch_len: usize) void {
    assert(batch_len > 0);
    assert(last.queue_next == null);
    self.mutex.lock();
    defer self.mutex.unlock();
    assert((self.head == null) == (self.tail == null));
    assert((self.head == null) == (self.count.load(.monotonic) == 0));
    if (self.tail) |tail| tail.queue_next = first else self.head = first;
    self.tail = last;
    self.count.store(self.count.load(.monotonic) + batch_len, .seq_cst);
    assert(self.tail.?.queue_next == null);
}

pub fn pop(self: *InjectQueue) ?*Header {
    if (self.isEmpty()) return null;
    self.mutex.lock();
    defer self.mutex.unlock();
    return self.popLocked();
}

fn popLocked(self: *InjectQueue) ?*Header {
    assert((self.head == null) == (self.count.load(.monotonic) == 0));
    const task = self.head orelse return null;
    self.head = task.queue_next;
    if (self.head == null) self.tail = null;
    task.queue_next = null;
    self.count.store(self.count.load(.monotonic) - 1, .seq_cst);
    self.popped.store(self.popped.load(.monotonic) + 1, .monotonic);
    return task;
}

/// Takes up to `max` tasks at once (one lock acquisition); returns the first and links the
/// rest through `queue_next` (null-terminated).
pub fn popBatch(self: *InjectQueue, max: usize) ?*Header {
    assert(max > 0);
    if (self.isEmpty()) return null;
    self.mutex.lock();
    defer self.mutex.unlock();
    const first = self.head orelse return null;
    var last = first;
    var taken: usize = 1;
    while (taken < max) : (taken += 1) last = last.queue_next orelse break;
    self.head = last.queue_next;
    if (self.head == null) self.tail = null;
    last.queue_next = null;
    assert(taken <= max and taken <= self.count.load(.monotonic));
    self.count.store(self.count.load(.monotonic) - taken, .seq_cst);
    self.popped.store(self.popped.load(.monotonic) + taken, .monotonic);
    assert((self.head == null) == (self.count.load(.monotonic) == 0));
    return first;
}

test "FIFO order and batches" {
    var queue = InjectQueue{};
    var tasks: [5]Header = undefined;
    for (&tasks, 0..) |*t, i| t.* = .{ .state = .init(Header.scheduled), .vtable = undefined, .scheduler = undefined, .id = i };
    for (&tasks) |*t| queue.push(t);
    try std.testing.expectEqual(@as(usize, 5), queue.len());
    try std.testing.expectEqual(&tasks[0], queue.pop().?);
    const batch = queue.popBatch(3).?;
    try std.testing.expectEqual(&tasks[1], batch);
    try std.testing.expectEqual(&tasks[2], batch.queue_next.?);
    try std.testing.expectEqual(&tasks[3], batch.queue_next.?.queue_next.?);
    try std.testing.expect(batch.queue_next.?.queue_next.?.queue_next == null);
    try std.testing.expectEqual(&tasks[4], queue.pop().?);
    try std.testing.expect(queue.pop() == null);
    try std.testing.expect(queue.isEmpty());
    try std.testing.expectEqual(@as(u64, 5), queue.poppedCount()); // Pops and batches count.
}
