//! A worker's run queue: a fixed ring of 256 task pointers. The owner pushes at the tail and
//! pops at the head; other workers steal half of it from the head.
//!
//! ## Words
//!
//!     tail  u32   next slot the owner writes; written only by the owner
//!     head  u64   two u32 indices packed as (steal << 32) | real
//!                 real  = next slot to take (by the owner's pop or a stealer's claim)
//!                 steal = start of the range a stealer is still copying; equal to `real`
//!                         when no steal is in progress
//!
//! Indices grow without bound and wrap at 2^32; slot = index & 255. `tail - steal` is the
//! number of slots in use (including those a stealer is copying), never above 256.
//!
//! ## Protocol
//!
//! - push (owner): if `tail - steal < 256`, write the slot, then store `tail + 1` (release:
//!   publishes the slot to stealers, who load `tail` with acquire). If full and no steal is in
//!   progress, claim the older half with a CAS on `head` and hand it plus the new task to the
//!   inject queue in one batch (`push_overflow`); if a steal is in progress, the new task goes
//!   to the inject queue alone.
//! - pop (owner): CAS `real` one forward (and `steal` with it when no steal is in progress).
//! - steal (other worker): (1) CAS `real` forward by half the queue (rounded up), leaving
//!   `steal` behind — this claims the range and blocks other stealers; (2) copy the claimed
//!   slots into the stealer's own queue; (3) CAS `steal` up to `real`, releasing the slots for
//!   reuse by the owner. The owner may pop concurrently (it moves `real`), which is why (3)
//!   retries.
//!
//! The owner never overwrites a slot a stealer is copying because it only writes while
//! `tail - steal < 256`, and `steal` only moves past the copied range in step (3), after the
//! copy (acq_rel CAS: the copy happens-before the owner's acquire load of `head`).
//! Slots are accessed with relaxed atomics: all ordering comes from `head` and `tail`.

const std = @import("std");
const assert = std.debug.assert;
const Header = @import("../task/Header.zig");
const InjectQueue = @import("InjectQueue.zig");

const LocalQueue = @This();

pub const capacity: u32 = 256;
const mask: u32 = capacity - 1;
/// Tasks moved to the inject queue when the ring overflows (plus the one being pushed).
const overflow_batch: u32 = capacity / 2;

head: std.atomic.Value(u64) align(std.atomic.cache_line) = .init(0),
tail: std.atomic.Value(u32) align(std.atomic.cache_line) = .init(0),
slots: [capacity]std.atomic.Value(?*Header) = @splat(.init(null)),

fn pack(steal: u32, real: u32) u64 {
    return (@as(u64, steal) << 32) | real;
}

fn unpackSteal(head: u64) u32 {
    return @truncate(head >> 32);
}

fn unpackReal(head: u64) u32 {
    return @truncate(head);
}

/// Tasks currently in the queue (approximate when read by another thread).
pub fn len(self: *const LocalQueue) u32 {
    const head = self.head.load(.acquire);
    const tail = self.tail.load(.acquire);
    return tail -% unpackReal(head);
}

pub fn isEmpty(self: *const LocalQueue) bool {
    return self.len() == 0;
}

/// How many tasks have been taken from this queue so far (popped by the owner or claimed by
/// stealers), modulo 2^32: a queue that holds tasks and whose count did not change between
/// two looks has an owner stuck in one poll (`HelpPolicy`).
pub fn takenCount(self: *const LocalQueue) u32 {
    return unpackReal(self.head.load(.acquire));
}

/// Free slots, as seen by the owner.
pub fn remainingSlots(self: *const LocalQueue) u32 {
    const steal = unpackSteal(self.head.load(.acquire));
    const tail = self.tail.load(.monotonic);
    assert(tail -% steal <= capacity);
    return capacity - (tail -% steal);
}

