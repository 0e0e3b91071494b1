//! The type-erased part of a task: its state word, links, join-waker slot and vtable.
//!
//! A task is one allocation: this header, then the future (replaced by its output once it
//! completes). Everything that handles tasks without knowing the future's type — run queues,
//! wakers, join handles, the owned-task list — works on `*Header`.
//!
//! ## State word (64 bits)
//!
//!     bit 0  scheduled      in a run queue (or being pushed to one); the queue owns one ref
//!     bit 1  running        a thread is polling the future; it owns the future's memory
//!     bit 2  notified       woken while running: re-queue it when the current poll ends
//!     bit 3  complete       terminal: the output (or Cancelled) is stored; never polled again
//!     bit 4  cancelled      abort requested: the next run cancels instead of polling
//!     bit 5  join_interest  a JoinHandle exists and may read the output
//!     bit 6  join_waker     the join-waker slot holds a waker and belongs to the task side
//!     bits 16..63           reference count
//!
//! References are held by: the owned-task list (until completion), the run queue or the
//! poller (while `scheduled` or `running`), the JoinHandle (while `join_interest`), and every
//! task waker. The task is freed when the count reaches zero, which can only happen after
//! `complete` (the owned list keeps a reference until then).
//!
//! Invariants:
//! - `scheduled` and `running` are never both set; exactly one queue/poller reference exists
//!   while either is set. A wake that finds the task idle sets `scheduled` and submits it; a
//!   wake that finds it running sets `notified`, and the poller re-queues it afterwards — so a
//!   task is never in two queues and never polled by two threads.
//! - Once `complete` is set no bit but `join_interest`/`join_waker` and the count changes.
//! - The join-waker slot is written only by the JoinHandle while `join_waker` is clear and
//!   the task is not complete. The completing thread reads it (wakes by reference, never
//!   moves it out) only if `join_waker` was set when it set `complete` — the handle may be
//!   comparing the same waker at that moment (`willWakeSame`). Then the completing thread
//!   clears `join_waker`; whichever side afterwards finds the other gone (`join_interest`
//!   clear, or `join_waker` clear) drops the waker. Setting/clearing `join_waker` is the
//!   hand-over, with release/acquire on the state word ordering the slot accesses. This is
//!   Tokio's protocol; runtime/README.md refers here rather than restating it.
//!
//! Every transition is a compare-and-swap (or one read-modify-write) on the state word with
//! acq_rel ordering: each one either hands the future's memory to another thread (running),
//! publishes the output (complete), or publishes what a waker wrote before waking (scheduled /
//! notified), so both directions must synchronise.
//!
//! ## The last holder frees without a read-modify-write
//!
//! Dropping references (`refDec`, `dropJoinHandle`) first loads the word (acquire). If the
//! task is complete and the count is exactly what the caller holds, the caller is the last
//! holder: nothing else can touch the word any more — taking a reference needs one, the owned
//! list and the scheduler gave theirs up with release read-modify-writes (which this acquire
//! load synchronises with: they are all in the word's release sequence), and the holds that
//! take no reference (a futex's task waiter, a group cancel's walk of the owned list) end
//! before completion. So it stores the final value with a plain store and frees the task. A
//! load that reads an older value than the last write cannot mislead it: once the count equals
//! the caller's own, no one else holds a reference that could change it. This saves one or two
//! locked instructions per task: the detached fiber's end (the poller's and the list's two
//! references), a join handle dropped after the poller let go (`dropJoinHandle`'s
//! compare-and-swap and decrement), i.e. a std.Io `await` of a finished future.

const std = @import("std");
const hook = @import("../hook.zig");
const assert = std.debug.assert;
const Waker = @import("../Waker.zig");

const Header = @This();

pub const scheduled: u64 = 1 << 0;
pub const running: u64 = 1 << 1;
pub const notified: u64 = 1 << 2;
pub const complete: u64 = 1 << 3;
pub const cancelled: u64 = 1 << 4;
pub const join_interest: u64 = 1 << 5;
pub const join_waker: u64 = 1 << 6;
pub const ref_one: u64 = 1 << 16;
const flags_mask: u64 = ref_one - 1;

