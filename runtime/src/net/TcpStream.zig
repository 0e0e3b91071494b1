//! A TCP connection (Tokio's `net::TcpStream`): a non-blocking socket registered with the I/O
//! driver of the runtime it was created on, at creation — by `connect` or by
//! `TcpListener.accept` — and deregistered by `close`.
//!
//! The operations are futures (`read`, `write`, `readExact`, `writeAll`; `connect` creates the
//! stream). They are cancel-safe: cancelling one unlinks its waiter and loses no readiness.
//! What a cancelled `read` or `write` did not report did not happen; a cancelled `readExact` or
//! `writeAll` may have transferred a prefix (as in Tokio). One read and one write may run at
//! the same time (say a reader task and a writer task), and so may several of each, though
//! their bytes then interleave in no particular order.
//!
//! `TcpStream` is a handle (`Registration`: two pointers and the driver's key): copies refer
//! to the same socket. `close` it once. Operations pending on it in other tasks when it is
//! closed end with `SocketClosed`, and cancelling them afterwards (an aborted task) is safe; an
//! operation must not be started on a closed stream (see io/Registration.zig). A stream held
//! across the runtime's `deinit` was closed by it: operations fail with `RuntimeShutdown`,
//! `close` does nothing. End of stream is a read of 0 bytes.

const std = @import("std");
const assert = std.debug.assert;
const posix = std.posix;

const future = @import("../future.zig");
const context = @import("../context.zig");
const Ready = @import("../io/ready.zig").Ready;
const Registration = @import("../io/Registration.zig");
const Driver = @import("../io/Driver.zig");
const errors = @import("errors.zig");
const sys = @import("sys.zig");

const TcpStream = @This();

registration: Registration,

pub const Read = Registration.Op(ReadAttempt);
pub const Write = Registration.Op(WriteAttempt);

/// Connects to `address` (IPv4 or IPv6) on the runtime of the thread that polls the future
/// (`error.NoRuntime` when that thread belongs to none).
pub fn connect(address: sys.Address) Connect {
    return .{ .address = address };
}

/// Reads at most `buffer.len` bytes; 0 means end of stream (for a non-empty buffer).
pub fn read(self: TcpStream, buffer: []u8) Read {
    return Read.init(self.registration, .{ .buffer = buffer });
}

/// Writes at most `bytes.len` bytes (at least one unless `bytes` is empty); returns how many.
pub fn write(self: TcpStream, bytes: []const u8) Write {
    return Write.init(self.registration, .{ .bytes = bytes });
}

/// Reads until `buffer` is full; `EndOfStream` if the peer closes before.
pub fn readExact(self: TcpStream, buffer: []u8) ReadExact {
    return .{ .registration = self.registration, .buffer = buffer };
}

/// Writes all of `bytes` (as many writes as the socket buffer needs).
pub fn writeAll(self: TcpStream, bytes: []const u8) WriteAll {
    return .{ .registration = self.registration, .bytes = bytes };
}

/// Shuts down reading, writing or both. After `.write` the peer reads end of stream, and this
/// side can still read what the peer sends.
pub fn shutdown(self: TcpStream, how: sys.ShutdownHow) errors.ShutdownError!void {
    return sys.shutdown(try self.registration.liveFd(), how);
}

/// Disables (true) or enables Nagle's algorithm (`TCP_NODELAY`).
pub fn setNodelay(self: TcpStream, enabled: bool) errors.SocketError!void {
    return sys.setNodelay(try self.registration.liveFd(), enabled);
}

pub fn nodelay(self: TcpStream) errors.SocketError!bool {
    return sys.nodelay(try self.registration.liveFd());
}

pub fn localAddress(self: TcpStream) errors.SocketError!sys.Address {
    return sys.address(try self.registration.liveFd(), .local);
}

pub fn peerAddress(self: TcpStream) errors.SocketError!sys.Address {
    return sys.address(try self.registration.liveFd(), .peer);
}

/// Closes the socket, once: pending operations end with `SocketClosed`; the descriptor is
/// closed when the last of them lets go (at once when none is pending). After the runtime's
/// `deinit` it does nothing (`deinit` closed it).
pub fn close(self: TcpStream) void {
    self.registration.close();
}

/// A stream for a socket `accept` returned: registered at once, assumed readable and writable
/// (its first read usually finds the peer's first bytes; Tokio's `new_accepted`). Closes `fd`
/// if registration fails.
pub fn fromAccepted(driver: *Driver, fd: posix.fd_t) errors.RegisterError!TcpStream {
    const registration = Registration.init(driver, fd, .{ .readable = true, .writable = true }) catch |err| {
        sys.close(fd);
        return err;
    };
    return .{ .registration = registration };
}

const ReadAttempt = struct {
    pub const interest = Ready.read_interest;
    pub const Value = usize;
    pub const Error = errors.ReadError;
    buffer: []u8,

    pub fn run(self: *ReadAttempt, fd: posix.fd_t) (Error || sys.WouldBlock)!usize {
        return sys.recv(fd, self.buffer);
    }

    /// A short read drained the socket buffer.
    pub fn drained(self: *const ReadAttempt, count: usize) bool {
        return count > 0 and count < self.buffer.len;
    }
};

