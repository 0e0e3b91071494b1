//! A reference-counted `Parker` for a thread that waits on a future (`blockOn`), and the pool
//! that recycles such parkers.
//!
//! ## Why reference counting
//!
//! The waker `blockOn` gives the future unparks the waiting thread. A primitive stores a clone
//! of it, and every primitive first publishes its completion and *then* wakes the clone. In
//! between, the waiting thread may see the completion through another wake-up (a timer of a
//! `select`, a second primitive, a spurious poll), return from `blockOn` and even exit. The
//! late wake must still land on live memory. So every waker clone holds a reference, and a
//! parker is recycled only after its last reference is gone. (The first design used a
//! thread-local parker with uncounted wakers: the late wake wrote into the exited thread's
//! unmapped thread-local storage, SIGSEGV.) Tokio does the same: `block_on` parks on an
//! `Arc`'d parker, and its wakers are clones of that `Arc`.
//!
//! ## Why a pool
//!
//! Tokio allocates one `Arc`'d parker per thread, on the thread's first `block_on`, and caches
//! it in a thread-local whose destructor drops the thread's reference. Zig has no thread-exit
//! destructors, so a per-thread cache could never give its reference back. Instead a `Pool`
//! keeps the parkers whose references are all gone on a free list:
//!
//! - `acquire` pops a parker from the free list and hands out its first reference; only when
//!   the list is empty does it allocate one (through the pool's allocator);
//! - the last `release` (the `blockOn` call ending, or the last waker clone woken or dropped)
//!   resets the parker and pushes it back.
//!
//! In steady state nothing is allocated: a thread calling `blockOn` in a loop gets the same
//! parker back every time, and neither polls nor wakes ever allocate (a clone is one atomic
//! increment, a drop one atomic decrement). The pool holds as many parkers as were ever checked
//! out at once: `blockOn` calls in progress plus parkers kept alive only by waker clones that
//! were not woken or dropped yet. A recycled parker starts without a pending notification (the
//! reset), so a late wake of a previous call cannot cut the next call's park short.
//!
//! ## Allocations, and through which allocator
//!
//! - `Runtime.blockOn`: the runtime's pool, created by `Runtime.init` with the runtime's
//!   allocator (one allocation for the pool, one for a first parker, both in `init`). A
//!   `blockOn` allocates only when every parker of the pool is checked out (another thread is
//!   in `blockOn`, or stale waker clones still hold them): one parker, through the runtime's
//!   allocator, kept for reuse. With one thread calling `blockOn`, `blockOn` never allocates.
//!   The benchmark's counting allocator, passed to the runtime, sees all of it (Tokio's side:
//!   one `Arc` per thread that calls `block_on`, through the counted global allocator).
//! - `blockOnThread` (no runtime): the process-wide pool (`Pool.global()`), backed by
//!   `std.heap.page_allocator`, never freed; it holds as many parkers as there were concurrent
//!   `blockOnThread` calls (plus stale clones).
//! - Out of memory when a parker must be allocated: `blockOn` panics (it has no error to return;
//!   Tokio aborts on allocation failure too).
//!
//! ## Lifetimes
//!
//! A runtime's pool may outlive the runtime: a waker clone can be released after
//! `Runtime.deinit` (a channel that outlives the runtime dropping its waiter). `Pool.close` (in
//! `deinit`) frees the parkers on the free list and gives up the owner's reference; a parker
//! released after that frees itself, and the pool is freed with its last parker. The pool's
//! `refs` count the owner (until `close`) and every parker in existence.
//!
//! ## Orderings
//!
//! - `refs` of a parker: `clone` is a monotonic increment (a new reference is made from one the
//!   caller holds, so the count cannot be zero, as in `Arc::clone`); `release` is an acq_rel
//!   decrement, so every holder's use of the parker (its unpark) happens before the recycling
//!   done by whoever releases last (reset, reuse by another thread, free).
//! - the free list, `closed` and `free_count` are guarded by the pool's mutex; `acquire` hands
//!   the parker to the new owner under it, so the reset happens before the next use.
//! - `refs` of the pool: acq_rel decrements, the last one frees it (same argument).

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Lock = @import("Lock.zig");
const Parker = @import("Parker.zig");
const Waker = @import("Waker.zig");

const SharedParker = @This();

parker: Parker = .{},
/// The `blockOn` call that acquired it, plus one per waker clone. 0 only on the free list.
refs: std.atomic.Value(u32),
pool: *Pool,
/// Free-list link: guarded by the pool's mutex, meaningful only while `refs == 0`.
next_free: ?*SharedParker = null,

/// The caller's reference as a waker: it is not a new reference, and exactly one of `drop` on
/// it or `release` gives the reference back. Clones made from it hold references of their own.
pub fn waker(self: *SharedParker) Waker {
    assert(self.refs.load(.monotonic) > 0);
    return .{ .data = self, .vtable = &vtable };
}

