//! std.Io networking for `ampere.Io`, on the runtime's epoll driver (runtime/docs/io.md).
//!
//! Every socket this Io creates — `listen`, `accept`, `connect`, `bind` (UDP), Unix sockets,
//! socket pairs — is non-blocking and registered with the I/O driver when it is created, like
//! `ampere.net`'s; `netClose` deregisters and closes it. std.Io names sockets by descriptor,
//! so `Sockets` maps a descriptor to its registration (a two-level table: lock-free lookup, no
//! allocation per socket beyond the driver's). A descriptor this Io did not create (say, one
//! inherited from the parent process) is registered the first time an operation needs it, and
//! switched to non-blocking mode then.
//!
//! An operation is `io/Registration.Op(A)` — wait for readiness in `A.interest`, try the
//! system call, on `WouldBlock` clear exactly that readiness and wait again — awaited by the
//! calling fiber as a cancellation point (a canceled fiber's wait is unlinked and the call
//! returns `error.Canceled`; nothing was transferred). On a thread outside the workers the
//! thread blocks instead. Errno values map to std.Io's error sets as `std.Io.Threaded` maps
//! them; errno values only a bug can cause are `error.Unexpected`. A runtime that shut down
//! makes waiting operations fail with `error.NetworkDown`.
//!
//! `connect` honours `ConnectOptions.timeout` (a `time.Sleep` raced against the connect;
//! `error.Timeout`). Std.Io.Threaded 0.16 panics on it.

const std = @import("std");
const assert = std.debug.assert;
const posix = std.posix;
const linux = std.os.linux;
const net = std.Io.net;
const Threaded = std.Io.Threaded;

const Lock = @import("../Lock.zig");
const os = @import("../os.zig");
const time = @import("../time.zig");
const sleep_future = @import("../time/sleep.zig");
const Ready = @import("../io/ready.zig").Ready;
const Registration = @import("../io/Registration.zig");
const ScheduledIo = @import("../io/ScheduledIo.zig");
const IoDriver = @import("../io/Driver.zig");
const AmpereIo = @import("State.zig");
const clock = @import("clock.zig");

// -- the descriptor table -------------------------------------------------------------------

/// Descriptor -> registration, for the sockets of one `ampere.Io`.
pub const Sockets = @import("Sockets.zig");

fn driverOf(self: *AmpereIo) *IoDriver {
    return &self.shared.io;
}

/// Registers a descriptor this Io just created. On failure nothing is registered and `fd` is
/// left open (its creator closes it).
fn adopt(self: *AmpereIo, fd: posix.fd_t, assumed: Ready) error{ SystemResources, NetworkDown }!void {
    const entry = try self.sockets.reserve(fd);
    const io = driverOf(self).register(fd, assumed) catch |err| return switch (err) {
        error.RuntimeShutdown => error.NetworkDown,
        error.OutOfMemory, error.SystemResources, error.Unexpected => error.SystemResources,
    };
    // Release: a lookup (acquire) sees the initialised ScheduledIo.
    entry.store(io, .release);
}

fn registration(self: *AmpereIo, io: *ScheduledIo) Registration {
    const driver = driverOf(self);
    return .{ .driver = driver, .io = io, .key = driver.key };
}

/// The registration of `fd`, registering a descriptor this Io did not create.
fn registrationOf(self: *AmpereIo, fd: posix.fd_t) error{ SystemResources, NetworkDown }!Registration {
    if (self.sockets.lookup(fd)) |io| return registration(self, io);
    self.sockets.foreign_lock.lock();
    defer self.sockets.foreign_lock.unlock();
    if (self.sockets.lookup(fd)) |io| return registration(self, io);
    setNonblocking(fd) catch return error.SystemResources;
    // Assumed ready: the first attempt tries the system call (a wrong guess costs one
    // WouldBlock).
    try adopt(self, fd, Ready.all);
    return registration(self, self.sockets.lookup(fd).?);
}

fn setNonblocking(fd: posix.fd_t) error{Unexpected}!void {
    const flags = linux.fcntl(fd, linux.F.GETFL, 0);
    if (linux.errno(flags) != .SUCCESS) return error.Unexpected;
    const nonblock: usize = @as(u32, @bitCast(linux.O{ .NONBLOCK = true }));
    if (linux.errno(linux.fcntl(fd, linux.F.SETFL, flags | nonblock)) != .SUCCESS) return error.Unexpected;
}

/// Runs `Registration.Op(A)` on `fd` as a cancellation point.
fn run(self: *AmpereIo, fd: posix.fd_t, attempt: anytype) (@TypeOf(attempt).Error || error{ NetworkDown, Canceled })!@TypeOf(attempt).Value {
    const A = @TypeOf(attempt);
    const reg = try registrationOf(self, fd);
    const result = try self.waitCancelable(Registration.Op(A).init(reg, attempt));
    return result catch |err| switch (err) {
        error.RuntimeShutdown => error.NetworkDown,
        // Another task closed the socket while this operation waited.
        error.SocketClosed => A.closed_error,
        else => |e| e,
    };
}

