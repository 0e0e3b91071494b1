//! The socket system calls of `ampere.net`, non-blocking, with every errno mapped onto a Zig
//! error of `net/errors.zig` (`WouldBlock` for EAGAIN, so that the caller waits for readiness;
//! EINTR is retried). Writes use `MSG_NOSIGNAL`: a write to a connection the peer reset fails
//! with `BrokenPipe` instead of killing the process with SIGPIPE (Rust's runtime ignores
//! SIGPIPE at start-up for the same reason).

const std = @import("std");
const posix = std.posix;
const linux = std.os.linux;
const errors = @import("errors.zig");

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

pub fn bindListen(fd: posix.fd_t, local: *const std.net.Address, backlog: u31) errors.BindError!void {
    const bound = posix.system.bind(fd, &local.any, local.getOsSockLen());
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
pub fn connect(fd: posix.fd_t, remote: *const std.net.Address) errors.ConnectError!ConnectStart {
    const rc = posix.system.connect(fd, &remote.any, remote.getOsSockLen());
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

pub fn address(fd: posix.fd_t, kind: AddressKind) errors.SocketError!std.net.Address {
    var storage: posix.sockaddr.storage = undefined;
    var len: posix.socklen_t = @sizeOf(posix.sockaddr.storage);
    const addr: *posix.sockaddr = @ptrCast(&storage);
    const rc = switch (kind) {
        .local => posix.system.getsockname(fd, addr, &len),
        .peer => posix.system.getpeername(fd, addr, &len),
    };
    return switch (posix.errno(rc)) {
        .SUCCESS => std.net.Address.initPosix(@alignCast(addr)),
        .NOTCONN => error.NotConnected,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => |err| unexpected(err),
    };
}

/// Closes a descriptor this module created (EINTR still closes it on Linux).
pub fn close(fd: posix.fd_t) void {
    posix.close(fd);
}
