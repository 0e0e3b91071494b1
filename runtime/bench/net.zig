//! The net suite (TCP over loopback) on `ampere.net`, mirroring rust_bench/src/net.rs.
//!
//! Topology: a runtime with `num_workers` workers (`harness.Runtimes.net`, built once per
//! process), driven from a driver task as in Tiers 3–4 (`rt.spawn(driver)`, then `blockOn` of
//! its handle). Per case, untimed: the driver binds a listener on 127.0.0.1 port 0 and spawns
//! the echo server task, which accepts exactly the connections the case will open and runs
//! one `EchoConnection` task per connection (a 64 KiB buffer; read, write back exactly what
//! was read, until end of stream); then it awaits them all and returns the bytes echoed. The
//! client connections of the case are opened before the first iteration (except in
//! tcp_connect) and closed after the last; Nagle is off on both ends. After the last
//! iteration the driver checks the server's byte count.
//!
//! One op (BENCHMARKS.md, "Net suite"), verified inside the timed region on both sides:
//! - tcp_pingpong(size): one connection; write `size` bytes, read `size` bytes back, compare.
//!   Byte 0 carries the round and the last byte the iteration, so a stale echo fails.
//! - tcp_echo_conns(conns): `conns` client tasks spawned per iteration, each on its own
//!   connection doing NET_ROUNDS round trips of 64 B; ops = conns × NET_ROUNDS.
//! - tcp_connect: connect, (server accepts), set Nagle off, write 1 B, read it back, close.
//! - tcp_stream(size): a writer task writes NET_STREAM_BYTES in `size` chunks while a reader
//!   task reads the echo and checks every byte; ops = bytes.
//!
//! Zig has no async/await: every task is a hand-written future, and `Driver(B)` runs the
//! phases setup → (markStart → iteration → mark.stop → record)* → teardown of a benchmark
//! description `B`.

const std = @import("std");
const ampere = @import("ampere");
const harness = @import("harness.zig");

const Ctx = harness.Ctx;
const Error = harness.Error;
const Mark = harness.Mark;
const Context = ampere.Context;
const Poll = ampere.Poll;
const JoinHandle = ampere.JoinHandle;
const TcpListener = ampere.net.TcpListener;
const TcpStream = ampere.net.TcpStream;
const Allocator = std.mem.Allocator;

/// The echo server's read buffer (both sides).
pub const server_buffer_bytes: usize = 64 * 1024;
/// The tcp_stream reader's buffer (both sides).
pub const reader_buffer_bytes: usize = 64 * 1024;
/// Payload of one tcp_echo_conns round trip.
pub const conns_payload_bytes: usize = 64;
/// The parameters of the suite (fixed by BENCHMARKS.md).
pub const pingpong_sizes = [_]u64{ 64, 4096, 65536 };
pub const echo_conns = [_]u64{ 1, 16, 128 };
pub const stream_chunk_bytes: u64 = 1 << 20;

/// Every way an op can fail (the message names it).
pub const NetError = ampere.net.ConnectError || ampere.net.AcceptError || ampere.net.ReadExactError ||
    ampere.net.WriteError || ampere.net.SocketError || ampere.JoinError || Allocator.Error || error{ EchoMismatch, ShortEcho };

/// Byte `index` of a payload pattern (both sides): no short period, so a misplaced chunk fails.
pub fn patternByte(index: u64) u8 {
    return @truncate((index *% 0x9E3779B1) >> 13);
}

// -- the echo server ------------------------------------------------------------------------