/// Gives back one reference; the last one returns the parker to its pool (or frees it when
/// the pool was closed).
pub fn release(self: *SharedParker) void {
    // Release: our unparks happen before the recycling. Acquire (for the last): everyone
    // else's do too.
    const before = self.refs.fetchSub(1, .acq_rel);
    assert(before > 0); // A reference released twice.
    if (before == 1) self.pool.recycle(self);
}

/// Parks the owner (the thread that acquired it) until a waker clone wakes it; spins first
/// for up to `spin_ns` (see `Parker.parkSpin`).
pub fn parkSpin(self: *SharedParker, spin_ns: u64) void {
    assert(self.refs.load(.monotonic) > 0);
    self.parker.parkSpin(spin_ns);
}

pub fn park(self: *SharedParker) void {
    self.parkSpin(0);
}

/// `Parker.parkTimeout`: true when it was unparked, false after `timeout_ns`.
pub fn parkTimeout(self: *SharedParker, timeout_ns: u64) bool {
    assert(self.refs.load(.monotonic) > 0);
    return self.parker.parkTimeout(timeout_ns);
}

const vtable = Waker.VTable{
    .clone = wakerClone,
    .wake = wakerWake,
    .wake_by_ref = wakerWakeByRef,
    .drop = wakerDrop,
};

fn fromData(data: ?*anyopaque) *SharedParker {
    return @ptrCast(@alignCast(data.?));
}

fn wakerClone(data: ?*anyopaque) Waker {
    const self = fromData(data);
    // Monotonic: the caller holds a reference, so the parker stays alive (see the module doc).
    const before = self.refs.fetchAdd(1, .monotonic);
    assert(before > 0 and before < std.math.maxInt(u32));
    return .{ .data = self, .vtable = &vtable };
}

fn wakerWake(data: ?*anyopaque) void {
    const self = fromData(data);
    self.parker.unpark();
    self.release();
}

fn wakerWakeByRef(data: ?*anyopaque) void {
    fromData(data).parker.unpark();
}

fn wakerDrop(data: ?*anyopaque) void {
    fromData(data).release();
}

/// A free list of reference-counted parkers (see the module comment).
pub const Pool = struct {
    allocator: Allocator,
    mutex: Lock = .{},
    /// Parkers without references, linked through `next_free`. Guarded by `mutex`.
    free: ?*SharedParker = null,
    free_count: usize = 0,
    /// After `close`, a parker whose last reference goes is freed. Guarded by `mutex`.
    closed: bool = false,
    /// Parkers in existence (free or checked out); for tests and assertions.
    allocated: std.atomic.Value(usize) = .init(0),
    /// The owner's reference (until `close`) plus one per parker in existence.
    refs: std.atomic.Value(usize) = .init(1),
    /// False for the process-wide pool, which is static and never closed.
    heap_allocated: bool,

    var global_pool: Pool = .{ .allocator = std.heap.page_allocator, .heap_allocated = false };

    /// The process-wide pool of `blockOnThread` (no runtime): page allocator, never freed.
    pub fn global() *Pool {
        return &global_pool;
    }

    /// A pool with `preallocated` parkers on its free list, all allocated through `allocator`.
    pub fn create(allocator: Allocator, preallocated: usize) Allocator.Error!*Pool {
        const self = try allocator.create(Pool);
        self.* = .{ .allocator = allocator, .heap_allocated = true };
        errdefer self.close();
        for (0..preallocated) |_| {
            const parker = try self.allocateParker();
            parker.refs.store(0, .monotonic);
            parker.next_free = self.free;
            self.free = parker;
            self.free_count += 1;
        }
        return self;
    }

    /// The owner is done with the pool: frees the free parkers now, the others when their last
    /// reference goes, and the pool itself with the last of them. No `acquire` afterwards.
    pub fn close(self: *Pool) void {
        assert(self.heap_allocated);
        self.mutex.lock();
        assert(!self.closed);
        self.closed = true;
        var list = self.free;
        self.free = null;
        self.free_count = 0;
        self.mutex.unlock();
        while (list) |parker| {
            list = parker.next_free;
            self.destroyParker(parker);
        }
        self.unref();
    }

    /// A parker with one reference, the caller's: from the free list, else newly allocated.
    pub fn acquire(self: *Pool) Allocator.Error!*SharedParker {
        self.mutex.lock();
        assert(!self.closed);
        if (self.free) |parker| {
            self.free = parker.next_free;
            self.free_count -= 1;
            self.mutex.unlock();
            parker.next_free = null;
            assert(parker.refs.load(.monotonic) == 0);
            parker.refs.store(1, .monotonic); // Ours alone: handed over under the mutex.
            return parker;
        }
        self.mutex.unlock();
        return self.allocateParker();
    }

    /// Parkers checked out (held by a `blockOn` call or by waker clones). For tests.
    pub fn checkedOut(self: *Pool) usize {
        self.mutex.lock();
        defer self.mutex.unlock();
        return self.allocated.load(.monotonic) - self.free_count;
    }

    fn allocateParker(self: *Pool) Allocator.Error!*SharedParker {
        const parker = try self.allocator.create(SharedParker);
        parker.* = .{ .refs = .init(1), .pool = self };
        // Monotonic: the caller holds a reference to the pool (owner or a parker of it).
        _ = self.refs.fetchAdd(1, .monotonic);
        _ = self.allocated.fetchAdd(1, .monotonic);
        return parker;
    }

    /// The last reference of `parker` is gone: back to the free list, or freed after `close`.
    fn recycle(self: *Pool, parker: *SharedParker) void {
        self.mutex.lock();
        if (!self.closed) {
            // Nobody can unpark it now: a notification left by a late wake is dropped, so the
            // next owner's first park is not cut short.
            parker.parker.reset();
            parker.next_free = self.free;
            self.free = parker;
            self.free_count += 1;
            self.mutex.unlock();
            return;
        }
        self.mutex.unlock();
        self.destroyParker(parker);
    }

    fn destroyParker(self: *Pool, parker: *SharedParker) void {
        assert(parker.refs.load(.monotonic) == 0);
        _ = self.allocated.fetchSub(1, .monotonic);
        self.allocator.destroy(parker);
        self.unref();
    }

    fn unref(self: *Pool) void {
        // Acq_rel: the last one sees every other holder's use of the pool before freeing it.
        const before = self.refs.fetchSub(1, .acq_rel);
        assert(before > 0);
        if (before == 1) {
            assert(self.heap_allocated);
            self.allocator.destroy(self);
        }
    }
};