// -- creating sockets -----------------------------------------------------------------------

const OpenError = error{
    AddressFamilyUnsupported,
    ProtocolUnsupportedBySystem,
    ProcessFdQuotaExceeded,
    SystemFdQuotaExceeded,
    SystemResources,
    ProtocolUnsupportedByAddressFamily,
    SocketModeUnsupported,
    Unexpected,
};

/// A non-blocking, close-on-exec socket.
fn openSocket(address_family: u32, mode: net.Socket.Mode, protocol: ?net.Protocol) OpenError!posix.fd_t {
    const kind, const proto = Threaded.posixSocketModeProtocol(@intCast(address_family), mode, protocol) catch |err| switch (err) {
        error.ProtocolUnsupportedByAddressFamily => return error.ProtocolUnsupportedByAddressFamily,
    };
    const rc = linux.socket(address_family, kind | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, proto);
    return switch (linux.errno(rc)) {
        .SUCCESS => @intCast(rc),
        .AFNOSUPPORT => error.AddressFamilyUnsupported,
        .INVAL => error.ProtocolUnsupportedBySystem,
        .MFILE => error.ProcessFdQuotaExceeded,
        .NFILE => error.SystemFdQuotaExceeded,
        .NOBUFS, .NOMEM => error.SystemResources,
        .PROTONOSUPPORT => error.ProtocolUnsupportedByAddressFamily,
        .PROTOTYPE => error.SocketModeUnsupported,
        else => |err| posix.unexpectedErrno(err),
    };
}

fn setOption(fd: posix.fd_t, level: i32, name: u32, value: u32) error{Unexpected}!void {
    const bytes = std.mem.asBytes(&value);
    return switch (linux.errno(linux.setsockopt(fd, level, name, bytes.ptr, bytes.len))) {
        .SUCCESS => {},
        else => |err| posix.unexpectedErrno(err),
    };
}

fn bindIp(fd: posix.fd_t, address: *const net.IpAddress) error{ AddressInUse, AddressFamilyUnsupported, AddressUnavailable, SystemResources, Unexpected }!void {
    var storage: Threaded.PosixAddress = undefined;
    const len = Threaded.addressToPosix(address, &storage);
    return switch (linux.errno(linux.bind(fd, &storage.any, len))) {
        .SUCCESS => {},
        .ADDRINUSE => error.AddressInUse,
        .AFNOSUPPORT => error.AddressFamilyUnsupported,
        .ADDRNOTAVAIL => error.AddressUnavailable,
        .NOMEM => error.SystemResources,
        else => |err| posix.unexpectedErrno(err),
    };
}

fn listenOn(fd: posix.fd_t, backlog: u31) error{ AddressInUse, Unexpected }!void {
    return switch (linux.errno(linux.listen(fd, backlog))) {
        .SUCCESS => {},
        .ADDRINUSE => error.AddressInUse,
        else => |err| posix.unexpectedErrno(err),
    };
}

fn localAddress(fd: posix.fd_t) error{ SystemResources, Unexpected }!net.IpAddress {
    var storage: Threaded.PosixAddress = undefined;
    var len: posix.socklen_t = @sizeOf(Threaded.PosixAddress);
    return switch (linux.errno(linux.getsockname(fd, &storage.any, &len))) {
        .SUCCESS => Threaded.addressFromPosix(&storage),
        .NOBUFS => error.SystemResources,
        else => |err| posix.unexpectedErrno(err),
    };
}

fn familyOf(address: *const net.IpAddress) u32 {
    return Threaded.posixAddressFamily(address);
}

pub fn netListenIp(userdata: ?*anyopaque, address: *const net.IpAddress, options: net.IpAddress.ListenOptions) net.IpAddress.ListenError!net.Socket {
    const self = AmpereIo.fromUserdata(userdata);
    try checkCancel();
    const fd = try openSocket(familyOf(address), options.mode, options.protocol);
    errdefer os.close(fd);
    if (options.reuse_address) {
        try setOption(fd, linux.SOL.SOCKET, linux.SO.REUSEADDR, 1);
        try setOption(fd, linux.SOL.SOCKET, linux.SO.REUSEPORT, 1);
    }
    try bindIp(fd, address);
    try listenOn(fd, options.kernel_backlog);
    const bound = try localAddress(fd);
    try adopt(self, fd, Ready.empty);
    return .{ .handle = fd, .address = bound };
}

pub fn netBindIp(userdata: ?*anyopaque, address: *const net.IpAddress, options: net.IpAddress.BindOptions) net.IpAddress.BindError!net.Socket {
    const self = AmpereIo.fromUserdata(userdata);
    try checkCancel();
    const fd = try openSocket(familyOf(address), options.mode, options.protocol);
    errdefer os.close(fd);
    if (options.ip6_only) try setOption(fd, linux.IPPROTO.IPV6, linux.IPV6.V6ONLY, 1);
    try bindIp(fd, address);
    if (options.allow_broadcast) try setOption(fd, linux.SOL.SOCKET, linux.SO.BROADCAST, 1);
    const bound = try localAddress(fd);
    // A datagram socket can be written at once.
    try adopt(self, fd, .{ .writable = true });
    return .{ .handle = fd, .address = bound };
}