/// One accepted connection: reads into a 64 KiB buffer (allocated on its first poll, not
/// zeroed: only the bytes a read wrote are ever used; the Rust side reads into a `Vec`'s spare
/// capacity with `read_buf`, also without zeroing) and writes back exactly what it read, until
/// end of stream. Returns the bytes echoed.
const EchoConnection = struct {
    pub const Output = NetError!u64;
    allocator: Allocator,
    stream: TcpStream,
    buffer: ?[]u8 = null,
    reading: ?TcpStream.Read = null,
    writing: ?TcpStream.WriteAll = null,
    total: u64 = 0,

    pub fn poll(self: *EchoConnection, cx: *Context) Poll(Output) {
        const buffer = self.buffer orelse blk: {
            const fresh = self.allocator.alloc(u8, server_buffer_bytes) catch |err| return self.finish(err);
            self.buffer = fresh;
            break :blk fresh;
        };
        // Bounded: every pass moves bytes or returns.
        while (true) {
            if (self.writing) |*w| switch (w.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.writing = null;
                    result catch |err| return self.finish(err);
                },
            };
            if (ampere.future.isNull(&self.reading)) self.reading = self.stream.read(buffer);
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    const count = result catch |err| return self.finish(err);
                    if (count == 0) return self.finish(self.total);
                    self.total += count;
                    self.writing = self.stream.writeAll(buffer[0..count]);
                },
            }
        }
    }

    fn finish(self: *EchoConnection, output: Output) Poll(Output) {
        self.release();
        return .{ .ready = output };
    }

    fn release(self: *EchoConnection) void {
        if (self.buffer) |b| self.allocator.free(b);
        self.buffer = null;
        self.stream.close();
    }

    pub fn cancel(self: *EchoConnection) void {
        if (self.reading) |*r| r.cancel();
        if (self.writing) |*w| w.cancel();
        self.reading = null;
        self.writing = null;
        self.release();
    }
};

/// Accepts `expected` connections (Nagle off), one `EchoConnection` task each; closes the
/// listener; awaits the connections in accept order and returns the bytes they echoed.
const EchoServer = struct {
    pub const Output = NetError!u64;
    allocator: Allocator,
    listener: ?TcpListener,
    expected: u64,
    handles: ?[]JoinHandle(EchoConnection.Output) = null,
    accepting: ?TcpListener.Accept = null,
    accepted: u64 = 0,
    joined: u64 = 0,
    total: u64 = 0,

    pub fn poll(self: *EchoServer, cx: *Context) Poll(Output) {
        const handles = self.handles orelse blk: {
            const fresh = self.allocator.alloc(JoinHandle(EchoConnection.Output), @intCast(self.expected)) catch |err| return .{ .ready = err };
            self.handles = fresh;
            break :blk fresh;
        };
        while (self.accepted < self.expected) {
            if (ampere.future.isNull(&self.accepting)) self.accepting = self.listener.?.accept();
            switch (self.accepting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.accepting = null;
                    const stream = result catch |err| return .{ .ready = err };
                    stream.setNodelay(true) catch |err| {
                        stream.close();
                        return .{ .ready = err };
                    };
                    handles[@intCast(self.accepted)] = ampere.spawn(EchoConnection{ .allocator = self.allocator, .stream = stream }) catch |err| {
                        stream.close();
                        return .{ .ready = switch (err) {
                            error.OutOfMemory => error.OutOfMemory,
                            error.Shutdown => error.RuntimeShutdown,
                        } };
                    };
                    self.accepted += 1;
                },
            }
        }
        if (self.listener) |l| l.close();
        self.listener = null;
        while (self.joined < self.expected) {
            switch (handles[@intCast(self.joined)].poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.joined += 1;
                    self.total += result catch |err| return .{ .ready = err };
                },
            }
        }
        self.allocator.free(handles);
        self.handles = null;
        return .{ .ready = self.total };
    }

    pub fn cancel(self: *EchoServer) void {
        if (self.accepting) |*a| a.cancel();
        self.accepting = null;
        if (self.listener) |l| l.close();
        self.listener = null;
        if (self.handles) |handles| {
            for (handles[@intCast(self.joined)..@intCast(self.accepted)]) |*h| h.detach();
            self.allocator.free(handles);
        }
        self.handles = null;
    }
};

// -- the driver -------------------------------------------------------------------------------

