//! A mutex for the runtime's short critical sections (queue links, waiter lists, timer wheel):
//! futex-based (`os.futexWait`/`os.futexWake`), and it spins briefly before sleeping.
//!
//! Why spin: Zig's std mutex went straight to `futex_wait` on contention (and the one std has
//! now, `std.Io.Mutex`, needs an `Io`, which the runtime is below). The critical sections here
//! last tens of nanoseconds, so a contended `lock` that sleeps pays a context switch plus, on
//! unlock, a futex wake — on a virtual machine a wake-up of a halted vCPU costs tens of
//! microseconds — to wait for something that would have been free a few hundred cycles later.
//! Rust's std mutex (what Tokio's queues use) spins first; this is the same algorithm.
//!
//! One 32-bit word:
//!
//!     unlocked   (0)
//!     locked     (1)  held, nobody sleeping
//!     contended  (2)  held, and a thread may be sleeping on the futex
//!
//! `lock`: one compare-and-swap `unlocked -> locked`. Otherwise spin up to `spins_max` times
//! reading the word (loads only, so the holder keeps the cache line), stopping when it is
//! `unlocked` (try to take it as `locked`) or already `contended` (no point spinning); then
//! swap in `contended` and sleep on the futex until a swap finds it `unlocked`. A thread that
//! took the lock through the sleeping path holds it as `contended`, so its `unlock` wakes the
//! next sleeper; at worst that is one unneeded wake.
//!
//! `unlock`: swap in `unlocked`; if the old value was `contended`, wake one sleeper.
//!
//! Ordering: acquire on every successful take, release on unlock — the critical sections of
//! successive holders are ordered by the lock word alone.

const std = @import("std");
const assert = std.debug.assert;
const os = @import("os.zig");

const Lock = @This();

const unlocked: u32 = 0;
const locked: u32 = 1;
const contended: u32 = 2;

/// Spin iterations before sleeping (Rust's std mutex uses 100).
pub const spins_max: u32 = 100;

state: std.atomic.Value(u32) = .init(unlocked),

pub fn tryLock(self: *Lock) bool {
    return self.state.cmpxchgStrong(unlocked, locked, .acquire, .monotonic) == null;
}

pub fn lock(self: *Lock) void {
    if (self.state.cmpxchgWeak(unlocked, locked, .acquire, .monotonic) == null) return;
    self.lockContended();
}

fn lockContended(self: *Lock) void {
    @branchHint(.cold);
    var state = self.spin();
    if (state == unlocked) {
        state = self.state.cmpxchgStrong(unlocked, locked, .acquire, .monotonic) orelse return;
    }
    while (true) {
        // Mark the lock contended (skip the write if it already is: kinder to the cache line);
        // if it was free, we now hold it — as `contended`, so our unlock wakes a sleeper.
        if (state != contended and self.state.swap(contended, .acquire) == unlocked) return;
        _ = os.futexWait(&self.state, contended, null);
        state = self.spin();
    }
}

/// Waits (loads only) while the lock is held without sleepers, up to `spins_max` times.
fn spin(self: *Lock) u32 {
    var remaining = spins_max;
    while (true) {
        const state = self.state.load(.monotonic);
        if (state != locked or remaining == 0) return state;
        std.atomic.spinLoopHint();
        remaining -= 1;
    }
}

pub fn unlock(self: *Lock) void {
    const previous = self.state.swap(unlocked, .release);
    assert(previous != unlocked);
    if (previous == contended) os.futexWake(&self.state, 1);
}

test "exclusion under contention from many threads" {
    const ampere_testing = @import("testing.zig");
    const rounds = ampere_testing.scaled(200_000, 50);
    const threads_count = 4;
    var guard = Lock{};
    var counter: u64 = 0; // Plain memory: only the lock protects it (TSan checks that).
    var inside = std.atomic.Value(u32).init(0);
    const Worker = struct {
        fn run(l: *Lock, c: *u64, in: *std.atomic.Value(u32), n: usize) !void {
            for (0..n) |i| {
                if (i % 7 == 0) {
                    if (!l.tryLock()) l.lock();
                } else l.lock();
                if (in.fetchAdd(1, .monotonic) != 0) return error.TwoHolders;
                c.* += 1;
                _ = in.fetchSub(1, .monotonic);
                l.unlock();
            }
        }
    };
    var threads: [threads_count]std.Thread = undefined;
    for (&threads) |*t| t.* = try std.Thread.spawn(.{}, Worker.run, .{ &guard, &counter, &inside, rounds });
    for (threads) |t| t.join();
    try std.testing.expectEqual(@as(u64, threads_count * rounds), counter);
    try std.testing.expect(guard.tryLock());
    guard.unlock();
}

test "a holder that sleeps makes waiters sleep, and unlock wakes them" {
    var guard = Lock{};
    guard.lock();
    var acquired = std.atomic.Value(bool).init(false);
    const Waiter = struct {
        fn run(l: *Lock, flag: *std.atomic.Value(bool)) void {
            l.lock();
            flag.store(true, .release);
            l.unlock();
        }
    };
    const t = try std.Thread.spawn(.{}, Waiter.run, .{ &guard, &acquired });
    // Long enough for the waiter to give up spinning and sleep on the futex.
    while (guard.state.load(.monotonic) != contended) std.Thread.yield() catch {};
    try std.testing.expect(!acquired.load(.acquire));
    guard.unlock();
    t.join();
    try std.testing.expect(acquired.load(.acquire));
}