pub fn netSocketCreatePair(userdata: ?*anyopaque, options: net.Socket.CreatePairOptions) net.Socket.CreatePairError![2]net.Socket {
    const self = AmpereIo.fromUserdata(userdata);
    try checkCancel();
    const fam: u32 = switch (options.family) {
        .ip4 => linux.AF.INET,
        .ip6 => linux.AF.INET6,
    };
    const kind, const proto = Threaded.posixSocketModeProtocol(@intCast(fam), options.mode, options.protocol) catch
        return error.ProtocolUnsupportedByAddressFamily;
    var fds: [2]i32 = undefined;
    switch (linux.errno(linux.socketpair(fam, kind | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, proto, &fds))) {
        .SUCCESS => {},
        .ACCES => return error.AccessDenied,
        .AFNOSUPPORT => return error.AddressFamilyUnsupported,
        .INVAL => return error.ProtocolUnsupportedBySystem,
        .MFILE => return error.ProcessFdQuotaExceeded,
        .NFILE => return error.SystemFdQuotaExceeded,
        .NOBUFS, .NOMEM => return error.SystemResources,
        .OPNOTSUPP => return error.OperationUnsupported,
        .PROTONOSUPPORT => return error.ProtocolUnsupportedByAddressFamily,
        else => |err| return posix.unexpectedErrno(err),
    }
    const addresses = [2]net.IpAddress{
        localAddress(fds[0]) catch |err| return closeBoth(fds, err),
        localAddress(fds[1]) catch |err| return closeBoth(fds, err),
    };
    adopt(self, fds[0], .{ .writable = true }) catch return closeBoth(fds, error.SystemResources);
    adopt(self, fds[1], .{ .writable = true }) catch {
        closeRegistered(self, fds[0]);
        os.close(fds[1]);
        return error.SystemResources;
    };
    return .{ .{ .handle = fds[0], .address = addresses[0] }, .{ .handle = fds[1], .address = addresses[1] } };
}

fn closeBoth(fds: [2]i32, err: anytype) @TypeOf(err) {
    for (fds) |fd| os.close(fd);
    return err;
}

// -- connect ---------------------------------------------------------------------------------

const ConnectAttempt = struct {
    pub const interest = Ready.write_interest;
    pub const Value = void;
    pub const closed_error = error.ConnectionResetByPeer;
    pub const Error = error{
        ConnectionRefused,
        ConnectionResetByPeer,
        HostUnreachable,
        NetworkUnreachable,
        Timeout,
        AccessDenied,
        AddressUnavailable,
        SystemResources,
        Unexpected,
    };

    /// Runs once the socket reports write readiness: the connect finished; SO_ERROR says how.
    pub fn run(self: *ConnectAttempt, fd: posix.fd_t) (Error || error{WouldBlock})!void {
        _ = self;
        var value: c_int = 0;
        var len: posix.socklen_t = @sizeOf(c_int);
        switch (linux.errno(linux.getsockopt(fd, linux.SOL.SOCKET, linux.SO.ERROR, std.mem.asBytes(&value), &len))) {
            .SUCCESS => {},
            .NOBUFS, .NOMEM => return error.SystemResources,
            else => |err| return posix.unexpectedErrno(err),
        }
        if (value == 0) return;
        return connectErrno(@enumFromInt(value));
    }
};

fn connectErrno(err: linux.E) ConnectAttempt.Error {
    return switch (err) {
        .CONNREFUSED => error.ConnectionRefused,
        .CONNRESET => error.ConnectionResetByPeer,
        .HOSTUNREACH => error.HostUnreachable,
        .NETUNREACH => error.NetworkUnreachable,
        .TIMEDOUT => error.Timeout,
        .ACCES, .PERM => error.AccessDenied,
        .ADDRNOTAVAIL => error.AddressUnavailable,
        .NOBUFS, .NOMEM => error.SystemResources,
        else => posix.unexpectedErrno(err),
    };
}

/// Connects the non-blocking socket `fd` and waits for it (with `timeout`). The socket is
/// registered only *after* `connect` started: epoll reports the state at registration, and an
/// unconnected TCP socket polls as hung up, which would mark both directions closed for good
/// (TcpStream.Connect does the same). Owns `fd`: on failure it is closed.
fn connectAndWait(self: *AmpereIo, fd: posix.fd_t, address: *const posix.sockaddr, len: posix.socklen_t, timeout: std.Io.Timeout) (ConnectAttempt.Error || error{ NetworkDown, Canceled, WouldBlock })!void {
    switch (linux.errno(linux.connect(fd, address, len))) {
        .SUCCESS => return adopt(self, fd, .{ .writable = true }) catch |err| {
            os.close(fd);
            return err;
        },
        .INPROGRESS, .INTR => {},
        .AGAIN => {
            os.close(fd);
            return error.WouldBlock; // A Unix socket whose listener's backlog is full.
        },
        else => |err| {
            os.close(fd);
            return connectErrno(err);
        },
    }
    adopt(self, fd, Ready.empty) catch |err| {
        os.close(fd);
        return err;
    };
    errdefer closeRegistered(self, fd);
    const op = Registration.Op(ConnectAttempt).init(registration(self, self.sockets.lookup(fd).?), .{});
    const deadline_ns = clock.monotonicDeadlineNs(timeout) orelse {
        const result = try self.waitCancelable(op);
        return result catch |err| switch (err) {
            error.RuntimeShutdown => error.NetworkDown,
            error.SocketClosed => ConnectAttempt.closed_error,
            else => |e| e,
        };
    };
    const timed = time.Timeout(@TypeOf(op)){ .inner = op, .timer = sleep_future.sleepUntil(deadline_ns) };
    const result = try self.waitCancelable(timed);
    return result catch |err| switch (err) {
        error.RuntimeShutdown => error.NetworkDown,
        error.SocketClosed => ConnectAttempt.closed_error,
        else => |e| e,
    };
}