/// Owner only. Pushes `task`; on overflow moves half the queue and `task` to `inject`.
/// Returns the number of tasks that went to `inject` (0 when the task fit).
pub fn pushBackOrOverflow(self: *LocalQueue, task: *Header, inject: *InjectQueue) u32 {
    const tail = while (true) {
        const head = self.head.load(.acquire);
        const steal = unpackSteal(head);
        const real = unpackReal(head);
        const tail = self.tail.load(.monotonic); // Only the owner writes it.
        if (tail -% steal < capacity) break tail;
        if (steal != real) {
            // A stealer is copying; it will free slots soon. Do not wait for it.
            inject.push(task);
            return 1;
        }
        if (self.pushOverflow(task, real, tail, inject)) return overflow_batch + 1;
        // A stealer claimed slots meanwhile: there is room now, retry.
    };
    assert(tail -% unpackSteal(self.head.load(.monotonic)) < capacity);
    self.slots[tail & mask].store(task, .monotonic);
    // Release: the slot write happens-before a stealer's acquire load of `tail`.
    self.tail.store(tail +% 1, .release);
    return 0;
}

fn pushOverflow(self: *LocalQueue, task: *Header, head: u32, tail: u32, inject: *InjectQueue) bool {
    assert(tail -% head == capacity);
    const claimed = pack(head, head);
    const next = pack(head +% overflow_batch, head +% overflow_batch);
    // Release/acquire: on success the slots [head, head + batch) are ours; a concurrent
    // stealer's claim would have changed `head` and made this fail.
    if (self.head.cmpxchgStrong(claimed, next, .acq_rel, .acquire) != null) return false;

    // Link the claimed tasks and the new one into a batch for the inject queue.
    const first = self.slots[head & mask].load(.monotonic).?;
    var last = first;
    var index: u32 = 1;
    while (index < overflow_batch) : (index += 1) {
        const item = self.slots[(head +% index) & mask].load(.monotonic).?;
        last.queue_next = item;
        last = item;
    }
    last.queue_next = task;
    task.queue_next = null;
    inject.pushBatch(first, task, overflow_batch + 1);
    return true;
}

/// Owner only. Takes the oldest task.
pub fn pop(self: *LocalQueue) ?*Header {
    var head = self.head.load(.acquire);
    const index = while (true) {
        const steal = unpackSteal(head);
        const real = unpackReal(head);
        const tail = self.tail.load(.monotonic);
        if (real == tail) return null;
        assert(tail -% real <= capacity);
        const next_real = real +% 1;
        const next = if (steal == real) pack(next_real, next_real) else blk: {
            assert(steal != next_real);
            break :blk pack(steal, next_real);
        };
        // acq_rel: the claim must be ordered with stealers' claims on the same word.
        head = self.head.cmpxchgWeak(head, next, .acq_rel, .acquire) orelse {
            if (real +% 1 != tail) prefetchTask(self.slots[(real +% 1) & mask].load(.monotonic));
            break real & mask;
        };
    };
    return self.slots[index].load(.monotonic).?;
}

/// Lines of the next queued task fetched ahead by `pop`.
pub const prefetch_lines = 2;

/// The owner's next task, queued long ago (a burst of 1,000 spawns), is cold: its first lines
/// (the header, and a fiber task's first fiber fields) are requested while the current one
/// runs. The slot may be stolen meanwhile: a prefetch of a task that is gone is harmless.
/// Measured (A/B, 2-vCPU VM): ampere.io io_spawn_group at 1 worker 1.037 [1.028, 1.047] over
/// 100 rounds with 2 lines (1.015 with 6); the micro suite's spawn, yield, ping-pong and
/// channel rows at 1-2 workers within noise over 120 rounds.
fn prefetchTask(task: ?*Header) void {
    const bytes: [*]const u8 = @ptrCast(task orelse return);
    inline for (0..prefetch_lines) |line| @prefetch(bytes + line * std.atomic.cache_line, .{ .rw = .write, .locality = 3 });
}

/// What a successful steal took: `first` to run now, and `count` tasks in all (the others
/// are in the stealer's queue).
pub const Stolen = struct { first: *Header, count: u32 };

