//! Tests of the I/O driver and `ampere.net` on a real runtime (4 workers unless a test needs
//! fewer), sized by AMPERE_TEST_INTENSITY: echo with many connections, half-close, reset,
//! partial writes, cancellation, accept storms, descriptor leaks, shutdown with connections
//! open, and the lost-wake-up windows of the driver (with the runtime's test hooks).
//!
//! Every wait that could hang on a lost wake-up runs under a watchdog, which turns a hang into
//! a failure with a message.

const std = @import("std");
const testing = std.testing;
const posix = std.posix;
const linux = std.os.linux;

const ampere = @import("../ampere.zig");
const Runtime = ampere.Runtime;
const net = ampere.net;
const TcpStream = net.TcpStream;
const TcpListener = net.TcpListener;
const Context = ampere.Context;
const Poll = ampere.Poll;
const JoinHandle = ampere.JoinHandle;
const Waker = ampere.Waker;
const time = ampere.time;
const scaled = ampere.testing.scaled;
const HookWindow = ampere.testing.HookWindow;
const hook = @import("../hook.zig");
const Parker = @import("../Parker.zig");
const os = @import("../os.zig");
const future = @import("../future.zig");
const sys = @import("sys.zig");
const clock = @import("../time/clock.zig");

// -- helpers ------------------------------------------------------------------------------------

fn newRuntime(workers: u32) !*Runtime {
    return Runtime.init(testing.allocator, .{ .workers = workers });
}

fn ioOf(rt: *Runtime) *ampere.io.Driver {
    return &rt.scheduler.shared.io;
}

fn loopback4() net.Address {
    return .{ .ip4 = .loopback(0) };
}

fn loopback6() net.Address {
    return .{ .ip6 = .loopback(0) };
}

/// Panics if `stop` is not called within `limit_ms`: a hang is a failure, not a stuck run.
const Watchdog = struct {
    done: std.atomic.Value(bool) = .init(false),
    thread: std.Thread = undefined,
    what: []const u8,
    limit_ms: u32 = 30_000,

    fn start(self: *Watchdog) !void {
        self.thread = try std.Thread.spawn(.{}, run, .{self});
    }

    fn run(self: *Watchdog) void {
        var waited_ms: u32 = 0;
        while (!self.done.load(.acquire)) : (waited_ms += 1) {
            if (waited_ms >= self.limit_ms) std.debug.panic("hang: {s} did not finish within {d} ms", .{ self.what, self.limit_ms });
            os.sleepNs(std.time.ns_per_ms);
        }
    }

    fn stop(self: *Watchdog) void {
        self.done.store(true, .release);
        self.thread.join();
    }
};

/// Open file descriptors of this process (entries of /proc/self/fd, minus the one listing it).
fn openFdCount() !usize {
    const io = testing.io;
    var dir = try std.Io.Dir.openDirAbsolute(io, "/proc/self/fd", .{ .iterate = true });
    defer dir.close(io);
    var count: usize = 0;
    var it = dir.iterate();
    while (try it.next(io)) |_| count += 1;
    return count - 1;
}

/// Awaits a JoinHandle from `blockOn`.
fn Await(comptime T: type) type {
    return struct {
        pub const Output = ampere.JoinOutput(T);
        handle: JoinHandle(T),
        pub fn poll(self: *@This(), cx: *Context) Poll(Output) {
            return self.handle.poll(cx);
        }
    };
}

fn join(rt: *Runtime, comptime T: type, handle: JoinHandle(T)) ampere.JoinOutput(T) {
    return rt.blockOn(Await(T){ .handle = handle });
}

/// Byte `index` of the payload of connection `id`, round `round`: every connection and round
/// sends different bytes, so a mixed-up echo fails the comparison.
fn patternByte(id: u64, round: u64, index: u64) u8 {
    const x = (id *% 0x9e3779b97f4a7c15) ^ (round *% 0xbf58476d1ce4e5b9) ^ (index *% 0x94d049bb133111eb);
    return @truncate(x ^ (x >> 29) ^ (x >> 47));
}

fn fillPattern(buffer: []u8, id: u64, round: u64) void {
    for (buffer, 0..) |*b, i| b.* = patternByte(id, round, i);
}

/// Polls `f` on the calling thread every millisecond until it is ready, or fails after
/// `limit_ms` with null (for futures that make progress without this thread, like a
/// JoinHandle).
fn pollUntilReady(f: anytype, limit_ms: u32) ?@TypeOf(f.*).Output {
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    var waited_ms: u32 = 0;
    while (waited_ms < limit_ms) : (waited_ms += 1) {
        switch (f.poll(&cx)) {
            .ready => |value| return value,
            .pending => os.sleepNs(std.time.ns_per_ms),
        }
    }
    f.cancel();
    return null;
}

// -- test futures -----------------------------------------------------------------------------

/// Counters shared by a server and its connection tasks.
const ServerStats = struct {
    accepted: std.atomic.Value(u32) = .init(0),
    finished: std.atomic.Value(u32) = .init(0),
    failures: std.atomic.Value(u32) = .init(0),
    echoed_bytes: std.atomic.Value(u64) = .init(0),

    fn waitFinished(self: *ServerStats, count: u32) !void {
        var waited_ms: u32 = 0;
        while (self.finished.load(.acquire) < count) : (waited_ms += 1) {
            if (waited_ms > 20_000) return error.TestTimedOut;
            os.sleepNs(std.time.ns_per_ms);
        }
    }
};

/// One server-side connection: reads and writes back exactly what it read, until end of
/// stream; then closes. Cancelled (shutdown), it closes the socket too.
const Echoer = struct {
    pub const Output = void;
    stream: TcpStream,
    stats: *ServerStats,
    buffer: [4096]u8 = undefined,
    reading: ?TcpStream.Read = null,
    writing: ?TcpStream.WriteAll = null,
    closed: bool = false,

    pub fn poll(self: *Echoer, cx: *Context) Poll(void) {
        while (true) {
            if (self.writing) |*w| switch (w.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.writing = null;
                    result catch return self.end(false);
                },
            };
            if (ampere.future.isNull(&self.reading)) self.reading = self.stream.read(&self.buffer);
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    const count = result catch return self.end(false);
                    if (count == 0) return self.end(true);
                    _ = self.stats.echoed_bytes.fetchAdd(count, .monotonic);
                    self.writing = self.stream.writeAll(self.buffer[0..count]);
                },
            }
        }
    }

    fn end(self: *Echoer, ok: bool) Poll(void) {
        if (!ok) _ = self.stats.failures.fetchAdd(1, .acq_rel);
        self.stream.close();
        self.closed = true;
        _ = self.stats.finished.fetchAdd(1, .acq_rel);
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Echoer) void {
        if (self.reading) |*r| r.cancel();
        if (self.writing) |*w| w.cancel();
        self.reading = null;
        self.writing = null;
        if (!self.closed) self.stream.close();
        self.closed = true;
    }
};

