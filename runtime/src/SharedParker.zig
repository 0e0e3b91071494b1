//! A reference-counted `Parker` for a thread that waits on a future (`blockOn`), and the pool
//! that hands such parkers out.
//!
//! ## Why reference counting
//!
//! The waker `blockOn` gives the future unparks the waiting thread. A primitive stores a clone
//! of it, and every primitive first publishes its completion and *then* wakes the clone. In
//! between, the waiting thread may see the completion through another wake-up (a timer of a
//! `select`, a second primitive, a spurious poll), return from `blockOn` and even exit. The
//! late wake must still land on live memory. So every waker clone holds a reference, and a
//! parker is freed only after its last reference is gone. (The first design used a
//! thread-local parker with uncounted wakers: the late wake wrote into the exited thread's
//! unmapped thread-local storage, SIGSEGV.) Tokio does the same: `block_on` parks on an
//! `Arc`'d parker, and its wakers are clones of that `Arc`.
//!
//! ## Why a pool
//!
//! Tokio allocates one `Arc`'d parker per thread, on the thread's first `block_on`, caches it
//! in a thread-local (which holds one reference, dropped by the thread-local's destructor at
//! thread exit) and reuses it for every later `block_on` of that thread, even while stale
//! clones of it are still around. Zig has no thread-exit destructors, so a per-thread cache
//! could never give its reference back. Instead a `Pool` plays the thread-local's part:
//!
//! - every parker on the pool's free list carries one reference, the pool's;
//! - `acquire` pops a parker (the pool's reference becomes the caller's; the caller is the
//!   parker's *owner*, the one thread that parks on it) and allocates one, through the pool's
//!   allocator, only when the list is empty;
//! - `release` (the `blockOn` call ending) pushes it back at once, reference included, whether
//!   or not waker clones are still out: like Tokio's cached parker, it is reused while stale
//!   clones exist. A stale clone woken later unparks the next owner spuriously — harmless, a
//!   future may always be polled once too often — and never touches freed memory.
//!
//! So the pool holds as many parkers as there were concurrent `blockOn` calls at most, and in
//! steady state nothing is allocated: a thread calling `blockOn` in a loop gets the same parker
//! every time (the free list is LIFO), and polls and wakes never allocate (a clone is one atomic
//! increment, a drop one atomic decrement). `acquire` clears a notification left by a stale
//! wake, so most stale wakes cost nothing at all.
//!
//! ## Allocations, and through which allocator
//!
//! - `Runtime.blockOn`: the runtime's pool, created by `Runtime.init` through the runtime's
//!   allocator, with one parker allocated up front (two allocations, both in `init`). A
//!   `blockOn` allocates only when more threads are in `blockOn` at once than ever before: one
//!   parker, through the runtime's allocator, kept for reuse until `deinit`. With one thread
//!   calling `blockOn`, `blockOn` never allocates. The benchmark's counting allocator, passed to
//!   the runtime, sees all of it (Tokio's side: one `Arc` per thread that calls `block_on`,
//!   through the counted global allocator).
//! - `blockOnThread` (no runtime): the process-wide pool (`Pool.global()`), backed by
//!   `std.heap.page_allocator`, never freed; it holds as many parkers as there were concurrent
//!   `blockOnThread` calls.
//! - Out of memory when a parker must be allocated: `blockOn` panics (it has no error to return;
//!   Tokio aborts on allocation failure too).
//!
//! ## Lifetimes
//!
//! A runtime's pool may outlive the runtime: a waker clone can be released after
//! `Runtime.deinit` (a channel that outlives the runtime dropping its waiter). `Pool.close` (in
//! `deinit`) drops the pool's reference to every parker on its free list; a parker is freed
//! when its last reference goes, and the pool with its last parker. The pool's own `refs`
//! count its owner (until `close`) and every parker in existence.
//!
//! ## Orderings
//!
//! - `refs` of a parker: a clone is a monotonic increment (a new reference is made from one the
//!   caller holds, so the count cannot be zero, as in `Arc::clone`); a drop is an acq_rel
//!   decrement, so every holder's use of the parker (its unpark) happens before the free done by
//!   whoever drops last.
//! - the free list, `closed` and `free_count` are guarded by the pool's mutex: the previous
//!   owner's parking happens before the next owner's (`release` and `acquire` both lock it).
//! - `refs` of the pool: acq_rel decrements, the last one frees it (same argument).

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Lock = @import("Lock.zig");
const Parker = @import("Parker.zig");
const Waker = @import("Waker.zig");