const WriteAttempt = struct {
    pub const interest = Ready.write_interest;
    pub const Value = usize;
    pub const Error = errors.WriteError;
    bytes: []const u8,

    pub fn run(self: *WriteAttempt, fd: posix.fd_t) (Error || sys.WouldBlock)!usize {
        return sys.send(fd, self.bytes);
    }

    /// A short write filled the socket buffer.
    pub fn drained(self: *const WriteAttempt, count: usize) bool {
        return count > 0 and count < self.bytes.len;
    }
};

const ConnectAttempt = struct {
    pub const interest = Ready.write_interest;
    pub const Value = void;
    pub const Error = errors.ConnectError;

    /// Runs once the socket reports write readiness: the connect finished, and `SO_ERROR`
    /// says how.
    pub fn run(self: *ConnectAttempt, fd: posix.fd_t) (Error || sys.WouldBlock)!void {
        _ = self;
        return sys.connectResult(fd);
    }
};

/// `connect`: creates the socket on first poll, registers it, starts the connect and waits
/// for write readiness. Cancelled while connecting, it closes the socket.
pub const Connect = struct {
    pub const Output = errors.ConnectError!TcpStream;

    address: sys.Address,
    registration: ?Registration = null,
    op: Registration.Op(ConnectAttempt) = undefined,
    finished: bool = false,

    pub fn poll(self: *Connect, cx: *future.Context) future.Poll(Output) {
        assert(!self.finished);
        if (self.registration == null) {
            const driver = context.io() orelse return self.finish(error.NoRuntime);
            switch (self.start(driver)) {
                .done => |result| return self.finish(result),
                .in_progress => {},
            }
        }
        switch (self.op.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                const registration = self.registration.?;
                self.registration = null;
                result catch |err| {
                    registration.close();
                    return self.finish(switch (err) {
                        // Nobody else has the registration to close it.
                        error.SocketClosed => unreachable,
                        else => |e| e,
                    });
                };
                return self.finish(.{ .registration = registration });
            },
        }
    }

    const Start = union(enum) { done: Output, in_progress };

    /// Registers the socket only *after* `connect` started it: epoll reports the state at
    /// registration, and an unconnected TCP socket polls as hung up (EPOLLHUP), which would
    /// mark both directions closed for good (mio registers after connect too).
    fn start(self: *Connect, driver: *Driver) Start {
        const fd = sys.tcpSocket(sys.addressFamily(&self.address)) catch |err| return .{ .done = err };
        const started = sys.connect(fd, &self.address) catch |err| {
            sys.close(fd);
            return .{ .done = err };
        };
        const registration = Registration.init(driver, fd, Ready.empty) catch |err| {
            sys.close(fd);
            return .{ .done = err };
        };
        switch (started) {
            .connected => return .{ .done = TcpStream{ .registration = registration } },
            .in_progress => {
                self.registration = registration;
                self.op = Registration.Op(ConnectAttempt).init(registration, .{});
                return .in_progress;
            },
        }
    }

    fn finish(self: *Connect, output: Output) future.Poll(Output) {
        self.finished = true;
        return .{ .ready = output };
    }

    pub fn cancel(self: *Connect) void {
        const registration = self.registration orelse return;
        self.op.cancel();
        registration.close();
        self.registration = null;
        self.finished = true;
    }
};

/// `readExact`: reads until the buffer is full.
pub const ReadExact = struct {
    pub const Output = errors.ReadExactError!void;

    registration: Registration,
    buffer: []u8,
    filled: usize = 0,
    op: ?Read = null,

    pub fn poll(self: *ReadExact, cx: *future.Context) future.Poll(Output) {
        // Bounded: every pass fills at least one byte or returns.
        while (self.filled < self.buffer.len) {
            if (future.isNull(&self.op)) self.op = Read.init(self.registration, .{ .buffer = self.buffer[self.filled..] });
            switch (self.op.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.op = null;
                    const count = result catch |err| return .{ .ready = err };
                    if (count == 0) return .{ .ready = error.EndOfStream };
                    self.filled += count;
                    assert(self.filled <= self.buffer.len);
                },
            }
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *ReadExact) void {
        if (self.op) |*op| op.cancel();
        self.op = null;
    }
};

/// `writeAll`: writes until every byte is out.
pub const WriteAll = struct {
    pub const Output = errors.WriteError!void;

    registration: Registration,
    bytes: []const u8,
    written: usize = 0,
    op: ?Write = null,

    pub fn poll(self: *WriteAll, cx: *future.Context) future.Poll(Output) {
        // Bounded: every pass writes at least one byte or returns.
        while (self.written < self.bytes.len) {
            if (future.isNull(&self.op)) self.op = Write.init(self.registration, .{ .bytes = self.bytes[self.written..] });
            switch (self.op.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.op = null;
                    const count = result catch |err| return .{ .ready = err };
                    assert(count > 0);
                    self.written += count;
                    assert(self.written <= self.bytes.len);
                },
            }
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *WriteAll) void {
        if (self.op) |*op| op.cancel();
        self.op = null;
    }
};
