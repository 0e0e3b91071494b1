//! Notifies tasks: `notifyOne` wakes one waiter (FIFO) or stores a single permit,
//! `notifyWaiters` wakes every current waiter; `notified()` returns the future that waits.
//! Tokio's Notify state machine, with intrusive waiters and a one-RMW `notifyOne`.
//!
//! State word (`state`, one atomic usize):
//!
//!     bit 0      waiting    the wait list is non-empty
//!     bit 1      notified   without `waiting`: one stored permit. With `waiting`: no meaning
//!                           (a transient left by a `notifyOne` that is serving a waiter)
//!     bits 2..   calls      how many times `notifyWaiters` was called (wrapping)
//!
//! So the phases are Tokio's: empty (0), waiting (1, or 3 transiently), notified (2).
//!
//! A `Notified` future captures `calls` when it is created. If `notifyWaiters` runs after the
//! creation, the future completes at its next poll even if it was never polled before
//! (Tokio's semantics: create the future, check your condition, then await).
//!
//! Transitions and who makes them:
//!
//! - `notifyOne` is one fetch-or of `notified` (no load first). If the previous word had no
//!   `waiting`, that stored the permit (or left the single permit in place: permits do not
//!   accumulate) and it is done. If it had `waiting`, the notifier takes the lock and serves
//!   the oldest waiter itself (or stores the permit if the list emptied meanwhile); the
//!   `notified` bit it set is ignored while `waiting` is set and cleared with it.
//! - A first poll consumes a permit with one CAS `notified -> empty` (calls unchanged);
//!   failing that, it takes the lock and either consumes a permit that arrived, completes
//!   because `calls` moved, or sets `waiting` (CAS from empty) and links its node.
//! - `waiting` is cleared only under the lock, by whoever empties the list (`notifyOne`,
//!   `notifyWaiters`, cancellation), always together with `notified` (a fetch-and or CAS,
//!   since lock-free fetch-ors may race).
//! - `notifyWaiters` with no waiter only increments `calls` (a CAS that fails if `waiting`
//!   appears, and then runs under the lock).
//!
//! Why no notification is lost: the permit, "has waiters" and `calls` share one word, and
//! every change is a read-modify-write, so all are totally ordered. A `notifyOne` either
//! lands before the waiter's CAS to `waiting` (which then fails, and the waiter consumes the
//! permit under the lock) or after it (its fetch-or returns `waiting`, and it serves a waiter
//! under the lock). Each notifier that saw `waiting` accounts for its own notification under
//! the lock, so clearing the transient `notified` bit loses nothing. Acquire/release suffice;
//! the two-flag store-then-load race that would need seq_cst cannot arise.
//!
//! Waiter protocol: the notifier unlinks the node, moves its waker out, and only then
//! publishes `notification` (release); the owner reads it with acquire and never needs the
//! lock once it is set. A waiter that was picked by `notifyOne` but is cancelled before it
//! observed it forwards the notification (to the next waiter, or as the stored permit), so
//! `notifyOne` is never lost.
//!
//! `notifyWaiters` detaches the whole list in O(1) (intrusive_list.Detached) and clears
//! `waiting` under the lock, then wakes the detached waiters in batches, dropping the lock
//! between batches. Waiters registering meanwhile go into the fresh list and are not woken by
//! this call; a concurrent `notifyOne` stores a permit or serves a new waiter rather than
//! being absorbed by one that is already being woken.

