//! Every live task of a runtime, so that shutdown can cancel and free tasks that nobody will
//! ever wake again. Sharded intrusive lists (links in `Header.owned_prev/next`), one mutex per
//! shard, shard = task id & mask: spawns and completions on different workers rarely touch
//! the same lock. Ids are made so that a worker's spawns all go to a shard of its own and
//! other threads' to the even shards (`Worker.nextTaskId`).
//!
//! `close` marks every shard closed under its lock; an insert into a closed shard fails, so
//! no task can be added after shutdown began and escape cancellation.
//!
//! What must be listed is every task that is idle (neither queued nor running nor complete):
//! shutdown finds queued tasks in the queues. So a task spawned on a worker of its runtime is
//! inserted only when it first goes idle, by the worker that polled it (`Worker.afterPending`;
//! a fiber links itself as it suspends: fiber/task.zig, "Owned lazily"); the list is closed
//! only after the workers exited, so such an insert never fails. A task that ends in its first
//! poll never takes a shard lock. Spawns from other threads insert at once (they may race the
//! close, and are refused after it).

const std = @import("std");
const Lock = @import("../Lock.zig");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Header = @import("../task/Header.zig");

const OwnedTasks = @This();

const Shard = struct {
    mutex: Lock align(std.atomic.cache_line) = .{},
    head: ?*Header = null,
    count: usize = 0,
    closed: bool = false,
};

shards: []Shard,
mask: u64,

pub fn init(allocator: Allocator, shard_count: usize) Allocator.Error!OwnedTasks {
    assert(std.math.isPowerOfTwo(shard_count));
    const shards = try allocator.alloc(Shard, shard_count);
    @memset(shards, .{});
    return .{ .shards = shards, .mask = shard_count - 1 };
}

pub fn deinit(self: *OwnedTasks, allocator: Allocator) void {
    for (self.shards) |*shard| assert(shard.head == null);
    allocator.free(self.shards);
}

/// The shard a thread that is not a worker inserts into: by the task's id.
fn shardIndexOf(self: *const OwnedTasks, task: *const Header) u16 {
    assert(self.mask + 1 == self.shards.len);
    return @intCast(task.id & self.mask);
}

/// The shard of worker `index`'s own spawns (`Worker.nextTaskId`: ids `2 * index + 1` modulo
/// the shard count), where the worker links the tasks that go idle on it.
pub fn workerShard(self: *const OwnedTasks, index: u32) u16 {
    return @intCast((2 * @as(u64, index) + 1) & self.mask);
}

pub fn insert(self: *OwnedTasks, task: *Header) error{Shutdown}!void {
    return self.insertAt(task, self.shardIndexOf(task));
}

/// `insert` into shard `index` (a worker's own, for a task linked lazily where it went idle:
/// the shard's lock and head are in that worker's cache, wherever the task was spawned).
pub fn insertAt(self: *OwnedTasks, task: *Header, index: u16) error{Shutdown}!void {
    assert(index <= self.mask);
    const shard = &self.shards[index];
    shard.mutex.lock();
    defer shard.mutex.unlock();
    if (shard.closed) return error.Shutdown;
    assert(!task.in_owned.load(.monotonic));
    task.in_owned.store(true, .monotonic);
    task.owned_shard = index;
    task.owned_prev = null;
    task.owned_next = shard.head;
    if (shard.head) |head| head.owned_prev = task;
    shard.head = task;
    shard.count += 1;
    assert(shard.head == task and task.in_owned.load(.monotonic));
}