const SharedParker = @This();

parker: Parker = .{},
/// One for the owner or, on the free list, the pool; plus one per waker clone.
refs: std.atomic.Value(u32),
pool: *Pool,
/// Free-list link: guarded by the pool's mutex.
next_free: ?*SharedParker = null,

/// A waker for the owner's `Context`: borrowed, valid while the caller owns the parker. A
/// future that keeps it clones it, and the clone holds a reference of its own.
pub fn waker(self: *SharedParker) Waker {
    assert(self.refs.load(.monotonic) > 0);
    return .{ .data = self, .vtable = &vtable };
}

/// The owner is done (its `blockOn` returns): the parker goes back to the pool at once, with the
/// owner's reference, even if waker clones are still out (see the module comment).
pub fn release(self: *SharedParker) void {
    self.pool.giveBack(self);
}

/// Parks the owner until a waker clone wakes it; spins first for up to `spin_ns` (see
/// `Parker.parkSpin`). May return spuriously (a stale clone of an earlier owner).
pub fn parkSpin(self: *SharedParker, spin_ns: u64) void {
    assert(self.refs.load(.monotonic) > 0);
    self.parker.parkSpin(spin_ns);
}

pub fn park(self: *SharedParker) void {
    self.parkSpin(0);
}

/// The owner's underlying parker, for a caller that spins with its own policy
/// (`SpinPolicy.park`: spin, then `Parker.park`).
pub fn parkerForSpin(self: *SharedParker) *Parker {
    assert(self.refs.load(.monotonic) > 0);
    return &self.parker;
}

/// `Parker.parkTimeout`: true when it was unparked, false after `timeout_ns`.
pub fn parkTimeout(self: *SharedParker, timeout_ns: u64) bool {
    assert(self.refs.load(.monotonic) > 0);
    return self.parker.parkTimeout(timeout_ns);
}

