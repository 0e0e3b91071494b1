//! An async counting semaphore that acquires and releases many permits at once (Tokio's
//! batch semaphore), fair (FIFO), with intrusive waiters. Mutex and RwLock are built on it.
//!
//! State word (`state`, one atomic usize):
//!
//!     bit 0        closed   set once by `close`; acquisitions fail with error.Closed
//!     bit 1        queued   the wait list is non-empty
//!     bits 2..     permits  permits available in the word
//!
//! The wait list (`waiters`) and every queued node's `remaining`, `waker` and links are
//! protected by `mutex`. Permits flow in two ways:
//!
//! - Fast path (no waiters): `tryAcquire` is one compare-and-swap that subtracts permits,
//!   `release` is one fetch-add. Neither touches the lock.
//! - Hand-off (waiters): a `release` whose fetch-add saw `queued` takes the lock, takes every
//!   permit out of the word and assigns them to the waiters from the front of the list,
//!   partially filling a large request at the head. A waiter whose request is complete is
//!   unlinked, its waker moved into a `WakeList`, and then its `status` is published; after
//!   that store the node is never touched again (its future may complete and vanish). Wakers
//!   are woken after the lock is released, in batches of `WakeList.capacity`.
//!
//! Invariants:
//!
//! 1. `queued` is set exactly while the list is non-empty. It is set by the acquirer that
//!    enqueues the first waiter, in the same compare-and-swap that takes every available
//!    permit out of the word, and cleared under the lock by whoever empties the list (in the
//!    same compare-and-swap that returns leftover permits to the word).
//! 2. While `queued` is set, permits in the word belong to the waiters: they were added by a
//!    `release` that saw `queued` and will hand them over under the lock. So neither
//!    `tryAcquire` nor a new acquirer takes them (no barging past queued waiters: FIFO).
//! 3. A new acquirer that finds `queued` set under the lock joins the tail without touching
//!    the word; one that finds it clear takes what is available and, if that is not enough,
//!    sets `queued` atomically with taking it.
//!
//! Why no wake-up is lost: "has waiters" (`queued`) and the permits live in the *same* word,
//! and every change to it is a read-modify-write, so all of them are totally ordered. A
//! `release` either precedes the acquirer's enqueueing compare-and-swap (which then fails and
//! retries, seeing the permits) or follows it (and then reads `queued` and hands off under the
//! lock). This is exactly the case where two separate flags would each be stored and the other
//! loaded (and would need seq_cst); with one word, acquire/release RMWs suffice.
//!
//! Cancellation (`Acquire.cancel`): a still-queued waiter unlinks itself and gives back the
//! permits already assigned to it (they go to the next waiters, or to the word when the list
//! becomes empty). A waiter that was completed but never observed its completion gives back
//! all its permits. A waiter that was closed holds none (close returned them).
//!
//! Closing: `close` sets `closed` with one fetch-or; when `queued` was set it takes the lock
//! and completes every waiter with `closed` (returning their partial permits to the word).
//! Waiters that arrive later see `closed` in the word, under the lock, before enqueueing.
//! `release` still adds permits after close (so `availablePermits` stays accurate).
//!
//! The lock is a `Lock`; wakers are cloned under it (a reference-count increment)
//! but never woken or dropped under it.

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

const Semaphore = @This();

/// The most permits a semaphore can hold (three top bits kept free, like Tokio, so that an
/// erroneous over-release is caught by an assertion before the word overflows).
pub const max_permits: usize = std.math.maxInt(usize) >> 3;

pub const AcquireError = error{Closed};

const closed_bit: usize = 1 << 0;
const queued_bit: usize = 1 << 1;
const flags_mask: usize = closed_bit | queued_bit;
const permit_shift: std.math.Log2Int(usize) = 2;

state: std.atomic.Value(usize),
mutex: Lock = .{},
waiters: intrusive_list.List = .{},

pub fn init(permits: usize) Semaphore {
    assert(permits <= max_permits);
    return .{ .state = .init(permits << permit_shift) };
}