/// What every benchmark shares: the server, its address, and the streams the case opened.
const Common = struct {
    server: ?JoinHandle(EchoServer.Output) = null,
    address: ampere.net.Address = undefined,
    /// Streams opened in setup (closed in teardown); `connected` of them so far.
    streams: []TcpStream = &.{},
    connected: usize = 0,
    connecting: ?TcpStream.Connect = null,

    /// Binds the listener and spawns the server for `expected` connections.
    fn start(self: *Common, ctx: *Ctx, expected: u64, streams: usize) Error!void {
        const listener = TcpListener.bind(.{ .ip4 = .loopback(0) }) catch |err|
            return ctx.fail("bind failed: {s}", .{@errorName(err)});
        self.address = listener.localAddress() catch |err| {
            listener.close();
            return ctx.fail("local address: {s}", .{@errorName(err)});
        };
        self.streams = ctx.allocator().alloc(TcpStream, streams) catch {
            listener.close();
            return ctx.fail("out of memory", .{});
        };
        self.server = ampere.spawn(EchoServer{ .allocator = ctx.allocator(), .listener = listener, .expected = expected }) catch |err| {
            listener.close();
            return ctx.fail("cannot spawn the server: {s}", .{@errorName(err)});
        };
    }

    /// Opens the setup connections one after the other (Nagle off).
    fn pollConnect(self: *Common, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        while (self.connected < self.streams.len) {
            if (ampere.future.isNull(&self.connecting)) self.connecting = TcpStream.connect(self.address);
            switch (self.connecting.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.connecting = null;
                    const stream = result catch |err| return .{ .ready = ctx.fail("connect failed: {s}", .{@errorName(err)}) };
                    self.streams[self.connected] = stream;
                    self.connected += 1;
                    stream.setNodelay(true) catch |err| return .{ .ready = ctx.fail("TCP_NODELAY: {s}", .{@errorName(err)}) };
                },
            }
        }
        return .{ .ready = {} };
    }

    /// Closes the setup connections and awaits the server: it must have echoed `bytes`.
    fn pollFinish(self: *Common, ctx: *Ctx, cx: *Context, bytes: u64) Poll(Error!void) {
        for (self.streams[0..self.connected]) |s| s.close();
        self.connected = 0;
        if (self.streams.len > 0) ctx.allocator().free(self.streams);
        self.streams = &.{};
        switch (self.server.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.server = null;
                const echoed = result catch |err| return .{ .ready = ctx.fail("echo server failed: {s}", .{@errorName(err)}) };
                return .{ .ready = ctx.expectEq("bytes echoed by the server", echoed, bytes) };
            },
        }
    }
};

/// The driver task of benchmark `B`:
///
///     B.setup(ctx) (untimed; binds, spawns the server)   B.pollConnect (untimed)
///     per iteration k: B.begin(k) → markStart → B.pollIteration until ready → mark.stop → record
///     B.pollTeardown (closes, awaits the server, checks its byte count)
///
/// `B.pollIteration` verifies each op as it goes and fails with a message in `ctx`.
fn Driver(comptime B: type) type {
    return struct {
        const Self = @This();
        /// True when every iteration passed; otherwise `ctx` holds the message.
        pub const Output = bool;

        bench: B,
        ctx: *Ctx,
        phase: enum { setup, connect, begin, measure, teardown } = .setup,
        iteration: u64 = 0,
        mark: Mark = undefined,

        pub fn poll(self: *Self, cx: *Context) Poll(Output) {
            const c = self.ctx.constants;
            // Bounded: every pass advances a phase or returns.
            while (true) switch (self.phase) {
                .setup => {
                    self.bench.setup(self.ctx) catch return .{ .ready = false };
                    self.phase = .connect;
                },
                .connect => switch (self.bench.common.pollConnect(self.ctx, cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        result catch return .{ .ready = false };
                        self.phase = .begin;
                    },
                },
                .begin => {
                    if (self.iteration == c.warmup + c.iterations) {
                        self.phase = .teardown;
                        continue;
                    }
                    self.bench.begin(self.iteration);
                    self.ctx.metricsBegin();
                    self.mark = self.ctx.markStart();
                    self.phase = .measure;
                },
                .measure => switch (self.bench.pollIteration(self.ctx, cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        const sample = self.mark.stop();
                        self.ctx.metricsEnd(self.iteration, c.warmup);
                        result catch return .{ .ready = false };
                        self.ctx.record(self.iteration, c.warmup, sample);
                        self.iteration += 1;
                        self.phase = .begin;
                    },
                },
                .teardown => switch (self.bench.pollTeardown(self.ctx, cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        result catch return .{ .ready = false };
                        return .{ .ready = true };
                    },
                },
            };
        }
    };
}