/// Initial state of a spawned task: queued, with a JoinHandle; references for the owned-task
/// list, the run queue and the JoinHandle.
pub const initial_state: u64 = scheduled | join_interest | 3 * ref_one;
/// `initial_state` of a task nobody joins (`detachUnpublished`): no JoinHandle, no reference
/// for one.
pub const detached_state: u64 = scheduled | 2 * ref_one;

/// Where a task goes when it is woken. One per runtime (or per blocking pool).
pub const Scheduler = struct {
    context: *anyopaque,
    /// Queue the task. `yielded` is true when the task was woken while it was running (it
    /// goes to the back of the queue, never to the LIFO slot, so a task that keeps waking
    /// itself cannot monopolise its worker).
    submit: *const fn (context: *anyopaque, task: *Header, yielded: bool) void,
};

/// Operations that need the future's type.
pub const VTable = struct {
    /// Polls the future (the caller holds `running`). On ready, stores the output and
    /// returns true.
    poll: *const fn (task: *Header) bool,
    /// Cancels the future (the caller holds `running` or every thread is stopped) and stores
    /// `error.Cancelled` as the output; true. False: the cancellation cannot finish without
    /// blocking the calling thread, which is a worker (a fiber killed while the blocking pool
    /// runs a call that uses its memory: fiber/task.zig, "Killing without blocking a worker").
    /// Nothing was stored; the caller lets the task go idle, its `cancelled` bit still set, and
    /// whatever it waits on wakes it to be cancelled again. Never false off a worker.
    cancel: *const fn (task: *Header) bool,
    /// Moves the output into `out` (a `*JoinOutput(T)`); called once, after `complete`.
    take_output: *const fn (task: *Header, out: *anyopaque) void,
    /// Frees the allocation; called once, when the reference count reaches zero.
    dealloc: *const fn (task: *Header) void,
};

state: std.atomic.Value(u64),
vtable: *const VTable,
scheduler: *const Scheduler,
/// Link in the inject queue or the blocking pool queue; owned by the holder of the queue ref.
queue_next: ?*Header = null,
/// Links in the owned-task list; guarded by that list's shard lock.
owned_prev: ?*Header = null,
owned_next: ?*Header = null,
/// Whether the task is linked in the owned list: written under the shard lock; atomic so that
/// `OwnedTasks.remove` may look without the lock first (see there).
in_owned: std.atomic.Value(bool) = .init(false),
/// The owned-list shard the task is linked in (set by the insert, read by the remove).
owned_shard: u16 = 0,
/// The worker whose task-block cache the task's memory came from (`scheduler/TaskBlocks.zig`;
/// `home_none` when it was not a worker, or the task is not in a block). Set at creation.
block_home: u16 = std.math.maxInt(u16),
/// Unique per runtime; selects the owned-list shard.
id: u64,
/// See the invariants above.
join_waker_slot: ?Waker = null,

pub fn init(vtable: *const VTable, scheduler: *const Scheduler, id: u64) Header {
    comptime assert(join_waker < ref_one); // Every flag lies below the reference count.
    comptime assert(refCount(initial_state) == 3);
    return .{
        .state = .init(initial_state),
        .vtable = vtable,
        .scheduler = scheduler,
        .id = id,
    };
}

pub fn refCount(state: u64) u64 {
    return state >> 16;
}

pub fn load(self: *const Header) u64 {
    const state = self.state.load(.acquire);
    assert(state & scheduled == 0 or state & running == 0); // Never queued and polled at once.
    return state;
}

// -- references ------------------------------------------------------------------------

pub fn refInc(self: *Header) void {
    // Monotonic, like Arc::clone: the caller already holds a reference, so the task cannot
    // be freed concurrently, and nothing is published by taking another one.
    const previous = self.state.fetchAdd(ref_one, .monotonic);
    assert(refCount(previous) > 0);
    assert(refCount(previous) < (1 << 47)); // Overflow: a leak of references.
}