/// Permits that an acquisition could take now (0 while waiters are queued: those own every
/// permit that is released).
pub fn availablePermits(self: *const Semaphore) usize {
    // Acquire: a caller that sees permits also sees what their releaser wrote before.
    const state = self.state.load(.acquire);
    if (state & queued_bit != 0) return 0;
    return state >> permit_shift;
}

pub fn isClosed(self: *const Semaphore) bool {
    return self.state.load(.acquire) & closed_bit != 0;
}

/// Takes `n` permits if they are available now and nobody is queued. Never waits.
pub fn tryAcquire(self: *Semaphore, n: usize) bool {
    return self.tryTake(n) == .acquired;
}

/// Takes all the permits iff the word holds exactly `n` of them and no flag: a single
/// compare-and-swap with no load before it. Mutex.tryLock (n = 1) and RwLock.tryWrite
/// (n = max_reads) use it; it is equivalent to `tryAcquire(n)` for a semaphore whose capacity
/// is `n`.
pub inline fn tryAcquireWhole(self: *Semaphore, n: usize) bool {
    assert(n > 0 and n <= max_permits);
    // Acquire on success: pairs with the release fetch-add of the last `release`, so the
    // previous holder's critical section happens before ours. Failure needs no ordering.
    return self.state.cmpxchgStrong(n << permit_shift, 0, .acquire, .monotonic) == null;
}

/// Adds `n` permits, handing them to queued waiters first (FIFO).
pub inline fn release(self: *Semaphore, n: usize) void {
    if (n == 0) return;
    const before = self.addPermits(n);
    if (before & queued_bit != 0) {
        @branchHint(.unlikely);
        self.releaseQueued();
    }
}

pub const ReleaseHeldError = error{NotHeld};

/// `release(n)` by a holder of `n` permits of a semaphore whose word holds at most
/// `available_max` permits while those `n` are held (Mutex: 0; an RwLock reader:
/// `max_reads - 1`; an RwLock writer: 0). Returns error.NotHeld — the permits are added all
/// the same — when the word held more: the caller released permits it did not hold (a double
/// unlock). Mutex and RwLock turn that error into a panic in every build mode.
///
/// Cost: the fast path (no waiters, not misused) is the fetch-add and one compare, as in
/// `release`: the word is rotated right by the flag bits, which moves `queued` and `closed`
/// to the top, so one unsigned compare with `available_max` tests "waiters queued" and "too
/// many permits" at once. With `available_max = 0` the rotate folds away (`word != 0`).
pub inline fn releaseHeld(self: *Semaphore, n: usize, comptime available_max: usize) ReleaseHeldError!void {
    comptime assert(available_max < max_permits);
    assert(n > 0 and n <= max_permits);
    const before = self.addPermits(n);
    if (std.math.rotr(usize, before, permit_shift) > available_max) {
        @branchHint(.unlikely);
        return self.releaseHeldSlow(before, available_max);
    }
}

/// The rare cases of `releaseHeld`: waiters to hand the permits to, or a misuse.
noinline fn releaseHeldSlow(self: *Semaphore, before: usize, available_max: usize) ReleaseHeldError!void {
    // Misuse first, with or without waiters: the holder's own permits are never in the word
    // (queued or not), so more than `available_max` there means the caller held none.
    if (before >> permit_shift > available_max) return error.NotHeld;
    if (before & queued_bit != 0) self.releaseQueued();
}

/// The fetch-add of every release; returns the word before it.
inline fn addPermits(self: *Semaphore, n: usize) usize {
    assert(n > 0 and n <= max_permits);
    // Release: publishes the releaser's writes to whoever takes these permits (tryAcquire's
    // acquire CAS, or the hand-off's acquire CAS in `releaseQueued`). The RMW reads the latest
    // value, so a `queued` bit set by an enqueuing acquirer before it cannot be missed.
    const before = self.state.fetchAdd(n << permit_shift, .release);
    assert((before >> permit_shift) + n <= max_permits); // over-release
    return before;
}

