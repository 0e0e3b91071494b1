//! The socket system calls of `ampere.net`, non-blocking, with every errno mapped onto a Zig
//! error of `net/errors.zig` (`WouldBlock` for EAGAIN, so that the caller waits for readiness;
//! EINTR is retried; the network errors of `networkErrno` are named, not `Unexpected`).
//! `accept` retries the errors accept(2) reports for a connection that failed while it was
//! queued (see `acceptRetries`). Writes use `MSG_NOSIGNAL`: a write to a connection the peer reset fails
//! with `BrokenPipe` instead of killing the process with SIGPIPE (Rust's runtime ignores
//! SIGPIPE at start-up for the same reason).

const std = @import("std");
const posix = std.posix;
const linux = std.os.linux;
const errors = @import("errors.zig");
const os = @import("../os.zig");

/// `ampere.net.Address`: std's IP address value type (plain data; the runtime converts it to
/// and from the kernel's `sockaddr` itself, below).
pub const Address = std.Io.net.IpAddress;

pub const WouldBlock = error{WouldBlock};

/// Retries of a system call interrupted by a signal before giving up (bounded loop).
const interrupted_max: u32 = 64;

fn unexpected(err: posix.E) error{Unexpected} {
    return posix.unexpectedErrno(err);
}

/// The errors of an unreachable network or host, or of a broken protocol exchange, which the
/// kernel reports on a socket (after an ICMP message, or in place of an accepted connection);
/// null for any other errno.
pub fn networkErrno(err: posix.E) ?errors.NetworkError {
    return switch (err) {
        .NETUNREACH, .NONET => error.NetworkUnreachable,
        .NETDOWN => error.NetworkDown,
        .HOSTUNREACH, .HOSTDOWN => error.HostUnreachable,
        .PROTO, .NOPROTOOPT, .OPNOTSUPP => error.ProtocolError,
        else => null,
    };
}

/// A TCP socket of `family` (AF.INET or AF.INET6): non-blocking, close-on-exec.
pub fn tcpSocket(family: u32) errors.SocketError!posix.fd_t {
    const rc = posix.system.socket(family, linux.SOCK.STREAM | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, linux.IPPROTO.TCP);
    return switch (posix.errno(rc)) {
        .SUCCESS => @intCast(rc),
        .AFNOSUPPORT => error.AddressFamilyNotSupported,
        .ACCES, .PERM => error.PermissionDenied,
        .MFILE => error.ProcessFdQuotaExceeded,
        .NFILE => error.SystemFdQuotaExceeded,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => |err| unexpected(err),
    };
}

pub fn setReuseAddress(fd: posix.fd_t) errors.SocketError!void {
    return setIntOption(fd, linux.SOL.SOCKET, linux.SO.REUSEADDR, 1);
}

pub fn setNodelay(fd: posix.fd_t, enabled: bool) errors.SocketError!void {
    return setIntOption(fd, linux.IPPROTO.TCP, linux.TCP.NODELAY, @intFromBool(enabled));
}

pub fn nodelay(fd: posix.fd_t) errors.SocketError!bool {
    var value: c_int = 0;
    var len: posix.socklen_t = @sizeOf(c_int);
    const rc = posix.system.getsockopt(fd, linux.IPPROTO.TCP, linux.TCP.NODELAY, std.mem.asBytes(&value), &len);
    return switch (posix.errno(rc)) {
        .SUCCESS => value != 0,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => |err| unexpected(err),
    };
}

fn setIntOption(fd: posix.fd_t, level: i32, name: u32, value: c_int) errors.SocketError!void {
    const rc = posix.system.setsockopt(fd, level, name, std.mem.asBytes(&value), @sizeOf(c_int));
    return switch (posix.errno(rc)) {
        .SUCCESS => {},
        .NOBUFS, .NOMEM => error.SystemResources,
        else => |err| unexpected(err),
    };
}

