//! The future contract.
//!
//! Zig has no language-level async, so a future is a hand-written state machine: any type
//! with
//!
//!     pub const Output = T;
//!     pub fn poll(self: *Self, cx: *Context) Poll(T)
//!
//! `poll` either finishes (`.ready`) or arranges for `cx.waker()` (a clone of it) to be woken
//! when progress is possible and returns `.pending`. After `.ready`, the future is not polled
//! again.
//!
//! Pinning: a future that returned `.pending` may have linked a waiter node that lives inside
//! itself into a shared list (intrusive waiters). From its first poll until it completes or is
//! cancelled it must not be moved. Tasks keep their future in their own heap allocation and
//! combinators keep their children inline, so both are stable.
//!
//! Cancellation: a future that may hold a registration while pending declares
//!
//!     pub fn cancel(self: *Self) void
//!
//! which removes every registration (unlinks waiters, drops stored wakers, gives back permits
//! or values it holds) so that nothing refers to the future afterwards. `cancel` is
//! idempotent, is allowed before the first poll and after completion, and never blocks.
//! Whoever drops a future before it completed (task abort, runtime shutdown, `select`,
//! `timeout`) calls `future.cancel(&f)` below, which does nothing for futures without
//! registrations.

const std = @import("std");
const Waker = @import("Waker.zig");

pub fn Poll(comptime T: type) type {
    return union(enum) {
        pending,
        ready: T,

        pub fn isReady(self: @This()) bool {
            return self == .ready;
        }
    };
}

/// What a future gets while it is being polled: the waker of the task polling it.
pub const Context = struct {
    waker_ref: *const Waker,

    pub fn init(waker_ref: *const Waker) Context {
        return .{ .waker_ref = waker_ref };
    }

    /// The waker of the current task, borrowed for the duration of `poll`. Clone it to keep it.
    pub fn waker(self: *const Context) *const Waker {
        return self.waker_ref;
    }
};

/// Compile-time check that `F` follows the future contract; returns its Output.
pub fn OutputOf(comptime F: type) type {
    if (!@hasDecl(F, "Output")) @compileError(@typeName(F) ++ " is not a future: no `Output` declaration");
    if (!@hasDecl(F, "poll")) @compileError(@typeName(F) ++ " is not a future: no `poll` function");
    const expected = fn (*F, *Context) Poll(F.Output);
    if (@TypeOf(F.poll) != expected) {
        @compileError(@typeName(F) ++ ".poll must be `fn (*Self, *Context) Poll(Output)`");
    }
    return F.Output;
}

/// Cancels a future that may still be registered somewhere (see the module comment).
pub fn cancel(f: anytype) void {
    const F = @typeInfo(@TypeOf(f)).pointer.child;
    if (@hasDecl(F, "cancel")) f.cancel();
}

/// Whether the optional future at `slot` (a `*?F`) is null, reading only its null flag.
/// `slot.* == null` reads the whole optional in Zig 0.16's Debug code — the future included,
/// with its waiter nodes and timer entries that other threads write under their locks: a data
/// race (ThreadSanitizer reports it). A pointer capture reads the flag alone.
pub fn isNull(slot: anytype) bool {
    if (slot.*) |*present| {
        _ = present;
        return false;
    }
    return true;
}

/// Polls `f` once with a no-op waker. For tests and synchronous fast paths: a future that
/// returns pending here must be cancelled by the caller if it is then dropped.
pub fn pollOnce(f: anytype) Poll(@typeInfo(@TypeOf(f)).pointer.child.Output) {
    const w = Waker.noop();
    var cx = Context.init(&w);
    return f.poll(&cx);
}

/// A future that is ready at once with `value`.
pub fn Ready(comptime T: type) type {
    return struct {
        const Self = @This();
        pub const Output = T;
        value: T,

        pub fn poll(self: *Self, cx: *Context) Poll(T) {
            _ = cx;
            return .{ .ready = self.value };
        }
    };
}

pub fn ready(value: anytype) Ready(@TypeOf(value)) {
    return .{ .value = value };
}

/// A future that is never ready (useful in tests of select/timeout and cancellation).
pub const Pending = struct {
    pub const Output = void;
    pub fn poll(self: *Pending, cx: *Context) Poll(void) {
        _ = self;
        _ = cx;
        return .pending;
    }
};

test "ready future and contract check" {
    var f = ready(@as(u32, 7));
    comptime std.debug.assert(OutputOf(@TypeOf(f)) == u32);
    try std.testing.expectEqual(@as(u32, 7), pollOnce(&f).ready);
    var p = Pending{};
    try std.testing.expect(!pollOnce(&p).isReady());
    cancel(&p);
}

test "isNull tells an empty future slot from a filled one" {
    var slot: ?Ready(u64) = null;
    try std.testing.expect(isNull(&slot));
    slot = ready(@as(u64, 3));
    try std.testing.expect(!isNull(&slot));
    try std.testing.expectEqual(@as(u64, 3), pollOnce(&slot.?).ready);
    slot = null;
    try std.testing.expect(isNull(&slot));
}
