//! A `Waker` is how a pending future asks to be polled again.
//!
//! It is a type-erased handle: a data pointer plus a table of four functions, exactly like
//! Rust's `RawWaker`. The owner of a waker value owns one "reference" to whatever the data
//! pointer names (a task, a parked thread, ...):
//!
//! - `clone` makes a second, independent reference;
//! - `wake` wakes the target and gives the reference back (the waker is consumed);
//! - `wakeByRef` wakes the target and keeps the reference;
//! - `drop` gives the reference back without waking.
//!
//! Invariant: every waker obtained from `clone` is consumed exactly once, by `wake` or `drop`.
//! The waker borrowed from a `Context` is not owned by the future being polled: a future that
//! wants to be woken later must `clone` it and store the clone.
//!
//! Wakers may be called from any thread, any number of times; waking a target that is already
//! scheduled is cheap and idempotent (the target is polled at least once after the wake).

const std = @import("std");

const Waker = @This();

data: ?*anyopaque,
vtable: *const VTable,

pub const VTable = struct {
    /// Makes a new owned reference to the same target and returns its data pointer (the new
    /// waker has this same vtable). The original stays valid. A pointer, not a `Waker`: a
    /// returned 16-byte struct came back through memory and was read back at once with one
    /// wide load over the callee's two narrow stores (a store-forwarding stall on every
    /// `await` that registers a join waker).
    clone: *const fn (data: ?*anyopaque) ?*anyopaque,
    /// Wakes the target and releases the reference (consumes the waker).
    wake: *const fn (data: ?*anyopaque) void,
    /// Wakes the target; the reference stays owned by the caller.
    wake_by_ref: *const fn (data: ?*anyopaque) void,
    /// Releases the reference without waking.
    drop: *const fn (data: ?*anyopaque) void,
};

pub fn clone(self: *const Waker) Waker {
    return .{ .data = self.vtable.clone(self.data), .vtable = self.vtable };
}

pub fn wake(self: Waker) void {
    self.vtable.wake(self.data);
}

pub fn wakeByRef(self: *const Waker) void {
    self.vtable.wake_by_ref(self.data);
}

pub fn drop(self: Waker) void {
    self.vtable.drop(self.data);
}

/// True when both wakers wake the same target, so a stored waker need not be replaced.
/// May return false for equivalent wakers (never true for different targets).
pub fn willWakeSame(self: *const Waker, other: *const Waker) bool {
    return self.data == other.data and self.vtable == other.vtable;
}

/// A waker that does nothing: for tests and for polling a future once synchronously.
pub fn noop() Waker {
    return .{ .data = null, .vtable = &noop_vtable };
}

const noop_vtable = VTable{
    .clone = noopClone,
    .wake = noopWake,
    .wake_by_ref = noopWake,
    .drop = noopWake,
};

fn noopClone(data: ?*anyopaque) ?*anyopaque {
    std.debug.assert(data == null);
    return null;
}

fn noopWake(data: ?*anyopaque) void {
    std.debug.assert(data == null);
}

/// A waker for tests: counts wakes, clones and drops, so a test can check that a primitive
/// wakes exactly when it should and never leaks or double-drops a waker.
pub const Counting = struct {
    wakes: std.atomic.Value(u32) = .init(0),
    /// Owned references outstanding (clones minus wake/drop). Must be 0 at the end of a test.
    refs: std.atomic.Value(i32) = .init(0),

    pub fn waker(self: *Counting) Waker {
        _ = self.refs.fetchAdd(1, .monotonic);
        return .{ .data = self, .vtable = &counting_vtable };
    }

    pub fn wakeCount(self: *const Counting) u32 {
        return self.wakes.load(.acquire);
    }

    pub fn outstanding(self: *const Counting) i32 {
        return self.refs.load(.acquire);
    }

    const counting_vtable = VTable{
        .clone = countingClone,
        .wake = countingWake,
        .wake_by_ref = countingWakeByRef,
        .drop = countingDrop,
    };

    fn from(data: ?*anyopaque) *Counting {
        return @ptrCast(@alignCast(data.?));
    }

    fn countingClone(data: ?*anyopaque) ?*anyopaque {
        return from(data).waker().data;
    }

    /// The reference is released before the wake is counted: a test that sees the wake
    /// (`wakeCount`, acquire) then also sees the consumed reference (`outstanding`). The
    /// other order let a test observe the wake between the two and count the clone as leaked.
    fn countingWake(data: ?*anyopaque) void {
        countingDrop(data);
        countingWakeByRef(data);
    }

    fn countingWakeByRef(data: ?*anyopaque) void {
        _ = from(data).wakes.fetchAdd(1, .acq_rel);
    }

    fn countingDrop(data: ?*anyopaque) void {
        const previous = from(data).refs.fetchSub(1, .acq_rel);
        std.debug.assert(previous > 0); // A waker dropped twice.
    }
};

test "noop waker clones and wakes without effect" {
    const w = noop();
    const c = w.clone();
    try std.testing.expect(c.willWakeSame(&w));
    c.wakeByRef();
    c.wake();
    w.drop();
}

test "counting waker tracks wakes and references" {
    var counter = Counting{};
    const w = counter.waker();
    const c = w.clone();
    try std.testing.expectEqual(@as(i32, 2), counter.outstanding());
    c.wakeByRef();
    c.wake();
    try std.testing.expectEqual(@as(u32, 2), counter.wakeCount());
    w.drop();
    try std.testing.expectEqual(@as(i32, 0), counter.outstanding());
    var other = Counting{};
    const o = other.waker();
    defer o.drop();
    const again = counter.waker();
    defer again.drop();
    try std.testing.expect(!again.willWakeSame(&o));
}