/// Called by another worker (the owner of `destination`). Moves about half of this queue into
/// `destination` and returns one of the moved tasks to run now, or null if nothing was taken.
pub fn stealInto(self: *LocalQueue, destination: *LocalQueue) ?Stolen {
    assert(self != destination);
    const destination_tail = destination.tail.load(.monotonic); // Owned by the caller.
    const destination_steal = unpackSteal(destination.head.load(.acquire));
    // Only steal into a queue with room for half a queue.
    if (destination_tail -% destination_steal > capacity / 2) return null;

    const count = self.claimAndCopy(destination, destination_tail);
    if (count == 0) return null;
    assert(count <= capacity / 2);
    const kept = count - 1;
    const result_index = (destination_tail +% kept) & mask;
    const result = destination.slots[result_index].load(.monotonic).?;
    if (kept > 0) {
        // Release: publishes the copied slots to thieves of `destination`.
        destination.tail.store(destination_tail +% kept, .release);
    }
    return .{ .first = result, .count = count };
}

/// Claims half of this queue, copies it into `destination` from `destination_tail` on and
/// releases the claimed slots. Returns how many tasks were copied (0: nothing to take, or
/// another stealer is copying).
fn claimAndCopy(self: *LocalQueue, destination: *LocalQueue, destination_tail: u32) u32 {
    var previous = self.head.load(.acquire);
    var count: u32 = undefined;
    var next: u64 = undefined;
    // Step 1: claim half of the queue.
    while (true) {
        const steal = unpackSteal(previous);
        const real = unpackReal(previous);
        // Acquire: the owner's slot writes before its `tail` store are visible to the copy.
        const tail = self.tail.load(.acquire);
        if (steal != real) return 0; // Another stealer is copying.
        const available = tail -% real;
        count = available - available / 2;
        if (count == 0) return 0;
        next = pack(steal, real +% count);
        previous = self.head.cmpxchgWeak(previous, next, .acq_rel, .acquire) orelse break;
    }
    assert(count <= capacity / 2);

    // Step 2: copy the claimed range.
    const first = unpackSteal(next);
    var index: u32 = 0;
    while (index < count) : (index += 1) {
        const task = self.slots[(first +% index) & mask].load(.monotonic);
        destination.slots[(destination_tail +% index) & mask].store(task, .monotonic);
    }

    // Step 3: release the claimed slots (the owner may have popped meanwhile: retry).
    previous = next;
    while (true) {
        const real = unpackReal(previous);
        const released = pack(real, real);
        // acq_rel: our slot reads happen-before the owner reuses them (acquire on `head`).
        previous = self.head.cmpxchgWeak(previous, released, .acq_rel, .acquire) orelse return count;
        assert(unpackSteal(previous) != unpackReal(previous));
    }
}

// -- tests -------------------------------------------------------------------------------

const testing = std.testing;

fn testTasks(comptime n: usize) [n]Header {
    var tasks: [n]Header = undefined;
    for (&tasks, 0..) |*t, i| t.* = .{ .state = .init(Header.scheduled), .vtable = undefined, .scheduler = undefined, .id = i };
    return tasks;
}

test "push and pop in FIFO order" {
    var inject = InjectQueue{};
    var queue = LocalQueue{};
    var tasks = testTasks(10);
    for (&tasks) |*t| try testing.expectEqual(@as(u32, 0), queue.pushBackOrOverflow(t, &inject));
    try testing.expectEqual(@as(u32, 10), queue.len());
    for (&tasks) |*t| try testing.expectEqual(t, queue.pop().?);
    try testing.expect(queue.pop() == null);
}

test "overflow moves half the queue plus the new task to the inject queue" {
    var inject = InjectQueue{};
    var queue = LocalQueue{};
    var tasks = testTasks(capacity + 1);
    for (tasks[0..capacity]) |*t| try testing.expectEqual(@as(u32, 0), queue.pushBackOrOverflow(t, &inject));
    try testing.expectEqual(overflow_batch + 1, queue.pushBackOrOverflow(&tasks[capacity], &inject));
    try testing.expectEqual(@as(usize, overflow_batch + 1), inject.len());
    try testing.expectEqual(capacity - overflow_batch, queue.len());
    // The oldest half went to the inject queue, in order, followed by the new task.
    for (tasks[0..overflow_batch]) |*t| try testing.expectEqual(t, inject.pop().?);
    try testing.expectEqual(&tasks[capacity], inject.pop().?);
    for (tasks[overflow_batch..capacity]) |*t| try testing.expectEqual(t, queue.pop().?);
}

