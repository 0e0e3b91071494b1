//! An intrusive FIFO of waiting futures, guarded by a mutex, with an atomic length that the
//! channels' fast paths read without taking the lock.
//!
//! Every waiting future embeds a `Waiter`, whose `link` is an `intrusive_list.Node` of the
//! queue's `intrusive_list.List` (wait/intrusive_list.zig, shared with `sync`). The node is
//! linked while the future is pending and unlinked before the future completes or is
//! cancelled, so waiting never allocates and the queue never refers to a future that is gone
//! (the future is pinned while linked). The list and every node's links are guarded by the
//! mutex; this file adds the mutex, the node states and the length on top of the bare list.
//!
//! Node states (`Waiter.state`):
//!
//!     idle      not in the queue; only the owning future touches the node
//!     linked    in the queue; the queue owns the stored waker (guarded by the mutex)
//!     notified  a notifier unlinked the node and took its waker; the owner must retry its
//!               operation (and pass the notification on if it is cancelled instead)
//!
//! `idle -> linked` and `linked -> idle` are done by the owner with the mutex held;
//! `linked -> notified` by a notifier with the mutex held; `notified -> idle` by the owner.
//! The notifier's store of `notified` is its last access to the node: the owner may observe
//! it without the lock (acquire) and then free the node at once.
//!
//! The length: changed only with the mutex held, by seq_cst read-modify-writes; read by fast
//! paths with seq_cst. A waiting future links itself (length store) and then re-checks the
//! channel; the fast path publishes (a seq_cst read-modify-write on the channel's position
//! word) and then reads the length. Both sides store then load, so both need sequential
//! consistency: in the single total order either the fast path's length load comes after the
//! link (it sees a waiter and notifies) or the waiter's re-check comes after the publication
//! (it sees the change and does not sleep). Release/acquire would allow both to miss.
//!
//! Wakers are never called (and never dropped) with the mutex held: the operations below
//! return the wakers they took and the caller wakes or drops them after `unlock`; `notifyAll`
//! collects them in a `WakeList` (wait/WakeList.zig) and wakes each batch after unlocking.

