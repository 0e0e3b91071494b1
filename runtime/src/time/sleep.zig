//! `sleep(duration_ns)` and `timeout(future, duration_ns)`.
//!
//! The deadline is fixed when the future is created (like Tokio's `sleep`), not when it is
//! first polled. The timer entry lives inside the `Sleep` future; the first poll registers it
//! with the current runtime's timer driver (the runtime of the worker, `blockOn` or blocking
//! thread polling it). Timers have a resolution of one tick, `Driver.tick_ns` (65.536 µs): a
//! deadline is rounded up to its tick, by less than a tick, and never fires early, however far
//! away; a deadline already passed (a zero sleep) is ready at the first poll, without a timer.
//! The driver owner's wait ends at the tick's start to the nanosecond (`os.epollWaitNs`), not
//! at the next whole millisecond after it.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const budget = @import("../budget.zig");
const context = @import("../context.zig");
const clock = @import("clock.zig");
const Driver = @import("Driver.zig");

pub const Sleep = struct {
    pub const Output = void;

    deadline_ns: u64,
    entry: Driver.TimerEntry = .{},
    driver: ?*Driver = null,
    state: enum { unregistered, waiting, done } = .unregistered,

    pub fn poll(self: *Sleep, cx: *future.Context) future.Poll(void) {
        if (self.state == .done) return .{ .ready = {} };
        if (!budget.proceed(cx)) return .pending;
        if (self.state == .unregistered) {
            // A deadline already passed (a zero or negative sleep) is due now: no timer and no
            // wait for the next tick, which `register` would round it up to.
            if (self.deadline_ns <= clock.nowNs()) return self.finish();
            const driver = context.driver() orelse @panic("ampere.time.sleep polled outside a runtime");
            self.driver = driver;
            switch (driver.register(&self.entry, driver.deadlineTickFor(self.deadline_ns), cx.waker())) {
                .expired => return self.finish(),
                .registered => self.state = .waiting,
            }
        } else {
            assert(self.state == .waiting);
            // Acquire pairs with the driver's release store of `fired`.
            if (self.entry.fired.load(.acquire)) return self.finish();
            if (!self.driver.?.updateWaker(&self.entry, cx.waker())) return self.finish();
        }
        budget.refund();
        return .pending;
    }

    fn finish(self: *Sleep) future.Poll(void) {
        self.state = .done;
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Sleep) void {
        if (self.state == .waiting) self.driver.?.cancel(&self.entry);
        self.state = .done;
    }
};

pub fn sleep(duration_ns: u64) Sleep {
    return .{ .deadline_ns = clock.nowNs() +| duration_ns };
}

pub fn sleepUntil(deadline_ns: u64) Sleep {
    return .{ .deadline_ns = deadline_ns };
}

pub const TimeoutError = error{Timeout};

/// The output of `timeout` around a future with output `T`: `error{Timeout}!T`, or
/// `(error{Timeout} || E)!U` when `T` is itself an error union `E!U` (a JoinHandle, a channel
/// receive), so that one `try` or `catch` handles both — as `JoinOutput` does for tasks.
pub fn TimeoutOutput(comptime T: type) type {
    return switch (@typeInfo(T)) {
        .error_union => |eu| (TimeoutError || eu.error_set)!eu.payload,
        else => TimeoutError!T,
    };
}

/// `inner` with a deadline: Output `TimeoutOutput(Inner.Output)`. The inner future is polled
/// first, so a future that becomes ready exactly at the deadline wins.
///
/// Cooperative budget (as Tokio's `Timeout`): if the inner future used up the task's budget
/// in this poll, the timer is polled without a budget. Otherwise a future that spends the
/// whole budget on every poll (a loop over always-ready operations) would leave the timer
/// "out of budget" on every poll, and the timeout would never fire.
pub fn Timeout(comptime F: type) type {
    const T = future.OutputOf(F);
    return struct {
        const Self = @This();
        pub const Output = TimeoutOutput(T);
        inner: F,
        timer: Sleep,
        finished: bool = false,

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(Output) {
            assert(!self.finished);
            const had_budget = !budget.exhausted();
            switch (self.inner.poll(cx)) {
                .ready => |value| {
                    self.finished = true;
                    self.timer.cancel();
                    return .{ .ready = value };
                },
                .pending => {},
            }
            const timer_poll = if (had_budget and budget.exhausted()) blk: {
                const unconstrained = budget.Scope.begin(null);
                defer unconstrained.end();
                break :blk self.timer.poll(cx);
            } else self.timer.poll(cx);
            switch (timer_poll) {
                .ready => {
                    self.finished = true;
                    future.cancel(&self.inner);
                    return .{ .ready = error.Timeout };
                },
                .pending => return .pending,
            }
        }

        /// The inner future's `cancelWouldBlock` (fiber/Fiber.zig, "Killing"); the timer never
        /// blocks a cancel.
        pub fn cancelWouldBlock(self: *const Self) bool {
            if (comptime !@hasDecl(F, "cancelWouldBlock")) return false;
            return self.inner.cancelWouldBlock();
        }

        pub fn cancel(self: *Self) void {
            if (self.finished) return;
            self.finished = true;
            future.cancel(&self.inner);
            self.timer.cancel();
        }
    };
}

pub fn timeout(inner: anytype, duration_ns: u64) Timeout(@TypeOf(inner)) {
    return .{ .inner = inner, .timer = sleep(duration_ns) };
}

test "a sleep whose deadline has passed is ready at its first poll, with no timer driver" {
    // Outside a runtime: registering would panic, so ready here proves no timer was armed (it
    // used to register and wait for the next tick, then 1 ms: io_sleep d=0 took a tick per batch).
    var zero = sleep(0);
    try std.testing.expect(future.pollOnce(&zero) == .ready);
    var past = sleepUntil(clock.nowNs() -| std.time.ns_per_ms);
    try std.testing.expect(future.pollOnce(&past) == .ready);
    try std.testing.expect(zero.state == .done and past.state == .done);
}