pub fn bindListen(fd: posix.fd_t, local: *const Address, backlog: u31) errors.BindError!void {
    var storage: SockAddr = undefined;
    const bound = posix.system.bind(fd, &storage.any, storage.set(local));
    switch (posix.errno(bound)) {
        .SUCCESS => {},
        .ADDRINUSE => return error.AddressInUse,
        .ADDRNOTAVAIL => return error.AddressNotAvailable,
        .AFNOSUPPORT => return error.AddressFamilyNotSupported,
        .ACCES, .PERM => return error.PermissionDenied,
        .NOMEM, .NOBUFS => return error.SystemResources,
        else => |err| return unexpected(err),
    }
    const listened = posix.system.listen(fd, backlog);
    switch (posix.errno(listened)) {
        .SUCCESS => {},
        .ADDRINUSE => return error.AddressInUse,
        else => |err| return unexpected(err),
    }
}

pub const ConnectStart = enum { connected, in_progress };

/// Starts a non-blocking connect.
pub fn connect(fd: posix.fd_t, remote: *const Address) errors.ConnectError!ConnectStart {
    var storage: SockAddr = undefined;
    const rc = posix.system.connect(fd, &storage.any, storage.set(remote));
    return switch (posix.errno(rc)) {
        .SUCCESS => .connected,
        .INPROGRESS => .in_progress,
        // Interrupted: the connection attempt goes on asynchronously, as with EINPROGRESS.
        .INTR => .in_progress,
        .AGAIN => error.SystemResources, // No free local port (Linux returns EAGAIN for TCP).
        else => |err| connectErrno(err),
    };
}

fn connectErrno(err: posix.E) errors.ConnectError {
    return switch (err) {
        .CONNREFUSED => error.ConnectionRefused,
        .CONNRESET => error.ConnectionReset,
        .TIMEDOUT => error.TimedOut,
        .ADDRINUSE => error.AddressInUse,
        .ADDRNOTAVAIL => error.AddressNotAvailable,
        .AFNOSUPPORT => error.AddressFamilyNotSupported,
        .ACCES, .PERM => error.PermissionDenied,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => networkErrno(err) orelse unexpected(err),
    };
}

/// The outcome of a connect that reported write readiness (`SO_ERROR`).
pub fn connectResult(fd: posix.fd_t) errors.ConnectError!void {
    var value: c_int = 0;
    var len: posix.socklen_t = @sizeOf(c_int);
    const rc = posix.system.getsockopt(fd, linux.SOL.SOCKET, linux.SO.ERROR, std.mem.asBytes(&value), &len);
    switch (posix.errno(rc)) {
        .SUCCESS => {},
        .NOBUFS, .NOMEM => return error.SystemResources,
        else => |err| return unexpected(err),
    }
    if (value == 0) return;
    return connectErrno(@enumFromInt(value));
}

/// Attempts of one `accept` call: interruptions and the failed connections of `acceptRetries`
/// (each of which consumed a queued connection) are retried up to this bound.
const accept_attempts_max: u32 = 64;

pub fn accept(fd: posix.fd_t) (errors.AcceptError || WouldBlock)!posix.fd_t {
    return acceptWith(acceptOnce, fd);
}

/// One accept4(2): the new descriptor or the errno.
const AcceptAttempt = union(enum) { accepted: posix.fd_t, failed: posix.E };

fn acceptOnce(fd: posix.fd_t) AcceptAttempt {
    const rc = posix.system.accept4(fd, null, null, linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC);
    return switch (posix.errno(rc)) {
        .SUCCESS => .{ .accepted = @intCast(rc) },
        else => |err| .{ .failed = err },
    };
}

/// Whether accept(2) reported a failure of the connection it was about to return rather than
/// of the listener: its man page says to treat these like EAGAIN and retry (Linux passes a new
/// connection's pending network error on, ENETDOWN, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET,
/// EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH), and ECONNABORTED is a connection reset while it was
/// queued.
fn acceptRetries(err: posix.E) bool {
    return err == .CONNABORTED or networkErrno(err) != null;
}

