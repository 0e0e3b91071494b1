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
//! ## Closing with operations pending, and lifetimes
//!
//! `close` may run while operations started before it are pending in other tasks (or are
//! being cancelled: `JoinHandle.abort` followed by `close`, in either order): it marks the
//! `ScheduledIo` closed and wakes every waiter (their ops end with `SocketClosed`), removes the
//! descriptor from epoll, and drops the open registration's reference. An op that has waited
//! holds its own reference until it finishes or is cancelled, so its later poll or `cancel`
//! touches live memory, and the descriptor is closed only when the last such op lets go — a
//! system call of an op never runs on a closed, possibly reused, descriptor number (see
//! ScheduledIo.zig, "Lifetime: references", for the invariant and its orderings). In the
//! common case, no op pending, `close` closes the descriptor at once.
//!
//! What the caller guarantees: `close` once; no operation *started* (created or first polled)
//! on a closed socket, and none started concurrently with `close` from another thread — the
//! rule of any handle, and Tokio's by ownership. An op that never waited holds no reference
//! (its fast path costs no read-modify-write).
//!
//! After the runtime's `deinit` closed the socket (a handle held across it), `isLive` is false:
//! an op that holds no reference fails with `RuntimeShutdown` without touching the freed
//! `ScheduledIo`, and `close` does nothing (Driver.zig, "Handles that outlive the driver").
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
/// The driver's key in the table of live drivers (`Driver.isLive`).
key: u64,

/// Registers `fd` with `driver` (see `Driver.register`). On failure `fd` is left open.
pub fn init(driver: *Driver, descriptor: posix.fd_t, assumed: Ready) Driver.RegisterError!Registration {
    return .{ .driver = driver, .io = try driver.register(descriptor, assumed), .key = driver.key };
}

/// False once the runtime's `deinit` closed the socket (see the module comment).
pub fn isLive(self: Registration) bool {
    return Driver.isLive(self.key);
}

/// The descriptor, while the socket is open and the runtime lives (tests and system calls
/// that need no readiness).
pub fn fd(self: Registration) posix.fd_t {
    return self.io.fd;
}

/// The descriptor, or `RuntimeShutdown` once the runtime's `deinit` closed it.
pub fn liveFd(self: Registration) error{RuntimeShutdown}!posix.fd_t {
    if (!self.isLive()) return error.RuntimeShutdown;
    return self.io.fd;
}

/// Closes the socket: ends the operations pending on it with `SocketClosed`, deregisters it,
/// and closes the descriptor once no pending operation holds it (see the module comment).
/// Once. After the runtime's `deinit` (which closed it already) it does nothing.
pub fn close(self: Registration) void {
    if (!self.isLive()) return;
    const io = self.io;
    io.close(); // Waiters see `closed` from now on and are woken.
    self.driver.deregister(io); // The descriptor is open: we hold the open reference.
    io.releaseUser(); // The open reference; closes the descriptor unless an op holds one.
}

/// The readiness currently recorded for `interest` (no waiting). While open and live.
pub fn readiness(self: Registration, interest: Ready) Ready {
    return self.io.event(interest).ready;
}

/// Polls of one op that may find readiness and then `WouldBlock` before it yields.
const attempts_max: u32 = 32;

