//! The blocking pool: OS threads for functions that block (`spawnBlocking`), so they never
//! stall a worker.
//!
//! Threads are started on demand, up to `threads_max`; an idle thread waits on a condition
//! variable and exits after `keep_alive_ns` without work. Tasks wait in a FIFO list (through
//! `Header.queue_next`). Everything is guarded by one mutex: this is not a hot path that
//! lock-free structures would speed up — a blocking call costs microseconds anyway.
//!
//! A blocking task is an ordinary task (same state word, same JoinHandle) whose future is
//! a function call; it is polled exactly once, is never woken and never re-scheduled.
//!
//! Counters (under the mutex): `threads_live` running threads, `threads_idle` of them
//! waiting, `wakeups_pending` signals sent but not yet consumed — a push wakes an idle thread
//! only if more threads are idle than already signalled, otherwise starts a new thread.
//!
//! Thread handles live in `slots`; a thread that exits marks its slot `exited`, and whoever
//! reuses the slot (or `shutdown`) joins it, so no thread is ever left unjoined.

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Header = @import("../task/Header.zig");
const context = @import("../context.zig");
const hook = @import("../hook.zig");
const explore = @import("../explore.zig");
const budget = @import("../budget.zig");
const Shared = @import("../scheduler/Shared.zig");
const Lock = @import("../Lock.zig");
const Condition = @import("../Condition.zig");

const BlockingPool = @This();

const Slot = struct {
    thread: ?std.Thread = null,
    state: enum { free, running, exited } = .free,
};

mutex: Lock = .{},
condition: Condition = .{},
head: ?*Header = null,
tail: ?*Header = null,
queue_len: usize = 0,
threads_live: u32 = 0,
threads_idle: u32 = 0,
wakeups_pending: u32 = 0,
shutting_down: bool = false,
slots: []Slot,
keep_alive_ns: u64,
/// The scheduler whose tasks these are: its context for the threads, `finishTask`.
shared: *Shared,
scheduler: Header.Scheduler,

pub fn init(allocator: Allocator, shared: *Shared, threads_max: u32, keep_alive_ns: u64) Allocator.Error!BlockingPool {
    assert(threads_max > 0);
    const slots = try allocator.alloc(Slot, threads_max);
    @memset(slots, .{});
    return .{
        .slots = slots,
        .keep_alive_ns = keep_alive_ns,
        .shared = shared,
        .scheduler = .{ .context = shared, .submit = submitUnreachable },
    };
}

pub fn deinit(self: *BlockingPool, allocator: Allocator) void {
    for (self.slots) |slot| assert(slot.thread == null);
    assert(self.head == null);
    allocator.free(self.slots);
}

fn submitUnreachable(ctx: *anyopaque, task: *Header, yielded: bool) void {
    _ = ctx;
    _ = task;
    _ = yielded;
    @panic("a blocking task was woken: blocking tasks run once and never wait");
}

pub const PushError = error{ Shutdown, ThreadSpawn };

/// Queues `task` and makes sure a thread will run it. An idle thread is signalled after the
/// lock is released: signalled inside, it woke into a held lock and spun on it while the
/// signaller was in its futex system call (`Condition` allows either: the waiter read the
/// sequence under the lock before this push took it).
pub fn push(self: *BlockingPool, task: *Header) PushError!void {
    if (try self.pushLocked(task)) self.condition.signal();
}

/// `push` under the lock; true if an idle thread must be signalled.
fn pushLocked(self: *BlockingPool, task: *Header) PushError!bool {
    self.mutex.lock();
    defer self.mutex.unlock();
    if (self.shutting_down) return error.Shutdown;
    task.queue_next = null;
    if (self.tail) |tail| tail.queue_next = task else self.head = task;
    self.tail = task;
    self.queue_len += 1;

    if (self.threads_idle > self.wakeups_pending) {
        self.wakeups_pending += 1;
        return true;
    }
    if (self.threads_live == self.slots.len) return false; // A busy thread will take it.
    self.startThreadLocked() catch |err| {
        if (self.threads_live > 0) return false; // Someone else will run it.
        _ = self.removeLocked(task);
        return err;
    };
    return false;
}