/// `accept` with the system call as a parameter (the tests inject failures).
fn acceptWith(comptime acceptOne: fn (posix.fd_t) AcceptAttempt, fd: posix.fd_t) (errors.AcceptError || WouldBlock)!posix.fd_t {
    var retried: ?posix.E = null;
    var attempt: u32 = 0;
    while (attempt < accept_attempts_max) : (attempt += 1) {
        switch (acceptOne(fd)) {
            .accepted => |accepted| return accepted,
            .failed => |err| switch (err) {
                .INTR => continue,
                else => {
                    if (!acceptRetries(err)) return acceptErrno(err);
                    retried = err;
                },
            },
        }
    }
    // Failed connections kept coming: report the last (the caller may accept again at once).
    // Interrupted over and over: let the caller wait and retry.
    return if (retried) |err| acceptErrno(err) else error.WouldBlock;
}

fn acceptErrno(err: posix.E) (errors.AcceptError || WouldBlock) {
    return switch (err) {
        .AGAIN => error.WouldBlock,
        .CONNABORTED => error.ConnectionAborted,
        .MFILE => error.ProcessFdQuotaExceeded,
        .NFILE => error.SystemFdQuotaExceeded,
        .NOBUFS, .NOMEM => error.SystemResources,
        .PERM => error.PermissionDenied,
        else => networkErrno(err) orelse unexpected(err),
    };
}

pub fn recv(fd: posix.fd_t, buffer: []u8) (errors.ReadError || WouldBlock)!usize {
    var attempt: u32 = 0;
    while (attempt < interrupted_max) : (attempt += 1) {
        const rc = posix.system.recvfrom(fd, buffer.ptr, buffer.len, 0, null, null);
        return switch (posix.errno(rc)) {
            .SUCCESS => @intCast(rc),
            .INTR => continue,
            else => |err| recvErrno(err),
        };
    }
    return error.WouldBlock;
}

fn recvErrno(err: posix.E) (errors.ReadError || WouldBlock) {
    return switch (err) {
        .AGAIN => error.WouldBlock,
        .CONNRESET => error.ConnectionReset,
        .TIMEDOUT => error.TimedOut,
        .NOTCONN => error.NotConnected,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => networkErrno(err) orelse unexpected(err),
    };
}

pub fn send(fd: posix.fd_t, bytes: []const u8) (errors.WriteError || WouldBlock)!usize {
    var attempt: u32 = 0;
    while (attempt < interrupted_max) : (attempt += 1) {
        const rc = posix.system.sendto(fd, bytes.ptr, bytes.len, linux.MSG.NOSIGNAL, null, 0);
        return switch (posix.errno(rc)) {
            .SUCCESS => @intCast(rc),
            .INTR => continue,
            else => |err| sendErrno(err),
        };
    }
    return error.WouldBlock;
}

fn sendErrno(err: posix.E) (errors.WriteError || WouldBlock) {
    return switch (err) {
        .AGAIN => error.WouldBlock,
        .PIPE => error.BrokenPipe,
        .CONNRESET => error.ConnectionReset,
        .TIMEDOUT => error.TimedOut,
        .NOTCONN => error.NotConnected,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => networkErrno(err) orelse unexpected(err),
    };
}

pub const ShutdownHow = enum { read, write, both };

pub fn shutdown(fd: posix.fd_t, how: ShutdownHow) errors.ShutdownError!void {
    const value: i32 = switch (how) {
        .read => linux.SHUT.RD,
        .write => linux.SHUT.WR,
        .both => linux.SHUT.RDWR,
    };
    const rc = posix.system.shutdown(fd, value);
    return switch (posix.errno(rc)) {
        .SUCCESS => {},
        .NOTCONN => error.NotConnected,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => |err| unexpected(err),
    };
}

pub const AddressKind = enum { local, peer };

