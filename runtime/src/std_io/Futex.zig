//! std.Io's futex for `ampere.Io`: `futexWait(ptr, expected)` parks the *fiber* (or, on a
//! plain thread, the thread) until a `futexWake(ptr, n)`, and that is all std.Io's Mutex,
//! Condition, Queue, Semaphore, RwLock and Event need to wait without blocking a worker.
//!
//! ## The parking table
//!
//! The address space is hashed into `bucket_count` buckets; each bucket is a short `Lock` and
//! an intrusive FIFO list of waiters (WebKit's parking lot, Rust's `parking_lot`). A waiter is
//! a node inside the `Wait` future, so waiting allocates nothing.
//!
//! - **wait** (first poll): take the bucket's lock, load `*ptr`; if it is not `expected`,
//!   return at once; otherwise link the waiter with a clone of the task's waker and return
//!   pending.
//! - **wake**: take the lock, unlink up to `n` waiters of `ptr` (oldest first), mark each
//!   `woken` and take its waker; wake them after unlocking.
//!
//! No wake-up is lost, by the lock: a waker stores the new value and then takes the bucket's
//! lock; if it gets the lock first, its unlock happens before the waiter's lock, so the
//! waiter's load sees the new value (and does not wait); if the waiter gets it first, the
//! waiter is linked when the waker scans the list. The value is read with a relaxed atomic
//! load: the lock carries the ordering.
//!
//! **Task waiters.** A waiter polled by a task (every fiber is one) holds no waker clone: it
//! records the task itself. The task cannot be freed while the waiter is linked — the waiter
//! lives in the task's future, and a future is cancelled (which unlinks it, under the lock)
//! before its task can complete. So the waker does the task's wake transition
//! (`Header.claimWake`: idle -> scheduled with the queue's new reference, or running ->
//! notified) *under the lock, before* it marks the waiter `woken`, and queues the task
//! (`submitClaimed`) after unlocking, held by the queue's reference. A clone would cost an
//! atomic increment at every wait and the matching decrement at every wake. Any other waker
//! (`blockOn`'s parker) is cloned as before.
//!
//! A woken waiter is unlinked by the waker under the lock and never touched by it again: the
//! future may complete (and its fiber's stack be reused) as soon as it sees `woken`. The
//! waker stores `woken` (release) as its last access to the waiter, so a woken waiter's poll
//! reads it (acquire) without the bucket's lock: one lock round trip less per wait, the
//! common case of a fiber resumed by the wake (queue ping-pong: two per round trip). A fiber
//! reads it even without a poll (`Wait.readyOnResume`, `Fiber.awaitFuture`). A wake of one
//! waiter (every std.Io Mutex unlock and Condition signal) skips the batch (`wakeOne`). Both
//! took the one-pair ping-pong from 1,944 to 1,790 instructions per round trip (callgrind, 1
//! worker; zio 1,717).
//!
//! `cancel` (a timeout, a cancellation request, a killed fiber, a `Select` loser) unlinks a
//! waiter still linked, under the lock, so exactly one of the waker and the canceller unlinks
//! it.
//!
//! ## Leaving after a wake
//!
//! A waiter can be chosen by a wake and then leave without acting on it: the wake came
//! between the fiber's last look (`readyOnResume`) and its cancel's lock. A waker that chose it
//! spent one of its `n` on it, and for `n = 1` — every std.Io Mutex unlock — that wake was the
//! only one: std's `Mutex.lock` returns `error.Canceled` without looking at the word again, so
//! the next waiter would sleep on an unlocked mutex (issue 41's lost wake-up). So a cancelled
//! waiter that finds itself `woken` passes the wake on: `wake(ptr, 1)` after unlocking, as
//! Tokio's `Notified` does when it is dropped after a `notify_one`. The extra wake is at worst
//! spurious for its receiver (futex callers re-check their word; Condition counts its own
//! signals and consumes one in a cancelled waiter too), and never lost. The seeded schedule
//! explorer's `mutex_cancel` and `select_losers` scenarios (std_io/explore_tests.zig) found the
//! lost wake in 18-61 seeds before this rule.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Waker = @import("../Waker.zig");
const Lock = @import("../Lock.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const WakeList = @import("../wait/WakeList.zig");
const Header = @import("../task/Header.zig");
const hook = @import("../hook.zig");

const Futex = @This();

pub const bucket_count = 256;

const Bucket = struct {
    lock: Lock = .{},
    waiters: intrusive_list.List = .{},
};

buckets: [bucket_count]Bucket align(std.atomic.cache_line) = @splat(.{}),

pub fn init() Futex {
    return .{};
}

/// Asserts no waiter is left (every fiber finished or was killed, which cancels its wait).
pub fn deinit(self: *Futex) void {
    for (&self.buckets) |*bucket| assert(bucket.waiters.isEmpty());
}

fn bucketOf(self: *Futex, ptr: *const u32) *Bucket {
    // Fibonacci hashing of the address; the low two bits are always zero.
    const hash = (@intFromPtr(ptr) >> 2) *% 0x9e3779b97f4a7c15;
    return &self.buckets[hash >> (64 - 8)];
}

comptime {
    assert(bucket_count == 1 << 8);
}

/// Whom a linked waiter wakes: its polling task (no reference held: see "Task waiters"), or a
/// clone of any other waker. Guarded by the bucket's lock while linked.
const Target = union(enum) {
    none,
    task: *Header,
    waker: Waker,

    /// The target for a poll with `waker`; clones only a waker that is not a task's.
    fn of(waker: *const Waker) Target {
        if (Header.ofWaker(waker)) |task| return .{ .task = task };
        return .{ .waker = waker.clone() };
    }

    /// Re-targets to `waker` (a later poll's); returns a waker clone to drop after unlocking.
    fn update(self: *Target, waker: *const Waker) ?Waker {
        switch (self.*) {
            .task => |task| if (Header.ofWaker(waker) == task) return null,
            .waker => |*stored| if (Header.ofWaker(waker) == null) return WakeList.replaceWaker(stored, waker),
            .none => unreachable, // Linked waiters always have a target.
        }
        const old = self.*;
        self.* = of(waker);
        return switch (old) {
            .waker => |stored| stored,
            else => null,
        };
    }
};

/// A future: waits until a `wake` on `ptr` (if `*ptr == expected` when first polled).
/// Output: void (woken, or the value differed). Cancel-safe.
pub const Wait = struct {
    pub const Output = void;

    futex: *Futex,
    ptr: *const u32,
    expected: u32,
    node: intrusive_list.Node = .{},
    target: Target = .none,
    /// Set by the waker side under the bucket lock when it unlinked this waiter, as its last
    /// access to it (release; the waiter's lock-free read in `repoll` is an acquire, so the
    /// unlink, the task's wake transition and the taking of `target` happen before the waiter
    /// completes).
    woken: std.atomic.Value(bool) = .init(false),
    state: enum { idle, waiting, done } = .idle,

    pub fn poll(self: *Wait, cx: *future.Context) future.Poll(void) {
        switch (self.state) {
            .done => return .{ .ready = {} },
            .idle => return self.register(cx),
            .waiting => return self.repoll(cx),
        }
    }

    fn register(self: *Wait, cx: *future.Context) future.Poll(void) {
        const bucket = self.futex.bucketOf(self.ptr);
        hook.reachedBy(.futex_register_before_lock, self);
        bucket.lock.lock();
        defer bucket.lock.unlock();
        if (@atomicLoad(u32, self.ptr, .monotonic) != self.expected) {
            self.state = .done;
            return .{ .ready = {} };
        }
        self.target = Target.of(cx.waker());
        bucket.waiters.pushBack(&self.node);
        self.state = .waiting;
        return .pending;
    }

    /// For a fiber resumed after it waited (`Fiber.awaitFuture`'s `readyOnResume`): ready if
    /// a wake unlinked it — the same lock-free acquire read as `repoll`'s first step, without
    /// the poll around it (a queue ping-pong's every message).
    pub fn readyOnResume(self: *Wait) ?void {
        assert(self.state == .waiting);
        if (!self.woken.load(.acquire)) return null;
        assert(self.target == .none);
        self.state = .done;
        return {};
    }

    fn repoll(self: *Wait, cx: *future.Context) future.Poll(void) {
        if (self.woken.load(.acquire)) {
            assert(self.target == .none);
            self.state = .done;
            return .{ .ready = {} };
        }
        const bucket = self.futex.bucketOf(self.ptr);
        const replaced: ?Waker = blk: {
            bucket.lock.lock();
            defer bucket.lock.unlock();
            if (self.woken.load(.monotonic)) { // Under the lock: the waker's writes are ordered.
                assert(self.target == .none);
                self.state = .done;
                return .{ .ready = {} };
            }
            break :blk self.target.update(cx.waker());
        };
        if (replaced) |old| old.drop();
        return .pending;
    }

    /// Unlinks the waiter if it is still linked; a waiter that a wake chose already passes
    /// that wake on (see "Leaving after a wake"). Idempotent.
    pub fn cancel(self: *Wait) void {
        if (self.state != .waiting) {
            self.state = .done;
            return;
        }
        self.state = .done;
        const bucket = self.futex.bucketOf(self.ptr);
        hook.reachedBy(.futex_cancel_before_lock, self);
        const dropped: ?Target = blk: {
            bucket.lock.lock();
            defer bucket.lock.unlock();
            // Under the lock: the waker's unlink and its store are ordered before this load.
            if (self.woken.load(.monotonic)) break :blk null;
            bucket.waiters.remove(&self.node);
            const target = self.target;
            self.target = .none;
            break :blk target;
        };
        const target = dropped orelse {
            // Chosen by a wake this waiter will not act on: the next waiter gets it.
            _ = self.futex.wake(self.ptr, 1);
            return;
        };
        switch (target) {
            .waker => |waker| waker.drop(),
            .task, .none => {},
        }
    }
};

pub fn wait(self: *Futex, ptr: *const u32, expected: u32) Wait {
    return .{ .futex = self, .ptr = ptr, .expected = expected };
}

/// `wait.* = self.wait(ptr, expected)`, field by field, for a future that is polled where it
/// is built (a fiber's wait): copying a literal just built on the stack read it back with one
/// 64-byte load over its narrower stores (a store-forwarding stall per futex wait).
pub fn initWait(self: *Futex, wait_out: *Wait, ptr: *const u32, expected: u32) void {
    wait_out.futex = self;
    wait_out.ptr = ptr;
    wait_out.expected = expected;
    wait_out.node = .{};
    wait_out.target = .none;
    wait_out.woken = .init(false);
    wait_out.state = .idle;
    comptime std.debug.assert(@typeInfo(Wait).@"struct".fields.len == 7); // Every field set above.
}

/// Wakes up to `max_waiters` waiters on `ptr`, oldest first. Returns how many it woke.
pub fn wake(self: *Futex, ptr: *const u32, max_waiters: u32) u32 {
    if (max_waiters == 1) return self.wakeOne(ptr);
    const bucket = self.bucketOf(ptr);
    hook.reachedBy(.futex_wake_before_lock, self);
    var woken: u32 = 0;
    while (woken < max_waiters) {
        var batch = WakeList.init();
        // Tasks made `scheduled` under the lock, to queue after it (see "Task waiters").
        var claimed: [WakeList.capacity]*Header = undefined;
        var claimed_count: usize = 0;
        var more = false;
        {
            bucket.lock.lock();
            defer bucket.lock.unlock();
            var node = bucket.waiters.first();
            while (node) |current| {
                const next = current.next;
                const waiter = intrusive_list.entry(Wait, "node", current);
                if (waiter.ptr == ptr) {
                    if (woken == max_waiters) break;
                    if (batch.isFull() or claimed_count == claimed.len) {
                        more = true;
                        break;
                    }
                    switch (unlinkWoken(bucket, waiter)) {
                        .task => |task| {
                            claimed[claimed_count] = task;
                            claimed_count += 1;
                        },
                        .waker => |waker| batch.push(waker),
                        .none => {},
                    }
                    woken += 1;
                }
                node = next;
            }
        }
        for (claimed[0..claimed_count]) |task| task.submitClaimed();
        batch.wakeAll();
        if (!more) break;
    }
    return woken;
}

/// A wake's step for one waiter, under `bucket`'s lock: unlinks it, does its task's wake
/// transition (see "Task waiters"), marks it woken as the last touch, and returns what to wake
/// after unlocking — a claimed task to submit, a waker clone to wake, or nothing (the task was
/// queued or notified already).
fn unlinkWoken(bucket: *Bucket, waiter: *Wait) Target {
    bucket.waiters.remove(&waiter.node);
    var target = waiter.target;
    switch (target) {
        .task => |task| if (!task.claimWake()) {
            target = .none;
        },
        .waker => {},
        .none => unreachable, // Linked waiters always have a target.
    }
    waiter.target = .none;
    // Last touch: the waiter may complete as soon as it reads this.
    waiter.woken.store(true, .release);
    return target;
}

/// `wake(ptr, 1)` (every std.Io Mutex unlock and Condition signal) without the batch: at most
/// one waiter is unlinked, so its target is held in a local instead of the batch's arrays and
/// their loop. The same steps and orderings as `wake`.
fn wakeOne(self: *Futex, ptr: *const u32) u32 {
    const bucket = self.bucketOf(ptr);
    hook.reachedBy(.futex_wake_before_lock, self);
    var target: Target = .none;
    {
        bucket.lock.lock();
        defer bucket.lock.unlock();
        var node = bucket.waiters.first();
        while (node) |current| : (node = current.next) {
            const waiter = intrusive_list.entry(Wait, "node", current);
            if (waiter.ptr != ptr) continue;
            target = unlinkWoken(bucket, waiter);
            break;
        } else return 0;
    }
    switch (target) {
        .task => |task| task.submitClaimed(),
        .waker => |waker| waker.wake(),
        .none => {},
    }
    return 1;
}

// -- tests ------------------------------------------------------------------------------------

const testing = std.testing;

/// What every test below polls with: a futex, and a counting waker in a context (it points
/// into itself: `init` in place).
const Fixture = struct {
    futex: Futex,
    counter: Waker.Counting,
    waker: Waker,
    cx: future.Context,

    fn init(self: *Fixture) void {
        self.futex = Futex.init();
        self.counter = .{};
        self.waker = self.counter.waker();
        self.cx = future.Context.init(&self.waker);
    }

    fn deinit(self: *Fixture) void {
        self.waker.drop();
        self.futex.deinit();
    }
};

test "a wait returns at once when the value differs, and otherwise until a wake" {
    var word: u32 = 1;
    var fixture: Fixture = undefined;
    fixture.init();
    defer fixture.deinit();
    const futex, const counter, const cx = .{ &fixture.futex, &fixture.counter, &fixture.cx };

    var differs = futex.wait(&word, 0);
    try testing.expect(differs.poll(cx) == .ready);

    var waiter = futex.wait(&word, 1);
    try testing.expect(waiter.poll(cx) == .pending);
    try testing.expect(waiter.poll(cx) == .pending); // Still linked, waker kept.
    var other: u32 = 1;
    try testing.expectEqual(@as(u32, 0), futex.wake(&other, 1)); // Another address.
    try testing.expectEqual(@as(u32, 1), futex.wake(&word, 5));
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(waiter.poll(cx) == .ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // Only the fixture's waker itself.
}

test "wake takes waiters oldest first, at most max_waiters, in batches beyond 32" {
    var word: u32 = 7;
    var fixture: Fixture = undefined;
    fixture.init();
    defer fixture.deinit();
    const futex, const counter, const cx = .{ &fixture.futex, &fixture.counter, &fixture.cx };
    var waiters: [40]Wait = undefined;
    for (&waiters) |*w| {
        w.* = futex.wait(&word, 7);
        try testing.expect(w.poll(cx) == .pending);
    }
    try testing.expectEqual(@as(u32, 2), futex.wake(&word, 2));
    try testing.expect(waiters[0].woken.load(.monotonic) and waiters[1].woken.load(.monotonic) and !waiters[2].woken.load(.monotonic));
    try testing.expectEqual(@as(u32, 38), futex.wake(&word, std.math.maxInt(u32)));
    for (&waiters) |*w| try testing.expect(w.poll(cx) == .ready);
    try testing.expectEqual(@as(u32, 40), counter.wakeCount());
}

test "a wake of one skips another address's waiter in its bucket, takes the oldest, and readyOnResume sees it" {
    var words = [_]u32{0} ** 2048;
    var fixture: Fixture = undefined;
    fixture.init();
    defer fixture.deinit();
    const futex, const counter, const cx = .{ &fixture.futex, &fixture.counter, &fixture.cx };
    // Another word in the same bucket as words[0] (256 buckets: one is among 2,048 words).
    const other = for (words[1..]) |*w| {
        if (futex.bucketOf(w) == futex.bucketOf(&words[0])) break w;
    } else unreachable;
    var first_other = futex.wait(other, 0);
    var oldest = futex.wait(&words[0], 0);
    var newest = futex.wait(&words[0], 0);
    for ([_]*Wait{ &first_other, &oldest, &newest }) |w| try testing.expect(w.poll(cx) == .pending);
    try testing.expect(oldest.readyOnResume() == null); // Not woken yet: poll again.
    try testing.expectEqual(@as(u32, 1), futex.wake(&words[0], 1));
    try testing.expect(!first_other.woken.load(.monotonic));
    try testing.expect(oldest.readyOnResume() != null);
    try testing.expect(oldest.state == .done);
    try testing.expect(!newest.woken.load(.monotonic));
    try testing.expectEqual(@as(u32, 1), futex.wake(&words[0], 1));
    try testing.expectEqual(@as(u32, 0), futex.wake(&words[0], 1)); // None left on words[0].
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    first_other.cancel();
    newest.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "a cancelled waiter is unlinked and not woken; cancel after a wake is harmless" {
    var word: u32 = 0;
    var fixture: Fixture = undefined;
    fixture.init();
    defer fixture.deinit();
    const futex, const counter, const cx = .{ &fixture.futex, &fixture.counter, &fixture.cx };
    var a = futex.wait(&word, 0);
    var b = futex.wait(&word, 0);
    try testing.expect(a.poll(cx) == .pending);
    try testing.expect(b.poll(cx) == .pending);
    a.cancel();
    try testing.expectEqual(@as(u32, 1), futex.wake(&word, 1)); // b, not the cancelled a.
    try testing.expect(b.woken.load(.monotonic));
    b.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "a value changed and woken between the check and the registration is not lost" {
    // The window: the waiter has decided to wait (the caller saw `expected`) but not yet
    // registered. The wake comes first; registration must see the new value.
    var word: u32 = 0;
    var fixture: Fixture = undefined;
    fixture.init();
    defer fixture.deinit();
    const futex, const cx = .{ &fixture.futex, &fixture.cx };
    var waiter = futex.wait(&word, 0);
    @atomicStore(u32, &word, 1, .release);
    try testing.expectEqual(@as(u32, 0), futex.wake(&word, 1));
    try testing.expect(waiter.poll(cx) == .ready);
}

/// A scheduler that records the task it was asked to queue, and whether the futex's bucket
/// lock was held at that moment.
const SubmitProbe = struct {
    futex: *Futex,
    word: *const u32,
    submitted: ?*Header = null,
    under_lock: bool = false,

    fn submit(context: *anyopaque, task: *Header, yielded: bool) void {
        const self: *SubmitProbe = @ptrCast(@alignCast(context));
        assert(!yielded);
        self.submitted = task;
        const bucket = self.futex.bucketOf(self.word);
        if (bucket.lock.tryLock()) bucket.lock.unlock() else self.under_lock = true;
    }
};

fn unusedPoll(_: *Header) bool {
    unreachable;
}
fn unusedCancel(_: *Header) bool {
    unreachable;
}
fn unusedTakeOutput(_: *Header, _: *anyopaque) void {
    unreachable;
}
fn unusedDealloc(_: *Header) void {
    unreachable;
}
const unused_vtable = Header.VTable{ .poll = unusedPoll, .cancel = unusedCancel, .take_output = unusedTakeOutput, .dealloc = unusedDealloc };

/// A futex, a word, and a task header (no future behind it) whose scheduler is a
/// `SubmitProbe`, in the state of a task being polled: running, with the poller's and the owned
/// list's references. `cx` polls as that task. It points into itself: `init` in place.
const TaskFixture = struct {
    futex: Futex,
    word: u32,
    probe: SubmitProbe,
    scheduler: Header.Scheduler,
    task: Header,
    waker: Waker,
    cx: future.Context,

    fn init(self: *TaskFixture, word: u32) void {
        self.futex = Futex.init();
        self.word = word;
        self.probe = .{ .futex = &self.futex, .word = &self.word };
        self.scheduler = .{ .context = &self.probe, .submit = SubmitProbe.submit };
        self.task = Header.init(&unused_vtable, &self.scheduler, 1);
        self.task.state.store(Header.running | 2 * Header.ref_one, .monotonic);
        self.waker = self.task.borrowedWaker();
        self.cx = future.Context.init(&self.waker);
    }
};

test "a task waiter holds no reference; the wake claims the task under the lock and queues it after" {
    var fixture: TaskFixture = undefined;
    fixture.init(3);
    defer fixture.futex.deinit();
    const futex, const word, const probe, const task, const cx = .{ &fixture.futex, &fixture.word, &fixture.probe, &fixture.task, &fixture.cx };

    var waiter = futex.wait(word, 3);
    try testing.expect(waiter.poll(cx) == .pending);
    try testing.expect(waiter.target == .task);
    try testing.expectEqual(@as(u64, 2), Header.refCount(task.state.load(.monotonic))); // No clone.
    try testing.expect(waiter.poll(cx) == .pending); // A re-poll by the same task keeps it.
    try testing.expectEqual(Header.IdleAction.idle, task.transitionToIdle()); // The poll returns.

    try testing.expectEqual(@as(u32, 1), futex.wake(word, 1));
    try testing.expectEqual(task, probe.submitted.?);
    try testing.expect(!probe.under_lock);
    // Scheduled, with a new reference for the queue.
    const state = task.state.load(.monotonic);
    try testing.expect(state & Header.scheduled != 0);
    try testing.expectEqual(@as(u64, 2), Header.refCount(state));
    try testing.expect(waiter.poll(cx) == .ready);

    // A wake while the task runs (before its poll returned) sets `notified` and queues nothing.
    task.state.store(Header.running | 2 * Header.ref_one, .monotonic);
    probe.submitted = null;
    var second = futex.wait(word, 3);
    try testing.expect(second.poll(cx) == .pending);
    try testing.expectEqual(@as(u32, 1), futex.wake(word, 1));
    try testing.expect(probe.submitted == null);
    try testing.expect(task.state.load(.monotonic) & Header.notified != 0);
    try testing.expect(second.poll(cx) == .ready);
}

test "a waiter re-polled by another waker: task to clone and back, nothing leaked" {
    var fixture: TaskFixture = undefined;
    fixture.init(0);
    defer fixture.futex.deinit();
    const futex, const word, const task_cx = .{ &fixture.futex, &fixture.word, &fixture.cx };
    var counter = Waker.Counting{};
    const counting_waker = counter.waker();
    defer counting_waker.drop();
    var counting_cx = future.Context.init(&counting_waker);

    var waiter = futex.wait(word, 0);
    try testing.expect(waiter.poll(task_cx) == .pending);
    try testing.expect(waiter.poll(&counting_cx) == .pending); // Now a clone.
    try testing.expectEqual(@as(i32, 2), counter.outstanding());
    try testing.expect(waiter.poll(task_cx) == .pending); // Back to the task: clone dropped.
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expect(waiter.poll(&counting_cx) == .pending);
    waiter.cancel(); // Drops the clone.
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 0), futex.wake(word, 1));
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
}