/// Accepts `expected` connections and spawns an `Echoer` for each; then closes the listener.
const Server = struct {
    pub const Output = anyerror!void;
    listener: TcpListener,
    expected: u32,
    stats: *ServerStats,
    accepting: ?TcpListener.Accept = null,
    closed: bool = false,

    pub fn poll(self: *Server, cx: *Context) Poll(Output) {
        while (self.stats.accepted.load(.monotonic) < self.expected) {
            if (ampere.future.isNull(&self.accepting)) self.accepting = self.listener.accept();
            switch (self.accepting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.accepting = null;
                    const stream = result catch |err| {
                        if (err == error.ConnectionAborted) continue;
                        return self.finish(err);
                    };
                    _ = self.stats.accepted.fetchAdd(1, .monotonic);
                    stream.setNodelay(true) catch |err| return self.finish(err);
                    var handle = ampere.spawn(Echoer{ .stream = stream, .stats = self.stats }) catch |err| {
                        stream.close();
                        return self.finish(err);
                    };
                    handle.detach();
                },
            }
        }
        return self.finish({});
    }

    fn finish(self: *Server, output: Output) Poll(Output) {
        self.listener.close();
        self.closed = true;
        return .{ .ready = output };
    }

    pub fn cancel(self: *Server) void {
        if (self.accepting) |*a| a.cancel();
        self.accepting = null;
        if (!self.closed) self.listener.close();
        self.closed = true;
    }
};

/// Connects, then `rounds` times writes `out.len` pattern bytes and reads them back, checking
/// every byte; then closes. Returns the bytes verified.
const Client = struct {
    pub const Output = anyerror!u64;
    address: net.Address,
    id: u64,
    rounds: u32,
    out: []u8,
    in: []u8,
    connecting: ?TcpStream.Connect = null,
    stream: ?TcpStream = null,
    round: u32 = 0,
    writing: ?TcpStream.WriteAll = null,
    reading: ?TcpStream.ReadExact = null,
    verified: u64 = 0,

    pub fn poll(self: *Client, cx: *Context) Poll(Output) {
        if (self.stream == null) {
            if (ampere.future.isNull(&self.connecting)) self.connecting = TcpStream.connect(self.address);
            switch (self.connecting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.connecting = null;
                    self.stream = result catch |err| return .{ .ready = err };
                    self.stream.?.setNodelay(true) catch |err| return self.finish(err);
                },
            }
        }
        const stream = self.stream.?;
        while (self.round < self.rounds) {
            if (ampere.future.isNull(&self.writing) and ampere.future.isNull(&self.reading)) {
                fillPattern(self.out, self.id, self.round);
                self.writing = stream.writeAll(self.out);
            }
            if (self.writing) |*w| switch (w.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.writing = null;
                    result catch |err| return self.finish(err);
                    @memset(self.in, 0);
                    self.reading = stream.readExact(self.in);
                },
            };
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    result catch |err| return self.finish(err);
                    if (!std.mem.eql(u8, self.in, self.out)) return self.finish(error.EchoMismatch);
                    self.verified += self.in.len;
                    self.round += 1;
                },
            }
        }
        return self.finish(self.verified);
    }

    fn finish(self: *Client, output: Output) Poll(Output) {
        self.stream.?.close();
        self.stream = null;
        self.round = self.rounds;
        return .{ .ready = output };
    }

    pub fn cancel(self: *Client) void {
        if (self.connecting) |*c| c.cancel();
        if (self.writing) |*w| w.cancel();
        if (self.reading) |*r| r.cancel();
        self.connecting = null;
        self.writing = null;
        self.reading = null;
        if (self.stream) |s| s.close();
        self.stream = null;
    }
};

/// Runs `count` clients of `size` bytes × `rounds` against a fresh echo server on `address`.
fn echoMany(rt: *Runtime, address: net.Address, count: u32, size: usize, rounds: u32) !void {
    const listener = try TcpListener.bindIn(ioOf(rt), address, .{});
    const bound = try listener.localAddress();
    var stats = ServerStats{};
    const server = try rt.spawn(Server{ .listener = listener, .expected = count, .stats = &stats });

    const buffers = try testing.allocator.alloc(u8, 2 * size * count);
    defer testing.allocator.free(buffers);
    const handles = try testing.allocator.alloc(JoinHandle(anyerror!u64), count);
    defer testing.allocator.free(handles);
    for (handles, 0..) |*h, i| {
        const base = 2 * size * i;
        h.* = try rt.spawn(Client{
            .address = bound,
            .id = i,
            .rounds = rounds,
            .out = buffers[base .. base + size],
            .in = buffers[base + size .. base + 2 * size],
        });
    }
    for (handles) |h| try testing.expectEqual(@as(u64, size * rounds), try join(rt, anyerror!u64, h));
    try join(rt, anyerror!void, server);
    try stats.waitFinished(count);
    try testing.expectEqual(@as(u32, 0), stats.failures.load(.acquire));
    try testing.expectEqual(@as(u32, count), stats.accepted.load(.acquire));
    try testing.expectEqual(@as(u64, size * rounds * count), stats.echoed_bytes.load(.acquire));
}

// -- tests ------------------------------------------------------------------------------------