/// Drops one reference; the last one frees the parker (only possible once the pool is closed:
/// until then the owner's or the pool's reference is there).
fn unref(self: *SharedParker) void {
    // Release: our unparks happen before the free. Acquire (for the last): everyone else's too.
    const before = self.refs.fetchSub(1, .acq_rel);
    assert(before > 0); // A reference dropped twice.
    if (before == 1) self.pool.destroyParker(self);
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

fn wakerClone(data: ?*anyopaque) ?*anyopaque {
    const self = fromData(data);
    // Monotonic: the caller holds a reference, so the parker stays alive (see the module doc).
    const before = self.refs.fetchAdd(1, .monotonic);
    assert(before > 0 and before < std.math.maxInt(u32));
    return self;
}

fn wakerWake(data: ?*anyopaque) void {
    const self = fromData(data);
    self.parker.unpark();
    self.unref();
}

fn wakerWakeByRef(data: ?*anyopaque) void {
    fromData(data).parker.unpark();
}

fn wakerDrop(data: ?*anyopaque) void {
    fromData(data).unref();
}

/// A free list of reference-counted parkers (see the module comment).
pub const Pool = struct {
    allocator: Allocator,
    mutex: Lock = .{},
    /// Parkers without an owner, each holding the pool's reference; linked through
    /// `next_free`. Guarded by `mutex`.
    free: ?*SharedParker = null,
    free_count: usize = 0,
    /// After `close`, an owner's `release` drops its reference instead. Guarded by `mutex`.
    closed: bool = false,
    /// Parkers in existence (free or owned); for tests and assertions.
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
        for (0..preallocated) |_| self.giveBack(try self.allocateParker());
        return self;
    }

    /// The pool's owner is done with it: drops the pool's reference to every free parker (each
    /// is freed with its last reference) and the owner's reference to the pool (freed with its
    /// last parker). No `acquire` afterwards.
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
            parker.next_free = null;
            parker.unref();
        }
        self.unref();
    }

    /// A parker owned by the caller (who alone may park on it) until its `release`: from the
    /// free list, else newly allocated.
    pub fn acquire(self: *Pool) Allocator.Error!*SharedParker {
        self.mutex.lock();
        assert(!self.closed);
        if (self.free) |parker| {
            self.free = parker.next_free;
            self.free_count -= 1;
            self.mutex.unlock();
            parker.next_free = null;
            parker.parker.reset(); // A stale wake's notification would only cost a poll.
            return parker;
        }
        self.mutex.unlock();
        return self.allocateParker();
    }

    /// True when every parker is free and no waker clone of any is left. For tests.
    pub fn isQuiescent(self: *Pool) bool {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (self.free_count != self.allocated.load(.monotonic)) return false;
        var parker = self.free;
        while (parker) |p| : (parker = p.next_free) {
            if (p.refs.load(.acquire) != 1) return false;
        }
        return true;
    }

    fn allocateParker(self: *Pool) Allocator.Error!*SharedParker {
        const parker = try self.allocator.create(SharedParker);
        parker.* = .{ .refs = .init(1), .pool = self };
        // Monotonic: the caller holds a reference to the pool (its owner's or a parker's).
        _ = self.refs.fetchAdd(1, .monotonic);
        _ = self.allocated.fetchAdd(1, .monotonic);
        return parker;
    }

    /// An owner's `release`: the parker and its reference go back on the free list.
    fn giveBack(self: *Pool, parker: *SharedParker) void {
        self.mutex.lock();
        if (!self.closed) {
            assert(parker.next_free == null);
            parker.next_free = self.free;
            self.free = parker;
            self.free_count += 1;
            self.mutex.unlock();
            return;
        }
        self.mutex.unlock();
        parker.unref(); // Released after `close` (an owner still in `blockOn` at `deinit`).
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

test "one owner after another gets the same parker, stale clones or not: no allocation" {
    const pool = try Pool.create(std.testing.allocator, 1);
    defer pool.close();
    const first = try pool.acquire();
    var stale = first.waker().clone();
    first.release();
    for (0..100) |_| {
        const again = try pool.acquire();
        try std.testing.expectEqual(first, again);
        stale.wake(); // A late wake of the previous owner's clone: a spurious unpark at most.
        stale = again.waker().clone();
        again.release();
    }
    stale.drop();
    try std.testing.expectEqual(@as(usize, 1), pool.allocated.load(.monotonic));
    try std.testing.expect(pool.isQuiescent());
}

test "acquire clears a stale notification; concurrent owners get different parkers" {
    const pool = try Pool.create(std.testing.allocator, 1);
    defer pool.close();
    const first = try pool.acquire();
    const stale = first.waker().clone();
    first.release();
    stale.wake(); // Notifies the free parker.
    const owner = try pool.acquire();
    try std.testing.expectEqual(first, owner);
    try std.testing.expect(!owner.parkTimeout(1)); // The notification was dropped.
    const second = try pool.acquire(); // `owner` is in use: a new one.
    try std.testing.expect(second != owner);
    second.release();
    owner.release();
    try std.testing.expectEqual(@as(usize, 2), pool.allocated.load(.monotonic));
    try std.testing.expect(pool.isQuiescent());
}

test "a clone released after the pool was closed frees its parker and the pool" {
    const pool = try Pool.create(std.testing.allocator, 2);
    const parker = try pool.acquire();
    const late = parker.waker().clone();
    parker.release();
    pool.close(); // Frees the parker without clones; the pool lives on for the other.
    late.wake(); // Frees the parker, then the pool (std.testing.allocator checks for leaks).
}

test "an owner released after the pool was closed frees its parker and the pool" {
    const pool = try Pool.create(std.testing.allocator, 1);
    const parker = try pool.acquire();
    const clone = parker.waker().clone();
    pool.close();
    parker.release();
    clone.drop(); // The last reference.
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
        parker.release(); // Clones may still be in flight; the next round reuses it anyway.
        for (threads) |t| t.join();
        try std.testing.expect(pool.isQuiescent());
    }
    try std.testing.expectEqual(@as(usize, 1), pool.allocated.load(.monotonic));
}