/// Unlinks `task` if it is still listed (at shutdown `popAny` may have taken it already; a
/// task linked lazily may never have been: `fiber/task.zig`, "Owned lazily").
///
/// The first look is without the lock: a task found unlisted is left alone. That look cannot
/// miss a link. The caller completes the task holding `running` (or is the shutdown thread),
/// and every link happened before: an insert before the task was published (the queue's
/// release/acquire), a lazy link by an earlier poll of it (the state word's). It may see a
/// stale `true` (at shutdown, `popAny` unlinking on another thread): the look under the lock
/// decides.
pub fn remove(self: *OwnedTasks, task: *Header) void {
    if (!task.in_owned.load(.monotonic)) return;
    // Written by the insert, before the look above could see `in_owned` (same argument).
    const shard = &self.shards[task.owned_shard];
    shard.mutex.lock();
    defer shard.mutex.unlock();
    if (task.in_owned.load(.monotonic)) unlink(shard, task);
}

fn unlink(shard: *Shard, task: *Header) void {
    assert(shard.count > 0);
    assert(task.in_owned.load(.monotonic));
    task.in_owned.store(false, .monotonic);
    if (task.owned_prev) |prev| prev.owned_next = task.owned_next else {
        assert(shard.head == task);
        shard.head = task.owned_next;
    }
    if (task.owned_next) |next| next.owned_prev = task.owned_prev;
    task.owned_prev = null;
    task.owned_next = null;
    shard.count -= 1;
    assert((shard.head == null) == (shard.count == 0));
}

/// Closes every shard against inserts.
pub fn close(self: *OwnedTasks) void {
    for (self.shards) |*shard| {
        shard.mutex.lock();
        defer shard.mutex.unlock();
        shard.closed = true;
    }
}

/// After `close`: unlinks and returns one remaining task, or null when all are gone.
pub fn popAny(self: *OwnedTasks) ?*Header {
    for (self.shards) |*shard| {
        shard.mutex.lock();
        defer shard.mutex.unlock();
        assert(shard.closed);
        if (shard.head) |task| {
            unlink(shard, task);
            return task;
        }
    }
    return null;
}

/// Calls `visitor.visit(task)` for every listed task, under the lock of the task's shard (so
/// `visit` may read what was written before the insert, and must run no scheduler code). A
/// task inserted during the walk is visited or not; one inserted after it is not.
pub fn forEach(self: *OwnedTasks, visitor: anytype) void {
    for (self.shards) |*shard| {
        shard.mutex.lock();
        defer shard.mutex.unlock();
        var node = shard.head;
        var remaining = shard.count; // Bounds the walk: the list is linked only under this lock.
        while (node) |task| : (node = task.owned_next) {
            assert(remaining > 0);
            remaining -= 1;
            visitor.visit(task);
        }
        assert(remaining == 0);
    }
}

pub fn count(self: *OwnedTasks) usize {
    var total: usize = 0;
    for (self.shards) |*shard| {
        shard.mutex.lock();
        defer shard.mutex.unlock();
        total += shard.count;
    }
    return total;
}

test "insert, remove, close" {
    var owned = try OwnedTasks.init(std.testing.allocator, 4);
    defer owned.deinit(std.testing.allocator);
    var tasks: [6]Header = undefined;
    for (&tasks, 0..) |*t, i| {
        t.* = .{ .state = .init(0), .vtable = undefined, .scheduler = undefined, .id = i };
        try owned.insert(t);
    }
    try std.testing.expectEqual(@as(usize, 6), owned.count());
    owned.remove(&tasks[2]);
    owned.remove(&tasks[4]);
    try std.testing.expectEqual(@as(usize, 4), owned.count());
    const Counter = struct {
        ids: u64 = 0,
        fn visit(counter: *@This(), task: *Header) void {
            counter.ids |= @as(u64, 1) << @intCast(task.id);
        }
    };
    var counter = Counter{};
    owned.forEach(&counter);
    try std.testing.expectEqual(@as(u64, 0b101011), counter.ids); // All but 2 and 4.
    owned.close();
    try std.testing.expectError(error.Shutdown, owned.insert(&tasks[2]));
    var popped: usize = 0;
    while (owned.popAny()) |_| popped += 1;
    try std.testing.expectEqual(@as(usize, 4), popped);
}