pub fn Op(comptime A: type) type {
    return struct {
        const Self = @This();
        pub const Output = (A.Error || error{ RuntimeShutdown, SocketClosed })!A.Value;

        io: *ScheduledIo,
        key: u64,
        attempt: A,
        waiter: ScheduledIo.Waiter,
        finished: bool = false,

        pub fn init(registration: Registration, attempt: A) Self {
            return .{ .io = registration.io, .key = registration.key, .attempt = attempt, .waiter = ScheduledIo.Waiter.init(A.interest) };
        }

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(Output) {
            assert(!self.finished);
            if (!budget.proceed(cx)) return .pending;
            // Without a reference, `io` is alive only while the driver is (module comment).
            if (!self.waiter.holds_ref and !Driver.isLive(self.key)) return self.finish(error.RuntimeShutdown);
            var attempts: u32 = 0;
            while (attempts < attempts_max) : (attempts += 1) {
                const seen = self.io.pollReady(&self.waiter, cx) orelse {
                    budget.refund();
                    return .pending;
                };
                if (seen.is_closed) return self.finish(error.SocketClosed);
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

        /// Releases the op's reference (its last access to `io`) and completes.
        fn finish(self: *Self, output: Output) future.Poll(Output) {
            assert(!self.waiter.waiting);
            self.io.releaseWaiter(&self.waiter);
            self.finished = true;
            return .{ .ready = output };
        }

        /// Unlinks the waiter if the op is waiting and releases the op's reference. Idempotent;
        /// safe after the socket was closed (the reference kept `io` alive). It does not close
        /// the socket.
        pub fn cancel(self: *Self) void {
            if (self.finished) return;
            self.io.cancelWait(&self.waiter);
        }
    };
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;
const linux = std.os.linux;
const Waker = @import("../Waker.zig");
const CountingAllocator = @import("../CountingAllocator.zig");

/// A read on a Unix socket (the test's `A`).
const TestRead = struct {
    pub const interest = Ready.read_interest;
    pub const Value = usize;
    pub const Error = error{Unexpected};
    buffer: []u8,

    pub fn run(self: *TestRead, descriptor: posix.fd_t) (Error || error{WouldBlock})!usize {
        return posix.read(descriptor, self.buffer) catch |err| switch (err) {
            error.WouldBlock => error.WouldBlock,
            else => error.Unexpected,
        };
    }
};

/// A driver on a counting allocator, and a registered socket pair end with its peer.
const Fixture = struct {
    counting: CountingAllocator,
    driver: Driver,
    registration: Registration,
    peer: posix.fd_t,
    buffer: [8]u8 = undefined,

    fn init(self: *Fixture) !void {
        self.counting = CountingAllocator.init(testing.allocator);
        try self.driver.init(self.counting.allocator());
        var fds: [2]posix.fd_t = undefined;
        const rc = linux.socketpair(linux.AF.UNIX, linux.SOCK.STREAM | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, 0, &fds);
        if (posix.errno(rc) != .SUCCESS) return error.SocketPairFailed;
        self.registration = try Registration.init(&self.driver, fds[0], Ready.empty);
        self.peer = fds[1];
        _ = self.driver.turn(0); // The registration's first event (writable).
    }

    fn deinit(self: *Fixture) void {
        self.driver.deinit();
        os.close(self.peer);
    }

    fn read(self: *Fixture) Op(TestRead) {
        return Op(TestRead).init(self.registration, .{ .buffer = &self.buffer });
    }

    /// End of stream at the peer: the registered end's descriptor is closed.
    fn peerSeesEof(self: *Fixture) !bool {
        var buffer: [8]u8 = undefined;
        const count = posix.read(self.peer, &buffer) catch |err| switch (err) {
            error.WouldBlock => return false,
            else => return err,
        };
        return count == 0;
    }
};

test "close while an op waits: the op ends with SocketClosed, and the descriptor is closed when it lets go" {
    var fixture: Fixture = undefined;
    try fixture.init();
    defer fixture.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = future.Context.init(&waker);
    var op = fixture.read();
    try testing.expect(op.poll(&cx) == .pending);
    fixture.registration.close();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount()); // Woken by the close.
    // The op may be about to run its system call: the descriptor stays open until it is done.
    try testing.expect(!try fixture.peerSeesEof());
    _ = fixture.driver.turn(0); // The driver's reference goes; the op's keeps the memory.
    try testing.expect(fixture.counting.liveBytes() > 0);
    try testing.expectError(error.SocketClosed, op.poll(&cx).ready);
    try testing.expect(try fixture.peerSeesEof());
    try testing.expectEqual(@as(i64, 0), fixture.counting.liveBytes()); // The op's was the last.
    op.cancel(); // After completion: nothing.
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "an op cancelled after its socket was closed and the driver turned (an aborted task) touches live memory" {
    var fixture: Fixture = undefined;
    try fixture.init();
    defer fixture.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = future.Context.init(&waker);
    var op = fixture.read();
    try testing.expect(op.poll(&cx) == .pending);
    fixture.registration.close();
    _ = fixture.driver.turn(0); // Used to free the ScheduledIo here, under the op's waiter.
    try testing.expect(fixture.counting.liveBytes() > 0);
    op.cancel(); // Locks the ScheduledIo: alive, since the op holds a reference.
    op.cancel(); // Idempotent.
    try testing.expect(try fixture.peerSeesEof());
    try testing.expectEqual(@as(i64, 0), fixture.counting.liveBytes());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "an op cancelled before close: close closes the descriptor at once, the next turn frees" {
    var fixture: Fixture = undefined;
    try fixture.init();
    defer fixture.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = future.Context.init(&waker);
    var op = fixture.read();
    try testing.expect(op.poll(&cx) == .pending);
    op.cancel();
    fixture.registration.close();
    try testing.expect(try fixture.peerSeesEof());
    try testing.expect(fixture.counting.liveBytes() > 0); // An event batch may still name it.
    _ = fixture.driver.turn(0);
    try testing.expectEqual(@as(i64, 0), fixture.counting.liveBytes());
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
}

test "a handle used after the driver's deinit: ops fail with RuntimeShutdown, close does nothing" {
    var fixture: Fixture = undefined;
    try fixture.init();
    var op = fixture.read(); // Created before deinit, first polled after it.
    fixture.driver.deinit();
    defer os.close(fixture.peer);
    try testing.expect(try fixture.peerSeesEof()); // deinit closed the socket left open.
    try testing.expectEqual(@as(i64, 0), fixture.counting.liveBytes());
    try testing.expect(!fixture.registration.isLive());
    const waker = Waker.noop();
    var cx = future.Context.init(&waker);
    try testing.expectError(error.RuntimeShutdown, op.poll(&cx).ready);
    try testing.expectError(error.RuntimeShutdown, fixture.registration.liveFd());
    fixture.registration.close(); // Nothing to do: no double close, no access to freed memory.
}