test "steal takes half, rounded up, and returns one to run" {
    var inject = InjectQueue{};
    var source = LocalQueue{};
    var destination = LocalQueue{};
    var tasks = testTasks(7);
    for (&tasks) |*t| _ = source.pushBackOrOverflow(t, &inject);
    const stolen = source.stealInto(&destination).?;
    try testing.expectEqual(&tasks[3], stolen.first); // Stole tasks 0..3, runs the last of them.
    try testing.expectEqual(@as(u32, 4), stolen.count);
    try testing.expectEqual(@as(u32, 3), destination.len());
    try testing.expectEqual(@as(u32, 3), source.len());
    for (tasks[0..3]) |*t| try testing.expectEqual(t, destination.pop().?);
    for (tasks[4..7]) |*t| try testing.expectEqual(t, source.pop().?);
    try testing.expect(source.stealInto(&destination) == null);
}

test "the taken count moves with pops and steals, not with pushes" {
    var inject = InjectQueue{};
    var source = LocalQueue{};
    var destination = LocalQueue{};
    var tasks = testTasks(6);
    for (&tasks) |*t| _ = source.pushBackOrOverflow(t, &inject);
    try testing.expectEqual(@as(u32, 0), source.takenCount()); // A stuck owner: nothing taken.
    _ = source.pop().?;
    try testing.expectEqual(@as(u32, 1), source.takenCount());
    _ = source.stealInto(&destination).?; // Takes 3 of the 5 left.
    try testing.expectEqual(@as(u32, 4), source.takenCount());
    _ = source.pushBackOrOverflow(&tasks[0], &inject);
    try testing.expectEqual(@as(u32, 4), source.takenCount());
}

test "concurrent pops and steals hand out every task exactly once" {
    const ampere_testing = @import("../testing.zig");
    const rounds = ampere_testing.scaled(2000, 20);
    const per_round: u32 = 200;
    const thieves = 3;

    var tasks: [per_round]Header = testTasks(per_round);
    var seen: [per_round]std.atomic.Value(u32) = @splat(.init(0));
    var owner_queue = LocalQueue{};
    var inject = InjectQueue{};

    const Thief = struct {
        fn run(source: *LocalQueue, marks: *[per_round]std.atomic.Value(u32), all: *[per_round]Header, stop: *std.atomic.Value(bool)) void {
            var mine = LocalQueue{};
            while (!stop.load(.acquire)) {
                if (source.stealInto(&mine)) |stolen| {
                    mark(marks, all, stolen.first);
                    while (mine.pop()) |t| mark(marks, all, t);
                }
            }
        }
    };
    var round: usize = 0;
    while (round < rounds) : (round += 1) {
        var stop = std.atomic.Value(bool).init(false);
        var threads: [thieves]std.Thread = undefined;
        for (&threads) |*t| t.* = try std.Thread.spawn(.{}, Thief.run, .{ &owner_queue, &seen, &tasks, &stop });
        for (&tasks) |*t| {
            _ = owner_queue.pushBackOrOverflow(t, &inject);
            if (t.id % 3 == 0) if (owner_queue.pop()) |p| mark(&seen, &tasks, p);
        }
        while (owner_queue.pop()) |p| mark(&seen, &tasks, p);
        stop.store(true, .release);
        for (threads) |t| t.join();
        while (inject.pop()) |p| mark(&seen, &tasks, p);
        for (&seen) |*s| {
            try testing.expectEqual(@as(u32, 1), s.load(.acquire));
            s.store(0, .monotonic);
        }
    }
}

fn mark(marks: *[200]std.atomic.Value(u32), all: *[200]Header, task: *Header) void {
    const index = (@intFromPtr(task) - @intFromPtr(&all[0])) / @sizeOf(Header);
    _ = marks[index].fetchAdd(1, .acq_rel);
}