/// Runs `bench` as a driver task on the net runtime.
fn drive(ctx: *Ctx, bench: anytype) Error!void {
    const rt = try ctx.netRuntime();
    const handle = rt.spawn(Driver(@TypeOf(bench)){ .bench = bench, .ctx = ctx }) catch |err|
        return ctx.fail("cannot spawn the driver: {s}", .{@errorName(err)});
    const passed = rt.blockOn(handle) catch |err| return ctx.fail("driver task failed: {s}", .{@errorName(err)});
    if (!passed) return error.BenchmarkFailed; // the message is in ctx
}

fn opFailed(ctx: *Ctx, what: []const u8, err: anyerror) Poll(Error!void) {
    return .{ .ready = ctx.fail("{s} failed: {s}", .{ what, @errorName(err) }) };
}

// -- tcp_pingpong -----------------------------------------------------------------------------

const Pingpong = struct {
    common: Common = .{},
    size: usize,
    rounds: u64,
    iterations_total: u64,
    out: []u8 = &.{},
    back: []u8 = &.{},
    iteration: u64 = 0,
    round: u64 = 0,
    writing: ?TcpStream.WriteAll = null,
    reading: ?TcpStream.ReadExact = null,

    fn setup(self: *Pingpong, ctx: *Ctx) Error!void {
        const allocator = ctx.allocator();
        self.out = allocator.alloc(u8, self.size) catch return ctx.fail("out of memory", .{});
        self.back = allocator.alloc(u8, self.size) catch return ctx.fail("out of memory", .{});
        for (self.out, 0..) |*b, i| b.* = patternByte(i);
        @memset(self.back, 0);
        try self.common.start(ctx, 1, 1);
    }

    fn begin(self: *Pingpong, iteration: u64) void {
        self.iteration = iteration;
        self.round = 0;
    }

    fn pollIteration(self: *Pingpong, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        const stream = self.common.streams[0];
        while (self.round < self.rounds) {
            if (ampere.future.isNull(&self.writing) and ampere.future.isNull(&self.reading)) {
                self.out[0] = @truncate(self.round);
                self.out[self.size - 1] = @truncate(self.iteration);
                self.writing = stream.writeAll(self.out);
            }
            if (self.writing) |*w| switch (w.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.writing = null;
                    result catch |err| return opFailed(ctx, "write", err);
                    self.reading = stream.readExact(self.back);
                },
            };
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    result catch |err| return opFailed(ctx, "read", err);
                    if (!std.mem.eql(u8, self.back, self.out)) return .{ .ready = ctx.fail("round {d}: the echo differs from what was sent", .{self.round}) };
                    self.round += 1;
                },
            }
        }
        return .{ .ready = {} };
    }

    fn pollTeardown(self: *Pingpong, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        const result = self.common.pollFinish(ctx, cx, self.size * self.rounds * self.iterations_total);
        if (result == .ready) {
            ctx.allocator().free(self.out);
            ctx.allocator().free(self.back);
        }
        return result;
    }
};

pub fn tcpPingpong(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, Pingpong{ .size = @intCast(ctx.case.size), .rounds = c.net_rounds, .iterations_total = c.warmup + c.iterations });
}

// -- tcp_echo_conns ---------------------------------------------------------------------------

