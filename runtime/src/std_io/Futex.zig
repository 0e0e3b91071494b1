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
//! A woken waiter is unlinked by the waker under the lock and never touched by it again: the
//! future may complete (and its fiber's stack be reused) as soon as it sees `woken`. The
//! waker stores `woken` (release) as its last access to the waiter, so a woken waiter's poll
//! reads it (acquire) without the bucket's lock: one lock round trip less per wait, the
//! common case of a fiber resumed by the wake (queue ping-pong: two per round trip). `cancel` (a timeout, a cancellation request, a killed fiber) unlinks a waiter still
//! linked, under the lock, so exactly one of the waker and the canceller unlinks it. A waker
//! that woke a cancelled waiter has spent one of its `n` on it — futexes allow spurious
//! wake-ups, and std.Io's primitives re-check their word — but a cancelled waiter that was
//! woken does not leave the wake unaccounted: std's Condition, the one primitive that counts
//! wake-ups, consumes its signal in the waiter after a cancelled wait too.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Waker = @import("../Waker.zig");
const Lock = @import("../Lock.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const WakeList = @import("../wait/WakeList.zig");

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

/// A future: waits until a `wake` on `ptr` (if `*ptr == expected` when first polled).
/// Output: void (woken, or the value differed). Cancel-safe.
pub const Wait = struct {
    pub const Output = void;

    futex: *Futex,
    ptr: *const u32,
    expected: u32,
    node: intrusive_list.Node = .{},
    waker: ?Waker = null,
    /// Set by the waker side under the bucket lock when it unlinked this waiter, as its last
    /// access to it (release; the waiter's lock-free read in `repoll` is an acquire, so the
    /// unlink and the taking of `waker` happen before the waiter completes).
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
        bucket.lock.lock();
        defer bucket.lock.unlock();
        if (@atomicLoad(u32, self.ptr, .monotonic) != self.expected) {
            self.state = .done;
            return .{ .ready = {} };
        }
        self.waker = cx.waker().clone();
        bucket.waiters.pushBack(&self.node);
        self.state = .waiting;
        return .pending;
    }

    fn repoll(self: *Wait, cx: *future.Context) future.Poll(void) {
        if (self.woken.load(.acquire)) {
            assert(self.waker == null);
            self.state = .done;
            return .{ .ready = {} };
        }
        const bucket = self.futex.bucketOf(self.ptr);
        const replaced: ?Waker = blk: {
            bucket.lock.lock();
            defer bucket.lock.unlock();
            if (self.woken.load(.monotonic)) { // Under the lock: the waker's writes are ordered.
                assert(self.waker == null);
                self.state = .done;
                return .{ .ready = {} };
            }
            break :blk WakeList.storeWaker(&self.waker, cx.waker());
        };
        if (replaced) |old| old.drop();
        return .pending;
    }

    /// Unlinks the waiter if it is still linked. Idempotent.
    pub fn cancel(self: *Wait) void {
        if (self.state != .waiting) {
            self.state = .done;
            return;
        }
        self.state = .done;
        const bucket = self.futex.bucketOf(self.ptr);
        const dropped: ?Waker = blk: {
            bucket.lock.lock();
            defer bucket.lock.unlock();
            if (self.woken.load(.monotonic)) break :blk null;
            bucket.waiters.remove(&self.node);
            const waker = self.waker;
            self.waker = null;
            break :blk waker;
        };
        if (dropped) |waker| waker.drop();
    }
};

pub fn wait(self: *Futex, ptr: *const u32, expected: u32) Wait {
    return .{ .futex = self, .ptr = ptr, .expected = expected };
}

/// Wakes up to `max_waiters` waiters on `ptr`, oldest first. Returns how many it woke.
pub fn wake(self: *Futex, ptr: *const u32, max_waiters: u32) u32 {
    const bucket = self.bucketOf(ptr);
    var woken: u32 = 0;
    while (woken < max_waiters) {
        var batch = WakeList.init();
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
                    if (batch.isFull()) {
                        more = true;
                        break;
                    }
                    bucket.waiters.remove(current);
                    batch.push(waiter.waker.?);
                    waiter.waker = null;
                    // Last touch: the waiter may complete as soon as it reads this.
                    waiter.woken.store(true, .release);
                    woken += 1;
                }
                node = next;
            }
        }
        batch.wakeAll();
        if (!more) break;
    }
    return woken;
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
