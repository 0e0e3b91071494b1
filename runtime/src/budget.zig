//! Cooperative budget (Tokio's `coop`).
//!
//! A task that always finds work ready (a channel that is never empty, a lock that is never
//! held) would never return `.pending` and would starve every other task on its worker. To
//! prevent that, the scheduler gives each task `units_per_poll` units before every poll, and
//! every primitive whose async path can complete without waiting calls `proceed(cx)` first:
//!
//! - while units remain, `proceed` takes one and returns true;
//! - when the budget is spent, it wakes the task by reference (so it is re-queued behind the
//!   others) and returns false, and the primitive returns `.pending` without doing anything.
//!
//! A primitive that took a unit but then has to wait (returns `.pending` for a real reason)
//! calls `refund()`: only progress costs budget.
//!
//! The budget is thread-local. Outside the runtime (tests, synchronous fast paths, a future
//! polled by hand with a no-op waker) it is unconstrained and `proceed` always returns true.
//! Nested scopes (a `blockOn` inside a blocking task) save and restore it with `Scope`.

const std = @import("std");
const Context = @import("future.zig").Context;

pub const units_per_poll: u8 = 128;

/// Units left for the task being polled on this thread; null = unconstrained.
threadlocal var remaining: ?u8 = null;

/// Takes one unit. False means "yield now": the task has been woken and must return pending.
pub fn proceed(cx: *Context) bool {
    if (remaining) |units| {
        if (units == 0) {
            cx.waker().wakeByRef();
            return false;
        }
        remaining = units - 1;
    }
    return true;
}

/// Gives back the unit taken by the last `proceed` when the operation made no progress.
pub fn refund() void {
    if (remaining) |units| {
        if (units < units_per_poll) remaining = units + 1;
    }
}

/// Units left, or null when unconstrained.
pub fn left() ?u8 {
    return remaining;
}

/// True when the task should yield at its next opportunity.
pub fn exhausted() bool {
    return if (remaining) |units| units == 0 else false;
}

/// Installs a budget for the duration of one task poll (or an unconstrained one) and restores
/// the previous one at `end`.
pub const Scope = struct {
    saved: ?u8,

    pub fn begin(units: ?u8) Scope {
        const scope = Scope{ .saved = remaining };
        remaining = units;
        return scope;
    }

    pub fn end(self: Scope) void {
        remaining = self.saved;
    }
};

test "budget runs out after units_per_poll and refunds" {
    const Waker = @import("Waker.zig");
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);

    try std.testing.expect(proceed(&cx)); // unconstrained
    try std.testing.expectEqual(@as(?u8, null), left());

    const scope = Scope.begin(units_per_poll);
    defer scope.end();
    var taken: u32 = 0;
    while (proceed(&cx)) taken += 1;
    try std.testing.expectEqual(@as(u32, units_per_poll), taken);
    try std.testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try std.testing.expect(exhausted());
    refund();
    try std.testing.expect(proceed(&cx));
}
