//! An async mutex: a `Semaphore` with one permit (Tokio's design), locked through guards.
//!
//! State: the semaphore's word (see Semaphore.zig). With one permit it takes four values:
//! `1 << 2` free; `0` locked, nobody waiting; `queued` locked with waiters; `queued | 1 << 2`
//! briefly, while an unlock that saw waiters hands its permit to the head waiter.
//!
//! - `tryLock` is one compare-and-swap `free -> 0` (acquire); it fails whenever waiters are
//!   queued, so it never barges past them. It returns a `Guard`, or null.
//! - `Guard.unlock` is one fetch-add (release) and one compare of the word it returned with
//!   0: any other value is either `queued` (take the semaphore's lock and hand the permit
//!   directly to the oldest waiter) or a misuse (below).
//! - `lock()` returns a future whose Output is a `Guard`: fast path as `tryLock`, otherwise
//!   it queues FIFO. Lock acquisition under contention is therefore fair: the permit goes to
//!   waiters in arrival order and an unlocking task cannot re-take it ahead of them.
//!
//! Like Tokio's, the mutex has no owner thread or task. It guards no data by itself (Tokio's
//! `Mutex<T>` does): whoever holds a `Guard` may touch what the mutex protects until it calls
//! `unlock` on it, exactly once. A guard is a value: `unlock` takes it as it is, so the one
//! `tryLock` returns can be unlocked where it is captured (`if (m.tryLock()) |g| g.unlock()`).
//! Cancelling a pending `Lock` future withdraws it; a `Lock` that was handed the permit but is
//! cancelled before it observed it passes the permit on (see `Semaphore.Acquire.cancel`).
//!
//! Misuse is detected in every build mode (ReleaseFast included) and panics:
//!
//! - `unlock` of a guard whose lock period is over (the guard, or a copy of it, was unlocked
//!   already): `epoch` counts the unlocks, a guard records it when it is made, and `unlock`
//!   compares the two before it counts its own. This holds whatever happened to the mutex in
//!   between: another task may hold it now (its guard has the newer epoch).
//! - an unlock of a mutex that is not locked (a guard made by hand): the fetch-add returns a
//!   word other than 0 or `queued`, which the compare above already sends to the slow path.
//!   Not detectable: an unlock through a copy of the current holder's guard (it matches); the
//!   holder's own unlock then panics.
//!
//! The epoch is written only by the holder (at `unlock`, before the release fetch-add), so the
//! permit's acquire/release order every legitimate access; a misused guard may read it while
//! another task holds the lock, hence an atomic (monotonic). Cost: a load at acquisition, a
//! load, compare and store at `unlock`, on the line of the word the CAS already owns.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Semaphore = @import("Semaphore.zig");
const Context = future.Context;

const Mutex = @This();

semaphore: Semaphore,
/// Unlocks so far (wrapping; see the module comment).
epoch: std.atomic.Value(u64) = .init(0),

/// Panic message of `Guard.unlock` of a guard that (or a copy of which) was unlocked already.
pub const double_unlock_message = "ampere.sync.Mutex: double unlock (this guard, or a copy of it, was already unlocked)";
/// Panic message of an unlock that found the mutex unlocked.
pub const not_locked_message = "ampere.sync.Mutex: unlock of a mutex that is not locked";

pub fn init() Mutex {
    return .{ .semaphore = Semaphore.init(1) };
}

/// Locks if the mutex is free and nobody is waiting (one compare-and-swap); null otherwise.
pub fn tryLock(self: *Mutex) ?Guard {
    if (!self.semaphore.tryAcquireWhole(1)) return null;
    return Guard.begin(self);
}

/// A future that locks the mutex (FIFO). Output: `Guard`.
pub fn lock(self: *Mutex) Lock {
    return self.semaphore.acquireNeverClosed(1, Guard, Guard.acquired);
}

/// True while the mutex is locked or being handed to a waiter (a snapshot, for assertions).
pub fn isLocked(self: *const Mutex) bool {
    return self.semaphore.availablePermits() == 0;
}

/// The future of `lock()`: Output `Guard` (a mutex's semaphore is never closed).
pub const Lock = Semaphore.AcquireNeverClosed(Guard, Guard.acquired);