/// Closes the semaphore: every queued and future acquisition fails with error.Closed;
/// `tryAcquire` returns false. Idempotent.
pub fn close(self: *Semaphore) void {
    // Acq_rel: the RMW is ordered with the enqueuing CAS (same word): if it comes first, the
    // acquirer sees `closed` and never enqueues; if it comes second, it reads `queued`.
    const before = self.state.fetchOr(closed_bit, .acq_rel);
    if (before & closed_bit != 0) return;
    if (before & queued_bit == 0) return;
    self.mutex.lock();
    var wake = WakeList.init();
    var returned: usize = 0;
    while (self.waiters.popFront()) |link| {
        const waiter = Waiter.from(link);
        returned += waiter.requested - waiter.remaining;
        wake.push(waiter.takeWaker());
        // Release: the owner reads `closed` with acquire and may then free the node; this is
        // the last access to it.
        waiter.status.store(.closed, .release);
        if (wake.isFull()) {
            self.mutex.unlock();
            wake.wakeAll();
            self.mutex.lock();
        }
    }
    self.clearQueuedLocked(returned);
    self.mutex.unlock();
    wake.wakeAll();
}

/// A future that acquires `n` permits (FIFO). Output: `error{Closed}!void`.
pub fn acquire(self: *Semaphore, n: usize) Acquire {
    assert(n <= max_permits);
    return .{ .semaphore = self, .permits = n };
}

/// `acquire` on a semaphore its owner never closes (Mutex, RwLock); see `AcquireNeverClosed`.
pub fn acquireNeverClosed(
    self: *Semaphore,
    n: usize,
    comptime Guard: type,
    comptime acquired: fn (*Semaphore) Guard,
) AcquireNeverClosed(Guard, acquired) {
    return .{ .inner = self.acquire(n) };
}

/// The future of an acquisition on a semaphore that is never closed: once the permits are
/// taken its Output is `acquired(semaphore)` (the owner's guard); a Closed result is a broken
/// invariant. Cancelling it is cancelling the acquisition.
pub fn AcquireNeverClosed(comptime Guard: type, comptime acquired: fn (*Semaphore) Guard) type {
    return struct {
        const Self = @This();
        pub const Output = Guard;

        inner: Acquire,

        pub fn poll(self: *Self, cx: *Context) Poll(Guard) {
            return switch (self.inner.poll(cx)) {
                .pending => .pending,
                .ready => |result| {
                    result catch unreachable; // The owner never closes this semaphore.
                    return .{ .ready = acquired(self.inner.semaphore) };
                },
            };
        }

        pub fn cancel(self: *Self) void {
            self.inner.cancel();
        }
    };
}

const TakeResult = enum { acquired, closed, insufficient };

fn tryTake(self: *Semaphore, n: usize) TakeResult {
    assert(n <= max_permits);
    const needed = n << permit_shift;
    // Monotonic load: only a guess for the CAS, which validates it.
    var state = self.state.load(.monotonic);
    // Lock-free retry: each failure means another thread changed the word (made progress).
    while (true) {
        if (state & closed_bit != 0) return .closed;
        if (n == 0) return .acquired;
        // Invariant 2: permits in the word while `queued` belong to the waiters.
        if (state & queued_bit != 0) return .insufficient;
        if (state < needed) return .insufficient;
        // Acquire on success: pairs with the release fetch-add in `addPermits`.
        state = self.state.cmpxchgWeak(state, state - needed, .acquire, .monotonic) orelse
            return .acquired;
    }
}

/// Slow path of `release`: `queued` was set when permits were added, so they belong to the
/// waiters. Moves every permit out of the word and hands them over.
noinline fn releaseQueued(self: *Semaphore) void {
    self.mutex.lock();
    var state = self.state.load(.monotonic);
    while (true) {
        // The list was emptied meanwhile (permits stay available), or another releaser's
        // hand-off already took the permits we added.
        if (state & queued_bit == 0 or state >> permit_shift == 0) {
            self.mutex.unlock();
            return;
        }
        // Acquire: pairs with the release fetch-adds that put these permits in the word.
        state = self.state.cmpxchgWeak(state, state & flags_mask, .acquire, .monotonic) orelse break;
    }
    self.handOffAndUnlock(state >> permit_shift);
}