test "1,000 concurrent connections each echo their exact bytes (4 workers, IPv4)" {
    var watchdog = Watchdog{ .what = "1,000 connections echo" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    try echoMany(rt, loopback4(), @intCast(scaled(1000, 10)), 1500, 3);
}

test "echo over IPv6 loopback" {
    var watchdog = Watchdog{ .what = "IPv6 echo" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    const listener = TcpListener.bindIn(ioOf(rt), loopback6(), .{}) catch |err| switch (err) {
        error.AddressNotAvailable, error.AddressFamilyNotSupported => return error.SkipZigTest, // No IPv6 here.
        else => return err,
    };
    listener.close();
    try echoMany(rt, loopback6(), @intCast(scaled(50, 5)), 333, 4);
}

test "connecting where nobody listens fails with ConnectionRefused" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    // Bind a port, then close it: now nobody listens there.
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    const address = try listener.localAddress();
    listener.close();
    try testing.expectError(error.ConnectionRefused, rt.blockOn(TcpStream.connect(address)));
}

// -- listen backlog -----------------------------------------------------------------------------

/// The head of Linux's `struct tcp_info`. For a listening socket `unacked` is the length of
/// the accept queue and `sacked` its limit (the backlog, capped at `net.core.somaxconn`).
const TcpInfoHead = extern struct {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
};

const AcceptQueue = struct { len: u32, limit: u32 };

fn acceptQueue(listener: TcpListener) !AcceptQueue {
    var info: TcpInfoHead = undefined;
    var len: posix.socklen_t = @sizeOf(TcpInfoHead);
    const rc = linux.getsockopt(listener.registration.fd(), linux.IPPROTO.TCP, linux.TCP.INFO, std.mem.asBytes(&info), &len);
    if (posix.errno(rc) != .SUCCESS or len < @sizeOf(TcpInfoHead)) return error.TcpInfoFailed;
    return .{ .len = info.unacked, .limit = info.sacked };
}

fn somaxconn() !u32 {
    var buffer: [32]u8 = undefined;
    // Raw calls: /proc files report size 0, and this needs no `Io`.
    const rc = linux.openat(linux.AT.FDCWD, "/proc/sys/net/core/somaxconn", .{ .ACCMODE = .RDONLY, .CLOEXEC = true }, 0);
    if (linux.errno(rc) != .SUCCESS) return error.CannotReadSomaxconn;
    const fd: posix.fd_t = @intCast(rc);
    defer os.close(fd);
    const count = try posix.read(fd, &buffer);
    return std.fmt.parseInt(u32, std.mem.trim(u8, buffer[0..count], " \n"), 10);
}

/// A descriptor of /dev/null (to take the lowest free descriptor number).
fn openDevNull() !posix.fd_t {
    const rc = linux.openat(linux.AT.FDCWD, "/dev/null", .{ .ACCMODE = .RDONLY, .CLOEXEC = true }, 0);
    if (linux.errno(rc) != .SUCCESS) return error.CannotOpenDevNull;
    return @intCast(rc);
}

test "the listen backlog is 1,024 by default and chosen by bindWithOptions" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const cap = try somaxconn();
    const default = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer default.close();
    try testing.expectEqual(@as(u31, 1024), TcpListener.default_backlog);
    try testing.expectEqual(@min(TcpListener.default_backlog, cap), (try acceptQueue(default)).limit);
    const small = try TcpListener.bindIn(ioOf(rt), loopback4(), .{ .backlog = 16 });
    defer small.close();
    try testing.expectEqual(@as(u32, 16), (try acceptQueue(small)).limit);
}

/// Starts a non-blocking connect to `address`; the caller closes the descriptor.
fn startConnect(address: net.Address) !posix.fd_t {
    const fd = try sys.tcpSocket(sys.addressFamily(&address));
    errdefer os.close(fd);
    _ = try sys.connect(fd, &address); // Connected, or in progress (EINPROGRESS).
    return fd;
}

/// Waits until the connects of `fds` finished (each writable), for at most `limit_ms` in all;
/// returns how many of them, in order, finished in time (they all run at once in the kernel).
fn awaitConnects(fds: []const posix.fd_t, limit_ms: u64) !usize {
    const start_ns = clock.nowNs();
    for (fds, 0..) |fd, finished| {
        const waited_ms = (clock.nowNs() - start_ns) / std.time.ns_per_ms;
        if (waited_ms >= limit_ms) return finished;
        var poll_fd = [1]posix.pollfd{.{ .fd = fd, .events = posix.POLL.OUT, .revents = 0 }};
        if (try posix.poll(&poll_fd, @intCast(limit_ms - waited_ms)) == 0) return finished;
    }
    return fds.len;
}

const storm_connects = 200;

test "200 concurrent connects fit in the listen queue before any accept: none waits for a SYN retry" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    if (try somaxconn() < storm_connects) return error.SkipZigTest;
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const address = try listener.localAddress();
    var fds: [storm_connects]posix.fd_t = undefined;
    var opened: usize = 0;
    defer for (fds[0..opened]) |fd| os.close(fd);
    while (opened < fds.len) : (opened += 1) fds[opened] = try startConnect(address);
    // Nobody accepts. With a backlog of 128 the kernel dropped the SYNs past the queue's
    // limit and those clients waited for their SYN retry (1 s) and, queue still full, the
    // next; with 1,024 every handshake completes at once (milliseconds on loopback).
    try testing.expectEqual(@as(usize, storm_connects), try awaitConnects(&fds, 700));
    for (fds) |fd| try sys.connectResult(fd);
    try testing.expectEqual(@as(u32, storm_connects), (try acceptQueue(listener)).len);
}

// -- outside a runtime ---------------------------------------------------------------------------

const OutsideResults = struct {
    bind: ?net.BindError = null,
    connect: ?net.ConnectError = null,

    fn run(self: *OutsideResults, address: net.Address) void {
        if (TcpListener.bind(loopback4())) |listener| listener.close() else |err| self.bind = err;
        var connect = TcpStream.connect(address);
        if (ampere.blockOnThread(&connect)) |stream| stream.close() else |err| self.connect = err;
    }
};

test "bind and connect on a thread outside any runtime fail with NoRuntime instead of panicking" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    var results = OutsideResults{};
    const thread = try std.Thread.spawn(.{}, OutsideResults.run, .{ &results, try listener.localAddress() });
    thread.join();
    try testing.expectEqual(@as(?net.BindError, error.NoRuntime), results.bind);
    try testing.expectEqual(@as(?net.ConnectError, error.NoRuntime), results.connect);
}

/// Connects a client (`blockOn`) and accepts its server side; both have Nagle off.
fn connectedPair(rt: *Runtime, listener: TcpListener) ![2]TcpStream {
    const address = try listener.localAddress();
    const client = try rt.blockOn(TcpStream.connect(address)); // The kernel completes it...
    const server = try rt.blockOn(listener.accept()); // ...before it is accepted.
    try client.setNodelay(true);
    try server.setNodelay(true);
    try testing.expect(try client.nodelay());
    return .{ client, server };
}