/// Proof of holding the lock. `unlock` releases it; the guard (and every copy of it) is spent
/// afterwards.
pub const Guard = struct {
    mutex: *Mutex,
    /// `mutex.epoch` when the lock was taken.
    epoch: u64,

    fn begin(mutex: *Mutex) Guard {
        // Monotonic: the permit's acquire ordered the last unlock's increment before this.
        return .{ .mutex = mutex, .epoch = mutex.epoch.load(.monotonic) };
    }

    fn acquired(semaphore: *Semaphore) Guard {
        return begin(@fieldParentPtr("semaphore", semaphore));
    }

    /// Unlocks; the oldest waiter, if any, gets the lock directly. Panics (every build mode)
    /// on a guard already unlocked and on a mutex that is not locked.
    pub fn unlock(self: Guard) void {
        self.unlockChecked() catch |err| switch (err) {
            error.DoubleUnlock => @panic(double_unlock_message),
            error.NotLocked => @panic(not_locked_message),
        };
    }

    /// `unlock`, with the misuse returned instead of panicking (for the tests). After
    /// error.NotLocked the mutex holds a second permit: the caller must not go on.
    fn unlockChecked(self: Guard) error{ DoubleUnlock, NotLocked }!void {
        const mutex = self.mutex;
        const epoch = mutex.epoch.load(.monotonic);
        if (epoch != self.epoch) return error.DoubleUnlock;
        // Before the release below: the next holder's guard records the new epoch.
        mutex.epoch.store(epoch +% 1, .monotonic);
        // While we hold the permit the word has none: 0, or `queued` (waiters).
        mutex.semaphore.releaseHeld(1, 0) catch return error.NotLocked;
    }
};

const testing = std.testing;
const Waker = @import("../Waker.zig");
const hook = @import("../hook.zig");

fn expectLocked(lock_future: *Lock, cx: *Context) !Guard {
    return switch (lock_future.poll(cx)) {
        .ready => |guard| guard,
        .pending => error.TestExpectedReady,
    };
}

test "tryLock and unlock" {
    var m = Mutex.init();
    try testing.expect(!m.isLocked());
    const guard = m.tryLock() orelse return error.TestExpectedLock;
    try testing.expectEqual(&m, guard.mutex);
    try testing.expect(m.isLocked());
    try testing.expect(m.tryLock() == null);
    guard.unlock();
    try testing.expect(!m.isLocked());
    // The guard unlocked where it is captured, without a `var` (issue 20).
    if (m.tryLock()) |g| g.unlock() else return error.TestExpectedLock;
    try testing.expect(!m.isLocked());
    try testing.expectEqual(@as(u64, 2), m.epoch.load(.monotonic));
}

test "lock is FIFO and tryLock does not barge past waiters" {
    var m = Mutex.init();
    var held = m.tryLock() orelse return error.TestExpectedLock;
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
        held.unlock(); // hands the lock to waiter i
        try testing.expect(m.tryLock() == null);
        try testing.expectEqual(@as(u32, 1), counters[i].wakeCount());
        if (i + 1 < 3) try testing.expectEqual(@as(u32, 0), counters[i + 1].wakeCount());
        held = try expectLocked(&locks[i], &contexts[i]);
        try testing.expectEqual(&m, held.mutex);
        try testing.expectEqual(@as(u64, i + 1), held.epoch);
    }
    held.unlock();
    try testing.expect(!m.isLocked());
}

test "cancelling a waiter that was handed the lock passes it on" {
    var m = Mutex.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    var held = m.tryLock() orelse return error.TestExpectedLock;
    var first = m.lock();
    var second = m.lock();
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    held.unlock(); // first now owns the lock but has not seen it
    first.cancel();
    var second_guard = try expectLocked(&second, &cx);
    second_guard.unlock();
    var again = m.tryLock() orelse return error.TestExpectedLock;
    again.unlock();
}

test "lost wake-up: unlock between the failed fast path and the lock" {
    var m = Mutex.init();
    var held = m.tryLock() orelse return error.TestExpectedLock;
    const Unlock = struct {
        fn run(guard: *const Guard) void {
            guard.unlock();
        }
    };
    hook.arm(.semaphore_acquire, &held, Unlock.run);
    defer hook.disarm();
    var l = m.lock();
    var guard = switch (future.pollOnce(&l)) {
        .ready => |g| g,
        .pending => return error.TestExpectedReady,
    };
    try testing.expect(hook.fired());
    guard.unlock();
    try testing.expect(!m.isLocked());
}

test "misuse: a guard unlocked twice, a copy unlocked after it, and an unlock of a mutex that is not locked" {
    var m = Mutex.init();
    const guard = m.tryLock() orelse return error.TestExpectedLock;
    const copy = guard;
    try guard.unlockChecked();
    try testing.expectError(error.DoubleUnlock, guard.unlockChecked());
    try testing.expectError(error.DoubleUnlock, copy.unlockChecked());
    // Detected through the guard even after another holder locked the mutex meanwhile, and
    // the holder's lock is left alone.
    const other = m.tryLock() orelse return error.TestExpectedLock;
    try testing.expectError(error.DoubleUnlock, guard.unlockChecked());
    try testing.expectError(error.DoubleUnlock, copy.unlockChecked());
    try testing.expect(m.isLocked());
    try other.unlockChecked();
    // A guard made by hand for a free mutex: the word says it is not locked.
    const forged = Guard{ .mutex = &m, .epoch = m.epoch.load(.monotonic) };
    try testing.expectError(error.NotLocked, forged.unlockChecked());
}

test "misuse: the panics abort a ReleaseFast program with their messages" {
    const misuse = @import("misuse_tests.zig");
    try misuse.expectPanic("mutex_double_unlock", double_unlock_message);
    try misuse.expectPanic("mutex_unlock_copy", double_unlock_message);
}
