//! The I/O driver's state for one registered file descriptor (Tokio's `ScheduledIo`): the
//! readiness the kernel last reported, and the futures waiting for it.
//!
//! ## The readiness word
//!
//!     bits 0..7    Ready: readable, writable, read_closed, write_closed, err (io/ready.zig)
//!     bits 8..23   tick: incremented (mod 2^16) by every event the driver dispatches
//!     bit  30      closed: the socket was closed; every wait ends with SocketClosed
//!     bit  31      shutdown: the driver shut down; every wait ends with RuntimeShutdown
//!
//! The descriptor is registered edge-triggered: the kernel reports a change once, not a level.
//! So readiness is *remembered* here until an operation proves it gone by failing with
//! `WouldBlock`, and only then cleared. A waiting operation therefore runs:
//!
//!     event = pollReady(interest)          (ready bits ∩ interest, plus the tick it saw)
//!     syscall                              (read, write, accept, ...)
//!     WouldBlock -> clearReadiness(event)  (clears those bits only if the tick is unchanged)
//!
//! The tick closes the window between the syscall and the clear: if the kernel reported new
//! readiness in between (data arrived after the read drained the socket), the driver bumped
//! the tick, the clear does nothing, and the next `pollReady` sees the new readiness. Without
//! it the clear would erase the only notification the kernel will ever send for that data.
//! The closed bits are final and never cleared.
//!
//! Readiness is never consumed by waking: a woken waiter that is cancelled before it acts
//! leaves the readiness for the next waiter to see.
//!
//! ## Waiters (no allocation per wait)
//!
//! A `Waiter` lives inside the future that waits (pinned while linked) and holds a clone of
//! the task's waker. Every waiter is in one intrusive FIFO list guarded by `lock`: any number
//! of readers and writers may wait at once (a reader task and a writer task on the same
//! stream, or many tasks accepting on one listener).
//!
//! `dispatch` (the driver, for an epoll event): stores the readiness (read-modify-write), then
//! takes `lock` and unlinks every waiter whose interest intersects the event, taking its waker;
//! the wakers are woken after the lock is released (in batches of `WakeList.capacity`).
//!
//! `pollReady` (a future): reads the word; if its interest is ready (or shut down) it returns
//! at once. Otherwise it takes `lock`, reads the word **again**, and links its waiter only if
//! still not ready. No wake-up is lost: if the dispatcher's critical section comes first, its
//! store precedes its unlock, which precedes the poller's lock, so the poller's second read
//! sees the readiness; if the poller's comes first, the waiter is linked when the dispatcher
//! walks the list. (Same argument for `shutdown`, which sets its bit before taking the lock.)
//! The lock, not the atomic orderings, carries this argument; the word uses acquire/release
//! only so that a reader of the word also sees the writes made before the store.
//!
//! A woken waiter is unlinked by the waker side under the lock (`linked = false`) and never
//! touched again by it: the future may complete and vanish as soon as it sees `linked` false
//! under the lock. `cancelWait` unlinks a waiter still linked (and releases the reference of
//! its operation, below); either the dispatcher or the canceller unlinks it, never both,
//! because both do it under the lock.
//!
//! ## Closing
//!
//! `close` (the owner closes the socket, possibly while other tasks wait on it) sets
//! `closed_bit` and then wakes every waiter, like `shutdown`: by the argument above, every
//! operation waiting now or later sees the bit and ends with `SocketClosed` without a system
//! call.
//!
//! ## Lifetime: references
//!
//! A `ScheduledIo` is referenced from places the driver does not control: a future waiting on
//! it may be cancelled long after the socket was closed (an aborted task's `cancel` runs when
//! a worker next takes the task), and an event for it may sit in the batch a turn is
//! dispatching. So it is reference-counted, in `refs`:
//!
//!     bit  0       the driver's reference: held from registration until the first turn after
//!                  `EPOLL_CTL_DEL` (an event in the batch of the turn running now may still
//!                  name this), or until the driver is destroyed
//!     bits 1..31   users, each `user_ref`: the registration itself while it is open (dropped
//!                  by `close`, or by the driver's `deinit` for a socket left open), and one
//!                  per waiter that has been linked, held by its operation until it finishes
//!                  or is cancelled (taken under `lock` just before the first link, released
//!                  by `releaseWaiter`/`cancelWait`: a waiter is woken and unlinked long before
//!                  its operation stops touching this)
//!
//! Invariants: (1) the memory is freed by whoever drops the last reference of either kind, so
//! it outlives every operation that has waited on it and every event batch that names it;
//! (2) the descriptor is closed by whoever drops the last *user* reference, so it stays open
//! while any operation may still run a system call on it — its number cannot be reused under
//! an operation (a closed-then-reused number would let a late `recv` read another socket).
//! A user reference is only ever added by someone who holds one (the open registration, or
//! the waiter's own earlier reference), so the count of users never climbs back from zero.
//!
//! Orderings (as `Arc`): adding is monotonic (the adder already holds a reference); every drop
//! is an acq_rel read-modify-write: its release half orders this holder's accesses (its last
//! system call, its unlock) before the drop, and the acquire half of the last drop makes all of
//! them happen before the descriptor's `close` and the free.
//!
//! An operation that completes without ever waiting takes no reference (no read-modify-write
//! on the fast path): its system call runs while the caller's registration is open, which the
//! caller guarantees by not closing the socket while it starts an operation on it.