pub fn address(fd: posix.fd_t, kind: AddressKind) errors.SocketError!Address {
    var storage: posix.sockaddr.storage = undefined;
    var len: posix.socklen_t = @sizeOf(posix.sockaddr.storage);
    const addr: *posix.sockaddr = @ptrCast(&storage);
    const rc = switch (kind) {
        .local => posix.system.getsockname(fd, addr, &len),
        .peer => posix.system.getpeername(fd, addr, &len),
    };
    return switch (posix.errno(rc)) {
        .SUCCESS => SockAddr.get(@ptrCast(&storage)) orelse error.Unexpected,
        .NOTCONN => error.NotConnected,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => |err| unexpected(err),
    };
}

/// Closes a descriptor this module created (EINTR still closes it on Linux).
pub fn close(fd: posix.fd_t) void {
    os.close(fd);
}

/// The address family of `a` (`AF.INET` or `AF.INET6`), for `tcpSocket`.
pub fn addressFamily(a: *const Address) u32 {
    return switch (a.*) {
        .ip4 => linux.AF.INET,
        .ip6 => linux.AF.INET6,
    };
}

/// An IPv4 or IPv6 socket address as the kernel reads and writes it (ports and IPv4 addresses
/// in network byte order; `Address` keeps the port in native order).
const SockAddr = extern union {
    any: posix.sockaddr,
    in: posix.sockaddr.in,
    in6: posix.sockaddr.in6,

    /// Stores `a`; returns the length to pass with it.
    fn set(self: *SockAddr, a: *const Address) posix.socklen_t {
        switch (a.*) {
            .ip4 => |ip4| {
                self.in = .{ .port = std.mem.nativeToBig(u16, ip4.port), .addr = @bitCast(ip4.bytes) };
                return @sizeOf(posix.sockaddr.in);
            },
            .ip6 => |ip6| {
                self.in6 = .{
                    .port = std.mem.nativeToBig(u16, ip6.port),
                    .flowinfo = ip6.flow,
                    .addr = ip6.bytes,
                    .scope_id = ip6.interface.index,
                };
                return @sizeOf(posix.sockaddr.in6);
            },
        }
    }

    /// The address the kernel stored; null for a family other than IPv4/IPv6 (not a TCP socket).
    fn get(self: *const SockAddr) ?Address {
        return switch (self.any.family) {
            linux.AF.INET => .{ .ip4 = .{ .bytes = @bitCast(self.in.addr), .port = std.mem.bigToNative(u16, self.in.port) } },
            linux.AF.INET6 => .{ .ip6 = .{
                .bytes = self.in6.addr,
                .port = std.mem.bigToNative(u16, self.in6.port),
                .flow = self.in6.flowinfo,
                .interface = .{ .index = self.in6.scope_id },
            } },
            else => null,
        };
    }
};

