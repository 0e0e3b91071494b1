//! A condition variable for `Lock` (the blocking pool's idle threads wait on one): a futex
//! over a sequence number, the algorithm of Rust's std `Condvar` on Linux.
//!
//! `wait` reads `sequence` while the caller holds the lock (after it checked its predicate and
//! found it false), unlocks, and sleeps on the futex unless `sequence` has moved on since the
//! read; `signal`/`broadcast` increment `sequence` and wake one/all sleepers.
//!
//! No wake-up is lost: a notifier changes the predicate under the lock, so its increment comes
//! after the waiter's read (the waiter read before it unlocked, the notifier incremented after
//! it locked); the futex wait compares the word atomically with the sleep, so a waiter that has
//! not started sleeping when the increment lands does not start (the word differs). Every wait
//! may also return spuriously — on a signal, or because an earlier notify moved `sequence` —
//! so callers re-check their predicate in a loop, as with any condition variable. The counter
//! wraps after 2^32 notifies; a waiter would have to miss exactly that many to sleep through
//! one (and then only until the next notify or its timeout), as in Rust.
//!
//! Ordering: `sequence` is monotonic everywhere. It carries no data: what the waiter reads
//! after waking was written under the lock, and the lock orders it.

const std = @import("std");
const Lock = @import("Lock.zig");
const os = @import("os.zig");

const Condition = @This();

sequence: std.atomic.Value(u32) = .init(0),

/// Unlocks `lock`, sleeps until a `signal`/`broadcast` (or spuriously), locks `lock` again.
pub fn wait(self: *Condition, lock: *Lock) void {
    _ = self.waitFor(lock, null);
}

/// `wait` for at most `timeout_ns`; `error.Timeout` when it elapsed without a notify. A
/// spurious return is not a timeout: the caller decides whether to wait again, and how long.
pub fn timedWait(self: *Condition, lock: *Lock, timeout_ns: u64) error{Timeout}!void {
    if (self.waitFor(lock, timeout_ns) == .timed_out) return error.Timeout;
}

fn waitFor(self: *Condition, lock: *Lock, timeout_ns: ?u64) os.FutexWaitResult {
    const seen = self.sequence.load(.monotonic);
    lock.unlock();
    defer lock.lock();
    return os.futexWait(&self.sequence, seen, timeout_ns);
}

/// Wakes one waiter (if any). Call it after changing the predicate under the lock.
pub fn signal(self: *Condition) void {
    _ = self.sequence.fetchAdd(1, .monotonic);
    os.futexWake(&self.sequence, 1);
}

/// Wakes every waiter.
pub fn broadcast(self: *Condition) void {
    _ = self.sequence.fetchAdd(1, .monotonic);
    os.futexWake(&self.sequence, std.math.maxInt(u32));
}

const testing = std.testing;

test "timedWait times out without a notify and keeps the lock held on return" {
    var lock = Lock{};
    var condition = Condition{};
    lock.lock();
    try testing.expectError(error.Timeout, condition.timedWait(&lock, 2 * std.time.ns_per_ms));
    try testing.expect(!lock.tryLock());
    lock.unlock();
}

test "signal wakes a waiter; broadcast wakes all of them" {
    const waiters_count = 3;
    const Shared = struct {
        lock: Lock = .{},
        condition: Condition = .{},
        generation: u32 = 0, // Under `lock`.
        waiting: u32 = 0, // Under `lock`.
        woken: u32 = 0, // Under `lock`.

        fn waiter(self: *@This()) void {
            self.lock.lock();
            defer self.lock.unlock();
            const start = self.generation;
            self.waiting += 1;
            while (self.generation == start) self.condition.wait(&self.lock);
            self.woken += 1;
        }

        fn waitUntil(self: *@This(), waiting: u32) void {
            while (true) {
                self.lock.lock();
                const now = self.waiting;
                self.lock.unlock();
                if (now == waiting) return;
                os.sleepNs(std.time.ns_per_ms);
            }
        }

        fn notify(self: *@This(), all: bool) void {
            self.lock.lock();
            defer self.lock.unlock();
            self.generation += 1;
            if (all) self.condition.broadcast() else self.condition.signal();
        }
    };
    var shared = Shared{};
    const one = try std.Thread.spawn(.{}, Shared.waiter, .{&shared});
    shared.waitUntil(1);
    shared.notify(false);
    one.join();
    try testing.expectEqual(@as(u32, 1), shared.woken);

    var threads: [waiters_count]std.Thread = undefined;
    for (&threads) |*t| t.* = try std.Thread.spawn(.{}, Shared.waiter, .{&shared});
    shared.waitUntil(1 + waiters_count);
    shared.notify(true);
    for (threads) |t| t.join();
    try testing.expectEqual(@as(u32, 1 + waiters_count), shared.woken);
}