pub fn netConnectIp(userdata: ?*anyopaque, address: *const net.IpAddress, options: net.IpAddress.ConnectOptions) net.IpAddress.ConnectError!net.Socket {
    const self = AmpereIo.fromUserdata(userdata);
    try checkCancel();
    const fd = try openSocket(familyOf(address), options.mode, options.protocol);
    var storage: Threaded.PosixAddress = undefined;
    const len = Threaded.addressToPosix(address, &storage);
    try connectAndWait(self, fd, &storage.any, len, options.timeout);
    errdefer closeRegistered(self, fd);
    return .{ .handle = fd, .address = try localAddress(fd) };
}

const UnixStorage = extern union {
    any: posix.sockaddr,
    un: posix.sockaddr.un,
};

fn unixToPosix(address: *const net.UnixAddress, storage: *UnixStorage) posix.socklen_t {
    storage.un.family = linux.AF.UNIX;
    assert(address.path.len <= storage.un.path.len);
    @memcpy(storage.un.path[0..address.path.len], address.path);
    var len = address.path.len;
    if (len < storage.un.path.len) {
        storage.un.path[len] = 0;
        len += 1;
    }
    return @intCast(@offsetOf(posix.sockaddr.un, "path") + len);
}

fn unixPathErrno(err: linux.E) error{ AccessDenied, PermissionDenied, SymLinkLoop, FileNotFound, NotDir, ReadOnlyFileSystem, AddressInUse, AddressFamilyUnsupported, AddressUnavailable, SystemResources, Unexpected } {
    return switch (err) {
        .ACCES => error.AccessDenied,
        .PERM => error.PermissionDenied,
        .LOOP => error.SymLinkLoop,
        .NOENT => error.FileNotFound,
        .NOTDIR => error.NotDir,
        .ROFS => error.ReadOnlyFileSystem,
        .ADDRINUSE => error.AddressInUse,
        .AFNOSUPPORT => error.AddressFamilyUnsupported,
        .ADDRNOTAVAIL => error.AddressUnavailable,
        .NOMEM, .NOBUFS => error.SystemResources,
        else => posix.unexpectedErrno(err),
    };
}

pub fn netListenUnix(userdata: ?*anyopaque, address: *const net.UnixAddress, options: net.UnixAddress.ListenOptions) net.UnixAddress.ListenError!net.Socket.Handle {
    const self = AmpereIo.fromUserdata(userdata);
    try checkCancel();
    const fd = openSocket(linux.AF.UNIX, .stream, null) catch |err| return switch (err) {
        error.ProtocolUnsupportedBySystem, error.ProtocolUnsupportedByAddressFamily, error.SocketModeUnsupported => error.AddressFamilyUnsupported,
        else => |e| e,
    };
    errdefer os.close(fd);
    var storage: UnixStorage = undefined;
    const len = unixToPosix(address, &storage);
    switch (linux.errno(linux.bind(fd, &storage.any, len))) {
        .SUCCESS => {},
        else => |err| return unixPathErrno(err),
    }
    try listenOn(fd, options.kernel_backlog);
    try adopt(self, fd, Ready.empty);
    return fd;
}

pub fn netConnectUnix(userdata: ?*anyopaque, address: *const net.UnixAddress) net.UnixAddress.ConnectError!net.Socket.Handle {
    const self = AmpereIo.fromUserdata(userdata);
    try checkCancel();
    const fd = openSocket(linux.AF.UNIX, .stream, null) catch |err| return switch (err) {
        error.ProtocolUnsupportedByAddressFamily => error.AddressFamilyUnsupported,
        else => |e| e,
    };
    {
        errdefer os.close(fd);
        var storage: UnixStorage = undefined;
        const len = unixToPosix(address, &storage);
        switch (linux.errno(linux.connect(fd, &storage.any, len))) {
            .SUCCESS => {},
            .AGAIN, .INPROGRESS => return error.WouldBlock,
            else => |err| return switch (unixPathErrno(err)) {
                error.AddressInUse, error.AddressUnavailable => error.Unexpected,
                else => |e| e,
            },
        }
        try adopt(self, fd, .{ .writable = true });
    }
    return fd;
}

