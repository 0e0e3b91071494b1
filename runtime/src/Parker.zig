//! Parks one thread on a futex until another thread unparks it.
//!
//! One 32-bit state word:
//!
//!     empty     (0)  no notification pending, nobody parked
//!     notified  (1)  an unpark arrived; the next park returns at once and consumes it
//!     parked    (2)  the owner thread is (about to be) asleep in futex wait
//!     parked_io (3)  the owner thread is (about to be) blocked in the I/O driver (`parkIo`)
//!
//! Only the owner thread parks; any thread may unpark. An unpark is never lost: it either
//! finds `empty`/`notified` (the owner has not committed to sleeping yet; it will see
//! `notified` before it sleeps, because it moves `empty -> parked` with a compare-and-swap
//! that fails if `notified` was stored first) or it finds `parked` and wakes the futex.
//! The futex itself re-checks the word against `parked` before sleeping, so a wake between
//! the compare-and-swap and the syscall is not lost either.
//!
//! Parking in the I/O driver (`parkIo`, the scheduler's driver owner only): the same protocol
//! with `parked_io` in place of `parked` and `epoll_wait` in place of the futex. An unpark that
//! finds `parked_io` writes the driver's eventfd, which makes an `epoll_wait` in progress — or
//! the one about to start — return: the eventfd stays readable for it either way. An unpark
//! before the owner's compare-and-swap `empty -> parked_io` makes the swap fail (it finds
//! `notified`), so the owner never blocks with a notification pending. After `epoll_wait`
//! returns, for whatever reason, the owner swaps in `empty`, consuming a notification if one
//! came; a stray eventfd write left behind only makes a later turn return early.
//!
//! Ordering: `unpark` stores `notified` with release and `park` consumes it with acquire, so
//! everything the unparker wrote before `unpark` is visible after `park` returns.
//!
//! Spinning (`parkSpin`): before committing to the futex, the owner may poll for a
//! notification for a bounded time, yielding the CPU between checks. While it spins the word
//! stays `empty`, so an unpark is a plain store and the sleeper-side wake-up (on a virtual
//! machine, tens of microseconds to wake a halted vCPU) is avoided. After the spin budget the
//! thread sleeps as usual, so an idle thread stops using CPU.
//!
//! A `Parker` has no waker of its own: a waker may outlive the thread that parks, so the
//! wakers of parked threads (`blockOn`) go through the reference-counted `SharedParker`.
//! Workers own theirs as a field and are unparked by the runtime directly.

const std = @import("std");
const hook = @import("hook.zig");
const os = @import("os.zig");
const clock = @import("time/clock.zig");
const IoDriver = @import("io/Driver.zig");

const Parker = @This();

const empty: u32 = 0;
const notified: u32 = 1;
const parked: u32 = 2;
const parked_io: u32 = 3;

state: std.atomic.Value(u32) = .init(empty),
/// The I/O driver the owner thread may block in (`parkIo`): set once, before the thread starts,
/// for the parkers of a runtime's workers; null for every other parker.
io: ?*IoDriver = null,

/// Blocks until `unpark` is called (or returns at once if it was called since the last park).
pub fn park(self: *Parker) void {
    if (self.consumeNotification()) return;
    if (self.state.cmpxchgStrong(empty, parked, .monotonic, .monotonic)) |found| {
        std.debug.assert(found == notified);
        _ = self.state.swap(empty, .acquire); // Pairs with the release in `unpark`.
        return;
    }
    while (true) {
        _ = os.futexWait(&self.state, parked, null);
        if (self.consumeNotification()) return;
        // Spurious wake-up: still `parked`, sleep again.
    }
}

/// Polls for a notification for up to `spin_ns` (yielding the CPU every few checks), then
/// parks. `spin_ns = 0` is `park`.
pub fn parkSpin(self: *Parker, spin_ns: u64) void {
    if (spin_ns > 0 and self.spinForNotification(spin_ns)) return;
    self.park();
}

/// `parkTimeout` after spinning for up to `spin_ns` (at most the timeout).
pub fn parkTimeoutSpin(self: *Parker, timeout_ns: u64, spin_ns: u64) bool {
    const spin = @min(spin_ns, timeout_ns);
    if (spin > 0 and self.spinForNotification(spin)) return true;
    return self.parkTimeout(timeout_ns - spin);
}

/// True if a notification arrived (and was consumed) within `spin_ns`; false when the spin
/// reached its limit (the caller then parks). Owner thread only, like `park`.
pub fn spinForNotification(self: *Parker, spin_ns: u64) bool {
    std.debug.assert(spin_ns > 0);
    return self.spinUntil(spin_ns, null);
}

/// `spinForNotification` for the driver owner: also turns `self.io` without blocking at every
/// clock read (when anything is registered), and returns true as soon as it dispatched events.
pub fn spinForNotificationOrIo(self: *Parker, spin_ns: u64) bool {
    std.debug.assert(spin_ns > 0);
    const io = self.io.?;
    return self.spinUntil(spin_ns, if (io.hasRegistrations()) io else null);
}

fn spinUntil(self: *Parker, spin_ns: u64, io: ?*IoDriver) bool {
    const checks_per_clock_read = 32;
    const start_ns = clock.nowNs();
    var checks: u32 = 0;
    while (true) : (checks += 1) {
        // A plain load first: the compare-and-swap only when there is something to take.
        if (self.state.load(.monotonic) == notified and self.consumeNotification()) return true;
        if (checks % checks_per_clock_read == checks_per_clock_read - 1) {
            if (io) |driver| if (driver.turn(0) > 0) return true;
            if (clock.nowNs() -| start_ns >= spin_ns) return false;
            // Let runnable threads (possibly the one that will unpark us) have the CPU.
            std.Thread.yield() catch {};
        } else {
            std.atomic.spinLoopHint();
        }
    }
}

