//! A listening TCP socket (Tokio's `net::TcpListener`): bound with `SO_REUSEADDR` (a server can
//! restart while old connections linger in TIME_WAIT), registered with the runtime's I/O
//! driver when it is created and deregistered by `close`.
//!
//! Backlog: `default_backlog` = 1,024 pending connections, mio's `listen(1024)` and therefore
//! Tokio's `TcpListener::bind` (Rust's std listens with 128); `bindWithOptions` chooses another
//! (the kernel caps it at `net.core.somaxconn`, 4,096 on current kernels). When the queue is
//! full the kernel drops new SYNs (`ListenOverflows` in /proc/net/netstat) and each such client
//! waits for its SYN retry, 1 s at first: with 128, 200 concurrent connects overflowed the queue
//! in 7 of 14 runs before their server accepted them (issue 20).
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

/// Connections the kernel queues before `accept` by default (mio's, so Tokio's).
pub const default_backlog: u31 = 1024;

pub const BindOptions = struct {
    /// Connections the kernel queues before `accept` (`listen`'s backlog; the kernel caps it
    /// at `net.core.somaxconn`). At least 1.
    backlog: u31 = default_backlog,
};

registration: Registration,

pub const Accept = Registration.Op(AcceptAttempt);

/// Binds to `address` (port 0: any free port; see `localAddress`) on the runtime of the
/// calling thread (a task, `blockOn` or blocking thread), with the default options.
/// `error.NoRuntime` on any other thread.
pub fn bind(address: sys.Address) errors.BindError!TcpListener {
    return bindWithOptions(address, .{});
}

/// `bind` with `options` (the backlog).
pub fn bindWithOptions(address: sys.Address, options: BindOptions) errors.BindError!TcpListener {
    const driver = context.io() orelse return error.NoRuntime;
    return bindIn(driver, address, options);
}

/// `bindWithOptions` on an explicit I/O driver.
pub fn bindIn(driver: *Driver, address: sys.Address, options: BindOptions) errors.BindError!TcpListener {
    std.debug.assert(options.backlog > 0);
    const fd = try sys.tcpSocket(sys.addressFamily(&address));
    errdefer sys.close(fd);
    try sys.setReuseAddress(fd);
    try sys.bindListen(fd, &address, options.backlog);
    return .{ .registration = try Registration.init(driver, fd, Ready.empty) };
}

/// Accepts one connection.
pub fn accept(self: TcpListener) Accept {
    return Accept.init(self.registration, .{ .driver = self.registration.driver });
}

pub fn localAddress(self: TcpListener) errors.SocketError!sys.Address {
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