const std = @import("std");
const os = @import("../os.zig");
const builtin = @import("builtin");
const assert = std.debug.assert;
const posix = std.posix;
const Allocator = std.mem.Allocator;

const Lock = @import("../Lock.zig");
const Waker = @import("../Waker.zig");
const future = @import("../future.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const WakeList = @import("../wait/WakeList.zig");
const hook = @import("../hook.zig");
const Ready = @import("ready.zig").Ready;

const ScheduledIo = @This();

const ready_mask: u32 = 0xff;
const tick_shift: u5 = 8;
const tick_mask: u32 = 0xffff << tick_shift;
const closed_bit: u32 = 1 << 30;
const shutdown_bit: u32 = 1 << 31;

/// `refs`: the driver's reference (bit 0) and one user (see "Lifetime: references").
pub const driver_ref: u32 = 1;
pub const user_ref: u32 = 2;

/// The readiness word (see the module comment). Its own cache line: the driver writes it on
/// every event while tasks on other workers read it.
readiness: std.atomic.Value(u32) align(std.atomic.cache_line),
/// Guards `waiters` and the `linked`/`waker` fields of every waiter in it.
lock: Lock = .{},
waiters: intrusive_list.List = .{},
/// The driver's reference and the users (see "Lifetime: references"). Next to `lock`: it is
/// changed by waiting operations, which take the lock anyway.
refs: std.atomic.Value(u32) = .init(driver_ref + user_ref),
fd: posix.fd_t,
/// The allocator the driver allocated this with; whoever drops the last reference frees it.
allocator: Allocator,
/// The driver's bookkeeping (guarded by the driver's lock): the link in its registration list,
/// and later in its release list.
driver_link: intrusive_list.Node = .{},

/// What a ready `pollReady` returns: the readiness seen (intersected with the interest) and
/// the tick it was seen at, for `clearReadiness`; or that the socket was closed or the driver
/// shut down.
pub const Event = struct {
    ready: Ready,
    tick: u16,
    is_closed: bool,
    is_shutdown: bool,
};

/// One waiting operation. Embedded in the future that waits; must not move while linked.
pub const Waiter = struct {
    node: intrusive_list.Node = .{},
    /// What the operation waits for (`Ready.read_interest` or `Ready.write_interest`).
    interest: Ready,
    /// Guarded by the lock while linked; owned by the waiter otherwise.
    waker: ?Waker = null,
    /// Guarded by the lock: in the list. Cleared by whoever unlinks it.
    linked: bool = false,
    /// Owned by the waiting future: it linked the waiter and has not yet seen it unlinked.
    waiting: bool = false,
    /// Owned by the waiting future: it holds a user reference of the `ScheduledIo` (taken at
    /// its first link, released by `releaseWaiter` or `cancelWait`).
    holds_ref: bool = false,

    pub fn init(interest: Ready) Waiter {
        assert(!interest.isEmpty());
        return .{ .interest = interest };
    }
};

pub fn init(fd: posix.fd_t, allocator: Allocator, assumed: Ready) ScheduledIo {
    return .{ .readiness = .init(assumed.bits()), .fd = fd, .allocator = allocator };
}

fn eventOf(word: u32, interest: Ready) Event {
    const ready = Ready.fromBits(@truncate(word & ready_mask));
    return .{
        .ready = ready.intersect(interest),
        .tick = @truncate((word & tick_mask) >> tick_shift),
        .is_closed = word & closed_bit != 0,
        .is_shutdown = word & shutdown_bit != 0,
    };
}

/// The current readiness in `interest` (no registration).
pub fn event(self: *const ScheduledIo, interest: Ready) Event {
    return eventOf(self.readiness.load(.acquire), interest);
}

fn isReady(ev: Event) bool {
    return !ev.ready.isEmpty() or ev.is_closed or ev.is_shutdown;
}

/// Returns the readiness in `waiter.interest` if there is any (or the socket was closed, or
/// the driver shut down); otherwise links `waiter` with a clone of the task's waker and
/// returns null. A waiter that was linked and has been woken since looks at the readiness
/// afresh (it may have been cleared again by another operation, then it waits again). The
/// first link takes a user reference for the waiter's operation: release it with
/// `releaseWaiter` when the operation finishes (or `cancelWait`).
pub fn pollReady(self: *ScheduledIo, waiter: *Waiter, cx: *future.Context) ?Event {
    if (waiter.waiting) {
        if (self.refreshWaiter(waiter, cx)) return null;
        waiter.waiting = false;
    }
    const fast = self.event(waiter.interest);
    if (isReady(fast)) return fast;
    hook.reached(.io_readiness);
    self.lock.lock();
    // Read again under the lock (see "Waiters" in the module comment).
    const current = self.event(waiter.interest);
    if (isReady(current)) {
        self.lock.unlock();
        return current;
    }
    assert(!waiter.linked and waiter.waker == null);
    if (!waiter.holds_ref) {
        // The caller's registration is open (or this waiter held a reference before), so
        // users is not zero: see "Lifetime: references".
        self.acquireUser();
        waiter.holds_ref = true;
    }
    waiter.waker = cx.waker().clone();
    waiter.linked = true;
    self.waiters.pushBack(&waiter.node);
    self.lock.unlock();
    waiter.waiting = true;
    return null;
}

/// A linked waiter polled again: true if it is still linked (its waker refreshed).
fn refreshWaiter(self: *ScheduledIo, waiter: *Waiter, cx: *future.Context) bool {
    self.lock.lock();
    if (!waiter.linked) {
        self.lock.unlock();
        assert(waiter.waker == null);
        return false;
    }
    const replaced = WakeList.storeWaker(&waiter.waker, cx.waker());
    self.lock.unlock();
    if (replaced) |w| w.drop(); // Outside the lock: a drop may free a task.
    return true;
}

/// Unlinks `waiter` if it is still waiting (cancellation) and releases its reference.
/// Idempotent. Afterwards nothing refers to the waiter, and the caller must not touch `self`
/// again unless it holds another reference (it may have been the last). Readiness is
/// untouched, so no other waiter loses it.
pub fn cancelWait(self: *ScheduledIo, waiter: *Waiter) void {
    self.unlinkWaiter(waiter);
    self.releaseWaiter(waiter);
}

fn unlinkWaiter(self: *ScheduledIo, waiter: *Waiter) void {
    if (!waiter.waiting) return;
    waiter.waiting = false;
    self.lock.lock();
    const stored = waiter.waker;
    waiter.waker = null;
    if (waiter.linked) {
        self.waiters.remove(&waiter.node);
        waiter.linked = false;
    } else {
        assert(stored == null); // Taken by the waking side.
    }
    self.lock.unlock();
    if (stored) |w| w.drop();
}

/// The driver received an event: store `ready` with a new tick and wake its waiters.
pub fn dispatch(self: *ScheduledIo, ready: Ready) void {
    // Acquire: pairs with the release store of the registration (Driver.register).
    var current = self.readiness.load(.acquire);
    while (true) {
        // Events stop when the driver shuts down (no turns after the workers stop).
        assert(current & shutdown_bit == 0);
        const tick: u32 = ((current & tick_mask) +% (1 << tick_shift)) & tick_mask;
        const next = (current & ~(tick_mask | ready_mask)) | tick | ((current | ready.bits()) & ready_mask);
        // Acq_rel: the release half publishes the readiness to pollers' acquire loads.
        current = self.readiness.cmpxchgWeak(current, next, .acq_rel, .acquire) orelse break;
    }
    self.wake(ready);
}

/// An operation saw `ev` and then got `WouldBlock`: clear the bits it saw, unless a newer
/// event arrived since (different tick). Closed bits are final and stay.
pub fn clearReadiness(self: *ScheduledIo, ev: Event) void {
    const clear = ev.ready.without(Ready.closed).bits();
    if (clear == 0) return;
    var current = self.readiness.load(.monotonic);
    while (true) {
        const tick: u16 = @truncate((current & tick_mask) >> tick_shift);
        if (tick != ev.tick) return; // A newer event: its readiness must survive.
        const next = current & ~@as(u32, clear);
        current = self.readiness.cmpxchgWeak(current, next, .acq_rel, .monotonic) orelse return;
    }
}

/// The driver shut down: every current and future wait ends at once with `is_shutdown`.
/// The bit is set before the lock is taken (see "Waiters" in the module comment).
pub fn shutdown(self: *ScheduledIo) void {
    self.markShutdown();
    self.wake(Ready.all);
}

/// Sets the shutdown bit without waking (the driver marks every descriptor under its lock
/// first and wakes afterwards, outside it).
pub fn markShutdown(self: *ScheduledIo) void {
    _ = self.readiness.fetchOr(shutdown_bit, .acq_rel);
}

/// The socket is being closed: every current and future wait ends at once with `is_closed`
/// (see "Closing"). The caller still holds the registration's reference.
pub fn close(self: *ScheduledIo) void {
    _ = self.readiness.fetchOr(closed_bit, .acq_rel);
    self.wake(Ready.all);
}

/// Adds a user. The caller holds a user reference already (see "Lifetime: references").
fn acquireUser(self: *ScheduledIo) void {
    const previous = self.refs.fetchAdd(user_ref, .monotonic);
    assert(previous >= user_ref); // Resurrected: an operation started on a closed socket.
    assert(previous < std.math.maxInt(u32) - user_ref);
}

/// The waiter's operation finished: releases the reference its first link took, if any. The
/// caller must not touch `self` afterwards (it may have been the last reference).
pub fn releaseWaiter(self: *ScheduledIo, waiter: *Waiter) void {
    assert(!waiter.waiting);
    if (!waiter.holds_ref) return;
    waiter.holds_ref = false;
    self.releaseUser();
}

/// Drops a user reference: the registration's (at close) or an operation's. The last user
/// closes the descriptor; the last reference of all frees this. No access to `self` after.
pub fn releaseUser(self: *ScheduledIo) void {
    const fd = self.fd;
    const allocator = self.allocator;
    // Acq_rel: see "Lifetime: references".
    const previous = self.refs.fetchSub(user_ref, .acq_rel);
    assert(previous >= user_ref);
    if (previous - user_ref >= user_ref) return; // Other users remain.
    // The last user: no operation can run a system call on the descriptor any more.
    os.close(fd);
    if (previous - user_ref == 0) allocator.destroy(self);
}

/// Drops the driver's reference (the first turn after deregistration, or the driver's
/// deinit). Frees this if no user is left. No access to `self` after.
pub fn releaseDriver(self: *ScheduledIo) void {
    const allocator = self.allocator;
    const previous = self.refs.fetchSub(driver_ref, .acq_rel);
    assert(previous & driver_ref != 0);
    if (previous == driver_ref) allocator.destroy(self);
}

/// Unlinks and wakes every waiter whose interest intersects `ready`, outside the lock, in
/// bounded batches.
pub fn wake(self: *ScheduledIo, ready: Ready) void {
    var batch = WakeList.init();
    self.lock.lock();
    var cursor = self.waiters.first();
    while (cursor) |node| {
        const next = node.next;
        const waiter = intrusive_list.entry(Waiter, "node", node);
        if (waiter.interest.intersects(ready)) {
            self.waiters.remove(node);
            waiter.linked = false;
            batch.push(waiter.waker.?);
            waiter.waker = null;
            // From here on the waiter may be freed by its future: not touched again.
            if (batch.isFull()) {
                self.lock.unlock();
                batch.wakeAll();
                self.lock.lock();
                cursor = self.waiters.first(); // The list may have changed meanwhile.
                continue;
            }
        }
        cursor = next;
    }
    self.lock.unlock();
    batch.wakeAll();
}

/// True if any waiter is linked (for tests).
pub fn hasWaiters(self: *ScheduledIo) bool {
    self.lock.lock();
    defer self.lock.unlock();
    return !self.waiters.isEmpty();
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;

fn testIo() ScheduledIo {
    return init(-1, testing.allocator, Ready.empty);
}

test "dispatch wakes matching waiters only; readiness stays until cleared" {
    var io = testIo();
    var reader_counter = Waker.Counting{};
    var writer_counter = Waker.Counting{};
    const rw = reader_counter.waker();
    defer rw.drop();
    const ww = writer_counter.waker();
    defer ww.drop();
    var rcx = future.Context.init(&rw);
    var wcx = future.Context.init(&ww);

    var reader = Waiter.init(Ready.read_interest);
    var writer = Waiter.init(Ready.write_interest);
    try testing.expect(io.pollReady(&reader, &rcx) == null);
    try testing.expect(io.pollReady(&writer, &wcx) == null);
    io.dispatch(.{ .readable = true });
    try testing.expectEqual(@as(u32, 1), reader_counter.wakeCount());
    try testing.expectEqual(@as(u32, 0), writer_counter.wakeCount());
    // The woken reader sees the readiness; the writer is still linked.
    const ev = io.pollReady(&reader, &rcx).?;
    try testing.expect(ev.ready.readable and !ev.is_shutdown);
    try testing.expect(io.pollReady(&writer, &wcx) == null);
    // A second reader sees it too: waking did not consume it.
    var other = Waiter.init(Ready.read_interest);
    try testing.expect(io.pollReady(&other, &rcx).?.ready.readable);
    io.clearReadiness(ev);
    try testing.expect(io.pollReady(&other, &rcx) == null);
    io.cancelWait(&other);
    io.cancelWait(&writer);
    io.cancelWait(&writer); // idempotent
    try testing.expect(!io.hasWaiters());
    try testing.expectEqual(@as(i32, 1), reader_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), writer_counter.outstanding());
}

test "a stale WouldBlock does not clear readiness reported after it (tick), also after 300 events" {
    var io = testIo();
    io.dispatch(.{ .readable = true });
    const seen = io.event(Ready.read_interest);
    try testing.expect(seen.ready.readable);
    // The read got WouldBlock, but before the clear the kernel reported new data.
    io.dispatch(.{ .readable = true });
    io.clearReadiness(seen);
    try testing.expect(io.event(Ready.read_interest).ready.readable);
    // More events than an 8-bit tick could count (one that wrapped would match again).
    for (0..300) |_| io.dispatch(.{ .readable = true });
    io.clearReadiness(seen);
    try testing.expect(io.event(Ready.read_interest).ready.readable);
    // A clear with the current tick works; closed bits survive it.
    io.dispatch(.{ .read_closed = true });
    const now = io.event(Ready.read_interest);
    io.clearReadiness(now);
    const after = io.event(Ready.read_interest);
    try testing.expect(!after.ready.readable and after.ready.read_closed);
}

test "a waiter cancelled after being woken leaves the readiness to the next waiter" {
    var io = testIo();
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var first = Waiter.init(Ready.read_interest);
    try testing.expect(io.pollReady(&first, &cx) == null);
    io.dispatch(.{ .readable = true });
    io.cancelWait(&first); // Woken, then dropped before acting on it.
    var second = Waiter.init(Ready.read_interest);
    try testing.expect(io.pollReady(&second, &cx).?.ready.readable);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "shutdown wakes every waiter and ends later waits at once" {
    var io = testIo();
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var waiters: [3 * WakeList.capacity + 5]Waiter = undefined;
    for (&waiters, 0..) |*waiter, i| {
        waiter.* = Waiter.init(if (i % 2 == 0) Ready.read_interest else Ready.write_interest);
        try testing.expect(io.pollReady(waiter, &cx) == null);
    }
    io.shutdown();
    try testing.expectEqual(@as(u32, waiters.len), counter.wakeCount());
    for (&waiters) |*waiter| try testing.expect(io.pollReady(waiter, &cx).?.is_shutdown);
    var late = Waiter.init(Ready.read_interest);
    try testing.expect(io.pollReady(&late, &cx).?.is_shutdown);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "close wakes every waiter and ends later waits with is_closed; a waiter holds a reference from its first link" {
    var io = testIo();
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var reader = Waiter.init(Ready.read_interest);
    var writer = Waiter.init(Ready.write_interest);
    try testing.expect(io.pollReady(&reader, &cx) == null);
    try testing.expect(io.pollReady(&writer, &cx) == null);
    try testing.expectEqual(driver_ref + 3 * user_ref, io.refs.load(.monotonic));
    try testing.expect(io.pollReady(&reader, &cx) == null); // Still linked: no second reference.
    try testing.expectEqual(driver_ref + 3 * user_ref, io.refs.load(.monotonic));
    io.close();
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    const seen = io.pollReady(&reader, &cx).?;
    try testing.expect(seen.is_closed and !seen.is_shutdown);
    io.releaseWaiter(&reader);
    io.cancelWait(&writer); // Woken and unlinked already: only its reference goes.
    try testing.expectEqual(driver_ref + user_ref, io.refs.load(.monotonic));
    var late = Waiter.init(Ready.read_interest);
    try testing.expect(io.pollReady(&late, &cx).?.is_closed);
    try testing.expect(!late.holds_ref); // Never linked.
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

const DispatchInWindow = struct {
    io: *ScheduledIo,
    fn run(self: *DispatchInWindow) void {
        self.io.dispatch(.{ .readable = true });
    }
};

test "lost wake-up: an event between the lock-free check and the registration is seen" {
    var io = testIo();
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    var waiter = Waiter.init(Ready.read_interest);
    var window = DispatchInWindow{ .io = &io };
    hook.arm(.io_readiness, &window, DispatchInWindow.run);
    defer hook.disarm();
    const result = io.pollReady(&waiter, &cx);
    try testing.expect(hook.fired());
    // Either ready now, or linked and woken: never linked and forgotten.
    if (result == null) {
        try testing.expectEqual(@as(u32, 1), counter.wakeCount());
        io.cancelWait(&waiter);
    } else {
        try testing.expect(result.?.ready.readable);
    }
    try testing.expect(result != null or counter.wakeCount() == 1);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "waiters woken from another thread while others register and cancel" {
    const rounds = @import("../testing.zig").scaled(2_000, 20);
    var io = testIo();
    var stop = std.atomic.Value(bool).init(false);
    const Dispatcher = struct {
        fn run(target: *ScheduledIo, done: *std.atomic.Value(bool)) void {
            while (!done.load(.acquire)) {
                target.dispatch(.{ .readable = true, .writable = true });
                std.Thread.yield() catch {};
            }
        }
    };
    const thread = try std.Thread.spawn(.{}, Dispatcher.run, .{ &io, &stop });
    defer thread.join();
    defer stop.store(true, .release);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = future.Context.init(&w);
    for (0..rounds) |round| {
        var waiter = Waiter.init(if (round % 2 == 0) Ready.read_interest else Ready.write_interest);
        // Wait for readiness, then consume it as a WouldBlock would.
        var polls: u32 = 0;
        while (true) : (polls += 1) {
            const wakes = counter.wakeCount();
            if (io.pollReady(&waiter, &cx)) |ev| {
                io.clearReadiness(ev);
                break;
            }
            if (round % 3 == 0 and polls == 0) {
                io.cancelWait(&waiter); // Cancel mid-wait, then wait again.
                continue;
            }
            // Linked: the dispatcher must wake it (a lost wake-up spins here forever).
            while (counter.wakeCount() == wakes) std.Thread.yield() catch {};
        }
    }
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expect(!io.hasWaiters());
}