/// One client of tcp_echo_conns: `rounds` round trips of 64 B on its connection. Byte 0
/// carries the round, byte 1 the client id. Returns the round trips done.
const ConnsClient = struct {
    pub const Output = NetError!u64;
    stream: TcpStream,
    id: u64,
    rounds: u64,
    out: [conns_payload_bytes]u8 = undefined,
    back: [conns_payload_bytes]u8 = undefined,
    round: u64 = 0,
    started: bool = false,
    writing: ?TcpStream.WriteAll = null,
    reading: ?TcpStream.ReadExact = null,

    pub fn poll(self: *ConnsClient, cx: *Context) Poll(Output) {
        if (!self.started) {
            self.started = true;
            for (&self.out, 0..) |*b, i| b.* = patternByte(i);
            @memset(&self.back, 0);
            self.out[1] = @truncate(self.id);
        }
        while (self.round < self.rounds) {
            if (ampere.future.isNull(&self.writing) and ampere.future.isNull(&self.reading)) {
                self.out[0] = @truncate(self.round);
                self.writing = self.stream.writeAll(&self.out);
            }
            if (self.writing) |*w| switch (w.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.writing = null;
                    result catch |err| return .{ .ready = err };
                    self.reading = self.stream.readExact(&self.back);
                },
            };
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    result catch |err| return .{ .ready = err };
                    if (!std.mem.eql(u8, &self.back, &self.out)) return .{ .ready = error.EchoMismatch };
                    self.round += 1;
                },
            }
        }
        return .{ .ready = self.rounds };
    }

    pub fn cancel(self: *ConnsClient) void {
        if (self.writing) |*w| w.cancel();
        if (self.reading) |*r| r.cancel();
        self.writing = null;
        self.reading = null;
    }
};

const EchoConns = struct {
    common: Common = .{},
    conns: usize,
    rounds: u64,
    iterations_total: u64,
    handles: []JoinHandle(ConnsClient.Output) = &.{},
    spawned: bool = false,
    joined: usize = 0,

    fn setup(self: *EchoConns, ctx: *Ctx) Error!void {
        self.handles = ctx.allocator().alloc(JoinHandle(ConnsClient.Output), self.conns) catch return ctx.fail("out of memory", .{});
        try self.common.start(ctx, self.conns, self.conns);
    }

    fn begin(self: *EchoConns, iteration: u64) void {
        _ = iteration;
        self.spawned = false;
        self.joined = 0;
    }

    fn pollIteration(self: *EchoConns, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        if (!self.spawned) {
            self.spawned = true;
            for (self.handles, self.common.streams, 0..) |*h, stream, id| {
                h.* = ampere.spawn(ConnsClient{ .stream = stream, .id = id, .rounds = self.rounds }) catch |err|
                    return .{ .ready = ctx.fail("spawn failed: {s}", .{@errorName(err)}) };
            }
        }
        while (self.joined < self.conns) {
            switch (self.handles[self.joined].poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.joined += 1;
                    const rounds = result catch |err| return .{ .ready = ctx.fail("client {d} failed: {s}", .{ self.joined - 1, @errorName(err) }) };
                    if (rounds != self.rounds) return .{ .ready = ctx.expectEq("round trips of a client", rounds, self.rounds) };
                },
            }
        }
        return .{ .ready = {} };
    }

    fn pollTeardown(self: *EchoConns, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        const bytes = conns_payload_bytes * self.rounds * self.conns * self.iterations_total;
        const result = self.common.pollFinish(ctx, cx, bytes);
        if (result == .ready) ctx.allocator().free(self.handles);
        return result;
    }
};

pub fn tcpEchoConns(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, EchoConns{ .conns = @intCast(ctx.case.n), .rounds = c.net_rounds, .iterations_total = c.warmup + c.iterations });
}

// -- tcp_connect ------------------------------------------------------------------------------

const Connect = struct {
    common: Common = .{},
    ops: u64,
    iterations_total: u64,
    op: u64 = 0,
    connecting: ?TcpStream.Connect = null,
    stream: ?TcpStream = null,
    writing: ?TcpStream.WriteAll = null,
    reading: ?TcpStream.ReadExact = null,
    out: [1]u8 = undefined,
    back: [1]u8 = undefined,

    fn setup(self: *Connect, ctx: *Ctx) Error!void {
        try self.common.start(ctx, self.ops * self.iterations_total, 0);
    }

    fn begin(self: *Connect, iteration: u64) void {
        _ = iteration;
        self.op = 0;
    }

    fn pollIteration(self: *Connect, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        while (self.op < self.ops) {
            if (self.stream == null) {
                if (ampere.future.isNull(&self.connecting)) self.connecting = TcpStream.connect(self.common.address);
                switch (self.connecting.?.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        self.connecting = null;
                        const stream = result catch |err| return opFailed(ctx, "connect", err);
                        self.stream = stream;
                        stream.setNodelay(true) catch |err| return opFailed(ctx, "TCP_NODELAY", err);
                        self.out[0] = @truncate(self.op);
                        self.back[0] = ~self.out[0];
                        self.writing = stream.writeAll(&self.out);
                    },
                }
            }
            const stream = self.stream.?;
            if (self.writing) |*w| switch (w.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.writing = null;
                    result catch |err| return opFailed(ctx, "write", err);
                    self.reading = stream.readExact(&self.back);
                },
            };
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    result catch |err| return opFailed(ctx, "read", err);
                    if (self.back[0] != self.out[0]) return .{ .ready = ctx.fail("op {d}: the echoed byte differs", .{self.op}) };
                    stream.close();
                    self.stream = null;
                    self.op += 1;
                },
            }
        }
        return .{ .ready = {} };
    }

    fn pollTeardown(self: *Connect, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        return self.common.pollFinish(ctx, cx, self.ops * self.iterations_total);
    }
};

