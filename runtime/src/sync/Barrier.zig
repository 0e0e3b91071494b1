//! A reusable barrier: `parties` tasks call `wait()`; the last to arrive is the leader, and
//! its arrival releases the whole generation. Waiting never allocates (intrusive nodes; Tokio
//! clones a watch receiver per waiting call). Every party count takes the same path: a
//! barrier of 1 is a leader at every arrival and, like any leader, takes the lock to release
//! the waiters of its generation (there are none), as Tokio's leader takes its mutex.
//!
//! State word (`state`, one atomic u64):
//!
//!     bits 0-31    arrived      tasks that arrived in the current generation
//!     bits 32-63   generation   wrapping generation number
//!
//! Arrival is one CAS on the word: `arrived + 1` normally; for the last arrival
//! (`arrived + 1 == parties`) the CAS instead resets `arrived` to 0 and increments
//! `generation` (so a new generation starts atomically: no arrival can be counted in the old
//! one afterwards). The last arrival is the leader (`WaitResult.is_leader`).
//!
//! Waiter protocol: a non-leader remembers its generation g, takes the lock, re-reads the
//! word and, if the generation is still g, links its node (recording g) and returns pending.
//! The leader, after its CAS, takes the lock and completes every queued node whose
//! generation is no longer current. Either the waiter's locked section comes first (its node
//! is in the list when the leader looks) or the leader's CAS happened before it (the waiter
//! reads the new generation under the lock and completes at once): no wake-up is lost.
//!
//! List order: nodes are linked in non-decreasing generation order (a waiter of g links only
//! while g is current, so before any waiter of g+1 can link), so the nodes of finished
//! generations are a prefix of the list. A leader serves that prefix in batches, dropping
//! the lock between batches; waiters of the new generation linking meanwhile go behind it.
//! Any later leader also serves any old nodes left, so concurrent leaders cannot strand one.
//!
//! Cancellation (differs from Tokio, whose `wait` is not cancel-safe): a pending waiter
//! unlinks and, if its generation is still current, withdraws its arrival (CAS
//! `arrived - 1`), so a cancelled wait does not count toward the barrier. If the generation
//! already completed, its arrival stays counted and nothing else happens.
//!
//! Limits: `parties` up to 2^32 - 1; 0 is treated as 1 (as Tokio and std do). A waiter that
//! arrives, is descheduled for 2^32 whole generations, and then takes the lock would mistake
//! the wrapped generation for its own (an ABA we accept: ~4 billion barrier rounds).
//!
//! Orderings: arrivals are acq_rel RMWs on one word, so they form a release sequence the
//! leader's acq_rel CAS reads from: everything each party did before arriving happens before
//! the leader continues. The leader publishes completion to queued nodes with release stores
//! (read with acquire), and late waiters read the new generation with an acquire load under
//! the lock, so every party sees every other party's pre-barrier writes.

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

const Barrier = @This();

const arrived_mask: u64 = std.math.maxInt(u32);
const generation_one: u64 = 1 << 32;

state: std.atomic.Value(u64) = .init(0),
parties: u32,
mutex: Lock = .{},
waiters: intrusive_list.List = .{},

pub const WaitResult = struct {
    /// True for exactly one waiter per generation: the last to arrive.
    is_leader: bool,
};

pub fn init(parties: u32) Barrier {
    return .{ .parties = @max(parties, 1) };
}

fn arrivedOf(state: u64) u32 {
    return @truncate(state & arrived_mask);
}

fn generationOf(state: u64) u32 {
    return @truncate(state >> 32);
}

/// A future that completes when `parties` waits of this generation have arrived.
/// Output: `WaitResult`.
pub fn wait(self: *Barrier) Wait {
    return .{ .barrier = self };
}