test "a new connection is not reported closed: its first read waits instead of spinning" {
    var watchdog = Watchdog{ .what = "fresh connection readiness" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try Runtime.init(testing.allocator, .{ .workers = 4, .spin_before_park_ns = 0 });
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const closed = ampere.io.Ready.closed;
    var buffer: [8]u8 = undefined;
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    // An unconnected TCP socket polls as hung up. Registered before its connect started, the
    // driver owner (blocked in epoll_wait, woken by the registration) could see that state and
    // mark both directions closed for good: every read would then spin on WouldBlock.
    for (0..@as(usize, scaled(200, 10))) |_| {
        const client, const server = try connectedPair(rt, listener);
        defer client.close();
        defer server.close();
        try testing.expect(!client.registration.readiness(ampere.io.Ready.all).intersects(closed));
        try testing.expect(!server.registration.readiness(ampere.io.Ready.all).intersects(closed));
        var read = client.read(&buffer);
        defer read.cancel();
        try testing.expect(read.poll(&cx) == .pending); // Linked as a waiter, not ready.
    }
}

test "half-close: the peer reads end of stream and still writes back" {
    var watchdog = Watchdog{ .what = "half-close" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const pair = try connectedPair(rt, listener);
    const client, const server = pair;
    defer client.close();
    defer server.close();

    var sent: [10_000]u8 = undefined;
    fillPattern(&sent, 7, 0);
    try rt.blockOn(client.writeAll(&sent));
    try client.shutdown(.write);
    // The server reads everything, then end of stream (0 bytes, repeatedly).
    var received: [sent.len]u8 = undefined;
    try rt.blockOn(server.readExact(&received));
    try testing.expectEqualSlices(u8, &sent, &received);
    var more: [16]u8 = undefined;
    try testing.expectEqual(@as(usize, 0), try rt.blockOn(server.read(&more)));
    try testing.expectEqual(@as(usize, 0), try rt.blockOn(server.read(&more)));
    try testing.expectError(error.EndOfStream, rt.blockOn(server.readExact(&more)));
    // ...and can still answer on its open half, which the client reads.
    try rt.blockOn(server.writeAll("answer after EOF"));
    try server.shutdown(.write);
    var answer: [16]u8 = undefined;
    try rt.blockOn(client.readExact(&answer));
    try testing.expectEqualStrings("answer after EOF", &answer);
    try testing.expectEqual(@as(usize, 0), try rt.blockOn(client.read(&more)));
}

test "peer reset: a read fails with ConnectionReset, a later write with BrokenPipe" {
    var watchdog = Watchdog{ .what = "peer reset" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const client, const server = try connectedPair(rt, listener);
    defer client.close();
    try rt.blockOn(client.writeAll("unread"));
    // Wait until the bytes sit in the server's receive buffer, then close it unread: the
    // kernel answers with a reset.
    var waited_ms: u32 = 0;
    while (!server.registration.readiness(ampere.io.Ready.read_interest).readable) : (waited_ms += 1) {
        if (waited_ms > 5_000) return error.TestTimedOut;
        os.sleepNs(std.time.ns_per_ms);
    }
    server.close();
    var buffer: [16]u8 = undefined;
    try testing.expectError(error.ConnectionReset, rt.blockOn(client.read(&buffer)));
    try testing.expectError(error.BrokenPipe, rt.blockOn(client.write("after reset")));
}

fn setBufferBytes(stream: TcpStream, option: u32, bytes: c_int) !void {
    try posix.setsockopt(stream.registration.fd(), linux.SOL.SOCKET, option, std.mem.asBytes(&bytes));
}

/// Reads until end of stream, checking every byte against `fillPattern(id, 0)` by position;
/// starts after `delay_ns` (so that the writer fills the socket buffers first).
const Drain = struct {
    pub const Output = anyerror!u64;
    stream: TcpStream,
    id: u64,
    delay: ?time.Sleep,
    buffer: [65536]u8 = undefined,
    reading: ?TcpStream.Read = null,
    total: u64 = 0,

    pub fn poll(self: *Drain, cx: *Context) Poll(Output) {
        if (self.delay) |*d| {
            if (d.poll(cx) == .pending) return .pending;
            self.delay = null;
        }
        while (true) {
            if (ampere.future.isNull(&self.reading)) self.reading = self.stream.read(&self.buffer);
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    const count = result catch |err| return .{ .ready = err };
                    if (count == 0) return .{ .ready = self.total };
                    for (self.buffer[0..count], self.total..) |b, i| {
                        if (b != patternByte(self.id, 0, i)) return .{ .ready = error.WrongByte };
                    }
                    self.total += count;
                },
            }
        }
    }

    pub fn cancel(self: *Drain) void {
        if (self.delay) |*d| d.cancel();
        if (self.reading) |*r| r.cancel();
    }
};

test "partial writes of a large buffer: write returns a short count, writeAll sends every byte (small socket buffers)" {
    var watchdog = Watchdog{ .what = "partial writes" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const client, const server = try connectedPair(rt, listener);
    defer server.close();
    // Small socket buffers: a write of more than they hold must come back short.
    try setBufferBytes(client, linux.SO.SNDBUF, 64 << 10);
    try setBufferBytes(server, linux.SO.RCVBUF, 64 << 10);
    const size: usize = scaled(8 << 20, 8);
    const payload = try testing.allocator.alloc(u8, size);
    defer testing.allocator.free(payload);
    fillPattern(payload, 3, 0);
    // Nobody reads yet: one write cannot take it all.
    const first = try rt.blockOn(client.write(payload));
    try testing.expect(first > 0 and first < size);
    const drain = try rt.spawn(Drain{ .stream = server, .id = 3, .delay = time.sleep(5 * std.time.ns_per_ms) });
    try rt.blockOn(client.writeAll(payload[first..]));
    try client.shutdown(.write);
    try testing.expectEqual(@as(u64, size), try join(rt, anyerror!u64, drain));
    client.close();
}

test "a pending read cancelled (before and after its wake-up), then the socket reused" {
    var watchdog = Watchdog{ .what = "cancelled read" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const client, const server = try connectedPair(rt, listener);
    defer client.close();
    defer server.close();
    var buffer: [32]u8 = undefined;

    // Cancelled while waiting (a sleep wins the select): its waiter is unlinked.
    const picked = rt.blockOn(ampere.select(.{ server.read(&buffer), time.sleep(10 * std.time.ns_per_ms) }));
    try testing.expect(picked == .@"1");
    try testing.expect(!server.registration.io.hasWaiters());
    try rt.blockOn(client.writeAll("hello"));
    try testing.expectEqual(@as(usize, 5), try rt.blockOn(server.read(&buffer)));
    try testing.expectEqualStrings("hello", buffer[0..5]);

    // Cancelled after the driver woke it, before it read: the next read finds the bytes.
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);
    var pending = server.read(&buffer);
    try testing.expect(pending.poll(&cx) == .pending);
    try rt.blockOn(client.writeAll("again"));
    var waited_ms: u32 = 0;
    while (counter.wakeCount() == 0) : (waited_ms += 1) {
        if (waited_ms > 5_000) return error.TestTimedOut;
        os.sleepNs(std.time.ns_per_ms);
    }
    pending.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // The woken clone was consumed.
    try testing.expectEqual(@as(usize, 5), try rt.blockOn(server.read(&buffer)));
    try testing.expectEqualStrings("again", buffer[0..5]);
}

/// Accepts exactly `count` connections from a shared listener (several run at once) and
/// spawns an `Echoer` for each.
const Acceptor = struct {
    pub const Output = anyerror!void;
    listener: TcpListener,
    count: u32,
    stats: *ServerStats,
    accepted: u32 = 0,
    accepting: ?TcpListener.Accept = null,

    pub fn poll(self: *Acceptor, cx: *Context) Poll(Output) {
        while (self.accepted < self.count) {
            if (ampere.future.isNull(&self.accepting)) self.accepting = self.listener.accept();
            switch (self.accepting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.accepting = null;
                    const stream = result catch |err| return .{ .ready = err };
                    self.accepted += 1;
                    _ = self.stats.accepted.fetchAdd(1, .monotonic);
                    var handle = ampere.spawn(Echoer{ .stream = stream, .stats = self.stats }) catch |err| {
                        stream.close();
                        return .{ .ready = err };
                    };
                    handle.detach();
                },
            }
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Acceptor) void {
        if (self.accepting) |*a| a.cancel();
        self.accepting = null;
    }
};

test "accept under a connection storm: four acceptors, every connection accepted once" {
    var watchdog = Watchdog{ .what = "accept storm" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(4);
    defer rt.deinit();
    const per_acceptor: u32 = @intCast(scaled(250, 10));
    const total = 4 * per_acceptor;
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const address = try listener.localAddress();
    var stats = ServerStats{};
    var acceptors: [4]JoinHandle(anyerror!void) = undefined;
    for (&acceptors) |*a| a.* = try rt.spawn(Acceptor{ .listener = listener, .count = per_acceptor, .stats = &stats });
    const buffers = try testing.allocator.alloc(u8, 2 * total);
    defer testing.allocator.free(buffers);
    const clients = try testing.allocator.alloc(JoinHandle(anyerror!u64), total);
    defer testing.allocator.free(clients);
    for (clients, 0..) |*c, i| {
        c.* = try rt.spawn(Client{ .address = address, .id = i, .rounds = 1, .out = buffers[2 * i ..][0..1], .in = buffers[2 * i + 1 ..][0..1] });
    }
    for (clients) |c| try testing.expectEqual(@as(u64, 1), try join(rt, anyerror!u64, c));
    for (acceptors) |a| try join(rt, anyerror!void, a);
    try stats.waitFinished(total);
    try testing.expectEqual(total, stats.accepted.load(.acquire));
    try testing.expectEqual(@as(u32, 0), stats.failures.load(.acquire));
    try testing.expect(!listener.registration.io.hasWaiters());
}

test "no descriptor is leaked: /proc/self/fd is the same before the runtime and after it" {
    var watchdog = Watchdog{ .what = "fd leak check" };
    try watchdog.start();
    defer watchdog.stop();
    const before = try openFdCount();
    {
        const rt = try newRuntime(4);
        defer rt.deinit();
        try testing.expect(try openFdCount() > before); // epoll + eventfd are open now
        try echoMany(rt, loopback4(), @intCast(scaled(100, 5)), 100, 2);
        const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
        const address = try listener.localAddress();
        listener.close();
        try testing.expectError(error.ConnectionRefused, rt.blockOn(TcpStream.connect(address)));
        // A connect cancelled while in progress closes its socket too.
        const busy = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
        defer busy.close();
        var connect = TcpStream.connect(try busy.localAddress());
        var counter = Waker.Counting{};
        const waker = counter.waker();
        defer waker.drop();
        var cx = Context.init(&waker);
        const saved = @import("../context.zig").enter(rt.scheduler.shared.handles());
        const first = connect.poll(&cx);
        saved.restore();
        if (first == .ready) (try first.ready).close() else connect.cancel();
    }
    try testing.expectEqual(before, try openFdCount());
}

/// Connects and then waits to read forever (the server never writes); counts connections.
const Idler = struct {
    pub const Output = anyerror!usize;
    address: net.Address,
    connected: *std.atomic.Value(u32),
    connecting: ?TcpStream.Connect = null,
    stream: ?TcpStream = null,
    reading: ?TcpStream.Read = null,
    buffer: [8]u8 = undefined,

    pub fn poll(self: *Idler, cx: *Context) Poll(Output) {
        if (self.stream == null) {
            if (ampere.future.isNull(&self.connecting)) self.connecting = TcpStream.connect(self.address);
            switch (self.connecting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.connecting = null;
                    self.stream = result catch |err| return .{ .ready = err };
                    _ = self.connected.fetchAdd(1, .acq_rel);
                },
            }
        }
        if (ampere.future.isNull(&self.reading)) self.reading = self.stream.?.read(&self.buffer);
        switch (self.reading.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.reading = null;
                self.stream.?.close();
                self.stream = null;
                return .{ .ready = result };
            },
        }
    }

    pub fn cancel(self: *Idler) void {
        if (self.connecting) |*c| c.cancel();
        if (self.reading) |*r| r.cancel();
        if (self.stream) |s| s.close();
        self.connecting = null;
        self.reading = null;
        self.stream = null;
    }
};

/// A blocking-pool function waiting to read from a socket nobody writes to.
fn blockingRead(stream: TcpStream, started: *std.atomic.Value(bool)) anyerror!usize {
    const rt = Runtime.current() orelse unreachable;
    var buffer: [8]u8 = undefined;
    started.store(true, .release);
    defer stream.close();
    return rt.blockOn(stream.read(&buffer));
}

test "runtime shutdown with connections open: waits end, tasks are cancelled, nothing leaks" {
    var watchdog = Watchdog{ .what = "shutdown with open connections" };
    try watchdog.start();
    defer watchdog.stop();
    const before = try openFdCount();
    const connections: u32 = @intCast(scaled(200, 10));
    var connected = std.atomic.Value(u32).init(0);
    var stats = ServerStats{};
    var blocking_started = std.atomic.Value(bool).init(false);
    const rt = try newRuntime(4);
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    const address = try listener.localAddress();
    // Accepts one more than the idlers: the connection of the blocking function below.
    var server = try rt.spawn(Server{ .listener = listener, .expected = connections + 2, .stats = &stats });
    server.detach();
    for (0..connections) |_| {
        var idler = try rt.spawn(Idler{ .address = address, .connected = &connected });
        idler.detach();
    }
    const kept = try rt.blockOn(TcpStream.connect(address)); // Held across deinit (which closes it).
    const for_blocking = try rt.blockOn(TcpStream.connect(address));
    const blocked = try rt.spawnBlocking(blockingRead, .{ for_blocking, &blocking_started });
    var waited_ms: u32 = 0;
    while (connected.load(.acquire) < connections or stats.accepted.load(.acquire) < connections + 2 or !blocking_started.load(.acquire)) : (waited_ms += 1) {
        if (waited_ms > 20_000) return error.TestTimedOut;
        os.sleepNs(std.time.ns_per_ms);
    }
    os.sleepNs(5 * std.time.ns_per_ms); // Let the blocking read register its waiter.
    rt.deinit();
    // The blocking function's read ended with RuntimeShutdown (its handle outlives deinit).
    var handle = blocked;
    try testing.expectError(error.RuntimeShutdown, ampere.blockOnThread(&handle));
    // Every echoer was cancelled (and closed its socket), none finished on its own.
    try testing.expectEqual(@as(u32, 0), stats.finished.load(.acquire));
    // The stream held across deinit fails its operations; its close does nothing.
    var buffer: [4]u8 = undefined;
    var read = kept.read(&buffer);
    try testing.expectError(error.RuntimeShutdown, ampere.blockOnThread(&read));
    var write = kept.write("x");
    try testing.expectError(error.RuntimeShutdown, ampere.blockOnThread(&write));
    kept.close();
    try testing.expectEqual(before, try openFdCount());
}

/// Accepts one connection, reads one byte, writes it back, closes.
const OneByteEcho = struct {
    pub const Output = anyerror!u8;
    listener: TcpListener,
    accepting: ?TcpListener.Accept = null,
    stream: ?TcpStream = null,
    reading: ?TcpStream.ReadExact = null,
    writing: ?TcpStream.WriteAll = null,
    byte: [1]u8 = undefined,

    pub fn poll(self: *OneByteEcho, cx: *Context) Poll(Output) {
        if (self.stream == null) {
            if (ampere.future.isNull(&self.accepting)) self.accepting = self.listener.accept();
            switch (self.accepting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.accepting = null;
                    self.stream = result catch |err| return .{ .ready = err };
                    self.reading = self.stream.?.readExact(&self.byte);
                },
            }
        }
        if (self.reading) |*r| switch (r.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.reading = null;
                result catch |err| return self.finish(err);
                self.writing = self.stream.?.writeAll(&self.byte);
            },
        };
        switch (self.writing.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                result catch |err| return self.finish(err);
                return self.finish(self.byte[0]);
            },
        }
    }

    fn finish(self: *OneByteEcho, output: Output) Poll(Output) {
        self.stream.?.close();
        self.stream = null;
        return .{ .ready = output };
    }

    pub fn cancel(self: *OneByteEcho) void {
        if (self.accepting) |*a| a.cancel();
        if (self.reading) |*r| r.cancel();
        if (self.writing) |*w| w.cancel();
        if (self.stream) |s| s.close();
        self.stream = null;
    }
};