/// With the lock held: assigns `permits` (taken out of the word, or given back by a
/// cancelled waiter) to the waiters in FIFO order, returns what is left to the word if the
/// list becomes empty, releases the lock and wakes the completed waiters.
fn handOffAndUnlock(self: *Semaphore, permits: usize) void {
    var remaining = permits;
    var wake = WakeList.init();
    while (true) {
        remaining = self.assignLocked(remaining, &wake);
        if (remaining == 0 or !wake.isFull()) break;
        // A full batch: wake it outside the lock, then serve the next waiters. The permits
        // in `remaining` stay with us meanwhile; `queued` stays set, so nobody barges.
        self.mutex.unlock();
        wake.wakeAll();
        self.mutex.lock();
    }
    if (self.waiters.isEmpty()) {
        self.clearQueuedLocked(remaining);
    } else {
        assert(remaining == 0);
    }
    self.mutex.unlock();
    wake.wakeAll();
}

/// Assigns permits to waiters from the front until they run out, the list is empty, or the
/// wake batch is full. Returns the permits left.
fn assignLocked(self: *Semaphore, permits: usize, wake: *WakeList) usize {
    var remaining = permits;
    while (remaining > 0 and !wake.isFull()) {
        const link = self.waiters.first() orelse break;
        const waiter = Waiter.from(link);
        assert(waiter.remaining > 0);
        const assigned = @min(remaining, waiter.remaining);
        waiter.remaining -= assigned;
        remaining -= assigned;
        if (waiter.remaining > 0) {
            assert(remaining == 0); // the head is partially filled; everyone behind waits
            break;
        }
        self.waiters.remove(link);
        wake.push(waiter.takeWaker());
        // Release: publishes the permits (and the releasers' writes) to the owner, which
        // reads `status` with acquire. Last access to the node.
        waiter.status.store(.acquired, .release);
    }
    return remaining;
}

/// With the lock held and the list empty: clears `queued` and adds `permits` to the word, in
/// one RMW (invariant 1).
fn clearQueuedLocked(self: *Semaphore, permits: usize) void {
    assert(self.waiters.isEmpty());
    assert(permits <= max_permits);
    var state = self.state.load(.monotonic);
    while (true) {
        if (state & queued_bit == 0 and permits == 0) return;
        const next = (state & ~queued_bit) + (permits << permit_shift);
        // Release: publishes the returned permits to the next tryAcquire (acquire CAS).
        // Concurrent lock-free RMWs (tryAcquire, release, close) make it retry.
        state = self.state.cmpxchgWeak(state, next, .release, .monotonic) orelse return;
    }
}

/// First poll's slow path: take the lock, re-check the word (a release may have landed since
/// the fast path failed) and either complete or enqueue.
noinline fn acquireSlow(self: *Semaphore, acq: *Acquire, waker: *const Waker) Poll(AcquireError!void) {
    const n = acq.permits;
    self.mutex.lock();
    var state = self.state.load(.monotonic);
    while (true) {
        if (state & closed_bit != 0) {
            self.mutex.unlock();
            acq.phase = .done;
            return .{ .ready = error.Closed };
        }
        if (state & queued_bit != 0) {
            // Invariant 3: waiters ahead own everything; join the tail, take nothing.
            self.enqueueLocked(acq, n, waker);
            self.mutex.unlock();
            return .pending;
        }
        const available = state >> permit_shift;
        if (available >= n) {
            // The lost-wake-up case: permits arrived after the fast path failed.
            // Acquire: pairs with the release fetch-add that added them.
            state = self.state.cmpxchgWeak(state, state - (n << permit_shift), .acquire, .monotonic) orelse {
                self.mutex.unlock();
                acq.phase = .done;
                return .{ .ready = {} };
            };
            continue;
        }
        // Take every available permit and set `queued` in one RMW (invariant 1). Acquire:
        // pairs with the release fetch-adds of those permits.
        state = self.state.cmpxchgWeak(state, queued_bit, .acquire, .monotonic) orelse {
            self.enqueueLocked(acq, n - available, waker);
            self.mutex.unlock();
            return .pending;
        };
    }
}