pub fn tcpConnect(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, Connect{ .ops = c.net_connect_ops, .iterations_total = c.warmup + c.iterations });
}

// -- tcp_stream -------------------------------------------------------------------------------

/// Writes `total` bytes of `chunk` in chunk-sized pieces (the last one shorter).
const StreamWriter = struct {
    pub const Output = NetError!u64;
    stream: TcpStream,
    chunk: []const u8,
    total: u64,
    written: u64 = 0,
    writing: ?TcpStream.WriteAll = null,

    pub fn poll(self: *StreamWriter, cx: *Context) Poll(Output) {
        while (self.written < self.total) {
            if (ampere.future.isNull(&self.writing)) {
                const piece: usize = @intCast(@min(self.total - self.written, self.chunk.len));
                self.writing = self.stream.writeAll(self.chunk[0..piece]);
            }
            switch (self.writing.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.written += self.writing.?.bytes.len;
                    self.writing = null;
                    result catch |err| return .{ .ready = err };
                },
            }
        }
        return .{ .ready = self.written };
    }

    pub fn cancel(self: *StreamWriter) void {
        if (self.writing) |*w| w.cancel();
        self.writing = null;
    }
};

/// Reads `total` bytes of the echo, checking each against `chunk` at its stream offset.
const StreamReader = struct {
    pub const Output = NetError!u64;
    stream: TcpStream,
    chunk: []const u8,
    buffer: []u8,
    total: u64,
    received: u64 = 0,
    reading: ?TcpStream.Read = null,

    pub fn poll(self: *StreamReader, cx: *Context) Poll(Output) {
        while (self.received < self.total) {
            if (ampere.future.isNull(&self.reading)) self.reading = self.stream.read(self.buffer);
            switch (self.reading.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.reading = null;
                    const count = result catch |err| return .{ .ready = err };
                    if (count == 0) return .{ .ready = error.ShortEcho };
                    if (!matchesChunk(self.chunk, self.received, self.buffer[0..count])) return .{ .ready = error.EchoMismatch };
                    self.received += count;
                },
            }
        }
        return .{ .ready = self.received };
    }

    pub fn cancel(self: *StreamReader) void {
        if (self.reading) |*r| r.cancel();
        self.reading = null;
    }
};

/// Whether `bytes`, found at stream offset `offset`, are the stream of repeated `chunk`s.
pub fn matchesChunk(chunk: []const u8, offset: u64, bytes: []const u8) bool {
    var done: usize = 0;
    // Bounded: every pass consumes at least one byte.
    while (done < bytes.len) {
        const position: usize = @intCast((offset + done) % chunk.len);
        const piece = @min(bytes.len - done, chunk.len - position);
        if (!std.mem.eql(u8, bytes[done..][0..piece], chunk[position..][0..piece])) return false;
        done += piece;
    }
    return true;
}