/// Drops `count` references; frees the task if they were the last.
pub fn refDec(self: *Header, count: u64) void {
    assert(count > 0);
    const current = self.state.load(.acquire);
    if (refCount(current) == count) return self.freeAsLastHolder(current, count);
    // acq_rel: release so our accesses to the task happen before the free; acquire so the
    // thread that frees sees everyone else's accesses (Arc's release + acquire fence).
    const previous = self.state.fetchSub(count * ref_one, .acq_rel);
    assert(refCount(previous) >= count);
    if (refCount(previous) == count) {
        assert(previous & complete != 0);
        self.vtable.dealloc(self);
    }
}

/// The caller holds the task's last `count` references ("The last holder frees without a
/// read-modify-write"): `current` is the word it loaded (acquire), the task is complete.
fn freeAsLastHolder(self: *Header, current: u64, count: u64) void {
    assert(current & complete != 0);
    assert(current & (scheduled | running | join_waker) == 0);
    assert(refCount(current) == count);
    // No other thread reads the word now; the store keeps `dealloc`'s check of the count true.
    self.state.store(current - count * ref_one, .monotonic);
    self.vtable.dealloc(self);
}

// -- scheduler side --------------------------------------------------------------------

pub const RunAction = enum { poll, cancel };

/// Shutdown only (no worker polls tasks): an idle task -> `running`, with a new reference for
/// the canceller. False if it is not idle: queued (woken meanwhile: the queue pass cancels
/// it), or running or complete — a blocking-pool function still running while shutdown
/// cancels tasks, which completes by itself.
pub fn transitionIdleToRunning(self: *Header) bool {
    var current = self.state.load(.acquire);
    while (true) {
        if (current & (scheduled | running | complete) != 0) return false;
        assert(refCount(current) > 0); // The caller's list reference keeps it alive.
        current = self.state.cmpxchgWeak(current, (current | running) + ref_one, .acq_rel, .acquire) orelse return true;
    }
}

/// Taken from a queue: `scheduled` -> `running`. The queue's reference becomes the poller's.
pub fn transitionToRunning(self: *Header) RunAction {
    var current = self.state.load(.acquire);
    while (true) {
        assert(current & scheduled != 0);
        assert(current & (running | complete) == 0);
        assert(refCount(current) >= 2); // The queue's (now the poller's) and the owned list's.
        const next = (current & ~scheduled) | running;
        current = self.state.cmpxchgWeak(current, next, .acq_rel, .acquire) orelse
            return if (current & cancelled != 0) .cancel else .poll;
    }
}

pub const IdleAction = enum { idle, reschedule };

/// After a pending poll: `running` -> idle, or -> `scheduled` again if it was woken meanwhile.
/// When idle, the poller's reference is dropped in the same step.
pub fn transitionToIdle(self: *Header) IdleAction {
    var current = self.state.load(.acquire);
    while (true) {
        assert(current & running != 0);
        assert(current & (scheduled | complete) == 0);
        const woken = current & notified != 0;
        const next = if (woken)
            (current & ~(running | notified)) | scheduled
        else
            (current & ~running) - ref_one;
        if (self.state.cmpxchgWeak(current, next, .acq_rel, .acquire)) |actual| {
            current = actual;
            continue;
        }
        assert(refCount(next) > 0); // The owned list still holds one.
        return if (woken) .reschedule else .idle;
    }
}

/// After the output (or Cancelled) was stored: `running` -> `complete`, and wakes the
/// JoinHandle if it registered a waker. Returns the state before. The caller then unlinks the
/// task from the owned list and drops the poller's and the list's references.
pub fn transitionToComplete(self: *Header) u64 {
    // Release publishes the output to the JoinHandle (acquire in its poll); acquire makes the
    // join-waker slot written by the handle visible if `join_waker` is set.
    var previous = self.state.load(.monotonic);
    while (true) {
        assert(previous & complete == 0);
        assert(previous & running != 0);
        const next = (previous | complete) & ~(running | notified);
        previous = self.state.cmpxchgWeak(previous, next, .acq_rel, .monotonic) orelse break;
    }
    assert(previous & scheduled == 0);
    if (previous & join_waker != 0) {
        assert(previous & join_interest != 0);
        assert(self.join_waker_slot != null);
        // Only read the slot: the handle may be reading it too (willWakeSame).
        self.join_waker_slot.?.wakeByRef();
        // Hand the slot back. If the handle went away meanwhile, it left the waker to us.
        const after = self.state.fetchAnd(~join_waker, .acq_rel);
        if (after & join_interest == 0) self.dropJoinWakerSlot();
    }
    return previous;
}