/// The driver owner's first look: dispatches the events already queued in `self.io` without
/// blocking. True if there were any (their tasks come before any spin or sleep). No system
/// call while nothing is registered.
pub fn pollIo(self: *Parker) bool {
    const io = self.io.?;
    return io.hasRegistrations() and io.turn(0) > 0;
}

/// Parks by blocking in `self.io`'s `epoll_wait` for at most `timeout_ns` (null: no limit; 0:
/// not at all) unless unparked first; dispatches the events it gets. No spinning (the caller
/// spins first if it wants to: `spinForNotificationOrIo`). The caller must be the only
/// thread turning the driver (the scheduler's driver owner).
pub fn parkIo(self: *Parker, timeout_ns: ?u64) void {
    const io = self.io.?;
    if (self.consumeNotification()) return;
    if (timeout_ns == 0) return;
    hook.reachedBy(.parker_before_block, self);
    if (self.state.cmpxchgStrong(empty, parked_io, .monotonic, .monotonic)) |found| {
        std.debug.assert(found == notified);
        _ = self.state.swap(empty, .acquire); // Pairs with the release in `unpark`.
        return;
    }
    _ = io.turn(timeout_ns);
    const previous = self.state.swap(empty, .acquire); // Consumes an unpark that came meanwhile.
    std.debug.assert(previous == parked_io or previous == notified);
}

/// Like `park`, but gives up after `timeout_ns`. Returns true when it was unparked.
pub fn parkTimeout(self: *Parker, timeout_ns: u64) bool {
    if (self.consumeNotification()) return true;
    if (self.state.cmpxchgStrong(empty, parked, .monotonic, .monotonic)) |found| {
        std.debug.assert(found == notified);
        _ = self.state.swap(empty, .acquire);
        return true;
    }
    // The futex wait returns early (a signal, a spurious wake-up): each round waits only for
    // what is left until the deadline.
    const deadline_ns = clock.nowNs() +| timeout_ns;
    while (true) {
        const remaining_ns = deadline_ns -| clock.nowNs();
        if (remaining_ns == 0 or os.futexWait(&self.state, parked, remaining_ns) == .timed_out) {
            // Timed out: withdraw the `parked` announcement unless an unpark raced with us.
            if (self.state.cmpxchgStrong(parked, empty, .monotonic, .monotonic) == null) return false;
            _ = self.state.swap(empty, .acquire);
            return true;
        }
        if (self.consumeNotification()) return true;
    }
}

/// Makes the owner's current or next `park` return. Callable from any thread.
pub fn unpark(self: *Parker) void {
    // Release: publishes the unparker's writes to the parked thread (acquire in park).
    switch (self.state.swap(notified, .release)) {
        parked => os.futexWake(&self.state, 1),
        parked_io => self.io.?.wakeup(),
        else => {},
    }
}

/// True while the owner thread is blocked (or committed to blocking) on its futex or in the
/// I/O driver (for tests).
pub fn isBlocked(self: *const Parker) bool {
    const state = self.state.load(.monotonic);
    return state == parked or state == parked_io;
}

fn consumeNotification(self: *Parker) bool {
    return self.state.cmpxchgStrong(notified, empty, .acquire, .monotonic) == null;
}

/// Drops a pending notification, for a new owner (`SharedParker.Pool.acquire`): only while
/// nobody is parked on it. An `unpark` racing with it may land before or after.
pub fn reset(self: *Parker) void {
    const previous = self.state.swap(empty, .monotonic);
    std.debug.assert(previous != parked); // Nobody is asleep on a parker being recycled.
}

test "spinning park returns on an unpark and sleeps after the budget" {
    var p = Parker{};
    p.unpark();
    p.parkSpin(1 * std.time.ns_per_ms);
    try std.testing.expect(!p.parkTimeoutSpin(2 * std.time.ns_per_ms, 1 * std.time.ns_per_ms));
    const Unparker = struct {
        fn run(parker: *Parker) void {
            os.sleepNs(3 * std.time.ns_per_ms);
            parker.unpark();
        }
    };
    // The unpark arrives after the spin budget: the futex sleep must still see it.
    const t = try std.Thread.spawn(.{}, Unparker.run, .{&p});
    p.parkSpin(100 * std.time.ns_per_us);
    t.join();
}

test "unpark before park is not lost" {
    var p = Parker{};
    p.unpark();
    p.park();
    try std.testing.expect(!p.parkTimeout(1 * std.time.ns_per_ms));
}

test "unpark from another thread wakes a parked thread" {
    var p = Parker{};
    var flag = std.atomic.Value(u32).init(0);
    const Unparker = struct {
        fn run(parker: *Parker, f: *std.atomic.Value(u32)) void {
            os.sleepNs(2 * std.time.ns_per_ms);
            f.store(1, .monotonic);
            parker.unpark();
        }
    };
    const t = try std.Thread.spawn(.{}, Unparker.run, .{ &p, &flag });
    while (flag.load(.monotonic) == 0) p.park();
    t.join();
    try std.testing.expectEqual(@as(u32, 1), flag.load(.monotonic));
}