/// Completes every queued node of a finished generation. Called by each leader after its
/// generation CAS, whatever the party count.
noinline fn releaseFinished(self: *Barrier) void {
    var wake = WakeList.init();
    self.mutex.lock();
    // Bounded: each iteration unlinks a node; new nodes carry the current generation.
    while (self.waiters.first()) |link| {
        const waiter = Waiter.from(link);
        // Monotonic: our own CAS (program order) already made the generation at least ours;
        // it only moves forward. A node of the current generation ends the finished prefix.
        if (waiter.generation == generationOf(self.state.load(.monotonic))) break;
        self.waiters.remove(link);
        wake.push(waiter.takeWaker());
        // Release: the owner reads it with acquire (and so sees all arrivals, via our
        // acq_rel CAS). Last access to the node.
        waiter.released.store(true, .release);
        if (wake.isFull()) {
            self.mutex.unlock();
            wake.wakeAll();
            self.mutex.lock();
        }
    }
    self.mutex.unlock();
    wake.wakeAll();
}

const Waiter = struct {
    link: intrusive_list.Node = .{},
    waker: ?Waker = null,
    generation: u32 = 0,
    released: std.atomic.Value(bool) = .init(false),

    fn from(link: *intrusive_list.Node) *Waiter {
        return intrusive_list.entry(Waiter, "link", link);
    }

    fn takeWaker(self: *Waiter) Waker {
        const waker = self.waker.?;
        self.waker = null;
        return waker;
    }
};

/// Must not move after its first poll until it completes or is cancelled.
pub const Wait = struct {
    pub const Output = WaitResult;

    barrier: *Barrier,
    phase: Phase = .idle,
    /// Initialised when it is linked; meaningful only in phase `waiting`.
    waiter: Waiter = undefined,

    const Phase = enum { idle, waiting, done };

    pub fn poll(self: *Wait, cx: *Context) Poll(WaitResult) {
        assert(self.phase != .done);
        if (!budget.proceed(cx)) return .pending;
        const result = switch (self.phase) {
            .idle => self.arrive(cx),
            .waiting => self.pollWaiting(cx),
            .done => unreachable,
        };
        if (result == .pending) budget.refund();
        return result;
    }

    fn arrive(self: *Wait, cx: *Context) Poll(WaitResult) {
        const barrier = self.barrier;
        const parties = barrier.parties;
        // Monotonic: only a guess for the CAS.
        var state = barrier.state.load(.monotonic);
        // Lock-free retry: each failure means another party changed the word.
        const generation = while (true) {
            const arrived = arrivedOf(state);
            assert(arrived < parties);
            if (arrived + 1 == parties) {
                // Last arrival: arrived = 0, generation + 1 (wrapping). Acq_rel: acquire
                // reads the arrivals' release sequence; release publishes to the waiters.
                const next = (state & ~arrived_mask) +% generation_one;
                state = barrier.state.cmpxchgWeak(state, next, .acq_rel, .monotonic) orelse {
                    barrier.releaseFinished();
                    return self.finish(true);
                };
            } else {
                // Acq_rel: release our pre-barrier writes into the release sequence.
                state = barrier.state.cmpxchgWeak(state, state + 1, .acq_rel, .monotonic) orelse
                    break generationOf(state);
            }
        };
        hook.reached(.barrier_wait);
        return self.waitSlow(generation, cx);
    }

    /// Arrived, not last: register unless the generation completed meanwhile.
    noinline fn waitSlow(self: *Wait, generation: u32, cx: *Context) Poll(WaitResult) {
        const barrier = self.barrier;
        barrier.mutex.lock();
        // Acquire: if the generation moved on, we see everything before the leader's CAS.
        if (generationOf(barrier.state.load(.acquire)) != generation) {
            barrier.mutex.unlock();
            return self.finish(false);
        }
        // Initialised only now, when it is about to be shared (the lock publishes it).
        self.waiter = .{ .generation = generation, .waker = cx.waker().clone() };
        barrier.waiters.pushBack(&self.waiter.link);
        self.phase = .waiting;
        barrier.mutex.unlock();
        return .pending;
    }

    fn pollWaiting(self: *Wait, cx: *Context) Poll(WaitResult) {
        // Acquire: pairs with the leader's release store.
        if (self.waiter.released.load(.acquire)) return self.finish(false);
        hook.reached(.barrier_repoll);
        const barrier = self.barrier;
        barrier.mutex.lock();
        if (self.waiter.released.load(.monotonic)) { // written under this lock
            barrier.mutex.unlock();
            return self.finish(false);
        }
        const replaced = WakeList.storeWaker(&self.waiter.waker, cx.waker());
        barrier.mutex.unlock();
        if (replaced) |stale| stale.drop();
        return .pending;
    }

    fn finish(self: *Wait, is_leader: bool) Poll(WaitResult) {
        self.phase = .done;
        return .{ .ready = .{ .is_leader = is_leader } };
    }

    /// Unlinks a pending waiter and withdraws its arrival if its generation is still
    /// current. Idempotent; no-op after completion.
    pub fn cancel(self: *Wait) void {
        if (self.phase != .waiting) {
            self.phase = .done;
            return;
        }
        self.phase = .done;
        const barrier = self.barrier;
        var stale: ?Waker = null;
        barrier.mutex.lock();
        if (!self.waiter.released.load(.monotonic)) {
            barrier.waiters.remove(&self.waiter.link);
            stale = self.waiter.takeWaker();
            var state = barrier.state.load(.monotonic);
            // Lock-free retry against arrivals; stops once the generation has moved on.
            while (generationOf(state) == self.waiter.generation) {
                assert(arrivedOf(state) > 0); // our own arrival is still counted
                // Monotonic: withdrawing publishes nothing; the CAS orders it with the
                // arrivals (same word), so the leader's count never includes us.
                state = barrier.state.cmpxchgWeak(state, state - 1, .monotonic, .monotonic) orelse break;
            }
        }
        barrier.mutex.unlock();
        if (stale) |w| w.drop();
    }
};