/// A client outside the runtime: a blocking socket on a plain thread (std's, through the test
/// runner's `Io`).
fn plainClientEcho(address: net.Address, byte: u8) !u8 {
    const io = testing.io;
    const stream = try address.connect(io, .{ .mode = .stream });
    defer stream.close(io);
    var writer = stream.writer(io, &.{});
    try writer.interface.writeAll(&.{byte});
    var reply: [1]u8 = undefined;
    var reader = stream.reader(io, &reply);
    return reader.interface.takeByte() catch |err| switch (err) {
        error.EndOfStream => error.NoReply,
        error.ReadFailed => reader.err.?,
    };
}

test "a socket wakes its task with no manual registration, on a runtime that is fully parked" {
    var watchdog = Watchdog{ .what = "first byte to a parked runtime", .limit_ms = 10_000 };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try Runtime.init(testing.allocator, .{ .workers = 4, .spin_before_park_ns = 0 });
    defer rt.deinit();
    for (0..@as(usize, scaled(20, 4))) |round| {
        const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
        defer listener.close();
        const server = try rt.spawn(OneByteEcho{ .listener = listener });
        // Every worker parks: one in epoll_wait (no timers: no timeout), three on their futex.
        os.sleepNs(20 * std.time.ns_per_ms);
        // The connection, its byte and the reply come from a thread the runtime knows nothing of.
        const byte: u8 = @truncate(round *% 37 +% 1);
        try testing.expectEqual(byte, try plainClientEcho(try listener.localAddress(), byte));
        try testing.expectEqual(byte, try join(rt, anyerror!u8, server));
    }
}