const std = @import("std");
const Lock = @import("../Lock.zig");
const Waker = @import("../Waker.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const WakeList = @import("../wait/WakeList.zig");

const WaitQueue = @This();

pub const State = enum(u8) { idle, linked, notified };

pub const Waiter = struct {
    /// Linked in the queue's list while `state == .linked`; guarded by the queue's mutex.
    link: intrusive_list.Node = .{},
    /// Valid while `state == .linked`; guarded by the queue's mutex.
    waker: Waker = undefined,
    state: std.atomic.Value(State) = .init(.idle),

    /// The owner's view of its node. `.linked` may turn into `.notified` concurrently unless
    /// the caller holds the queue's mutex.
    pub fn load(self: *const Waiter) State {
        // Acquire: pairs with the notifier's release store of `.notified`, so once the owner
        // sees `.notified` the notifier's writes to the node (unlinking) are complete.
        return self.state.load(.acquire);
    }

    /// A notified node becomes the owner's again (no lock: nobody else refers to it).
    pub fn reclaim(self: *Waiter) void {
        std.debug.assert(self.load() != .linked);
        self.state.store(.idle, .monotonic);
    }

    fn from(link: *intrusive_list.Node) *Waiter {
        return intrusive_list.entry(Waiter, "link", link);
    }
};

mutex: Lock = .{},
/// The linked waiters, oldest first. Guarded by the mutex.
waiters: intrusive_list.List = .{},
/// Number of linked waiters (see the module comment for the orderings).
len: std.atomic.Value(u32) = .init(0),

/// Lock-free check used by fast paths after publishing a change.
pub fn hasWaiters(self: *const WaitQueue) bool {
    // seq_cst: the load half of the publish-then-check side (module comment).
    return self.len.load(.seq_cst) != 0;
}

pub fn lock(self: *WaitQueue) void {
    self.mutex.lock();
}

pub fn unlock(self: *WaitQueue) void {
    self.mutex.unlock();
}

/// Appends `waiter` with a clone of `waker`. Mutex held; the node must not be linked.
pub fn pushLocked(self: *WaitQueue, waiter: *Waiter, waker: *const Waker) void {
    std.debug.assert(waiter.state.load(.monotonic) != .linked);
    waiter.waker = waker.clone();
    self.waiters.pushBack(&waiter.link);
    waiter.state.store(.linked, .monotonic); // Read under the mutex or by the owner.
    // seq_cst: the store half of the register-then-recheck side (module comment).
    const previous = self.len.fetchAdd(1, .seq_cst);
    std.debug.assert(previous < std.math.maxInt(u32));
}

/// Replaces the stored waker of a linked node unless it already wakes the same task.
/// Returns the old waker for the caller to drop after unlocking. Mutex held.
pub fn replaceWakerLocked(waiter: *Waiter, waker: *const Waker) ?Waker {
    std.debug.assert(waiter.state.load(.monotonic) == .linked);
    return WakeList.replaceWaker(&waiter.waker, waker);
}

/// The registration step of a waiting poll: links an unlinked `waiter` with a clone of
/// `waker`, or refreshes the waker of a node that is still linked. Returns a replaced waker
/// for the caller to drop after unlocking. Mutex held; the caller re-checks its condition
/// next, still under the mutex (register, then re-check: module comment).
pub fn registerLocked(self: *WaitQueue, waiter: *Waiter, waker: *const Waker) ?Waker {
    // Monotonic: with the mutex held nobody else changes the state; the mutex orders this
    // load after every notifier's store.
    if (waiter.state.load(.monotonic) == .linked) return replaceWakerLocked(waiter, waker);
    self.pushLocked(waiter, waker);
    return null;
}

/// Unlinks `waiter` if it is linked and returns its waker (to drop after unlocking). A node
/// that was notified meanwhile becomes idle and null is returned. Mutex held.
pub fn removeLocked(self: *WaitQueue, waiter: *Waiter) ?Waker {
    switch (waiter.state.load(.monotonic)) {
        .idle => return null,
        .notified => {
            waiter.state.store(.idle, .monotonic);
            return null;
        },
        .linked => {},
    }
    self.unlinkLocked(waiter);
    waiter.state.store(.idle, .monotonic);
    return waiter.waker;
}

/// Unlinks the oldest waiter, marks it notified and returns its waker. Mutex held.
pub fn popLocked(self: *WaitQueue) ?Waker {
    const waiter = Waiter.from(self.waiters.first() orelse return null);
    self.unlinkLocked(waiter);
    const waker = waiter.waker;
    // Release, and the last access to the node: the owner may free it once it sees this.
    waiter.state.store(.notified, .release);
    return waker;
}

fn unlinkLocked(self: *WaitQueue, waiter: *Waiter) void {
    self.waiters.remove(&waiter.link);
    // seq_cst like every change of `len` (decrements need no more than monotonic; one order
    // for all changes keeps the argument simple and costs the same instruction on x86).
    const previous = self.len.fetchSub(1, .seq_cst);
    std.debug.assert(previous > 0);
}

/// The owner's `cancel`: unlinks `waiter` if it is still linked and drops its waker after
/// unlocking. Returns true when the node had been notified (a notifier unlinked it and took
/// its waker): where one notification serves one waiter (`notifyOne`), the caller must pass
/// it on; where every waiter is notified (`notifyAll`) nothing was consumed. An idle or
/// notified node is settled without the lock (the notifier's store of `.notified` was its
/// last access to the node; `Waiter.load` is the acquire half).
pub fn cancel(self: *WaitQueue, waiter: *Waiter) bool {
    switch (waiter.load()) {
        .idle => return false,
        .notified => {
            waiter.reclaim();
            return true;
        },
        .linked => {},
    }
    self.lock();
    // Monotonic: a notifier may have changed `.linked` before we locked; the mutex orders
    // its store before this load.
    const notified = waiter.state.load(.monotonic) == .notified;
    const removed = self.removeLocked(waiter);
    self.unlock();
    if (removed) |w| w.drop();
    return notified;
}

/// Wakes the oldest waiter, if any.
pub fn notifyOne(self: *WaitQueue) void {
    self.lock();
    const waker = self.popLocked();
    self.unlock();
    if (waker) |w| w.wake();
}

/// Wakes every waiter linked when the call starts. Waiters that link themselves meanwhile
/// may be woken too (harmless: a woken future re-checks and waits again). At most
/// `WakeList.capacity` wakers are taken per lock hold; they are woken after unlocking, so the
/// lock is never held while waking and the notifier needs no allocation.
pub fn notifyAll(self: *WaitQueue) void {
    var wake = WakeList.init();
    self.lock();
    // Bounded by the waiters present now: later ones are appended behind them.
    var remaining: u32 = self.len.load(.monotonic);
    while (true) {
        while (remaining > 0 and !wake.isFull()) : (remaining -= 1) {
            wake.push(self.popLocked() orelse {
                remaining = 0; // Some were cancelled meanwhile.
                break;
            });
        }
        self.unlock();
        wake.wakeAll();
        if (remaining == 0) return;
        self.lock();
    }
}

/// True when no waiter is linked (for `deinit` assertions).
pub fn isEmpty(self: *WaitQueue) bool {
    self.lock();
    defer self.unlock();
    const empty = self.waiters.isEmpty();
    std.debug.assert(empty == (self.len.load(.monotonic) == 0));
    return empty;
}

test "push, pop in FIFO order, remove from the middle" {
    var queue = WaitQueue{};
    var counters: [3]Waker.Counting = .{ .{}, .{}, .{} };
    var waiters: [3]Waiter = .{ .{}, .{}, .{} };
    for (&waiters, &counters) |*w, *c| {
        const waker = c.waker();
        defer waker.drop();
        queue.lock();
        queue.pushLocked(w, &waker);
        queue.unlock();
    }
    try std.testing.expect(queue.hasWaiters());
    queue.lock();
    const removed = queue.removeLocked(&waiters[1]);
    queue.unlock();
    removed.?.drop();
    try std.testing.expectEqual(State.idle, waiters[1].load());

    queue.notifyOne();
    try std.testing.expectEqual(@as(u32, 1), counters[0].wakeCount());
    try std.testing.expectEqual(State.notified, waiters[0].load());
    queue.notifyOne();
    try std.testing.expectEqual(@as(u32, 1), counters[2].wakeCount());
    try std.testing.expect(!queue.hasWaiters());
    queue.notifyOne(); // Nothing to wake.
    for (&counters) |*c| try std.testing.expectEqual(@as(i32, 0), c.outstanding());
    try std.testing.expect(queue.isEmpty());
}

test "notifyAll wakes more waiters than one batch and replaces wakers" {
    var queue = WaitQueue{};
    const count = WakeList.capacity * 2 + 5;
    var counter = Waker.Counting{};
    var other = Waker.Counting{};
    var waiters: [count]Waiter = undefined;
    for (&waiters) |*w| {
        w.* = .{};
        const waker = counter.waker();
        defer waker.drop();
        queue.lock();
        queue.pushLocked(w, &waker);
        queue.unlock();
    }
    {
        const waker = other.waker();
        defer waker.drop();
        queue.lock();
        const same = counter.waker();
        try std.testing.expect(replaceWakerLocked(&waiters[0], &same) == null);
        same.drop();
        const old = replaceWakerLocked(&waiters[0], &waker);
        queue.unlock();
        old.?.drop();
    }
    queue.notifyAll();
    try std.testing.expectEqual(@as(u32, count - 1), counter.wakeCount());
    try std.testing.expectEqual(@as(u32, 1), other.wakeCount());
    try std.testing.expectEqual(@as(i32, 0), counter.outstanding());
    try std.testing.expectEqual(@as(i32, 0), other.outstanding());
    for (&waiters) |*w| try std.testing.expectEqual(State.notified, w.load());
    try std.testing.expect(queue.isEmpty());
}

test "cancel settles idle, linked and notified nodes and reports a consumed notification" {
    var queue = WaitQueue{};
    var counter = Waker.Counting{};
    var waiters: [3]Waiter = .{ .{}, .{}, .{} };
    try std.testing.expect(!queue.cancel(&waiters[0])); // Idle: nothing to do.
    for (&waiters) |*w| {
        const waker = counter.waker();
        defer waker.drop();
        queue.lock();
        try std.testing.expectEqual(@as(?Waker, null), queue.registerLocked(w, &waker));
        // Registering again with the same target keeps the stored waker.
        try std.testing.expectEqual(@as(?Waker, null), queue.registerLocked(w, &waker));
        queue.unlock();
    }
    try std.testing.expectEqual(@as(i32, 3), counter.outstanding());
    queue.notifyOne(); // Notifies waiters[0].
    try std.testing.expect(queue.cancel(&waiters[0])); // Notified: must be passed on.
    try std.testing.expectEqual(State.idle, waiters[0].load());
    try std.testing.expect(!queue.cancel(&waiters[2])); // Linked: unlinked, waker dropped.
    try std.testing.expectEqual(State.idle, waiters[2].load());
    try std.testing.expect(!queue.cancel(&waiters[2])); // Idempotent.
    try std.testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try std.testing.expectEqual(@as(i32, 1), counter.outstanding()); // waiters[1]'s waker.
    queue.notifyOne();
    try std.testing.expectEqual(State.notified, waiters[1].load());
    waiters[1].reclaim();
    try std.testing.expectEqual(@as(i32, 0), counter.outstanding());
    try std.testing.expect(queue.isEmpty());
}