// -- accept ----------------------------------------------------------------------------------

const AcceptAttempt = struct {
    pub const interest = Ready.read_interest;
    pub const Value = net.Socket;
    pub const closed_error = error.SocketNotListening;
    pub const Error = error{
        ProcessFdQuotaExceeded,
        SystemFdQuotaExceeded,
        SystemResources,
        SocketNotListening,
        ConnectionAborted,
        BlockedByFirewall,
        ProtocolFailure,
        NetworkDown,
        Unexpected,
    };
    self: *AmpereIo,

    pub fn run(attempt: *AcceptAttempt, fd: posix.fd_t) (Error || error{WouldBlock})!net.Socket {
        var storage: Threaded.PosixAddress = undefined;
        var len: posix.socklen_t = @sizeOf(Threaded.PosixAddress);
        const rc = linux.accept4(fd, &storage.any, &len, linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC);
        const accepted: posix.fd_t = switch (linux.errno(rc)) {
            .SUCCESS => @intCast(rc),
            .AGAIN, .INTR => return error.WouldBlock,
            .CONNABORTED => return error.ConnectionAborted,
            .INVAL => return error.SocketNotListening,
            .MFILE => return error.ProcessFdQuotaExceeded,
            .NFILE => return error.SystemFdQuotaExceeded,
            .NOBUFS, .NOMEM => return error.SystemResources,
            .PROTO => return error.ProtocolFailure,
            .PERM => return error.BlockedByFirewall,
            else => |err| return posix.unexpectedErrno(err),
        };
        // Assumed readable and writable (Tokio's `assume_ready`; `TcpStream.fromAccepted`).
        adopt(attempt.self, accepted, .{ .readable = true, .writable = true }) catch |err| {
            os.close(accepted);
            return err;
        };
        return .{ .handle = accepted, .address = Threaded.addressFromPosix(&storage) };
    }
};

pub fn netAccept(userdata: ?*anyopaque, server: net.Socket.Handle, options: net.Server.AcceptOptions) net.Server.AcceptError!net.Socket {
    _ = options;
    const self = AmpereIo.fromUserdata(userdata);
    return run(self, server, AcceptAttempt{ .self = self });
}

// -- read and write --------------------------------------------------------------------------

const max_iovecs = 8;

const ReadAttempt = struct {
    pub const interest = Ready.read_interest;
    pub const Value = usize;
    pub const closed_error = error.SocketUnconnected;
    pub const Error = error{ SystemResources, ConnectionResetByPeer, Timeout, SocketUnconnected, AccessDenied, NetworkDown, Unexpected };
    iovecs: [max_iovecs]posix.iovec,
    count: usize,
    total: usize,

    pub fn run(self: *ReadAttempt, fd: posix.fd_t) (Error || error{WouldBlock})!usize {
        const rc = linux.readv(fd, &self.iovecs, self.count);
        return switch (linux.errno(rc)) {
            .SUCCESS => rc,
            .AGAIN, .INTR => error.WouldBlock,
            .NOBUFS, .NOMEM => error.SystemResources,
            .NOTCONN, .PIPE => error.SocketUnconnected,
            .CONNRESET => error.ConnectionResetByPeer,
            .TIMEDOUT => error.Timeout,
            .NETDOWN => error.NetworkDown,
            else => |err| posix.unexpectedErrno(err),
        };
    }

    /// A short read drained the socket buffer.
    pub fn drained(self: *const ReadAttempt, n: usize) bool {
        return n > 0 and n < self.total;
    }
};

pub fn netRead(userdata: ?*anyopaque, fd: net.Socket.Handle, data: [][]u8) net.Stream.Reader.Error!usize {
    const self = AmpereIo.fromUserdata(userdata);
    var attempt = ReadAttempt{ .iovecs = undefined, .count = 0, .total = 0 };
    for (data) |buffer| {
        if (attempt.count == max_iovecs) break;
        if (buffer.len == 0) continue;
        attempt.iovecs[attempt.count] = .{ .base = buffer.ptr, .len = buffer.len };
        attempt.count += 1;
        attempt.total += buffer.len;
    }
    if (attempt.count == 0) return 0;
    return run(self, fd, attempt);
}