/// Yields until `stop` is set or `limit_ns` passed; reports which.
const Spinner = struct {
    pub const Output = bool;
    stop: *std.atomic.Value(bool),
    deadline_ns: u64,
    polls: *std.atomic.Value(u32),
    yielding: ?ampere.task.YieldNow = null,

    pub fn poll(self: *Spinner, cx: *Context) Poll(bool) {
        _ = self.polls.fetchAdd(1, .release);
        while (true) {
            if (self.stop.load(.acquire)) return .{ .ready = true };
            if (time.nowNs() > self.deadline_ns) return .{ .ready = false };
            if (future.isNull(&self.yielding)) self.yielding = ampere.task.yieldNow();
            switch (self.yielding.?.poll(cx)) {
                .pending => return .pending,
                .ready => self.yielding = null,
            }
        }
    }
};

/// `OneByteEcho`, then sets `done`.
const EchoThenSignal = struct {
    pub const Output = anyerror!u8;
    echo: OneByteEcho,
    done: *std.atomic.Value(bool),
    pub fn poll(self: *EchoThenSignal, cx: *Context) Poll(Output) {
        const result = self.echo.poll(cx);
        if (result == .ready) self.done.store(true, .release);
        return result;
    }
    pub fn cancel(self: *EchoThenSignal) void {
        self.echo.cancel();
    }
};

test "I/O is not starved while every worker is busy (busy workers turn the driver)" {
    var watchdog = Watchdog{ .what = "I/O under a busy worker" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(1);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    var done = std.atomic.Value(bool).init(false);
    const echo = try rt.spawn(EchoThenSignal{ .echo = .{ .listener = listener }, .done = &done });
    // The only worker never runs out of work, so it never parks: only its periodic
    // non-blocking turns can notice the connection and the byte.
    var spinner_polls = std.atomic.Value(u32).init(0);
    const spinner = try rt.spawn(Spinner{ .stop = &done, .deadline_ns = time.nowNs() + 5 * std.time.ns_per_s, .polls = &spinner_polls });
    // Connect only once the worker is in its busy loop (it parked before, and a park turns the
    // driver: the connection must not arrive while it still could).
    while (spinner_polls.load(.acquire) < 1000) std.Thread.yield() catch {};
    try testing.expectEqual(@as(u8, 42), try plainClientEcho(try listener.localAddress(), 42));
    try testing.expectEqual(@as(u8, 42), try join(rt, anyerror!u8, echo));
    try testing.expect(try join(rt, bool, spinner)); // Stopped by the echo, not by its deadline.
}

/// A task that only doubles a number (the "outside spawn" of the parking test).
const Double = struct {
    pub const Output = u64;
    value: u64,
    pub fn poll(self: *Double, cx: *Context) Poll(u64) {
        _ = cx;
        return .{ .ready = self.value * 2 };
    }
};

const SpawnBeforeBlock = struct {
    var gate: HookWindow = .{};

    fn hook(parker: *Parker) void {
        _ = parker;
        gate.hold();
    }
};

test "lost wake-up: a spawn after the driver owner's last check, before it blocks in epoll_wait" {
    const rounds = scaled(30, 5);
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1, .spin_before_park_ns = 0 });
    defer rt.deinit();
    hook.armAnyThread(.parker_before_block, Parker, SpawnBeforeBlock.hook);
    defer hook.disarmAnyThread(.parker_before_block);
    for (0..rounds) |round| {
        SpawnBeforeBlock.gate.arm();
        var warm = try rt.spawn(Double{ .value = 1 }); // Run out of work, then park as owner.
        warm.detach();
        SpawnBeforeBlock.gate.waitHeld();
        var handle = try rt.spawn(Double{ .value = round }); // From outside: inject + unpark.
        SpawnBeforeBlock.gate.release();
        // A lost wake-up leaves the only worker in epoll_wait with no timeout: fail, not hang.
        const output = pollUntilReady(&handle, 5_000) orelse return error.TestTimedOut;
        try testing.expectEqual(@as(u64, 2 * round), try output);
    }
}