fn enqueueLocked(self: *Semaphore, acq: *Acquire, remaining: usize, waker: *const Waker) void {
    assert(remaining > 0 and remaining <= acq.permits);
    // The node is initialised only here, when it is about to be shared (the lock publishes
    // it): creating and completing a future on the fast path never touches it.
    acq.waiter = .{ .requested = acq.permits, .remaining = remaining, .waker = waker.clone() };
    self.waiters.pushBack(&acq.waiter.link);
    acq.phase = .queued;
}

const Status = enum(u8) { waiting, acquired, closed };

/// The queue node, a field of `Acquire`. `status` is written under the lock by the semaphore
/// and read lock-free by the owner; everything else is accessed only under the lock once the
/// node is linked.
const Waiter = struct {
    link: intrusive_list.Node = .{},
    requested: usize,
    /// Permits still missing; `requested - remaining` have been assigned.
    remaining: usize,
    waker: ?Waker = null,
    status: std.atomic.Value(Status) = .init(.waiting),

    fn from(link: *intrusive_list.Node) *Waiter {
        return intrusive_list.entry(Waiter, "link", link);
    }

    fn takeWaker(self: *Waiter) Waker {
        const waker = self.waker.?;
        self.waker = null;
        return waker;
    }
};

/// The future returned by `acquire`. Must not move after its first poll until it completes
/// or is cancelled. Dropping it unfinished requires `cancel`.
pub const Acquire = struct {
    pub const Output = AcquireError!void;

    semaphore: *Semaphore,
    permits: usize,
    phase: Phase = .idle,
    /// Initialised by `enqueueLocked`; meaningful only in phase `queued`.
    waiter: Waiter = undefined,

    const Phase = enum { idle, queued, done };

    pub fn poll(self: *Acquire, cx: *Context) Poll(Output) {
        assert(self.phase != .done); // polled after completion
        if (!budget.proceed(cx)) return .pending;
        const result = switch (self.phase) {
            .idle => self.pollIdle(cx),
            .queued => self.pollQueued(cx),
            .done => unreachable,
        };
        if (result == .pending) budget.refund();
        return result;
    }

    fn pollIdle(self: *Acquire, cx: *Context) Poll(Output) {
        switch (self.semaphore.tryTake(self.permits)) {
            .acquired => {
                self.phase = .done;
                return .{ .ready = {} };
            },
            .closed => {
                self.phase = .done;
                return .{ .ready = error.Closed };
            },
            .insufficient => {},
        }
        hook.reached(.semaphore_acquire);
        return self.semaphore.acquireSlow(self, cx.waker());
    }

    fn pollQueued(self: *Acquire, cx: *Context) Poll(Output) {
        // Acquire: pairs with the release store of the hand-off or close.
        const status = self.waiter.status.load(.acquire);
        if (status != .waiting) return self.finish(status);
        hook.reached(.semaphore_repoll);
        const semaphore = self.semaphore;
        semaphore.mutex.lock();
        // Re-check under the lock: a hand-off between the load above and the lock completed
        // us (and took our waker); registering now would wait forever.
        const locked_status = self.waiter.status.load(.monotonic); // written under this lock
        if (locked_status != .waiting) {
            semaphore.mutex.unlock();
            return self.finish(locked_status);
        }
        const replaced = WakeList.storeWaker(&self.waiter.waker, cx.waker());
        semaphore.mutex.unlock();
        if (replaced) |stale| stale.drop();
        return .pending;
    }

    fn finish(self: *Acquire, status: Status) Poll(Output) {
        self.phase = .done;
        return switch (status) {
            .acquired => .{ .ready = {} },
            .closed => .{ .ready = error.Closed },
            .waiting => unreachable,
        };
    }

    /// Withdraws the acquisition (see the module comment). Idempotent; a no-op after the
    /// future returned ready (the permits then belong to the caller).
    pub fn cancel(self: *Acquire) void {
        if (self.phase != .queued) {
            self.phase = .done;
            return;
        }
        self.phase = .done;
        const semaphore = self.semaphore;
        const waiter = &self.waiter;
        semaphore.mutex.lock();
        switch (waiter.status.load(.monotonic)) {
            .waiting => {
                semaphore.waiters.remove(&waiter.link);
                const stale = waiter.takeWaker();
                // Hands our partial permits to the next waiters; clears `queued` if we were
                // the last one. Unlocks.
                semaphore.handOffAndUnlock(waiter.requested - waiter.remaining);
                stale.drop();
            },
            // Completed, but the owner never saw it: give back every permit.
            .acquired => semaphore.handOffAndUnlock(waiter.requested),
            // Close already returned our partial permits.
            .closed => semaphore.mutex.unlock(),
        }
    }
};

