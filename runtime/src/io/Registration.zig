//! A descriptor registered with a runtime's I/O driver, as a socket holds it, and `Op`, the
//! future that performs one non-blocking system call on it (Tokio's `Registration` and its
//! `async_io`).
//!
//! `Op(A)` waits for readiness in `A.interest`, calls `A.run(fd)`, and on `WouldBlock` clears
//! exactly the readiness it saw (by tick, see ScheduledIo.zig) and waits again. An operation
//! that reads or writes less than it asked for has drained the socket buffer (or filled it) —
//! with edge-triggered epoll that is proof enough — so `A.drained` lets it clear readiness
//! without paying for the `WouldBlock` system call (Tokio does the same on Linux).
//!
//! Cancellation (`cancel`) unlinks the op's waiter; readiness is never consumed by waiting, so
//! the next operation on the descriptor loses nothing. Each poll takes one unit of the
//! cooperative budget (given back when it waits).
//!
//! The contract of `A`:
//!
//!     pub const interest: Ready;                       read_interest or write_interest
//!     pub const Value: type;  pub const Error: type;   the op's result
//!     pub fn run(self: *A, fd) (Error || error{WouldBlock})!Value
//!     pub fn drained(self: *const A, value: Value) bool   (optional)

const std = @import("std");
const assert = std.debug.assert;
const posix = std.posix;

const future = @import("../future.zig");
const budget = @import("../budget.zig");
const hook = @import("../hook.zig");
const os = @import("../os.zig");
const Ready = @import("ready.zig").Ready;
const ScheduledIo = @import("ScheduledIo.zig");
const Driver = @import("Driver.zig");

const Registration = @This();

driver: *Driver,
io: *ScheduledIo,

/// Registers `fd` with `driver` (see `Driver.register`). On failure `fd` is left open.
pub fn init(driver: *Driver, descriptor: posix.fd_t, assumed: Ready) Driver.RegisterError!Registration {
    return .{ .driver = driver, .io = try driver.register(descriptor, assumed) };
}

pub fn fd(self: Registration) posix.fd_t {
    return self.io.fd;
}

/// Deregisters and closes the descriptor. No operation may be pending on it. Also after the
/// runtime was destroyed (the descriptor is then an orphan: see Driver.zig).
pub fn close(self: Registration) void {
    const io = self.io;
    const descriptor = io.fd;
    // Acquire: pairs with the driver's release when it orphaned `io` at teardown.
    if (io.orphaned.load(.acquire)) {
        assert(!io.hasWaiters());
        os.close(descriptor);
        io.allocator.destroy(io);
        return;
    }
    self.driver.deregister(io);
    os.close(descriptor);
}

/// The readiness currently recorded for `interest` (no waiting).
pub fn readiness(self: Registration, interest: Ready) Ready {
    return self.io.event(interest).ready;
}

/// Polls of one op that may find readiness and then `WouldBlock` before it yields.
const attempts_max: u32 = 32;

pub fn Op(comptime A: type) type {
    return struct {
        const Self = @This();
        pub const Output = (A.Error || error{RuntimeShutdown})!A.Value;

        io: *ScheduledIo,
        attempt: A,
        waiter: ScheduledIo.Waiter,
        finished: bool = false,

        pub fn init(registration: Registration, attempt: A) Self {
            return .{ .io = registration.io, .attempt = attempt, .waiter = ScheduledIo.Waiter.init(A.interest) };
        }

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(Output) {
            assert(!self.finished);
            if (!budget.proceed(cx)) return .pending;
            var attempts: u32 = 0;
            while (attempts < attempts_max) : (attempts += 1) {
                const seen = self.io.pollReady(&self.waiter, cx) orelse {
                    budget.refund();
                    return .pending;
                };
                if (seen.is_shutdown) return self.finish(error.RuntimeShutdown);
                const value = self.attempt.run(self.io.fd) catch |err| switch (err) {
                    error.WouldBlock => {
                        hook.reached(.io_before_clear);
                        self.io.clearReadiness(seen);
                        continue;
                    },
                    else => |e| return self.finish(e),
                };
                if (@hasDecl(A, "drained") and self.attempt.drained(value)) self.io.clearReadiness(seen);
                return self.finish(value);
            }
            // Readiness kept appearing and vanishing: yield rather than loop on.
            cx.waker().wakeByRef();
            return .pending;
        }

        fn finish(self: *Self, output: Output) future.Poll(Output) {
            assert(!self.waiter.waiting);
            self.finished = true;
            return .{ .ready = output };
        }

        /// Unlinks the waiter if the op is waiting. Idempotent; the descriptor stays open.
        pub fn cancel(self: *Self) void {
            self.io.cancelWait(&self.waiter);
        }
    };
}