fn dropJoinWakerSlot(self: *Header) void {
    // Only the side that owns the slot drops it, and it owns it only with `join_waker` clear.
    assert(self.state.load(.monotonic) & join_waker == 0);
    if (self.join_waker_slot) |waker| {
        self.join_waker_slot = null;
        waker.drop();
    }
}

// -- waking ----------------------------------------------------------------------------

/// Waker::wake: consumes a reference.
pub fn wakeByVal(self: *Header) void {
    var current = self.state.load(.acquire);
    while (true) {
        assert(refCount(current) > 0); // The waker's own reference.
        var next: u64 = undefined;
        var submit = false;
        if (current & (complete | scheduled) != 0) {
            next = current - ref_one;
        } else if (current & running != 0) {
            next = (current | notified) - ref_one;
        } else {
            next = current | scheduled; // Our reference becomes the queue's.
            submit = true;
        }
        if (self.state.cmpxchgWeak(current, next, .acq_rel, .acquire)) |actual| {
            current = actual;
            continue;
        }
        if (submit) {
            self.scheduler.submit(self.scheduler.context, self, false);
        } else if (refCount(next) == 0) {
            assert(next & complete != 0);
            self.vtable.dealloc(self);
        }
        return;
    }
}

/// Waker::wakeByRef: the caller keeps its reference.
pub fn wakeByRef(self: *Header) void {
    if (self.claimWake()) self.submitClaimed();
}

/// The state transition of `wakeByRef`, without the submit: an idle task becomes `scheduled`
/// with a new reference for the queue, and the caller must then `submitClaimed` it; a running
/// one gets `notified`; a scheduled or complete one is left alone. The caller keeps its own
/// hold on the task (a reference, or a registration the task cannot outlive). Touches only the
/// state word, so it may run under a primitive's lock (`std_io/Futex.zig` does); the submit,
/// which runs scheduler code, may not.
pub fn claimWake(self: *Header) bool {
    var current = self.state.load(.acquire);
    while (true) {
        assert(refCount(current) > 0); // The caller's hold.
        if (current & (complete | scheduled) != 0) return false;
        var next: u64 = undefined;
        const idle = current & running == 0;
        if (idle) {
            next = (current | scheduled) + ref_one; // A new reference for the queue.
        } else {
            if (current & notified != 0) return false;
            next = current | notified;
        }
        if (self.state.cmpxchgWeak(current, next, .acq_rel, .acquire)) |actual| {
            current = actual;
            continue;
        }
        return idle;
    }
}

/// Queues a task that `claimWake` made `scheduled` (the queue's reference keeps it alive).
pub fn submitClaimed(self: *Header) void {
    assert(self.state.load(.monotonic) & scheduled != 0);
    self.scheduler.submit(self.scheduler.context, self, false);
}

/// The task a waker wakes, if it is a task's own waker (`borrowedWaker` or a clone of it).
pub fn ofWaker(waker: *const Waker) ?*Header {
    return if (waker.vtable == &waker_vtable) fromData(waker.data) else null;
}

/// JoinHandle::abort: request cancellation; an idle task is queued so a worker cancels it.
pub fn abort(self: *Header) void {
    hook.reached(.task_before_abort);
    var current = self.state.load(.acquire);
    while (true) {
        assert(current & join_interest != 0); // Only a JoinHandle aborts.
        if (current & (complete | cancelled) != 0) return;
        var next = current | cancelled;
        var submit = false;
        if (current & running != 0) {
            next |= notified;
        } else if (current & scheduled == 0) {
            next = (next | scheduled) + ref_one;
            submit = true;
        }
        if (self.state.cmpxchgWeak(current, next, .acq_rel, .acquire)) |actual| {
            current = actual;
            continue;
        }
        if (submit) self.scheduler.submit(self.scheduler.context, self, false);
        return;
    }
}

// -- join handle side ------------------------------------------------------------------

pub const JoinPoll = enum { complete, pending };