// ---------------------------------------------------------------------------------------
// Tests

const testing = std.testing;

test "barrier of 1 (and of 0) is ready at once with leader = true" {
    var one = Barrier.init(1);
    for (0..3) |_| {
        var w = one.wait();
        const result = future.pollOnce(&w);
        try testing.expect(result == .ready);
        try testing.expect(result.ready.is_leader);
    }
    var zero = Barrier.init(0);
    var w = zero.wait();
    try testing.expect(future.pollOnce(&w).ready.is_leader);
    try testing.expectEqual(@as(u32, 3), generationOf(one.state.load(.monotonic)));
}

test "a barrier of 1 takes the general leader path: its leader serves the wait list" {
    var barrier = Barrier.init(1);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    // White box: a barrier of 1 never queues a waiter by itself, so link one of the current
    // generation by hand. A leader that skipped the lock for one party would strand it.
    var queued = barrier.wait();
    try testing.expect(queued.waitSlow(generationOf(barrier.state.load(.monotonic)), &cx) == .pending);
    var leader = barrier.wait();
    try testing.expect(future.pollOnce(&leader).ready.is_leader);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(!queued.poll(&cx).ready.is_leader);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "the last arrival leads and releases the generation; the barrier is reusable" {
    var barrier = Barrier.init(3);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    for (0..3) |generation| {
        var a = barrier.wait();
        var b = barrier.wait();
        var c = barrier.wait();
        try testing.expect(a.poll(&cx) == .pending);
        try testing.expect(b.poll(&cx) == .pending);
        try testing.expect(b.poll(&cx) == .pending); // re-poll, same waker
        const leader = c.poll(&cx);
        try testing.expect(leader.ready.is_leader);
        try testing.expectEqual(@as(u32, @intCast(2 * (generation + 1))), counter.wakeCount());
        try testing.expect(!a.poll(&cx).ready.is_leader);
        try testing.expect(!b.poll(&cx).ready.is_leader);
    }
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "waiters of the next generation are not released by the previous leader" {
    var barrier = Barrier.init(2);
    const waker = Waker.noop();
    var cx = Context.init(&waker);
    var a = barrier.wait();
    try testing.expect(a.poll(&cx) == .pending);
    // Simulate a slow leader: do its CAS by hand, then let a next-generation waiter link
    // before the leader takes the lock.
    const before = barrier.state.load(.monotonic);
    barrier.state.store((before & ~arrived_mask) +% generation_one, .release);
    var next = barrier.wait();
    try testing.expect(next.poll(&cx) == .pending);
    barrier.releaseFinished(); // the slow leader
    try testing.expect(!a.poll(&cx).ready.is_leader);
    try testing.expect(next.poll(&cx) == .pending);
    var last = barrier.wait();
    try testing.expect(last.poll(&cx).ready.is_leader);
    try testing.expect(!next.poll(&cx).ready.is_leader);
}

test "cancel withdraws the arrival of a pending waiter" {
    var barrier = Barrier.init(2);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    var a = barrier.wait();
    try testing.expect(a.poll(&cx) == .pending);
    a.cancel();
    a.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 0), arrivedOf(barrier.state.load(.monotonic)));
    var b = barrier.wait();
    try testing.expect(b.poll(&cx) == .pending); // a no longer counts
    var c = barrier.wait();
    try testing.expect(c.poll(&cx).ready.is_leader);
    try testing.expect(!b.poll(&cx).ready.is_leader);
    var idle = barrier.wait();
    idle.cancel(); // never arrived: nothing to withdraw
    try testing.expectEqual(@as(u32, 0), arrivedOf(barrier.state.load(.monotonic)));
}