const WriteAttempt = struct {
    pub const interest = Ready.write_interest;
    pub const Value = usize;
    pub const closed_error = error.SocketUnconnected;
    pub const Error = error{
        FastOpenAlreadyInProgress,
        ConnectionResetByPeer,
        SystemResources,
        NetworkUnreachable,
        HostUnreachable,
        NetworkDown,
        ConnectionRefused,
        AddressFamilyUnsupported,
        SocketUnconnected,
        SocketNotBound,
        Unexpected,
    };
    iovecs: [max_iovecs]posix.iovec_const,
    count: usize,
    total: usize,
    splat_buffer: [64]u8,

    pub fn run(self: *WriteAttempt, fd: posix.fd_t) (Error || error{WouldBlock})!usize {
        const message: linux.msghdr_const = .{
            .name = null,
            .namelen = 0,
            .iov = &self.iovecs,
            .iovlen = self.count,
            .control = null,
            .controllen = 0,
            .flags = 0,
        };
        const rc = linux.sendmsg(fd, &message, linux.MSG.NOSIGNAL);
        return switch (linux.errno(rc)) {
            .SUCCESS => rc,
            .AGAIN, .INTR => error.WouldBlock,
            .ALREADY => error.FastOpenAlreadyInProgress,
            .CONNRESET => error.ConnectionResetByPeer,
            .NOBUFS, .NOMEM => error.SystemResources,
            .PIPE, .NOTCONN => error.SocketUnconnected,
            .NETUNREACH => error.NetworkUnreachable,
            .HOSTUNREACH => error.HostUnreachable,
            .NETDOWN => error.NetworkDown,
            .CONNREFUSED => error.ConnectionRefused,
            .AFNOSUPPORT => error.AddressFamilyUnsupported,
            else => |err| posix.unexpectedErrno(err),
        };
    }

    pub fn drained(self: *const WriteAttempt, n: usize) bool {
        return n > 0 and n < self.total;
    }

    fn add(self: *WriteAttempt, bytes: []const u8) void {
        if (bytes.len == 0 or self.count == max_iovecs) return;
        self.iovecs[self.count] = .{ .base = bytes.ptr, .len = bytes.len };
        self.count += 1;
        self.total += bytes.len;
    }
};

/// `header`, then `data[0..n-1]`, then `data[n-1]` `splat` times (std.Io.Writer's drain).
pub fn netWrite(userdata: ?*anyopaque, fd: net.Socket.Handle, header: []const u8, data: []const []const u8, splat: usize) net.Stream.Writer.Error!usize {
    const self = AmpereIo.fromUserdata(userdata);
    var attempt = WriteAttempt{ .iovecs = undefined, .count = 0, .total = 0, .splat_buffer = undefined };
    attempt.add(header);
    for (data[0 .. data.len - 1]) |bytes| attempt.add(bytes);
    const pattern = data[data.len - 1];
    // The splat iovecs point into `attempt.splat_buffer`, which moves into the operation
    // future: they are fixed up there (`splatInto`). Here: repeat the pattern by reference
    // when it is long, or remember to fill the buffer when it is one byte.
    var splat_fill: ?u8 = null;
    var splat_remaining: usize = 0;
    switch (splat) {
        0 => {},
        1 => attempt.add(pattern),
        else => switch (pattern.len) {
            0 => {},
            1 => {
                splat_fill = pattern[0];
                splat_remaining = splat;
            },
            else => for (0..@min(splat, max_iovecs - attempt.count)) |_| attempt.add(pattern),
        },
    }
    if (splat_fill) |byte| return writeSplat(self, fd, &attempt, byte, splat_remaining);
    if (attempt.count == 0) return 0;
    return run(self, fd, attempt);
}

/// A write whose last part is one byte repeated `count` times: the bytes come from a buffer
/// inside the operation future (which does not move once polled).
fn writeSplat(self: *AmpereIo, fd: posix.fd_t, attempt: *WriteAttempt, byte: u8, count: usize) net.Stream.Writer.Error!usize {
    const SplatAttempt = struct {
        pub const interest = WriteAttempt.interest;
        pub const Value = usize;
        pub const Error = WriteAttempt.Error;
        pub const closed_error = WriteAttempt.closed_error;
        inner: WriteAttempt,
        fixed: bool = false,
        byte: u8,
        count: usize,

        pub fn run(s: *@This(), sock: posix.fd_t) (Error || error{WouldBlock})!usize {
            if (!s.fixed) {
                s.fixed = true;
                @memset(&s.inner.splat_buffer, s.byte);
                var remaining = s.count;
                while (remaining > 0 and s.inner.count < max_iovecs) {
                    const n = @min(remaining, s.inner.splat_buffer.len);
                    s.inner.add(s.inner.splat_buffer[0..n]);
                    remaining -= n;
                }
            }
            return s.inner.run(sock);
        }

        pub fn drained(s: *const @This(), n: usize) bool {
            return s.inner.drained(n);
        }
    };
    return run(self, fd, SplatAttempt{ .inner = attempt.*, .byte = byte, .count = count });
}

pub fn netWriteFile(userdata: ?*anyopaque, fd: net.Socket.Handle, header: []const u8, file_reader: *std.Io.File.Reader, limit: std.Io.Limit) net.Stream.Writer.WriteFileError!usize {
    const buffered = file_reader.interface.buffered();
    if (header.len > 0 or buffered.len > 0) {
        const n = netWrite(userdata, fd, header, &.{limit.slice(buffered)}, 1) catch |err| return writeFileError(err);
        file_reader.interface.toss(n -| header.len);
        return n;
    }
    // No sendfile: read a chunk through the reader and write all of it.
    var chunk: [16 * 1024]u8 = undefined;
    const n = file_reader.interface.readSliceShort(limit.slice(&chunk)) catch return error.Unexpected;
    var written: usize = 0;
    while (written < n) {
        written += netWrite(userdata, fd, chunk[written..n], &.{""}, 1) catch |err| return writeFileError(err);
    }
    return n;
}