const DataBeforeClear = struct {
    driver: *ampere.io.Driver,
    peer: posix.fd_t,
    fn run(self: *DataBeforeClear) void {
        std.debug.assert(linux.write(self.peer, "late", 4) == 4);
        _ = self.driver.turn(0); // The event is dispatched before the stale clear.
    }
};

test "lost wake-up: data reported between a read's WouldBlock and its clear is not lost (tick)" {
    var driver: ampere.io.Driver = undefined;
    try driver.init(testing.allocator);
    defer driver.deinit();
    var fds: [2]posix.fd_t = undefined;
    try testing.expectEqual(@as(usize, 0), linux.socketpair(linux.AF.UNIX, linux.SOCK.STREAM | linux.SOCK.NONBLOCK | linux.SOCK.CLOEXEC, 0, &fds));
    defer os.close(fds[1]);
    _ = driver.turn(0); // Nothing registered yet.
    // Assumed readable (like an accepted socket), but nothing was sent yet: WouldBlock.
    const stream = TcpStream{ .registration = try ampere.io.Registration.init(&driver, fds[0], .{ .readable = true, .writable = true }) };
    defer stream.close();
    var window = DataBeforeClear{ .driver = &driver, .peer = fds[1] };
    hook.arm(.io_before_clear, &window, DataBeforeClear.run);
    defer hook.disarm();
    var buffer: [8]u8 = undefined;
    var read = stream.read(&buffer);
    defer read.cancel(); // Unlinks it if the test fails with the read still waiting.
    const waker = Waker.noop();
    var cx = Context.init(&waker);
    const result = read.poll(&cx);
    try testing.expect(hook.fired());
    // Clearing with the stale tick would erase the only edge the kernel reports for "late":
    // the read would wait forever.
    try testing.expect(result == .ready);
    try testing.expectEqual(@as(usize, 4), try result.ready);
    try testing.expectEqualStrings("late", buffer[0..4]);
}

// -- a socket closed while an operation is pending (issue 20, item 5) ---------------------------

/// Reads once from `stream` (which nobody writes to) and reports what the read returned. Its
/// `cancel` cancels the read but does not close the stream: the stream belongs to the test.
const PendingReader = struct {
    pub const Output = anyerror!usize;
    stream: TcpStream,
    buffer: [8]u8 = undefined,
    reading: ?TcpStream.Read = null,

    pub fn poll(self: *PendingReader, cx: *Context) Poll(Output) {
        if (future.isNull(&self.reading)) self.reading = self.stream.read(&self.buffer);
        switch (self.reading.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.reading = null;
                return .{ .ready = result };
            },
        }
    }

    pub fn cancel(self: *PendingReader) void {
        if (self.reading) |*r| r.cancel();
        self.reading = null;
    }
};

/// Occupies the only worker of a runtime until `release` is set (so that a task woken or
/// aborted meanwhile waits in the queue, deterministically).
const Occupier = struct {
    pub const Output = void;
    started: *std.atomic.Value(bool),
    release: *std.atomic.Value(bool),

    pub fn poll(self: *Occupier, cx: *Context) Poll(void) {
        _ = cx;
        self.started.store(true, .release);
        while (!self.release.load(.acquire)) std.Thread.yield() catch {};
        return .{ .ready = {} };
    }
};

fn waitForWaiter(stream: TcpStream) !void {
    var waited_ms: u32 = 0;
    while (!stream.registration.io.hasWaiters()) : (waited_ms += 1) {
        if (waited_ms > 5_000) return error.TestTimedOut;
        os.sleepNs(std.time.ns_per_ms);
    }
}

const CloseOrder = enum { abort_then_close, close_then_abort, close_only };

/// A 1-worker runtime; a task blocked in a read on `server`; the worker occupied; then abort
/// and close (or close alone) in `order` while the task waits in the queue; then the worker
/// runs the task's cancel (or poll). `output`: what its JoinHandle reports.
fn closeWhileReadPending(order: CloseOrder, output: *anyerror!usize) !void {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    defer listener.close();
    const client, const server = try connectedPair(rt, listener);
    defer client.close();
    const reader = try rt.spawn(PendingReader{ .stream = server });
    try waitForWaiter(server);
    var started = std.atomic.Value(bool).init(false);
    var release = std.atomic.Value(bool).init(false);
    var occupier = try rt.spawn(Occupier{ .started = &started, .release = &release });
    occupier.detach();
    while (!started.load(.acquire)) std.Thread.yield() catch {};
    switch (order) {
        .abort_then_close => {
            reader.abort();
            server.close();
        },
        .close_then_abort => {
            server.close();
            reader.abort();
        },
        .close_only => server.close(),
    }
    release.store(true, .release);
    output.* = join(rt, anyerror!usize, reader);
    // The server's descriptor is closed once the read let go of it: the client reads EOF.
    var buffer: [4]u8 = undefined;
    try testing.expectEqual(@as(usize, 0), try rt.blockOn(client.read(&buffer)));
}

test "abort of a task blocked in a read, then close of its stream before the cancel runs" {
    var watchdog = Watchdog{ .what = "abort then close" };
    try watchdog.start();
    defer watchdog.stop();
    var output: anyerror!usize = 0;
    try closeWhileReadPending(.abort_then_close, &output);
    try testing.expectError(error.Cancelled, output);
}

test "close of a stream with a read pending, then abort of the reading task before it runs" {
    var watchdog = Watchdog{ .what = "close then abort" };
    try watchdog.start();
    defer watchdog.stop();
    var output: anyerror!usize = 0;
    try closeWhileReadPending(.close_then_abort, &output);
    try testing.expectError(error.Cancelled, output);
}

test "close of a stream while another task's read is pending: the read ends with SocketClosed" {
    var watchdog = Watchdog{ .what = "close with a read pending" };
    try watchdog.start();
    defer watchdog.stop();
    var output: anyerror!usize = 0;
    try closeWhileReadPending(.close_only, &output);
    try testing.expectError(error.SocketClosed, output);
}

