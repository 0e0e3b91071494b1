//! A listening TCP socket (Tokio's `net::TcpListener`): bound with `SO_REUSEADDR` (a server can
//! restart while old connections linger in TIME_WAIT), backlog 128 (Rust's std and mio's, so
//! that both sides of the benchmarks queue alike), registered with
//! the runtime's I/O driver when it is created and deregistered by `close`.
//!
//! `accept()` is a future returning a registered `TcpStream`; it is cancel-safe (a cancelled
//! accept unlinks its waiter and accepts nothing), and several tasks may accept at once.
//! Closing the listener ends the accepts pending on it with `SocketClosed`.

const std = @import("std");
const posix = std.posix;

const context = @import("../context.zig");
const Ready = @import("../io/ready.zig").Ready;
const Registration = @import("../io/Registration.zig");
const Driver = @import("../io/Driver.zig");
const TcpStream = @import("TcpStream.zig");
const errors = @import("errors.zig");
const sys = @import("sys.zig");

const TcpListener = @This();

/// Pending connections the kernel queues before `accept` (mio's and Rust's std's).
pub const backlog: u31 = 128;

registration: Registration,

pub const Accept = Registration.Op(AcceptAttempt);

/// Binds to `address` (port 0: any free port; see `localAddress`) on the runtime of the
/// calling thread (a task, `blockOn` or blocking thread). Panics outside a runtime.
pub fn bind(address: std.net.Address) errors.BindError!TcpListener {
    const driver = context.io() orelse @panic("ampere.net.TcpListener.bind called outside a runtime");
    return bindIn(driver, address);
}

/// `bind` on an explicit I/O driver.
pub fn bindIn(driver: *Driver, address: std.net.Address) errors.BindError!TcpListener {
    const fd = try sys.tcpSocket(address.any.family);
    errdefer sys.close(fd);
    try sys.setReuseAddress(fd);
    try sys.bindListen(fd, &address, backlog);
    return .{ .registration = try Registration.init(driver, fd, Ready.empty) };
}

/// Accepts one connection.
pub fn accept(self: TcpListener) Accept {
    return Accept.init(self.registration, .{ .driver = self.registration.driver });
}

pub fn localAddress(self: TcpListener) errors.SocketError!std.net.Address {
    return sys.address(try self.registration.liveFd(), .local);
}

/// Closes the socket, once: pending accepts end with `SocketClosed` (see TcpStream.close).
pub fn close(self: TcpListener) void {
    self.registration.close();
}

const AcceptAttempt = struct {
    pub const interest = Ready.read_interest;
    pub const Value = TcpStream;
    pub const Error = errors.AcceptError;
    driver: *Driver,

    pub fn run(self: *AcceptAttempt, fd: posix.fd_t) (Error || sys.WouldBlock)!TcpStream {
        const accepted = try sys.accept(fd);
        return TcpStream.fromAccepted(self.driver, accepted);
    }
};