test "SockAddr round-trips IPv4 and IPv6 addresses in network byte order" {
    var storage: SockAddr = undefined;
    const v4: Address = .{ .ip4 = .{ .bytes = .{ 127, 0, 0, 1 }, .port = 0x1234 } };
    try testing.expectEqual(@as(posix.socklen_t, @sizeOf(posix.sockaddr.in)), storage.set(&v4));
    try testing.expectEqual(@as(u16, linux.AF.INET), storage.any.family);
    try testing.expectEqualSlices(u8, &.{ 0x12, 0x34 }, std.mem.asBytes(&storage.in.port));
    try testing.expectEqualSlices(u8, &.{ 127, 0, 0, 1 }, std.mem.asBytes(&storage.in.addr));
    try testing.expect(storage.get().?.eql(&v4));
    const v6: Address = .{ .ip6 = .{ .bytes = .{0} ** 15 ++ .{1}, .port = 443, .interface = .{ .index = 2 } } };
    try testing.expectEqual(@as(posix.socklen_t, @sizeOf(posix.sockaddr.in6)), storage.set(&v6));
    try testing.expectEqual(@as(u16, linux.AF.INET6), storage.any.family);
    try testing.expect(storage.get().?.eql(&v6));
    try testing.expectEqual(@as(u32, 2), storage.get().?.ip6.interface.index);
    storage.any.family = linux.AF.UNIX;
    try testing.expect(storage.get() == null);
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;

test "network errors map to named errors in connect, read and write, never Unexpected" {
    const Case = struct { errno: posix.E, expected: errors.NetworkError };
    const cases = [_]Case{
        .{ .errno = .NETUNREACH, .expected = error.NetworkUnreachable },
        .{ .errno = .NONET, .expected = error.NetworkUnreachable },
        .{ .errno = .NETDOWN, .expected = error.NetworkDown },
        .{ .errno = .HOSTUNREACH, .expected = error.HostUnreachable },
        .{ .errno = .HOSTDOWN, .expected = error.HostUnreachable },
        .{ .errno = .PROTO, .expected = error.ProtocolError },
        .{ .errno = .NOPROTOOPT, .expected = error.ProtocolError },
        .{ .errno = .OPNOTSUPP, .expected = error.ProtocolError },
    };
    for (cases) |case| {
        try testing.expectEqual(@as(?errors.NetworkError, case.expected), networkErrno(case.errno));
        try testing.expectEqual(@as(errors.ConnectError, case.expected), connectErrno(case.errno));
        try testing.expectEqual(@as(errors.ReadError || WouldBlock, case.expected), recvErrno(case.errno));
        try testing.expectEqual(@as(errors.WriteError || WouldBlock, case.expected), sendErrno(case.errno));
        try testing.expectEqual(@as(errors.AcceptError || WouldBlock, case.expected), acceptErrno(case.errno));
    }
    try testing.expectEqual(@as(?errors.NetworkError, null), networkErrno(.CONNRESET));
    try testing.expectEqual(@as(errors.ReadError || WouldBlock, error.ConnectionReset), recvErrno(.CONNRESET));
    try testing.expectEqual(@as(errors.WriteError || WouldBlock, error.BrokenPipe), sendErrno(.PIPE));
}

/// A scripted accept4(2): returns the next result of `script` per call.
const ScriptedAccept = struct {
    threadlocal var script: []const AcceptAttempt = &.{};
    threadlocal var calls: usize = 0;

    fn failure(err: posix.E) AcceptAttempt {
        return .{ .failed = err };
    }

    fn acceptOne(fd: posix.fd_t) AcceptAttempt {
        _ = fd;
        std.debug.assert(calls < script.len);
        defer calls += 1;
        return script[calls];
    }

    fn run(results: []const AcceptAttempt) (errors.AcceptError || WouldBlock)!posix.fd_t {
        script = results;
        calls = 0;
        return acceptWith(acceptOne, -1);
    }
};

test "accept retries the failed connections accept(2) reports, and ECONNABORTED" {
    const f = ScriptedAccept.failure;
    // Every error of the man page's list, an interruption and an aborted connection, then a
    // connection: accepted.
    const retried = [_]AcceptAttempt{
        f(.NETDOWN),   f(.PROTO),      f(.NOPROTOOPT),  f(.HOSTDOWN), f(.NONET), f(.HOSTUNREACH),
        f(.OPNOTSUPP), f(.NETUNREACH), f(.CONNABORTED), f(.INTR),     .{ .accepted = 7 },
    };
    try testing.expectEqual(@as(posix.fd_t, 7), try ScriptedAccept.run(&retried));
    try testing.expectEqual(retried.len, ScriptedAccept.calls);
    // Errors of the listener are not retried.
    try testing.expectError(error.WouldBlock, ScriptedAccept.run(&.{f(.AGAIN)}));
    try testing.expectError(error.ProcessFdQuotaExceeded, ScriptedAccept.run(&.{ f(.MFILE), .{ .accepted = 7 } }));
    try testing.expectEqual(@as(usize, 1), ScriptedAccept.calls);
    // Failed connections that keep coming: the last is reported by name after the bound.
    var endless: [accept_attempts_max]AcceptAttempt = @splat(f(.CONNABORTED));
    endless[endless.len - 1] = f(.HOSTUNREACH);
    try testing.expectError(error.HostUnreachable, ScriptedAccept.run(&endless));
    try testing.expectEqual(@as(usize, accept_attempts_max), ScriptedAccept.calls);
}