// ---------------------------------------------------------------------------------------
// Tests

const testing = std.testing;

fn expectPending(f: anytype, cx: *Context) !void {
    try testing.expect(f.poll(cx) == .pending);
}

fn expectAcquired(f: *Acquire, cx: *Context) !void {
    const result = f.poll(cx);
    try testing.expect(result == .ready);
    try result.ready;
}

test "fast path: tryAcquire and release without waiters" {
    var sem = Semaphore.init(10);
    try testing.expect(sem.tryAcquire(3));
    try testing.expect(sem.tryAcquire(7));
    try testing.expect(!sem.tryAcquire(1));
    try testing.expectEqual(@as(usize, 0), sem.availablePermits());
    sem.release(4);
    try testing.expectEqual(@as(usize, 4), sem.availablePermits());
    try testing.expect(sem.tryAcquire(0));
    try testing.expect(!sem.tryAcquire(5));
    try testing.expect(sem.tryAcquire(4));
    sem.release(10);
    try testing.expect(sem.tryAcquireWhole(10));
    try testing.expect(!sem.tryAcquireWhole(10));
    sem.release(9);
    try testing.expect(!sem.tryAcquireWhole(10)); // exactly 10 required
    sem.release(0);
    try testing.expectEqual(@as(usize, 9), sem.availablePermits());
}

test "releaseHeld: fast path, hand-off to waiters, and a release of permits not held" {
    var sem = Semaphore.init(3);
    try testing.expect(sem.tryAcquire(1));
    try sem.releaseHeld(1, 2); // a holder of 1 of 3: at most 2 in the word
    try testing.expectEqual(@as(usize, 3), sem.availablePermits());
    try testing.expectError(error.NotHeld, sem.releaseHeld(1, 2)); // nothing was held
    try testing.expectEqual(@as(usize, 4), sem.availablePermits()); // added all the same

    var one = Semaphore.init(1);
    const w = Waker.noop();
    var cx = Context.init(&w);
    try testing.expect(one.tryAcquireWhole(1));
    var waiter = one.acquire(1);
    try testing.expect(waiter.poll(&cx) == .pending);
    try one.releaseHeld(1, 0); // word was `queued` only: handed to the waiter
    try testing.expect(waiter.poll(&cx) == .ready);
    try one.releaseHeld(1, 0);
    try testing.expectError(error.NotHeld, one.releaseHeld(1, 0));
}

test "capacity edges: zero permits, max_permits" {
    var empty = Semaphore.init(0);
    try testing.expect(!empty.tryAcquire(1));
    try testing.expect(empty.tryAcquire(0));
    var full = Semaphore.init(max_permits);
    try testing.expectEqual(max_permits, full.availablePermits());
    try testing.expect(full.tryAcquire(max_permits));
    full.release(max_permits);
    try testing.expect(full.tryAcquireWhole(max_permits));
}