// -- tests -------------------------------------------------------------------------------

test "parkers are recycled: no allocation in steady state" {
    const pool = try Pool.create(std.testing.allocator, 1);
    defer pool.close();
    const first = try pool.acquire();
    first.release();
    for (0..100) |_| {
        const again = try pool.acquire();
        try std.testing.expectEqual(first, again);
        const w = again.waker();
        const clone = w.clone();
        clone.wake(); // Leaves a notification...
        w.drop();
    }
    try std.testing.expectEqual(@as(usize, 1), pool.allocated.load(.monotonic));
    const next = try pool.acquire();
    defer next.release();
    try std.testing.expect(!next.parkTimeout(1)); // ...which recycling dropped.
}

test "a clone keeps its parker checked out; another acquire gets a different one" {
    const pool = try Pool.create(std.testing.allocator, 1);
    defer pool.close();
    const first = try pool.acquire();
    const late = first.waker().clone();
    first.release(); // blockOn returned; the clone is still out there.
    try std.testing.expectEqual(@as(usize, 1), pool.checkedOut());
    const second = try pool.acquire();
    try std.testing.expect(second != first);
    late.wake(); // Unparks the old parker, not the new owner's.
    try std.testing.expect(!second.parkTimeout(1));
    second.release();
    try std.testing.expectEqual(@as(usize, 0), pool.checkedOut());
    try std.testing.expectEqual(@as(usize, 2), pool.allocated.load(.monotonic));
}

test "a clone released after the pool was closed frees its parker and the pool" {
    const pool = try Pool.create(std.testing.allocator, 2);
    const parker = try pool.acquire();
    const late = parker.waker().clone();
    parker.release();
    pool.close(); // Frees the free parker; the pool lives on for the checked-out one.
    late.wake(); // Frees the parker, then the pool (std.testing.allocator checks for leaks).
}

test "many threads wake clones of one parker while its owner parks" {
    const ampere_testing = @import("testing.zig");
    const rounds = ampere_testing.scaled(2_000, 20);
    const threads_count = 4;
    const pool = try Pool.create(std.testing.allocator, 1);
    defer pool.close();
    const Waking = struct {
        fn run(w: Waker, done: *std.atomic.Value(u32)) void {
            _ = done.fetchAdd(1, .release);
            w.wake();
        }
    };
    for (0..rounds) |_| {
        const parker = try pool.acquire();
        var done = std.atomic.Value(u32).init(0);
        var threads: [threads_count]std.Thread = undefined;
        for (&threads) |*t| t.* = try std.Thread.spawn(.{}, Waking.run, .{ parker.waker().clone(), &done });
        while (done.load(.acquire) < threads_count) parker.park();
        parker.release(); // Clones may still be in flight: the last of them recycles it.
        for (threads) |t| t.join();
        try std.testing.expectEqual(@as(usize, 0), pool.checkedOut());
    }
    try std.testing.expectEqual(@as(usize, 1), pool.allocated.load(.monotonic));
}