/// Registers `waker` to be woken on completion unless the task is already complete.
pub fn registerJoinWaker(self: *Header, waker: *const Waker) JoinPoll {
    var current = self.state.load(.acquire);
    assert(current & join_interest != 0);
    if (current & complete != 0) return .complete;

    if (current & join_waker != 0) {
        // The task side owns the slot, but only ever reads it while we are alive (it drops
        // the waker only after `join_interest` is gone), so comparing is safe.
        if (self.join_waker_slot.?.willWakeSame(waker)) return .pending;
        // Take the slot back to replace the waker.
        while (true) {
            if (current & complete != 0) return .complete;
            assert(current & join_waker != 0);
            current = self.state.cmpxchgWeak(current, current & ~join_waker, .acq_rel, .acquire) orelse break;
        }
        self.dropJoinWakerSlot();
    }
    // We own the slot now (`join_waker` clear, task not complete).
    assert(self.join_waker_slot == null);
    self.join_waker_slot = waker.clone();
    current = self.state.load(.acquire);
    while (true) {
        if (current & complete != 0) {
            self.dropJoinWakerSlot();
            return .complete;
        }
        // Release publishes the slot to the completing thread.
        current = self.state.cmpxchgWeak(current, current | join_waker, .acq_rel, .acquire) orelse
            return .pending;
    }
}

/// The JoinHandle goes away (consumed, detached, or dropped by a combinator through the
/// future protocol's `cancel`, which detaches): clears `join_interest` (and
/// `join_waker` if the task has not completed, taking the slot back), drops the waker in the
/// slot if the slot is ours, and drops the handle's reference.
/// `dropJoinHandle` for a task that no other thread can see yet (created, not yet linked into
/// the owned list or queued — both publish it with release): a plain store of
/// `detached_state` instead of two read-modify-writes (a compare-and-swap and a reference
/// decrement: a third of `Group.concurrent`'s own clock samples at 1 worker).
pub fn detachUnpublished(self: *Header) void {
    assert(self.state.load(.monotonic) == initial_state);
    assert(self.join_waker_slot == null);
    self.state.store(detached_state, .monotonic);
}

pub fn dropJoinHandle(self: *Header) void {
    var current = self.state.load(.acquire);
    // The handle's is the last reference: the completing thread cleared `join_waker` before it
    // dropped the poller's, so the slot is the handle's to drop ("The last holder frees...").
    if (current & complete != 0 and refCount(current) == 1) {
        assert(current & join_interest != 0);
        self.dropJoinWakerSlot();
        return self.freeAsLastHolder(current & ~join_interest, 1);
    }
    while (true) {
        assert(current & join_interest != 0);
        var next = current & ~join_interest;
        if (current & complete == 0) next &= ~join_waker;
        if (self.state.cmpxchgWeak(current, next, .acq_rel, .acquire)) |actual| {
            current = actual;
            continue;
        }
        // With `join_waker` still set, the completing thread is using the slot and will drop
        // the waker when it sees `join_interest` gone.
        assert(next & join_waker == 0 or next & complete != 0);
        if (next & join_waker == 0) self.dropJoinWakerSlot();
        break;
    }
    self.refDec(1);
}

// -- the task's own waker --------------------------------------------------------------

pub const waker_vtable = Waker.VTable{
    .clone = wakerClone,
    .wake = wakerWake,
    .wake_by_ref = wakerWakeByRef,
    .drop = wakerDrop,
};

/// A waker borrowed by the poller (no reference of its own; clone it to keep it).
pub fn borrowedWaker(self: *Header) Waker {
    return .{ .data = self, .vtable = &waker_vtable };
}

fn fromData(data: ?*anyopaque) *Header {
    return @ptrCast(@alignCast(data.?));
}

fn wakerClone(data: ?*anyopaque) ?*anyopaque {
    const self = fromData(data);
    self.refInc();
    return self;
}

fn wakerWake(data: ?*anyopaque) void {
    fromData(data).wakeByVal();
}

fn wakerWakeByRef(data: ?*anyopaque) void {
    fromData(data).wakeByRef();
}

fn wakerDrop(data: ?*anyopaque) void {
    fromData(data).refDec(1);
}
