//! An async mutex: a `Semaphore` with one permit (Tokio's design).
//!
//! State: the semaphore's word (see Semaphore.zig). With one permit it takes four values:
//! `1 << 2` free; `0` locked, nobody waiting; `queued` locked with waiters; `queued | 1 << 2`
//! briefly, while an `unlock` that saw waiters hands its permit to the head waiter.
//!
//! - `tryLock` is one compare-and-swap `free -> 0` (acquire); it fails whenever waiters are
//!   queued, so it never barges past them.
//! - `unlock` is one fetch-add (release); only when `queued` is set does it take the
//!   semaphore's lock and hand the permit directly to the oldest waiter.
//! - `lock()` returns a future: fast path as `tryLock`, otherwise it queues FIFO. Lock
//!   acquisition under contention is therefore fair: the permit goes to waiters in arrival
//!   order and an unlocking task cannot re-take it ahead of them.
//!
//! Like Tokio, the mutex guards no data by itself and has no owner: whoever completed `lock`
//! (or a successful `tryLock`) calls `unlock` exactly once. Cancelling a pending `Lock` future
//! withdraws it; a `Lock` that was handed the permit but is cancelled before it observed it
//! passes the permit on (see `Semaphore.Acquire.cancel`).

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Semaphore = @import("Semaphore.zig");
const Context = future.Context;

const Mutex = @This();

semaphore: Semaphore,

pub fn init() Mutex {
    return .{ .semaphore = Semaphore.init(1) };
}

/// Locks if the mutex is free and nobody is waiting. One compare-and-swap.
pub fn tryLock(self: *Mutex) bool {
    return self.semaphore.tryAcquireWhole(1);
}

/// A future that locks the mutex (FIFO). Output: void.
pub fn lock(self: *Mutex) Lock {
    return self.semaphore.acquireNeverClosed(1);
}

/// Unlocks; the oldest waiter, if any, gets the lock directly.
pub fn unlock(self: *Mutex) void {
    const permits_before = self.semaphore.addPermits(1);
    assert(permits_before == 0); // unlock of a mutex that was not locked
}

/// True while the mutex is locked or being handed to a waiter (a snapshot, for assertions).
pub fn isLocked(self: *const Mutex) bool {
    return self.semaphore.availablePermits() == 0;
}

/// The future of `lock()`: Output void (a mutex's semaphore is never closed).
pub const Lock = Semaphore.AcquireNeverClosed;

const testing = std.testing;
const Waker = @import("../Waker.zig");
const hook = @import("hook.zig");

test "tryLock and unlock" {
    var m = Mutex.init();
    try testing.expect(!m.isLocked());
    try testing.expect(m.tryLock());
    try testing.expect(m.isLocked());
    try testing.expect(!m.tryLock());
    m.unlock();
    try testing.expect(m.tryLock());
    m.unlock();
}

test "lock is FIFO and tryLock does not barge past waiters" {
    var m = Mutex.init();
    try testing.expect(m.tryLock());
    var counters: [3]Waker.Counting = .{ .{}, .{}, .{} };
    var wakers: [3]Waker = undefined;
    var contexts: [3]Context = undefined;
    var locks: [3]Lock = undefined;
    for (0..3) |i| {
        wakers[i] = counters[i].waker();
        contexts[i] = Context.init(&wakers[i]);
        locks[i] = m.lock();
        try testing.expect(locks[i].poll(&contexts[i]) == .pending);
    }
    defer for (wakers) |w| w.drop();
    for (0..3) |i| {
        m.unlock(); // hands the lock to waiter i
        try testing.expect(!m.tryLock());
        try testing.expectEqual(@as(u32, 1), counters[i].wakeCount());
        if (i + 1 < 3) try testing.expectEqual(@as(u32, 0), counters[i + 1].wakeCount());
        try testing.expect(locks[i].poll(&contexts[i]) == .ready);
    }
    m.unlock();
    try testing.expect(!m.isLocked());
}

test "cancelling a waiter that was handed the lock passes it on" {
    var m = Mutex.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    try testing.expect(m.tryLock());
    var first = m.lock();
    var second = m.lock();
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    m.unlock(); // first now owns the lock but has not seen it
    first.cancel();
    try testing.expect(second.poll(&cx) == .ready);
    m.unlock();
    try testing.expect(m.tryLock());
    m.unlock();
}

test "lost wake-up: unlock between the failed fast path and the lock" {
    var m = Mutex.init();
    try testing.expect(m.tryLock());
    const Unlock = struct {
        fn run(mutex: *Mutex) void {
            mutex.unlock();
        }
    };
    hook.arm(.semaphore_acquire, &m, Unlock.run);
    defer hook.disarm();
    var l = m.lock();
    try testing.expect(future.pollOnce(&l) == .ready);
    try testing.expect(hook.fired());
    m.unlock();
}
