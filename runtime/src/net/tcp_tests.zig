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
const hook = @import("../sync/hook.zig");
const Parker = @import("../Parker.zig");

// -- helpers ------------------------------------------------------------------------------------

fn newRuntime(workers: u32) !*Runtime {
    return Runtime.init(testing.allocator, .{ .workers = workers });
}

fn ioOf(rt: *Runtime) *ampere.io.Driver {
    return &rt.scheduler.shared.io;
}

fn loopback4() net.Address {
    return net.Address.initIp4(.{ 127, 0, 0, 1 }, 0);
}

fn loopback6() net.Address {
    return net.Address.initIp6(.{0} ** 15 ++ .{1}, 0, 0, 0);
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
            std.Thread.sleep(std.time.ns_per_ms);
        }
    }

    fn stop(self: *Watchdog) void {
        self.done.store(true, .release);
        self.thread.join();
    }
};

/// Open file descriptors of this process (entries of /proc/self/fd, minus the one listing it).
fn openFdCount() !usize {
    var dir = try std.fs.openDirAbsolute("/proc/self/fd", .{ .iterate = true });
    defer dir.close();
    var count: usize = 0;
    var it = dir.iterate();
    while (try it.next()) |_| count += 1;
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

/// Polls `f` on the calling thread until ready, or fails after `limit_ms` (for futures that
/// need no runtime worker to make progress, with a parker-backed waker).
fn pollUntilReady(f: anytype, limit_ms: u32) !@TypeOf(f.*).Output {
    var parker = Parker{};
    const waker = parker.waker();
    var cx = Context.init(&waker);
    var waited_ms: u32 = 0;
    while (waited_ms < limit_ms) : (waited_ms += 1) {
        switch (f.poll(&cx)) {
            .ready => |value| return value,
            .pending => _ = parker.parkTimeout(std.time.ns_per_ms),
        }
    }
    return error.TestTimedOut;
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
            std.Thread.sleep(std.time.ns_per_ms);
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
            if (self.reading == null) self.reading = self.stream.read(&self.buffer);
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
            if (self.accepting == null) self.accepting = self.listener.accept();
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
            if (self.connecting == null) self.connecting = TcpStream.connect(self.address);
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
            if (self.writing == null and self.reading == null) {
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
    const listener = try TcpListener.bindIn(ioOf(rt), address);
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
    const listener = TcpListener.bindIn(ioOf(rt), loopback6()) catch |err| switch (err) {
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
    const listener = try TcpListener.bindIn(ioOf(rt), loopback4());
    const address = try listener.localAddress();
    listener.close();
    try testing.expectError(error.ConnectionRefused, rt.blockOn(TcpStream.connect(address)));
}