fn startThreadLocked(self: *BlockingPool) PushError!void {
    const index = for (self.slots, 0..) |slot, i| {
        if (slot.state != .running) break i;
    } else unreachable; // threads_live < slots.len.
    const slot = &self.slots[index];
    if (slot.thread) |finished| finished.join(); // It exited; joining returns at once.
    slot.* = .{};
    const thread = std.Thread.spawn(.{}, threadMain, .{ self, index }) catch return error.ThreadSpawn;
    slot.* = .{ .thread = thread, .state = .running };
    self.threads_live += 1;
}

fn removeLocked(self: *BlockingPool, task: *Header) bool {
    var previous: ?*Header = null;
    var current = self.head;
    while (current) |item| : ({
        previous = item;
        current = item.queue_next;
    }) {
        if (item != task) continue;
        if (previous) |p| p.queue_next = item.queue_next else self.head = item.queue_next;
        if (self.tail == item) self.tail = previous;
        item.queue_next = null;
        self.queue_len -= 1;
        return true;
    }
    return false;
}

fn popLocked(self: *BlockingPool) ?*Header {
    const task = self.head orelse return null;
    self.head = task.queue_next;
    if (self.head == null) self.tail = null;
    task.queue_next = null;
    self.queue_len -= 1;
    return task;
}

fn threadMain(self: *BlockingPool, slot_index: usize) void {
    explore.enterThread(explore.lane_blocking);
    const saved = context.enter(self.shared.handles());
    defer saved.restore();
    const scope = budget.Scope.begin(null);
    defer scope.end();

    self.mutex.lock();
    defer self.mutex.unlock();
    while (true) {
        // Shutdown first: functions that have not started are left for the runtime to
        // cancel, so `deinit` waits only for the ones already running.
        if (self.shutting_down) break;
        if (self.popLocked()) |task| {
            self.mutex.unlock();
            self.runTask(task);
            self.mutex.lock();
            continue;
        }
        self.threads_idle += 1;
        const timed_out = if (self.condition.timedWait(&self.mutex, self.keep_alive_ns)) |_| false else |_| true;
        self.threads_idle -= 1;
        if (self.wakeups_pending > 0) {
            self.wakeups_pending -= 1;
            continue;
        }
        if (timed_out and self.head == null) break;
    }
    self.threads_live -= 1;
    self.slots[slot_index].state = .exited;
}

/// Runs one blocking task to completion on the calling (pool) thread.
fn runTask(self: *BlockingPool, task: *Header) void {
    hook.reached(.blocking_before_run);
    switch (task.transitionToRunning()) {
        .cancel => {
            const done = task.vtable.cancel(task);
            assert(done); // Off a worker a cancellation always finishes.
        },
        .poll => {
            const done = task.vtable.poll(task);
            assert(done); // Blocking tasks are function calls: always ready.
        },
    }
    self.shared.finishTask(task);
}

/// Stops accepting tasks, lets running functions finish, joins every thread. Tasks still
/// queued are not started: they stay queued for the runtime to cancel (`popQueued`).
pub fn shutdown(self: *BlockingPool) void {
    {
        self.mutex.lock();
        defer self.mutex.unlock();
        self.shutting_down = true;
        self.condition.broadcast();
    }
    for (self.slots) |*slot| {
        // Threads only change their own slot's state; `thread` is written under the mutex
        // by starters, and no thread can be started after `shutting_down`.
        const thread = blk: {
            self.mutex.lock();
            defer self.mutex.unlock();
            const t = slot.thread;
            slot.thread = null;
            break :blk t;
        };
        if (thread) |t| t.join();
    }
    assert(self.threads_live == 0);
}

/// After `shutdown`: the tasks that never started.
pub fn popQueued(self: *BlockingPool) ?*Header {
    self.mutex.lock();
    defer self.mutex.unlock();
    assert(self.shutting_down);
    return self.popLocked();
}

/// Threads currently alive (for tests and metrics).
pub fn liveThreads(self: *BlockingPool) u32 {
    self.mutex.lock();
    defer self.mutex.unlock();
    return self.threads_live;
}
