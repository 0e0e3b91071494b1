//! `JoinHandle(T)`: the spawner's side of a task, itself a future of `JoinError!T` (or of
//! `(JoinError || E)!U` when `T` is `E!U`: see `JoinOutput`).
//!
//! Awaiting it suspends the awaiting task: the handle registers the awaiter's waker in the
//! task's join-waker slot (see `Header.registerJoinWaker`) and returns pending; the thread
//! that completes the task wakes it. It never spins and never runs other tasks on the
//! awaiter's stack.
//!
//! Three ways to stop caring, named for what they do to the *task*:
//!
//! - `abort()` cancels the task (Tokio's `JoinHandle::abort`): it requests cancellation, and
//!   the next time a worker takes the task it calls the task future's `cancel` instead of
//!   `poll`; awaiting the handle then yields `error.Cancelled` (or the output, if the task
//!   completed first). The handle itself is untouched: it must still be awaited or detached.
//! - `detach()` gives up the handle and leaves the task alone: it runs on, and its output is
//!   dropped when it completes (Tokio: dropping the `JoinHandle`).
//! - `cancel()` is not a user call but the future protocol's (future.zig): a combinator
//!   (`select`, `timeout`, `joinAll`, task shutdown) that drops a pending `JoinHandle` calls it
//!   to end *the await*. It detaches, exactly as dropping a `JoinHandle` in Tokio does, so a
//!   `timeout` around a `JoinHandle` stops waiting for the task without cancelling it; to
//!   cancel the task, `abort` it.
//!
//! Every handle must end in exactly one of: awaited to completion (it releases itself then),
//! `detach()`, or the protocol's `cancel()`.

const std = @import("std");
const future = @import("../future.zig");
const budget = @import("../budget.zig");
const Header = @import("Header.zig");
const assert = std.debug.assert;
pub const JoinError = @import("cell.zig").JoinError;
pub const JoinOutput = @import("cell.zig").JoinOutput;

pub fn JoinHandle(comptime T: type) type {
    return struct {
        const Self = @This();
        pub const Output = JoinOutput(T);

        raw: ?*Header,

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(Output) {
            const header = self.raw orelse @panic("JoinHandle polled after it completed or was detached");
            if (!budget.proceed(cx)) return .pending;
            switch (header.registerJoinWaker(cx.waker())) {
                .pending => {
                    budget.refund();
                    return .pending;
                },
                .complete => {
                    assert(header.load() & Header.complete != 0);
                    var output: Output = undefined;
                    header.vtable.take_output(header, &output);
                    self.raw = null;
                    header.dropJoinHandle();
                    return .{ .ready = output };
                },
            }
        }

        /// Cancels the task: requests cancellation, so the task's future is cancelled (not
        /// polled again) the next time a worker takes it, and the handle then yields
        /// `error.Cancelled` — unless the task completed first. The handle stays valid.
        pub fn abort(self: *const Self) void {
            if (self.raw) |header| header.abort();
        }

        /// Gives up the handle; the task keeps running and its output is dropped.
        pub fn detach(self: *Self) void {
            const header = self.raw orelse return;
            assert(header.load() & Header.join_interest != 0);
            self.raw = null;
            header.dropJoinHandle();
            assert(self.raw == null);
        }

        /// The future protocol's `cancel` (called by combinators that drop a pending handle:
        /// select, timeout, joinAll, task shutdown): ends the await by detaching. It does
        /// not cancel the task — `abort` does (module comment).
        pub fn cancel(self: *Self) void {
            self.detach();
        }

        pub fn isFinished(self: *const Self) bool {
            const header = self.raw orelse return true;
            return header.load() & Header.complete != 0;
        }
    };
}

test "a task whose output is an error union flattens into the JoinHandle's error set" {
    const E = error{Boom};
    try std.testing.expect(JoinOutput(E!u32) == (JoinError || E)!u32);
    try std.testing.expect(JoinOutput(u32) == JoinError!u32);
}