test "acquire: ready at once when permits are available" {
    var sem = Semaphore.init(2);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var a = sem.acquire(2);
    try expectAcquired(&a, &cx);
    a.cancel(); // after completion: no effect, permits stay with the caller
    try testing.expectEqual(@as(usize, 0), sem.availablePermits());
    var zero = sem.acquire(0);
    try expectAcquired(&zero, &cx);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "FIFO: waiters are served in order, and tryAcquire does not barge" {
    var sem = Semaphore.init(0);
    var counters: [3]Waker.Counting = .{ .{}, .{}, .{} };
    var wakers: [3]Waker = undefined;
    var contexts: [3]Context = undefined;
    var futures: [3]Acquire = undefined;
    for (0..3) |i| {
        wakers[i] = counters[i].waker();
        contexts[i] = Context.init(&wakers[i]);
        futures[i] = sem.acquire(1);
        try expectPending(&futures[i], &contexts[i]);
    }
    defer for (wakers) |w| w.drop();
    try testing.expect(sem.tryAcquire(0)); // taking nothing passes nobody
    try testing.expect(!sem.tryAcquire(1));
    // A late acquirer queues behind the others even if permits arrive later.
    var late = sem.acquire(1);
    var late_counter = Waker.Counting{};
    const late_waker = late_counter.waker();
    defer late_waker.drop();
    var late_cx = Context.init(&late_waker);
    try expectPending(&late, &late_cx);
    for (0..3) |i| {
        sem.release(1);
        try testing.expectEqual(@as(u32, 1), counters[i].wakeCount());
        for (i + 1..3) |j| try testing.expectEqual(@as(u32, 0), counters[j].wakeCount());
        try expectAcquired(&futures[i], &contexts[i]);
        try testing.expect(!sem.tryAcquire(1));
    }
    sem.release(2);
    try testing.expectEqual(@as(u32, 1), late_counter.wakeCount());
    try expectAcquired(&late, &late_cx);
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
    for (counters) |c| try testing.expectEqual(@as(i32, 1), c.outstanding());
}

test "a big request at the head is filled partially and blocks smaller ones behind it" {
    var sem = Semaphore.init(2);
    const w = Waker.noop();
    var cx = Context.init(&w);
    var big = sem.acquire(5);
    try expectPending(&big, &cx); // took the 2 available, needs 3 more
    try testing.expectEqual(@as(usize, 3), big.waiter.remaining);
    var small = sem.acquire(1);
    try expectPending(&small, &cx);
    sem.release(2);
    try expectPending(&big, &cx);
    try expectPending(&small, &cx); // not served before the head
    try testing.expect(!sem.tryAcquire(1));
    sem.release(2); // 1 completes big, 1 goes to small
    try expectAcquired(&big, &cx);
    try expectAcquired(&small, &cx);
    try testing.expectEqual(@as(usize, 0), sem.availablePermits());
    sem.release(1);
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
}

test "cancel after a partial assignment gives the permits to the next waiter" {
    var sem = Semaphore.init(3);
    const w = Waker.noop();
    var cx = Context.init(&w);
    var big = sem.acquire(5);
    try expectPending(&big, &cx); // holds 3
    var next = sem.acquire(2);
    try expectPending(&next, &cx);
    big.cancel();
    big.cancel(); // idempotent
    try expectAcquired(&next, &cx); // got 2 of big's 3
    try testing.expectEqual(@as(usize, 1), sem.availablePermits()); // list empty: rest returned
    try testing.expect(sem.tryAcquire(1));
}

test "cancel of the last waiter returns its permits and clears queued" {
    var sem = Semaphore.init(1);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var a = sem.acquire(3);
    try expectPending(&a, &cx);
    try testing.expectEqual(@as(i32, 2), counter.outstanding());
    a.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // stored waker dropped
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
    try testing.expect(sem.tryAcquire(1));
    sem.release(1);
    var idle = sem.acquire(1);
    idle.cancel(); // before the first poll: nothing registered
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
}

test "cancel after completion was assigned but never observed gives all permits back" {
    var sem = Semaphore.init(0);
    const w = Waker.noop();
    var cx = Context.init(&w);
    var a = sem.acquire(2);
    try expectPending(&a, &cx);
    var b = sem.acquire(1);
    try expectPending(&b, &cx);
    sem.release(2); // completes a (status acquired); a never polls again
    a.cancel(); // a's 2 permits: 1 to b, 1 to the word
    try expectAcquired(&b, &cx);
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
}

test "close wakes waiters with error.Closed and refuses new acquisitions" {
    var sem = Semaphore.init(1);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var a = sem.acquire(3); // holds 1
    try expectPending(&a, &cx);
    var b = sem.acquire(1);
    try expectPending(&b, &cx);
    sem.close();
    sem.close(); // idempotent
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    try testing.expectError(error.Closed, a.poll(&cx).ready);
    try testing.expectError(error.Closed, b.poll(&cx).ready);
    a.cancel(); // nothing to give back
    try testing.expect(sem.isClosed());
    try testing.expect(!sem.tryAcquire(1));
    var c = sem.acquire(1);
    try testing.expectError(error.Closed, c.poll(&cx).ready);
    sem.release(2);
    try testing.expectEqual(@as(usize, 3), sem.availablePermits()); // 1 returned + 2 released
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "waker replacement: a re-poll with another waker is the one woken" {
    var sem = Semaphore.init(0);
    var first = Waker.Counting{};
    var second = Waker.Counting{};
    const w1 = first.waker();
    defer w1.drop();
    const w2 = second.waker();
    defer w2.drop();
    var cx1 = Context.init(&w1);
    var cx2 = Context.init(&w2);
    var a = sem.acquire(1);
    try expectPending(&a, &cx1);
    try expectPending(&a, &cx1); // same waker: no new clone
    try testing.expectEqual(@as(i32, 2), first.outstanding());
    try expectPending(&a, &cx2);
    try testing.expectEqual(@as(i32, 1), first.outstanding()); // old clone dropped
    sem.release(1);
    try testing.expectEqual(@as(u32, 0), first.wakeCount());
    try testing.expectEqual(@as(u32, 1), second.wakeCount());
    try expectAcquired(&a, &cx2);
    try testing.expectEqual(@as(i32, 1), second.outstanding());
}

test "more waiters than one wake batch are all served" {
    const count = WakeList.capacity * 2 + 5;
    var sem = Semaphore.init(0);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var futures: [count]Acquire = undefined;
    for (&futures) |*f| {
        f.* = sem.acquire(1);
        try expectPending(f, &cx);
    }
    sem.release(count + 1);
    try testing.expectEqual(@as(u32, count), counter.wakeCount());
    for (&futures) |*f| try expectAcquired(f, &cx);
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
    for (&futures) |*f| {
        f.* = sem.acquire(2);
        try expectPending(f, &cx); // the first takes the 1 available and waits for 1 more
    }
    sem.close();
    for (&futures) |*f| try testing.expectError(error.Closed, f.poll(&cx).ready);
    try testing.expectEqual(@as(usize, 1), sem.availablePermits()); // close returned it
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "lost wake-up: release between the failed fast path and the lock" {
    var sem = Semaphore.init(0);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    const Release = struct {
        fn run(s: *Semaphore) void {
            s.release(1); // no waiter queued yet: takes the fast path
        }
    };
    hook.arm(.semaphore_acquire, &sem, Release.run);
    defer hook.disarm();
    var a = sem.acquire(1);
    try expectAcquired(&a, &cx); // the re-check under the lock found the permit
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "lost wake-up: hand-off between the queued status check and the lock" {
    var sem = Semaphore.init(0);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var a = sem.acquire(1);
    try expectPending(&a, &cx);
    const Release = struct {
        fn run(s: *Semaphore) void {
            s.release(1); // completes the waiter while it is between check and lock
        }
    };
    hook.arm(.semaphore_repoll, &sem, Release.run);
    defer hook.disarm();
    try expectAcquired(&a, &cx);
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "lost wake-up: close between the failed fast path and the lock" {
    var sem = Semaphore.init(0);
    const w = Waker.noop();
    var cx = Context.init(&w);
    const Close = struct {
        fn run(s: *Semaphore) void {
            s.close();
        }
    };
    hook.arm(.semaphore_acquire, &sem, Close.run);
    defer hook.disarm();
    var a = sem.acquire(1);
    try testing.expectError(error.Closed, a.poll(&cx).ready);
    try testing.expect(hook.fired());
}

test "budget: an exhausted budget returns pending without taking permits" {
    var sem = Semaphore.init(1);
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    const scope = budget.Scope.begin(0);
    var a = sem.acquire(1);
    try expectPending(&a, &cx);
    scope.end();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount()); // asked to be polled again
    try testing.expectEqual(@as(usize, 1), sem.availablePermits());
    try expectAcquired(&a, &cx);
}