fn writeFileError(err: net.Stream.Writer.Error) net.Stream.Writer.WriteFileError {
    return switch (err) {
        error.Canceled => error.Canceled,
        error.NetworkDown => error.NetworkDown,
        else => error.Unexpected,
    };
}

// -- datagrams -------------------------------------------------------------------------------

const SendAttempt = struct {
    pub const interest = Ready.write_interest;
    pub const Value = usize;
    pub const closed_error = error.SocketUnconnected;
    pub const Error = error{
        MessageOversize,
        SystemResources,
        NetworkUnreachable,
        HostUnreachable,
        NetworkDown,
        ConnectionRefused,
        AddressFamilyUnsupported,
        FastOpenAlreadyInProgress,
        ConnectionResetByPeer,
        SocketUnconnected,
        AccessDenied,
        Unexpected,
    };
    messages: []net.OutgoingMessage,
    flags: u32,

    /// Sends up to 64 messages with one `sendmmsg`; returns how many went out.
    pub fn run(self: *SendAttempt, fd: posix.fd_t) (Error || error{WouldBlock})!usize {
        var headers: [64]linux.mmsghdr = undefined;
        var addresses: [64]Threaded.PosixAddress = undefined;
        var iovecs: [64]posix.iovec = undefined;
        const n = @min(self.messages.len, headers.len);
        for (self.messages[0..n], headers[0..n], addresses[0..n], iovecs[0..n]) |*message, *header, *address, *iovec| {
            iovec.* = .{ .base = @constCast(message.data_ptr), .len = message.data_len };
            header.* = .{
                .hdr = .{
                    .name = &address.any,
                    .namelen = Threaded.addressToPosix(message.address, address),
                    .iov = iovec[0..1],
                    .iovlen = 1,
                    .control = if (message.control.len == 0) null else @constCast(message.control.ptr),
                    .controllen = message.control.len,
                    .flags = 0,
                },
                .len = undefined,
            };
        }
        const rc = linux.sendmmsg(fd, &headers, @intCast(n), self.flags);
        switch (linux.errno(rc)) {
            .SUCCESS => {
                for (self.messages[0..rc], headers[0..rc]) |*message, *header| message.data_len = header.len;
                return rc;
            },
            .AGAIN, .INTR => return error.WouldBlock,
            .ACCES => return error.AccessDenied,
            .ALREADY => return error.FastOpenAlreadyInProgress,
            .CONNRESET => return error.ConnectionResetByPeer,
            .MSGSIZE => return error.MessageOversize,
            .NOBUFS, .NOMEM => return error.SystemResources,
            .PIPE, .NOTCONN => return error.SocketUnconnected,
            .AFNOSUPPORT => return error.AddressFamilyUnsupported,
            .HOSTUNREACH => return error.HostUnreachable,
            .NETUNREACH => return error.NetworkUnreachable,
            .NETDOWN => return error.NetworkDown,
            .CONNREFUSED => return error.ConnectionRefused,
            else => |err| return posix.unexpectedErrno(err),
        }
    }
};

pub fn netSend(userdata: ?*anyopaque, fd: net.Socket.Handle, messages: []net.OutgoingMessage, flags: net.SendFlags) struct { ?net.Socket.SendError, usize } {
    const self = AmpereIo.fromUserdata(userdata);
    const posix_flags: u32 = linux.MSG.NOSIGNAL |
        @as(u32, if (flags.confirm) linux.MSG.CONFIRM else 0) |
        @as(u32, if (flags.dont_route) linux.MSG.DONTROUTE else 0) |
        @as(u32, if (flags.eor) linux.MSG.EOR else 0) |
        @as(u32, if (flags.oob) linux.MSG.OOB else 0) |
        @as(u32, if (flags.fastopen) linux.MSG.FASTOPEN else 0);
    var sent: usize = 0;
    while (sent < messages.len) {
        sent += run(self, fd, SendAttempt{ .messages = messages[sent..], .flags = posix_flags }) catch |err|
            return .{ err, sent };
    }
    return .{ null, sent };
}

pub const ReceiveAttempt = struct {
    pub const interest = Ready.read_interest;
    pub const Value = usize;
    pub const closed_error = error.SocketUnconnected;
    pub const Error = std.Io.Operation.NetReceive.Error;
    messages: []net.IncomingMessage,
    data: []u8,
    flags: u32,

    /// Receives at least one message (or WouldBlock), then as many more as are queued and fit.
    pub fn run(self: *ReceiveAttempt, fd: posix.fd_t) (Error || error{WouldBlock})!usize {
        var count: usize = 0;
        var used: usize = 0;
        while (count < self.messages.len) {
            receiveOne(fd, &self.messages[count], self.data[used..], self.flags) catch |err| switch (err) {
                error.WouldBlock => if (count == 0) return err else break,
                else => |e| if (count == 0) return e else break,
            };
            used += self.messages[count].data.len;
            count += 1;
        }
        return count;
    }
};

