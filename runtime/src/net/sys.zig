//! The socket system calls of `ampere.net`, non-blocking, with every errno mapped onto a Zig
//! error of `net/errors.zig` (`WouldBlock` for EAGAIN, so that the caller waits for readiness;
//! EINTR is retried). Writes use `MSG_NOSIGNAL`: a write to a connection the peer reset fails
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
        .NETUNREACH, .HOSTUNREACH => error.NetworkUnreachable,
        .ADDRINUSE => error.AddressInUse,
        .ADDRNOTAVAIL => error.AddressNotAvailable,
        .AFNOSUPPORT => error.AddressFamilyNotSupported,
        .ACCES, .PERM => error.PermissionDenied,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => unexpected(err),
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

pub fn accept(fd: posix.fd_t) (errors.AcceptError || WouldBlock)!posix.fd_t {
    var attempt: u32 = 0;
    while (attempt < interrupted_max) : (attempt += 1) {
        const rc = posix.system.accept4(fd, null, null, linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC);
        return switch (posix.errno(rc)) {
            .SUCCESS => @intCast(rc),
            .INTR => continue,
            .AGAIN => error.WouldBlock,
            .CONNABORTED => error.ConnectionAborted,
            .MFILE => error.ProcessFdQuotaExceeded,
            .NFILE => error.SystemFdQuotaExceeded,
            .NOBUFS, .NOMEM => error.SystemResources,
            .PERM => error.PermissionDenied,
            else => |err| unexpected(err),
        };
    }
    return error.WouldBlock; // Interrupted over and over: let the caller wait and retry.
}

pub fn recv(fd: posix.fd_t, buffer: []u8) (errors.ReadError || WouldBlock)!usize {
    var attempt: u32 = 0;
    while (attempt < interrupted_max) : (attempt += 1) {
        const rc = posix.system.recvfrom(fd, buffer.ptr, buffer.len, 0, null, null);
        return switch (posix.errno(rc)) {
            .SUCCESS => @intCast(rc),
            .INTR => continue,
            .AGAIN => error.WouldBlock,
            .CONNRESET => error.ConnectionReset,
            .TIMEDOUT => error.TimedOut,
            .NOTCONN => error.NotConnected,
            .NOBUFS, .NOMEM => error.SystemResources,
            else => |err| unexpected(err),
        };
    }
    return error.WouldBlock;
}

pub fn send(fd: posix.fd_t, bytes: []const u8) (errors.WriteError || WouldBlock)!usize {
    var attempt: u32 = 0;
    while (attempt < interrupted_max) : (attempt += 1) {
        const rc = posix.system.sendto(fd, bytes.ptr, bytes.len, linux.MSG.NOSIGNAL, null, 0);
        return switch (posix.errno(rc)) {
            .SUCCESS => @intCast(rc),
            .INTR => continue,
            .AGAIN => error.WouldBlock,
            .PIPE => error.BrokenPipe,
            .CONNRESET => error.ConnectionReset,
            .TIMEDOUT => error.TimedOut,
            .NOTCONN => error.NotConnected,
            .NOBUFS, .NOMEM => error.SystemResources,
            else => |err| unexpected(err),
        };
    }
    return error.WouldBlock;
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
    const testing = std.testing;
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