test "cancel after the generation completed keeps the arrival counted" {
    var barrier = Barrier.init(2);
    const waker = Waker.noop();
    var cx = Context.init(&waker);
    var a = barrier.wait();
    try testing.expect(a.poll(&cx) == .pending);
    var b = barrier.wait();
    try testing.expect(b.poll(&cx).ready.is_leader);
    a.cancel(); // released but never observed it: nothing to undo
    try testing.expectEqual(@as(u64, generation_one), barrier.state.load(.monotonic));
}

test "more waiters than one wake batch" {
    const parties = WakeList.capacity * 2 + 2;
    var barrier = Barrier.init(parties);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    var waits: [parties]Wait = undefined;
    for (waits[0 .. parties - 1]) |*w| {
        w.* = barrier.wait();
        try testing.expect(w.poll(&cx) == .pending);
    }
    waits[parties - 1] = barrier.wait();
    try testing.expect(waits[parties - 1].poll(&cx).ready.is_leader);
    try testing.expectEqual(@as(u32, parties - 1), counter.wakeCount());
    for (waits[0 .. parties - 1]) |*w| try testing.expect(!w.poll(&cx).ready.is_leader);
}

test "lost wake-up: the leader arrives between a waiter's arrival and its lock" {
    var barrier = Barrier.init(2);
    const Lead = struct {
        fn run(b: *Barrier) void {
            var leader = b.wait();
            std.debug.assert(future.pollOnce(&leader).ready.is_leader);
        }
    };
    hook.arm(.barrier_wait, &barrier, Lead.run);
    defer hook.disarm();
    var w = barrier.wait();
    const result = future.pollOnce(&w);
    try testing.expect(hook.fired());
    try testing.expect(!result.ready.is_leader);
}

test "lost wake-up: release between the queued status check and the lock" {
    var barrier = Barrier.init(2);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    var w = barrier.wait();
    try testing.expect(w.poll(&cx) == .pending);
    const Lead = struct {
        fn run(b: *Barrier) void {
            var leader = b.wait();
            std.debug.assert(future.pollOnce(&leader).ready.is_leader);
        }
    };
    hook.arm(.barrier_repoll, &barrier, Lead.run);
    defer hook.disarm();
    try testing.expect(!w.poll(&cx).ready.is_leader);
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}