fn receiveOne(fd: posix.fd_t, message: *net.IncomingMessage, data: []u8, flags: u32) (ReceiveAttempt.Error || error{WouldBlock})!void {
    var storage: Threaded.PosixAddress = undefined;
    var iov: posix.iovec = .{ .base = data.ptr, .len = data.len };
    var header: linux.msghdr = .{
        .name = &storage.any,
        .namelen = @sizeOf(Threaded.PosixAddress),
        .iov = (&iov)[0..1],
        .iovlen = 1,
        .control = if (message.control.len == 0) null else message.control.ptr,
        .controllen = message.control.len,
        .flags = 0,
    };
    const rc = linux.recvmsg(fd, &header, flags | linux.MSG.DONTWAIT);
    switch (linux.errno(rc)) {
        .SUCCESS => {
            message.* = .{
                .from = Threaded.addressFromPosix(&storage),
                .data = data[0..rc],
                .control = if (header.control) |ptr| @as([*]u8, @ptrCast(ptr))[0..header.controllen] else message.control,
                .flags = .{
                    .eor = header.flags & linux.MSG.EOR != 0,
                    .trunc = header.flags & linux.MSG.TRUNC != 0,
                    .ctrunc = header.flags & linux.MSG.CTRUNC != 0,
                    .oob = header.flags & linux.MSG.OOB != 0,
                    .errqueue = header.flags & linux.MSG.ERRQUEUE != 0,
                },
            };
        },
        .AGAIN, .INTR => return error.WouldBlock,
        .NFILE => return error.SystemFdQuotaExceeded,
        .MFILE => return error.ProcessFdQuotaExceeded,
        .NOBUFS, .NOMEM => return error.SystemResources,
        .NOTCONN, .PIPE => return error.SocketUnconnected,
        .MSGSIZE => return error.MessageOversize,
        .CONNRESET => return error.ConnectionResetByPeer,
        .NETDOWN => return error.NetworkDown,
        .CONNREFUSED => return error.PortUnreachable,
        else => |err| return posix.unexpectedErrno(err),
    }
}

/// `operate(.net_receive)`: waits until at least one message arrived.
pub fn receive(self: *AmpereIo, o: std.Io.Operation.NetReceive) std.Io.Cancelable!std.Io.Operation.NetReceive.Result {
    const count = run(self, o.socket_handle, ReceiveAttempt{
        .messages = o.message_buffer,
        .data = o.data_buffer,
        .flags = receiveFlags(o.flags),
    }) catch |err| switch (err) {
        error.Canceled => return error.Canceled,
        else => |e| return .{ e, 0 },
    };
    return .{ null, count };
}

fn receiveFlags(flags: net.ReceiveFlags) u32 {
    return @as(u32, if (flags.oob) linux.MSG.OOB else 0) |
        @as(u32, if (flags.peek) linux.MSG.PEEK else 0) |
        @as(u32, if (flags.trunc) linux.MSG.TRUNC else 0);
}

/// The operation future of a receive, for batches (`batch.zig`): its output is the result.
pub fn receiveFuture(self: *AmpereIo, o: std.Io.Operation.NetReceive) error{ SystemResources, NetworkDown }!Registration.Op(ReceiveAttempt) {
    const reg = try registrationOf(self, o.socket_handle);
    return Registration.Op(ReceiveAttempt).init(reg, .{ .messages = o.message_buffer, .data = o.data_buffer, .flags = receiveFlags(o.flags) });
}

// -- close and shutdown ----------------------------------------------------------------------

/// Closes `fd`: through its registration (which ends the operations pending on it and closes
/// the descriptor once none holds it: io/Registration.zig), or directly if unregistered.
fn closeRegistered(self: *AmpereIo, fd: posix.fd_t) void {
    if (self.sockets.remove(fd)) |io| {
        registration(self, io).close();
    } else os.close(fd);
}

pub fn netClose(userdata: ?*anyopaque, handles: []const net.Socket.Handle) void {
    const self = AmpereIo.fromUserdata(userdata);
    for (handles) |fd| closeRegistered(self, fd);
}

/// Closes `fd` if it is a socket this Io registered; false (nothing done) otherwise — for
/// `fileClose`, where a socket may arrive as a `File`.
pub fn closeIfRegistered(self: *AmpereIo, fd: posix.fd_t) bool {
    const io = self.sockets.remove(fd) orelse return false;
    registration(self, io).close();
    return true;
}

pub fn netShutdown(userdata: ?*anyopaque, fd: net.Socket.Handle, how: net.ShutdownHow) net.ShutdownError!void {
    _ = userdata;
    try checkCancel();
    const value: i32 = switch (how) {
        .recv => linux.SHUT.RD,
        .send => linux.SHUT.WR,
        .both => linux.SHUT.RDWR,
    };
    return switch (linux.errno(linux.shutdown(fd, value))) {
        .SUCCESS => {},
        .NOTCONN => error.SocketUnconnected,
        .NOBUFS => error.SystemResources,
        else => |err| posix.unexpectedErrno(err),
    };
}

fn checkCancel() error{Canceled}!void {
    return @import("tasks.zig").checkCancel(null);
}