const Stream = struct {
    common: Common = .{},
    size: usize,
    total: u64,
    iterations_total: u64,
    chunk: []u8 = &.{},
    buffer: []u8 = &.{},
    writer: ?JoinHandle(StreamWriter.Output) = null,
    reader: ?JoinHandle(StreamReader.Output) = null,
    spawned: bool = false,

    fn setup(self: *Stream, ctx: *Ctx) Error!void {
        const allocator = ctx.allocator();
        self.chunk = allocator.alloc(u8, self.size) catch return ctx.fail("out of memory", .{});
        for (self.chunk, 0..) |*b, i| b.* = patternByte(i);
        self.buffer = allocator.alloc(u8, reader_buffer_bytes) catch return ctx.fail("out of memory", .{});
        @memset(self.buffer, 0);
        try self.common.start(ctx, 1, 1);
    }

    fn begin(self: *Stream, iteration: u64) void {
        _ = iteration;
        self.spawned = false;
    }

    fn pollIteration(self: *Stream, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        const stream = self.common.streams[0];
        if (!self.spawned) {
            self.spawned = true;
            self.writer = ampere.spawn(StreamWriter{ .stream = stream, .chunk = self.chunk, .total = self.total }) catch |err|
                return .{ .ready = ctx.fail("spawn failed: {s}", .{@errorName(err)}) };
            self.reader = ampere.spawn(StreamReader{ .stream = stream, .chunk = self.chunk, .buffer = self.buffer, .total = self.total }) catch |err|
                return .{ .ready = ctx.fail("spawn failed: {s}", .{@errorName(err)}) };
        }
        if (self.writer) |*w| switch (w.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.writer = null;
                const written = result catch |err| return opFailed(ctx, "the writer", err);
                if (written != self.total) return .{ .ready = ctx.expectEq("bytes written", written, self.total) };
            },
        };
        switch (self.reader.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.reader = null;
                const received = result catch |err| return opFailed(ctx, "the reader", err);
                return .{ .ready = ctx.expectEq("bytes received", received, self.total) };
            },
        }
    }

    fn pollTeardown(self: *Stream, ctx: *Ctx, cx: *Context) Poll(Error!void) {
        const result = self.common.pollFinish(ctx, cx, self.total * self.iterations_total);
        if (result == .ready) {
            ctx.allocator().free(self.chunk);
            ctx.allocator().free(self.buffer);
        }
        return result;
    }
};

pub fn tcpStream(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, Stream{ .size = @intCast(ctx.case.size), .total = c.net_stream_bytes, .iterations_total = c.warmup + c.iterations });
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;
const constants = @import("constants.zig");

test "every net benchmark runs and verifies itself (quick sizes)" {
    var diag = constants.Diagnostic{};
    var c = try constants.Constants.load(testing.allocator, "quick", &diag);
    c.net_rounds = 5;
    c.net_connect_ops = 5;
    c.net_stream_bytes = 3 * 65536 + 17;
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    const cases = [_]struct { harness.Case, *const fn (*Ctx) Error!void }{
        .{ harness.Case.net("tcp_pingpong", "size", 4096, c.net_rounds, c.num_workers), tcpPingpong },
        .{ harness.Case.net("tcp_echo_conns", "conns", 3, 3 * c.net_rounds, c.num_workers), tcpEchoConns },
        .{ harness.Case.net("tcp_connect", "", 0, c.net_connect_ops, c.num_workers), tcpConnect },
        .{ harness.Case.net("tcp_stream", "size", 65536, c.net_stream_bytes, c.num_workers), tcpStream },
    };
    for (&cases) |*entry| {
        var samples: [3]harness.Sample = undefined;
        var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &entry[0], .samples = &samples, .runtimes = &runtimes };
        entry[1](&ctx) catch |err| {
            std.debug.print("{s}: {s}\n", .{ entry[0].name, ctx.message() });
            return err;
        };
        try testing.expectEqual(@as(usize, c.iterations), ctx.recorded().len);
    }
}

test "the stream check finds a misplaced byte across chunk boundaries" {
    var chunk: [10]u8 = undefined;
    for (&chunk, 0..) |*b, i| b.* = patternByte(i);
    var stream: [25]u8 = undefined;
    for (&stream, 0..) |*b, i| b.* = chunk[i % chunk.len];
    try testing.expect(matchesChunk(&chunk, 0, &stream));
    try testing.expect(matchesChunk(&chunk, 7, stream[7..]));
    try testing.expect(!matchesChunk(&chunk, 6, stream[7..]));
    stream[13] ^= 1;
    try testing.expect(!matchesChunk(&chunk, 0, &stream));
}