/// Accepts one connection and then reads from it forever; holds the stream. Its `cancel`
/// cancels what is pending but does not close the stream: the socket is left to the runtime's
/// shutdown. With `read` false it waits on a sleep instead, holding the stream with no
/// operation pending.
const Hoarder = struct {
    pub const Output = anyerror!void;
    listener: TcpListener,
    held: *std.atomic.Value(u32),
    read: bool,
    accepting: ?TcpListener.Accept = null,
    stream: ?TcpStream = null,
    reading: ?TcpStream.Read = null,
    sleeping: ?time.Sleep = null,
    buffer: [8]u8 = undefined,

    pub fn poll(self: *Hoarder, cx: *Context) Poll(Output) {
        if (self.stream == null) {
            if (future.isNull(&self.accepting)) self.accepting = self.listener.accept();
            switch (self.accepting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.accepting = null;
                    self.stream = result catch |err| return .{ .ready = err };
                    if (self.read) self.reading = self.stream.?.read(&self.buffer) else self.sleeping = time.sleep(3600 * std.time.ns_per_s);
                },
            }
        }
        const pending = if (self.reading) |*r| r.poll(cx) == .pending else self.sleeping.?.poll(cx) == .pending;
        _ = self.held.fetchAdd(1, .acq_rel);
        if (pending) return .pending;
        return .{ .ready = error.Unexpected }; // Nobody writes; nothing wakes the sleep.
    }

    pub fn cancel(self: *Hoarder) void {
        if (self.accepting) |*a| a.cancel();
        if (self.reading) |*r| r.cancel();
        if (self.sleeping) |*s| s.cancel();
        self.accepting = null;
        self.reading = null;
        self.sleeping = null;
        // self.stream is not closed: the runtime's shutdown must not leak it.
    }
};

test "a stream left open by a future cancelled at shutdown is closed and freed by deinit" {
    var watchdog = Watchdog{ .what = "shutdown with streams left open" };
    try watchdog.start();
    defer watchdog.stop();
    const before = try openFdCount();
    const io = testing.io;
    var clients: [4]std.Io.net.Stream = undefined;
    {
        const rt = try newRuntime(2);
        defer rt.deinit();
        var held = std.atomic.Value(u32).init(0);
        for (&clients, 0..) |*client, i| {
            const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
            defer listener.close();
            var hoarder = try rt.spawn(Hoarder{ .listener = listener, .held = &held, .read = i % 2 == 0 });
            hoarder.detach();
            const address = try listener.localAddress();
            client.* = try address.connect(io, .{ .mode = .stream });
            // A leaked server side would make the read below block: fail after 5 s instead.
            const limit = posix.timeval{ .sec = 5, .usec = 0 };
            try posix.setsockopt(client.socket.handle, posix.SOL.SOCKET, posix.SO.RCVTIMEO, std.mem.asBytes(&limit));
            var waited_ms: u32 = 0;
            while (held.load(.acquire) < i + 1) : (waited_ms += 1) {
                if (waited_ms > 5_000) return error.TestTimedOut;
                os.sleepNs(std.time.ns_per_ms);
            }
        }
    }
    // deinit closed the server sides the cancelled futures left open: each client reads EOF.
    for (&clients) |*client| {
        var buffer: [4]u8 = undefined;
        try testing.expectEqual(@as(usize, 0), try posix.read(client.socket.handle, &buffer));
        client.close(io);
    }
    try testing.expectEqual(before, try openFdCount());
    // (testing.allocator reports any ScheduledIo that deinit did not free.)
}

test "a stream held across deinit fails with RuntimeShutdown, and its close spares the descriptor that reused its number" {
    var watchdog = Watchdog{ .what = "stream held across deinit" };
    try watchdog.start();
    defer watchdog.stop();
    const rt = try newRuntime(2);
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
    const kept, const server = try connectedPair(rt, listener);
    server.close();
    listener.close();
    const kept_fd = kept.registration.fd();
    rt.deinit();
    // deinit closed it: the lowest free numbers are handed out again, so opening descriptors
    // until one gets `kept_fd` takes at most as many as deinit closed.
    var opened: [64]posix.fd_t = undefined;
    var count: usize = 0;
    defer for (opened[0..count]) |fd| os.close(fd);
    while (count < opened.len) {
        opened[count] = try openDevNull();
        count += 1;
        if (opened[count - 1] == kept_fd) break;
    }
    try testing.expectEqual(kept_fd, opened[count - 1]);
    var buffer: [4]u8 = undefined;
    var read = kept.read(&buffer);
    try testing.expectError(error.RuntimeShutdown, ampere.blockOnThread(&read));
    try testing.expectError(error.RuntimeShutdown, kept.setNodelay(true));
    kept.close(); // Must not close the /dev/null descriptor that now has its number.
    try testing.expectEqual(posix.E.SUCCESS, linux.errno(linux.fcntl(kept_fd, posix.F.GETFD, 0)));
}

const CloseAt = struct {
    stream: TcpStream,
    go: *std.atomic.Value(bool),
    delay_spins: u32,

    fn run(self: *CloseAt) void {
        while (!self.go.load(.acquire)) std.atomic.spinLoopHint();
        for (0..self.delay_spins) |_| std.atomic.spinLoopHint();
        self.stream.close();
    }
};

test "abort and close of a task's stream race from two threads: the read ends one way or the other, nothing leaks" {
    var watchdog = Watchdog{ .what = "abort racing close" };
    try watchdog.start();
    defer watchdog.stop();
    const seed = ampere.testing.seed();
    errdefer ampere.testing.reportSeed("abort racing close", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const before = try openFdCount();
    {
        const rt = try newRuntime(4);
        defer rt.deinit();
        const listener = try TcpListener.bindIn(ioOf(rt), loopback4(), .{});
        defer listener.close();
        var outcomes = [2]u32{ 0, 0 }; // Cancelled, SocketClosed
        for (0..@as(usize, scaled(300, 30))) |_| {
            const client, const server = try connectedPair(rt, listener);
            defer client.close();
            const reader = try rt.spawn(PendingReader{ .stream = server });
            try waitForWaiter(server);
            var go = std.atomic.Value(bool).init(false);
            var closer = CloseAt{ .stream = server, .go = &go, .delay_spins = prng.random().uintLessThan(u32, 2000) };
            const thread = try std.Thread.spawn(.{}, CloseAt.run, .{&closer});
            const abort_spins = prng.random().uintLessThan(u32, 8000);
            go.store(true, .release);
            for (0..abort_spins) |_| std.atomic.spinLoopHint();
            reader.abort();
            thread.join();
            if (join(rt, anyerror!usize, reader)) |_| {
                return error.ReadCompleted;
            } else |err| switch (err) {
                error.Cancelled => outcomes[0] += 1,
                error.SocketClosed => outcomes[1] += 1,
                else => return err,
            }
            // Whichever came first, the descriptor is closed once the read let go of it.
            var buffer: [4]u8 = undefined;
            try testing.expectEqual(@as(usize, 0), try rt.blockOn(client.read(&buffer)));
        }
        try testing.expect(outcomes[0] + outcomes[1] > 0);
    }
    try testing.expectEqual(before, try openFdCount());
}