const std = @import("std");
const Lock = @import("../Lock.zig");
const assert = std.debug.assert;
const Waker = @import("../Waker.zig");
const future = @import("../future.zig");
const budget = @import("../budget.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const WakeList = @import("../wait/WakeList.zig");
const hook = @import("../hook.zig");
const Context = future.Context;
const Poll = future.Poll;

const Notify = @This();

const waiting_bit: usize = 1 << 0;
const notified_bit: usize = 1 << 1;
const flags_mask: usize = waiting_bit | notified_bit;
const calls_shift: std.math.Log2Int(usize) = 2;
const one_call: usize = 1 << calls_shift;

state: std.atomic.Value(usize) = .init(0),
mutex: Lock = .{},
waiters: intrusive_list.List = .{},

pub fn init() Notify {
    return .{};
}

fn callsOf(state: usize) usize {
    return state >> calls_shift;
}

/// Wakes the oldest waiter, or stores one permit if nobody waits (at most one is stored).
pub fn notifyOne(self: *Notify) void {
    // Release: the waiter that consumes the permit (acquire CAS) sees our prior writes; with
    // `waiting` the lock and the node's status carry them instead. The RMW reads the latest
    // word, so a `waiting` set before it cannot be missed.
    const before = self.state.fetchOr(notified_bit, .release);
    if (before & waiting_bit != 0) {
        @branchHint(.unlikely);
        self.notifyOneSlow();
    }
}

noinline fn notifyOneSlow(self: *Notify) void {
    self.mutex.lock();
    const woken = self.notifyLocked();
    self.mutex.unlock();
    if (woken) |w| w.wake();
}

/// With the lock held: serves the oldest waiter, or stores the permit if nobody waits.
/// Returns the waker to wake after unlocking.
fn notifyLocked(self: *Notify) ?Waker {
    // Under the lock `waiting` only changes under the lock, so this test is stable.
    if (self.state.load(.monotonic) & waiting_bit == 0) {
        // Release: as in notifyOne.
        _ = self.state.fetchOr(notified_bit, .release);
        return null;
    }
    const link = self.waiters.popFront().?; // waiting => the list is non-empty
    const waiter = Waiter.from(link);
    const waker = waiter.takeWaker();
    if (self.waiters.isEmpty()) self.clearWaitingLocked();
    // Release: the owner reads it with acquire. Last access to the node.
    waiter.notification.store(.one, .release);
    return waker;
}

/// With the lock held, the list just emptied: clears `waiting` and the meaningless
/// `notified` that may ride with it. Monotonic: it publishes nothing (the nodes' statuses
/// and the lock do); lock-free fetch-ors after it see no `waiting` and store a real permit.
fn clearWaitingLocked(self: *Notify) void {
    assert(self.waiters.isEmpty());
    const before = self.state.fetchAnd(~flags_mask, .monotonic);
    assert(before & waiting_bit != 0);
}

/// Wakes every waiter registered now, and every `Notified` created before this call.
/// Stores no permit.
pub fn notifyWaiters(self: *Notify) void {
    var state = self.state.load(.monotonic);
    while (state & waiting_bit == 0) {
        // Release: a future that sees the new `calls` (acquire load under the lock) also sees
        // our prior writes. `calls` wraps; only equality is ever tested.
        state = self.state.cmpxchgWeak(state, state +% one_call, .release, .monotonic) orelse return;
    }
    self.notifyWaitersSlow();
}

noinline fn notifyWaitersSlow(self: *Notify) void {
    self.mutex.lock();
    var state = self.state.load(.monotonic);
    while (true) {
        // With `waiting`: clear it (and the transient `notified`) while counting the call.
        // Without (the last waiter left before we locked): just count the call. A CAS loop:
        // lock-free fetch-ors and CASes may race. Release: see notifyWaiters.
        const next = if (state & waiting_bit != 0) (state +% one_call) & ~flags_mask else state +% one_call;
        state = self.state.cmpxchgWeak(state, next, .release, .monotonic) orelse break;
    }
    if (state & waiting_bit == 0) {
        self.mutex.unlock();
        return;
    }
    var detached: intrusive_list.Detached = undefined;
    detached.init();
    self.waiters.takeAll(&detached);
    var wake = WakeList.init();
    while (detached.popFront()) |link| {
        const waiter = Waiter.from(link);
        wake.push(waiter.takeWaker());
        // Release: the owner reads it with acquire. Last access to the node.
        waiter.notification.store(.all, .release);
        if (wake.isFull()) {
            self.mutex.unlock();
            wake.wakeAll();
            self.mutex.lock();
        }
    }
    self.mutex.unlock();
    wake.wakeAll();
}

/// The future that waits for a notification. Create it, then check your condition, then
/// await it: a `notifyWaiters` in between still completes it.
pub fn notified(self: *Notify) Notified {
    // Acquire: pairs with the release of notifyWaiters so that, if we see its call, we also
    // see what it published. Coherence alone guarantees we see every call that happened
    // before this creation.
    const state = self.state.load(.acquire);
    return .{ .notify = self, .calls = callsOf(state) };
}

const Notification = enum(u8) { none, one, all };

const Waiter = struct {
    link: intrusive_list.Node = .{},
    waker: ?Waker = null,
    notification: std.atomic.Value(Notification) = .init(.none),

    fn from(link: *intrusive_list.Node) *Waiter {
        return intrusive_list.entry(Waiter, "link", link);
    }

    fn takeWaker(self: *Waiter) Waker {
        const waker = self.waker.?;
        self.waker = null;
        return waker;
    }
};

/// Output: void. Must not move after its first poll until it completes or is cancelled.
pub const Notified = struct {
    pub const Output = void;

    notify: *Notify,
    /// `calls` when the future was created.
    calls: usize,
    phase: Phase = .init,
    /// Initialised by `enqueueLocked`; meaningful only in phase `waiting`.
    waiter: Waiter = undefined,

    const Phase = enum { init, waiting, done };

    pub fn poll(self: *Notified, cx: *Context) Poll(void) {
        assert(self.phase != .done);
        if (!budget.proceed(cx)) return .pending;
        const result = switch (self.phase) {
            .init => self.pollInit(cx),
            .waiting => self.pollWaiting(cx),
            .done => unreachable,
        };
        if (result == .pending) budget.refund();
        return result;
    }

    fn pollInit(self: *Notified, cx: *Context) Poll(void) {
        const notify = self.notify;
        // Consume a stored permit with one CAS, guessing the word from the captured calls.
        // Acquire: pairs with notifyOne's release.
        const guess = (self.calls << calls_shift) | notified_bit;
        if (notify.state.cmpxchgStrong(guess, guess & ~flags_mask, .acquire, .monotonic) == null) {
            self.phase = .done;
            return .{ .ready = {} };
        }
        hook.reached(.notify_wait);
        return self.pollInitSlow(cx);
    }

    /// No permit at the optimistic CAS: decide under the lock (consume a permit that arrived
    /// meanwhile, complete on a new `calls`, or register).
    noinline fn pollInitSlow(self: *Notified, cx: *Context) Poll(void) {
        const notify = self.notify;
        notify.mutex.lock();
        // Acquire: pairs with the release RMWs of notifyOne / notifyWaiters.
        var state = notify.state.load(.acquire);
        // Lock-free retry: each failed CAS means a notifier changed the word.
        while (callsOf(state) == self.calls) {
            if (state & waiting_bit != 0) {
                // Others wait already (any `notified` bit is a notifier's transient).
                self.enqueueLocked(cx.waker());
                notify.mutex.unlock();
                return .pending;
            }
            if (state & notified_bit != 0) {
                // A permit arrived after the optimistic CAS: the lost-wake-up case.
                state = notify.state.cmpxchgWeak(state, state & ~flags_mask, .acquire, .acquire) orelse break;
            } else {
                // Empty: become the first waiter. Acquire on failure: we may then read a new
                // `calls` or a permit.
                state = notify.state.cmpxchgWeak(state, state | waiting_bit, .acquire, .acquire) orelse {
                    self.enqueueLocked(cx.waker());
                    notify.mutex.unlock();
                    return .pending;
                };
            }
        }
        // Consumed a permit, or notifyWaiters ran since creation.
        notify.mutex.unlock();
        self.phase = .done;
        return .{ .ready = {} };
    }

    fn enqueueLocked(self: *Notified, waker: *const Waker) void {
        // Initialised only now, when it is about to be shared (the lock publishes it).
        self.waiter = .{ .waker = waker.clone() };
        self.notify.waiters.pushBack(&self.waiter.link);
        self.phase = .waiting;
    }

    fn pollWaiting(self: *Notified, cx: *Context) Poll(void) {
        // Acquire: pairs with the notifier's release store.
        if (self.waiter.notification.load(.acquire) != .none) return self.finish();
        hook.reached(.notify_repoll);
        const notify = self.notify;
        notify.mutex.lock();
        // Re-check under the lock: a notification between the load and the lock took our
        // waker; registering now would wait forever.
        if (self.waiter.notification.load(.monotonic) != .none) { // written under this lock
            notify.mutex.unlock();
            return self.finish();
        }
        const replaced = WakeList.storeWaker(&self.waiter.waker, cx.waker());
        notify.mutex.unlock();
        if (replaced) |stale| stale.drop();
        return .pending;
    }

    fn finish(self: *Notified) Poll(void) {
        self.phase = .done;
        return .{ .ready = {} };
    }

    /// Unlinks a pending waiter. A waiter that `notifyOne` picked but that never observed
    /// it passes the notification on. Idempotent; no-op after completion.
    pub fn cancel(self: *Notified) void {
        if (self.phase != .waiting) {
            self.phase = .done;
            return;
        }
        self.phase = .done;
        const notify = self.notify;
        var stale: ?Waker = null;
        var forwarded: ?Waker = null;
        notify.mutex.lock();
        switch (self.waiter.notification.load(.monotonic)) {
            .none => {
                // Works whether we are in the list or in a notifyWaiters batch ring.
                notify.waiters.remove(&self.waiter.link);
                stale = self.waiter.takeWaker();
                // Empty list with `waiting` set: we were its last node (if we were in a
                // notifyWaiters ring instead, `waiting` was cleared already).
                if (notify.waiters.isEmpty() and notify.state.load(.monotonic) & waiting_bit != 0) {
                    notify.clearWaitingLocked();
                }
            },
            .one => forwarded = notify.notifyLocked(),
            .all => {},
        }
        notify.mutex.unlock();
        if (stale) |w| w.drop();
        if (forwarded) |w| w.wake();
    }
};

// ---------------------------------------------------------------------------------------
// Tests

const testing = std.testing;

fn isReady(f: *Notified, cx: *Context) bool {
    return f.poll(cx) == .ready;
}

test "notifyOne then notified: ready at the first poll with a no-op waker" {
    var n = Notify.init();
    for (0..3) |_| {
        n.notifyOne();
        var f = n.notified();
        try testing.expect(future.pollOnce(&f) == .ready);
    }
    var f = n.notified();
    try testing.expect(future.pollOnce(&f) == .pending);
    f.cancel();
}

test "permits do not accumulate beyond one" {
    var n = Notify.init();
    n.notifyOne();
    n.notifyOne();
    n.notifyOne();
    var a = n.notified();
    try testing.expect(future.pollOnce(&a) == .ready);
    var b = n.notified();
    try testing.expect(future.pollOnce(&b) == .pending);
    b.cancel();
}

test "notifyOne wakes waiters in FIFO order, one each" {
    var n = Notify.init();
    var counters: [3]Waker.Counting = .{ .{}, .{}, .{} };
    var wakers: [3]Waker = undefined;
    var contexts: [3]Context = undefined;
    var futures: [3]Notified = undefined;
    for (0..3) |i| {
        wakers[i] = counters[i].waker();
        contexts[i] = Context.init(&wakers[i]);
        futures[i] = n.notified();
        try testing.expect(!isReady(&futures[i], &contexts[i]));
    }
    defer for (wakers) |w| w.drop();
    for (0..3) |i| {
        n.notifyOne();
        try testing.expectEqual(@as(u32, 1), counters[i].wakeCount());
        if (i + 1 < 3) try testing.expectEqual(@as(u32, 0), counters[i + 1].wakeCount());
        try testing.expect(isReady(&futures[i], &contexts[i]));
    }
    // Nobody waits: the next notifyOne is stored.
    n.notifyOne();
    try testing.expectEqual(notified_bit, n.state.load(.monotonic) & flags_mask);
    for (counters) |c| try testing.expectEqual(@as(i32, 1), c.outstanding());
}

test "notifyWaiters wakes all current waiters and stores no permit" {
    var n = Notify.init();
    const count = WakeList.capacity + 3; // more than one batch
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var futures: [count]Notified = undefined;
    for (&futures) |*f| {
        f.* = n.notified();
        try testing.expect(!isReady(f, &cx));
    }
    n.notifyWaiters();
    try testing.expectEqual(@as(u32, count), counter.wakeCount());
    for (&futures) |*f| try testing.expect(isReady(f, &cx));
    var after = n.notified();
    try testing.expect(!isReady(&after, &cx)); // no permit stored
    after.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "a Notified created before notifyWaiters and polled after completes" {
    var n = Notify.init();
    var early = n.notified();
    n.notifyWaiters();
    var late = n.notified();
    try testing.expect(future.pollOnce(&early) == .ready);
    try testing.expect(future.pollOnce(&late) == .pending);
    late.cancel();
    // Also when waiters exist (the locked path).
    var waiter = n.notified();
    try testing.expect(future.pollOnce(&waiter) == .pending);
    var created = n.notified();
    n.notifyWaiters();
    try testing.expect(future.pollOnce(&created) == .ready);
    try testing.expect(future.pollOnce(&waiter) == .ready);
}

test "cancelling a waiter picked by notifyOne forwards the notification" {
    var n = Notify.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    var a = n.notified();
    var b = n.notified();
    try testing.expect(!isReady(&a, &cx));
    try testing.expect(!isReady(&b, &cx));
    n.notifyOne(); // picks a
    a.cancel(); // a never saw it: b gets it
    try testing.expect(isReady(&b, &cx));
    // With nobody left, the forwarded notification becomes the stored permit.
    var c = n.notified();
    try testing.expect(!isReady(&c, &cx));
    n.notifyOne();
    c.cancel();
    var d = n.notified();
    try testing.expect(isReady(&d, &cx));
}

test "cancelling a plain waiter unlinks it and resets the phase" {
    var n = Notify.init();
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var a = n.notified();
    try testing.expect(!isReady(&a, &cx));
    a.cancel();
    a.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(usize, 0), n.state.load(.monotonic) & flags_mask);
    n.notifyOne(); // stored, not given to the cancelled waiter
    var b = n.notified();
    try testing.expect(isReady(&b, &cx));
}

test "a waiter cancelled inside a notifyWaiters batch is skipped safely" {
    // Build the batch-in-progress state directly: detach two waiters as notifyWaiters does,
    // cancel one of them, then serve the rest.
    var n = Notify.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    var a = n.notified();
    var b = n.notified();
    try testing.expect(!isReady(&a, &cx));
    try testing.expect(!isReady(&b, &cx));
    var detached: intrusive_list.Detached = undefined;
    detached.init();
    n.mutex.lock();
    n.waiters.takeAll(&detached);
    n.state.store((n.state.load(.monotonic) +% one_call) & ~flags_mask, .release);
    n.mutex.unlock();
    var c = n.notified(); // registers in the fresh list
    try testing.expect(!isReady(&c, &cx));
    a.cancel(); // leaves the ring; the list (c) is untouched
    try testing.expectEqual(waiting_bit, n.state.load(.monotonic) & flags_mask);
    n.mutex.lock();
    const link = detached.popFront().?;
    try testing.expectEqual(&b.waiter.link, link);
    try testing.expect(detached.isEmpty());
    const waker = b.waiter.takeWaker();
    b.waiter.notification.store(.all, .release);
    n.mutex.unlock();
    waker.wake();
    try testing.expect(isReady(&b, &cx));
    n.notifyOne();
    try testing.expect(isReady(&c, &cx));
}

test "a notifyOne in flight (notified bit with waiting) is not consumed by a new poller" {
    var n = Notify.init();
    const w = Waker.noop();
    var cx = Context.init(&w);
    var a = n.notified();
    try testing.expect(!isReady(&a, &cx));
    // A notifier has done its fetch-or and saw `waiting`, but has not taken the lock yet.
    const before = n.state.fetchOr(notified_bit, .release);
    try testing.expect(before & waiting_bit != 0);
    var b = n.notified();
    try testing.expect(!isReady(&b, &cx)); // queues behind a; the bit is not a permit
    n.notifyOneSlow(); // the in-flight notifier serves the oldest waiter
    try testing.expect(isReady(&a, &cx));
    try testing.expect(!isReady(&b, &cx));
    b.cancel(); // the last waiter leaves: both bits cleared
    try testing.expectEqual(@as(usize, 0), n.state.load(.monotonic) & flags_mask);
    n.notifyOne();
    n.notifyOne();
    var c = n.notified();
    try testing.expect(isReady(&c, &cx));
    var d = n.notified();
    try testing.expect(!isReady(&d, &cx)); // one permit only
    d.cancel();
}

test "waker replacement: the latest waker is woken" {
    var n = Notify.init();
    var first = Waker.Counting{};
    var second = Waker.Counting{};
    const w1 = first.waker();
    defer w1.drop();
    const w2 = second.waker();
    defer w2.drop();
    var cx1 = Context.init(&w1);
    var cx2 = Context.init(&w2);
    var f = n.notified();
    try testing.expect(!isReady(&f, &cx1));
    try testing.expect(!isReady(&f, &cx2));
    try testing.expectEqual(@as(i32, 1), first.outstanding());
    n.notifyOne();
    try testing.expectEqual(@as(u32, 0), first.wakeCount());
    try testing.expectEqual(@as(u32, 1), second.wakeCount());
    try testing.expect(isReady(&f, &cx2));
    try testing.expectEqual(@as(i32, 1), second.outstanding());
}

test "lost wake-up: notifyOne between the failed permit check and the lock" {
    var n = Notify.init();
    const NotifyOne = struct {
        fn run(notify: *Notify) void {
            notify.notifyOne(); // no waiter: stores the permit without the lock
        }
    };
    hook.arm(.notify_wait, &n, NotifyOne.run);
    defer hook.disarm();
    var f = n.notified();
    try testing.expect(future.pollOnce(&f) == .ready);
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(usize, 0), n.state.load(.monotonic) & flags_mask); // permit consumed
}

test "lost wake-up: notifyWaiters between the failed permit check and the lock" {
    var n = Notify.init();
    const NotifyAll = struct {
        fn run(notify: *Notify) void {
            notify.notifyWaiters();
        }
    };
    hook.arm(.notify_wait, &n, NotifyAll.run);
    defer hook.disarm();
    var f = n.notified();
    try testing.expect(future.pollOnce(&f) == .ready);
    try testing.expect(hook.fired());
}

test "lost wake-up: notifyOne between the queued status check and the lock" {
    var n = Notify.init();
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var f = n.notified();
    try testing.expect(!isReady(&f, &cx));
    const NotifyOne = struct {
        fn run(notify: *Notify) void {
            notify.notifyOne();
        }
    };
    hook.arm(.notify_repoll, &n, NotifyOne.run);
    defer hook.disarm();
    try testing.expect(isReady(&f, &cx));
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}
