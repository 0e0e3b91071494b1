//! The io suite (runtime/bench/README.md, "Io suite"): benchmarks written once against
//! `std.Io`, built once per implementation (`zig.threaded`, `zio`, `ampere.io`; io_impl.zig).
//! Tokio runs the twin of every row (rust_bench/src/io.rs).
//!
//! Every benchmark gets the harness context (`Ctx`: constants, samples, the counting
//! allocator) and a `std.Io`, and touches nothing else: no implementation-specific call, so the
//! code each implementation runs is literally the same. It runs `warmup + iterations`
//! iterations; each is timed as a whole (`Ctx.markStart` … `Mark.stop`), from before the first
//! task is spawned to after the last is awaited, and checked after `stop`: a benchmark that
//! did not do its work fails (exit 1) instead of reporting a time.
//!
//! Concurrency: every task is started with `io.concurrent` / `Group.concurrent`, never with
//! `io.async`, because every row needs its tasks to run at the same time (a queue partner, a
//! mutex holder, 10,000 sleepers): `async` may run the task inline on the caller, which is a
//! deadlock for a queue ping-pong and 10,000 sequential sleeps for io_sleep. A task can only
//! return `error.Canceled`, so tasks report other failures through `Failures`, which the
//! driver checks after the iteration.
//!
//! TCP rows: an echo server on the same `Io` (`EchoServer`): an accept task that runs one
//! echo task per connection in a `Group` (read what is available into a 64 KiB buffer, write
//! it back, until end of stream). Nagle is off on both ends (`setNoDelay`, the one system call
//! made outside `std.Io`, which has no socket options; the same `setsockopt` for every
//! implementation). The accept task stops when `stop` is set and one more connection wakes it.

const std = @import("std");
const harness = @import("harness.zig");

const Io = std.Io;
const Ctx = harness.Ctx;
const Error = harness.Error;
const Mark = harness.Mark;
const Allocator = std.mem.Allocator;

/// The parameters of the suite (BENCHMARKS.md, "Io suite"); the same in rust_bench/src/io.rs.
pub const queue_pairs = [_]u64{ 1, 100 };
pub const sleep_ms = [_]u64{ 0, 10 };
pub const pingpong_sizes = [_]u64{ 64, 4096 };
pub const echo_conns = [_]u64{ 16, 128 };
/// Payload of one io_tcp_echo_conns round trip.
pub const conns_payload_bytes: usize = 64;
/// The echo server's read buffer, per connection (both sides).
pub const server_buffer_bytes: usize = 64 * 1024;

/// `ctx.markStart()`, right after the runtime's event counts are taken (`--metrics`, which only
/// the ampere.io build records: a no-op otherwise), outside the timed region.
inline fn startTimed(ctx: *Ctx) Mark {
    ctx.metricsBegin();
    return ctx.markStart();
}

/// `mark.stop()` of iteration `i`, then the event counts (untimed; summed when `i` is measured).
inline fn stopTimed(ctx: *Ctx, mark: Mark, i: u64) harness.Sample {
    const sample = mark.stop();
    ctx.metricsEnd(i, ctx.constants.warmup);
    return sample;
}

/// Failures of tasks, which can only return `error.Canceled`: a count and the first error.
const Failures = struct {
    count: std.atomic.Value(u32) = .init(0),
    /// `@intFromError` of the first failure, 0 while none.
    first: std.atomic.Value(u16) = .init(0),

    fn note(self: *Failures, err: anyerror) void {
        // Monotonic: the driver reads both only after awaiting the task (the await orders them).
        _ = self.first.cmpxchgStrong(0, @intFromError(err), .monotonic, .monotonic);
        _ = self.count.fetchAdd(1, .monotonic);
    }

    fn check(self: *Failures, ctx: *Ctx, what: []const u8) Error!void {
        const count = self.count.load(.monotonic);
        if (count == 0) return;
        const name = @errorName(@errorFromInt(self.first.load(.monotonic)));
        return ctx.fail("{s}: {d} task(s) failed, first with {s}", .{ what, count, name });
    }
};

/// The cases (benchmark × param) of io benchmark `name` with their ops per iteration, into
/// `out`; the io program (io_main.zig) and the native rows of ampere_bench (io_native.zig)
/// both list their cases with it, and rust_bench/src/io.rs `cases` is its twin.
pub fn cases(name: []const u8, c: *const harness.Constants, out: *[2]harness.Case) []const harness.Case {
    const eql = std.mem.eql;
    const Case = harness.Case;
    if (eql(u8, name, "io_mutex_contended")) {
        out[0] = Case.io(name, "tasks", c.io_mutex_tasks, c.io_mutex_tasks * (c.async_ops / c.io_mutex_tasks));
        return out[0..1];
    } else if (eql(u8, name, "io_queue_pingpong")) {
        for (queue_pairs, out) |pairs, *case| case.* = Case.io(name, "pairs", pairs, pairs * pingpongRounds(c.ping_pong_rounds, pairs));
        return out[0..queue_pairs.len];
    } else if (eql(u8, name, "io_fan_in")) {
        out[0] = Case.io(name, "producers", c.io_fan_tasks, fanItems(c.io_fan_items, c.io_fan_tasks));
        return out[0..1];
    } else if (eql(u8, name, "io_fan_out")) {
        out[0] = Case.io(name, "consumers", c.io_fan_tasks, fanItems(c.io_fan_items, c.io_fan_tasks));
        return out[0..1];
    } else if (eql(u8, name, "io_spawn")) {
        out[0] = Case.io(name, "", 0, c.task_ops);
        return out[0..1];
    } else if (eql(u8, name, "io_spawn_group")) {
        out[0] = Case.io(name, "n", c.io_group_tasks, c.io_group_tasks);
        return out[0..1];
    } else if (eql(u8, name, "io_sleep")) {
        for (sleep_ms, out) |ms, *case| case.* = Case.io(name, "d_ms", ms, c.io_sleep_tasks);
        return out[0..sleep_ms.len];
    } else if (eql(u8, name, "io_tcp_pingpong")) {
        for (pingpong_sizes, out) |size, *case| case.* = Case.io(name, "size", size, c.io_net_rounds);
        return out[0..pingpong_sizes.len];
    } else if (eql(u8, name, "io_tcp_echo_conns")) {
        for (echo_conns, out) |conns, *case| case.* = Case.io(name, "conns", conns, conns * c.io_net_rounds);
        return out[0..echo_conns.len];
    }
    std.debug.assert(eql(u8, name, "io_tcp_connect"));
    out[0] = Case.io(name, "", 0, c.io_connect_ops);
    return out[0..1];
}

fn totalIterations(ctx: *const Ctx) u64 {
    return ctx.constants.warmup + ctx.constants.iterations;
}

/// `group.concurrent(...)`, or a benchmark failure naming the implementation's refusal.
fn spawnIn(ctx: *Ctx, group: *Io.Group, io: Io, function: anytype, args: std.meta.ArgsTuple(@TypeOf(function))) Error!void {
    group.concurrent(io, function, args) catch |err| {
        group.cancel(io);
        return ctx.fail("Group.concurrent: {s}", .{@errorName(err)});
    };
}

fn awaitGroup(ctx: *Ctx, group: *Io.Group, io: Io) Error!void {
    group.await(io) catch |err| return ctx.fail("Group.await: {s}", .{@errorName(err)});
}

// -- io_mutex_contended -------------------------------------------------------------------

const MutexShared = struct {
    mutex: Io.Mutex = .init,
    /// Guarded by `mutex`.
    counter: u64 = 0,
};

fn mutexTask(io: Io, shared: *MutexShared, ops: u64) Io.Cancelable!void {
    for (0..ops) |_| {
        try shared.mutex.lock(io);
        shared.counter += 1;
        shared.mutex.unlock(io);
    }
}

/// io_mutex_contended(tasks): `tasks` concurrent tasks × async_ops/tasks × (lock, increment,
/// unlock); the counter must reach the op count.
pub fn mutexContended(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    const per_task = c.async_ops / c.io_mutex_tasks;
    var shared = MutexShared{};
    for (0..totalIterations(ctx)) |i| {
        shared.counter = 0;
        var group: Io.Group = .init;
        const mark = startTimed(ctx);
        for (0..c.io_mutex_tasks) |_| try spawnIn(ctx, &group, io, mutexTask, .{ io, &shared, per_task });
        try awaitGroup(ctx, &group, io);
        const sample = stopTimed(ctx, mark, i);
        try ctx.expectEq("counter", shared.counter, c.io_mutex_tasks * per_task);
        ctx.record(i, c.warmup, sample);
    }
}

// -- io_queue_pingpong --------------------------------------------------------------------

const Pair = struct {
    there: Io.Queue(u64),
    back: Io.Queue(u64),
    there_buffer: [1]u64 = undefined,
    back_buffer: [1]u64 = undefined,

    fn init(self: *Pair) void {
        self.there = .init(&self.there_buffer);
        self.back = .init(&self.back_buffer);
    }
};

const PingShared = struct {
    failures: Failures = .{},
    /// Round trips whose answer was the value sent.
    answered: std.atomic.Value(u64) = .init(0),
};

fn pinger(io: Io, pair: *Pair, shared: *PingShared, rounds: u64) Io.Cancelable!void {
    var answered: u64 = 0;
    for (0..rounds) |round| {
        pair.there.putOne(io, round) catch |err| return shared.failures.note(err);
        const got = pair.back.getOne(io) catch |err| return shared.failures.note(err);
        if (got == round) answered += 1;
    }
    // Monotonic: read by the driver after awaiting the group.
    _ = shared.answered.fetchAdd(answered, .monotonic);
}

fn ponger(io: Io, pair: *Pair, shared: *PingShared, rounds: u64) Io.Cancelable!void {
    for (0..rounds) |_| {
        const value = pair.there.getOne(io) catch |err| return shared.failures.note(err);
        pair.back.putOne(io, value) catch |err| return shared.failures.note(err);
    }
}

/// Round trips per pair of io_queue_pingpong: ping_pong_rounds split over the pairs.
pub fn pingpongRounds(ping_pong_rounds: u64, pairs: u64) u64 {
    return @max(1, ping_pong_rounds / pairs);
}

/// io_queue_pingpong(pairs): `pairs` pairs of tasks; each round trip sends a value over the
/// pair's capacity-1 queue and the partner sends it back; ops = pairs × rounds per pair.
pub fn queuePingpong(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    const pairs_count = ctx.case.n;
    const rounds = pingpongRounds(c.ping_pong_rounds, pairs_count);
    const pairs = ctx.allocator().alloc(Pair, pairs_count) catch return ctx.fail("out of memory", .{});
    defer ctx.allocator().free(pairs);
    for (0..totalIterations(ctx)) |i| {
        for (pairs) |*pair| pair.init();
        var shared = PingShared{};
        var group: Io.Group = .init;
        const mark = startTimed(ctx);
        for (pairs) |*pair| {
            try spawnIn(ctx, &group, io, ponger, .{ io, pair, &shared, rounds });
            try spawnIn(ctx, &group, io, pinger, .{ io, pair, &shared, rounds });
        }
        try awaitGroup(ctx, &group, io);
        const sample = stopTimed(ctx, mark, i);
        try shared.failures.check(ctx, "queue");
        try ctx.expectEq("round trips answered", shared.answered.load(.monotonic), pairs_count * rounds);
        ctx.record(i, c.warmup, sample);
    }
}

// -- io_fan_in / io_fan_out ---------------------------------------------------------------

const FanShared = struct {
    queue: Io.Queue(u64),
    failures: Failures = .{},
    sum: std.atomic.Value(u64) = .init(0),
    received: std.atomic.Value(u64) = .init(0),
};

/// Puts `count` values first, first + 1, ... into the queue.
fn producer(io: Io, shared: *FanShared, first: u64, count: u64) Io.Cancelable!void {
    for (0..count) |k| shared.queue.putOne(io, first + k) catch |err| return shared.failures.note(err);
}

/// Takes `count` values and adds them to the shared sum.
fn consumer(io: Io, shared: *FanShared, count: u64) Io.Cancelable!void {
    var sum: u64 = 0;
    for (0..count) |_| sum += shared.queue.getOne(io) catch |err| return shared.failures.note(err);
    // Monotonic: read by the driver after awaiting the group.
    _ = shared.sum.fetchAdd(sum, .monotonic);
    _ = shared.received.fetchAdd(count, .monotonic);
}

/// Items per iteration of io_fan_in / io_fan_out: io_fan_items, rounded down to a multiple of
/// the task count.
pub fn fanItems(items: u64, tasks: u64) u64 {
    return tasks * (items / tasks);
}

/// io_fan_in (`fan_in`) or io_fan_out: io_fan_tasks producers and one consumer, or one producer
/// and io_fan_tasks consumers, on one queue of io_queue_capacity; the values 1..items must all
/// arrive (their sum is checked).
fn fan(ctx: *Ctx, io: Io, fan_in: bool) Error!void {
    const c = ctx.constants;
    const tasks = c.io_fan_tasks;
    const items = fanItems(c.io_fan_items, tasks);
    const per_task = items / tasks;
    const buffer = ctx.allocator().alloc(u64, c.io_queue_capacity) catch return ctx.fail("out of memory", .{});
    defer ctx.allocator().free(buffer);
    for (0..totalIterations(ctx)) |i| {
        var shared = FanShared{ .queue = .init(buffer) };
        var group: Io.Group = .init;
        const mark = startTimed(ctx);
        if (fan_in) {
            try spawnIn(ctx, &group, io, consumer, .{ io, &shared, items });
            for (0..tasks) |t| try spawnIn(ctx, &group, io, producer, .{ io, &shared, 1 + t * per_task, per_task });
        } else {
            for (0..tasks) |_| try spawnIn(ctx, &group, io, consumer, .{ io, &shared, per_task });
            try spawnIn(ctx, &group, io, producer, .{ io, &shared, 1, items });
        }
        try awaitGroup(ctx, &group, io);
        const sample = stopTimed(ctx, mark, i);
        try shared.failures.check(ctx, "queue");
        try ctx.expectEq("items received", shared.received.load(.monotonic), items);
        try ctx.expectEq("sum of the items", shared.sum.load(.monotonic), items * (items + 1) / 2);
        ctx.record(i, c.warmup, sample);
    }
}

pub fn fanIn(ctx: *Ctx, io: Io) Error!void {
    return fan(ctx, io, true);
}

pub fn fanOut(ctx: *Ctx, io: Io) Error!void {
    return fan(ctx, io, false);
}

// -- io_spawn / io_spawn_group --------------------------------------------------------------

fn identity(value: u64) u64 {
    return value;
}

/// io_spawn: task_ops × (`io.concurrent` of a task returning its argument, await it); the
/// results must sum to 0 + 1 + ... + (task_ops - 1).
pub fn spawn(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    for (0..totalIterations(ctx)) |i| {
        var sum: u64 = 0;
        const mark = startTimed(ctx);
        for (0..c.task_ops) |k| {
            var future = io.concurrent(identity, .{k}) catch |err| return ctx.fail("io.concurrent: {s}", .{@errorName(err)});
            sum += future.await(io);
        }
        const sample = stopTimed(ctx, mark, i);
        try ctx.expectEq("sum of the results", sum, c.task_ops * (c.task_ops - 1) / 2);
        ctx.record(i, c.warmup, sample);
    }
}

fn countTask(counter: *std.atomic.Value(u64)) Io.Cancelable!void {
    // Monotonic: read by the driver after awaiting the group.
    _ = counter.fetchAdd(1, .monotonic);
}

/// io_spawn_group(n): n tasks in one `Io.Group` (`Group.concurrent`), then await the group;
/// every task must have run.
pub fn spawnGroup(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    for (0..totalIterations(ctx)) |i| {
        var counter: std.atomic.Value(u64) = .init(0);
        var group: Io.Group = .init;
        const mark = startTimed(ctx);
        for (0..c.io_group_tasks) |_| try spawnIn(ctx, &group, io, countTask, .{&counter});
        try awaitGroup(ctx, &group, io);
        const sample = stopTimed(ctx, mark, i);
        try ctx.expectEq("tasks run", counter.load(.monotonic), c.io_group_tasks);
        ctx.record(i, c.warmup, sample);
    }
}

// -- io_sleep -------------------------------------------------------------------------------

fn sleeper(io: Io, duration: Io.Duration, counter: *std.atomic.Value(u64)) Io.Cancelable!void {
    try io.sleep(duration, .awake);
    // Monotonic: read by the driver after awaiting the group.
    _ = counter.fetchAdd(1, .monotonic);
}

/// io_sleep(d_ms): io_sleep_tasks tasks each sleeping d once, all awaited; every task must
/// have woken, and the iteration cannot have taken less than d.
pub fn sleep(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    const duration_ns = ctx.case.size * std.time.ns_per_ms;
    const duration = Io.Duration.fromNanoseconds(duration_ns);
    for (0..totalIterations(ctx)) |i| {
        var counter: std.atomic.Value(u64) = .init(0);
        var group: Io.Group = .init;
        const mark = startTimed(ctx);
        for (0..c.io_sleep_tasks) |_| try spawnIn(ctx, &group, io, sleeper, .{ io, duration, &counter });
        try awaitGroup(ctx, &group, io);
        const sample = stopTimed(ctx, mark, i);
        try ctx.expectEq("sleepers woken", counter.load(.monotonic), c.io_sleep_tasks);
        if (sample.elapsed_ns < duration_ns) return ctx.fail("all woke after {d} ns, before the {d} ns sleep ended", .{ sample.elapsed_ns, duration_ns });
        ctx.record(i, c.warmup, sample);
    }
}

// -- TCP ------------------------------------------------------------------------------------

/// Nagle off: `setsockopt(TCP_NODELAY)` on the stream's socket (std.Io has no socket options).
fn setNoDelay(stream: Io.net.Stream) !void {
    const on: c_int = 1;
    try std.posix.setsockopt(stream.socket.handle, std.posix.IPPROTO.TCP, std.posix.TCP.NODELAY, std.mem.asBytes(&on));
}

/// Byte `index` of the payload of round `round` (byte 0 carries the round, so a stale echo fails).
fn patternByte(round: u64, index: usize) u8 {
    if (index == 0) return @truncate(round);
    return @truncate(index *% 31 +% 7);
}

fn fillPayload(payload: []u8, round: u64) void {
    for (payload, 0..) |*byte, index| byte.* = patternByte(round, index);
}

/// The echo server of a TCP case: listens on 127.0.0.1, port 0.
const EchoServer = struct {
    io: Io,
    gpa: Allocator,
    listener: Io.net.Server,
    connections: Io.Group = .init,
    accept_task: Io.Future(void) = undefined,
    /// Set by `stop` before its wake-up connection (release); the accept task reads it after
    /// each accept (acquire).
    stopping: std.atomic.Value(bool) = .init(false),
    failures: Failures = .{},
    echoed_bytes: std.atomic.Value(u64) = .init(0),

    fn start(self: *EchoServer, ctx: *Ctx, io: Io) Error!void {
        const loopback = Io.net.IpAddress.parseIp4("127.0.0.1", 0) catch unreachable; // a literal
        self.* = .{ .io = io, .gpa = ctx.allocator(), .listener = undefined };
        self.listener = loopback.listen(io, .{ .kernel_backlog = 1024, .reuse_address = true }) catch |err|
            return ctx.fail("listen: {s}", .{@errorName(err)});
        self.accept_task = io.concurrent(acceptLoop, .{self}) catch |err| {
            self.listener.deinit(io);
            return ctx.fail("io.concurrent(accept): {s}", .{@errorName(err)});
        };
    }

    fn address(self: *const EchoServer) Io.net.IpAddress {
        return self.listener.socket.address;
    }

    fn acceptLoop(self: *EchoServer) void {
        const io = self.io;
        while (true) {
            const stream = self.listener.accept(io) catch |err| return self.failures.note(err);
            if (self.stopping.load(.acquire)) return stream.close(io);
            setNoDelay(stream) catch |err| {
                stream.close(io);
                return self.failures.note(err);
            };
            self.connections.concurrent(io, echoConnection, .{ self, stream }) catch |err| {
                stream.close(io);
                return self.failures.note(err);
            };
        }
    }

    fn echoConnection(self: *EchoServer, stream: Io.net.Stream) Io.Cancelable!void {
        const io = self.io;
        defer stream.close(io);
        const buffer = self.gpa.alloc(u8, server_buffer_bytes) catch |err| return self.failures.note(err);
        defer self.gpa.free(buffer);
        var reader = stream.reader(io, buffer);
        var writer = stream.writer(io, &.{});
        var echoed: u64 = 0;
        while (true) {
            reader.interface.fillMore() catch |err| switch (err) {
                error.EndOfStream => break,
                error.ReadFailed => return self.failures.note(reader.err orelse err),
            };
            const data = reader.interface.buffered();
            writer.interface.writeAll(data) catch |err| return self.failures.note(writer.err orelse err);
            reader.interface.toss(data.len);
            echoed += data.len;
        }
        // Monotonic: read by the driver after awaiting the connection group.
        _ = self.echoed_bytes.fetchAdd(echoed, .monotonic);
    }

    /// Stops accepting (one more connection wakes the accept task), waits for every echo task
    /// (they end when their clients close) and checks the byte count.
    fn stop(self: *EchoServer, ctx: *Ctx, expected_bytes: u64) Error!void {
        const io = self.io;
        self.stopping.store(true, .release);
        const address_now = self.address();
        if (address_now.connect(io, .{ .mode = .stream })) |poke| poke.close(io) else |err| self.failures.note(err);
        self.accept_task.await(io);
        try awaitGroup(ctx, &self.connections, io);
        self.listener.deinit(io);
        try self.failures.check(ctx, "echo server");
        try ctx.expectEq("bytes echoed by the server", self.echoed_bytes.load(.monotonic), expected_bytes);
    }
};

/// A client connection with its reader and writer (buffers of `size` bytes).
const Client = struct {
    stream: Io.net.Stream,
    reader: Io.net.Stream.Reader,
    writer: Io.net.Stream.Writer,
    payload: []u8,
    echo: []u8,
    read_buffer: []u8,

    fn open(self: *Client, io: Io, gpa: Allocator, address: Io.net.IpAddress, size: usize) !void {
        self.payload = try gpa.alloc(u8, size);
        errdefer gpa.free(self.payload);
        self.echo = try gpa.alloc(u8, size);
        errdefer gpa.free(self.echo);
        self.read_buffer = try gpa.alloc(u8, size);
        errdefer gpa.free(self.read_buffer);
        self.stream = try address.connect(io, .{ .mode = .stream });
        errdefer self.stream.close(io);
        try setNoDelay(self.stream);
        self.reader = self.stream.reader(io, self.read_buffer);
        self.writer = self.stream.writer(io, &.{});
    }

    fn close(self: *Client, io: Io, gpa: Allocator) void {
        self.stream.close(io);
        gpa.free(self.read_buffer);
        gpa.free(self.echo);
        gpa.free(self.payload);
    }

    /// One round trip: write the payload of `round`, read as many bytes back, compare.
    fn roundTrip(self: *Client, round: u64) !void {
        fillPayload(self.payload, round);
        self.writer.interface.writeAll(self.payload) catch |err| return self.writer.err orelse err;
        self.reader.interface.readSliceAll(self.echo) catch |err| switch (err) {
            error.ReadFailed => return self.reader.err orelse err,
            error.EndOfStream => return error.ShortEcho,
        };
        if (!std.mem.eql(u8, self.payload, self.echo)) return error.EchoMismatch;
    }
};

/// io_tcp_pingpong(size): one connection, io_net_rounds round trips of `size` bytes each.
pub fn tcpPingpong(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    const size: usize = @intCast(ctx.case.size);
    var server: EchoServer = undefined;
    try server.start(ctx, io);
    var client: Client = undefined;
    client.open(io, ctx.allocator(), server.address(), size) catch |err| return ctx.fail("connect: {s}", .{@errorName(err)});
    var round: u64 = 0;
    for (0..totalIterations(ctx)) |i| {
        const mark = startTimed(ctx);
        const result: anyerror!void = for (0..c.io_net_rounds) |_| {
            client.roundTrip(round) catch |err| break err;
            round += 1;
        };
        const sample = stopTimed(ctx, mark, i);
        result catch |err| return ctx.fail("round trip {d}: {s}", .{ round, @errorName(err) });
        ctx.record(i, c.warmup, sample);
    }
    client.close(io, ctx.allocator());
    try server.stop(ctx, round * size);
}

fn conversation(io: Io, client: *Client, first_round: u64, rounds: u64, failures: *Failures) Io.Cancelable!void {
    _ = io;
    for (0..rounds) |k| client.roundTrip(first_round + k) catch |err| return failures.note(err);
}

/// io_tcp_echo_conns(conns): `conns` connections opened before timing; per iteration one task
/// per connection does io_net_rounds round trips of 64 B; ops = conns × io_net_rounds.
pub fn tcpEchoConns(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    const gpa = ctx.allocator();
    var server: EchoServer = undefined;
    try server.start(ctx, io);
    const clients = gpa.alloc(Client, ctx.case.n) catch return ctx.fail("out of memory", .{});
    defer gpa.free(clients);
    for (clients, 0..) |*client, opened| {
        client.open(io, gpa, server.address(), conns_payload_bytes) catch |err| {
            for (clients[0..opened]) |*done| done.close(io, gpa);
            return ctx.fail("connect: {s}", .{@errorName(err)});
        };
    }
    for (0..totalIterations(ctx)) |i| {
        var failures = Failures{};
        var group: Io.Group = .init;
        const mark = startTimed(ctx);
        for (clients) |*client| try spawnIn(ctx, &group, io, conversation, .{ io, client, i * c.io_net_rounds, c.io_net_rounds, &failures });
        try awaitGroup(ctx, &group, io);
        const sample = stopTimed(ctx, mark, i);
        try failures.check(ctx, "client");
        ctx.record(i, c.warmup, sample);
    }
    for (clients) |*client| client.close(io, gpa);
    try server.stop(ctx, totalIterations(ctx) * ctx.case.n * c.io_net_rounds * conns_payload_bytes);
}

/// One io_tcp_connect op: connect, Nagle off, write 1 B, read it back, compare, close.
fn connectOnce(io: Io, address: Io.net.IpAddress, value: u8) !void {
    const stream = try address.connect(io, .{ .mode = .stream });
    defer stream.close(io);
    try setNoDelay(stream);
    var writer = stream.writer(io, &.{});
    writer.interface.writeAll(&.{value}) catch |err| return writer.err orelse err;
    var byte: [1]u8 = undefined;
    var reader = stream.reader(io, &.{});
    reader.interface.readSliceAll(&byte) catch |err| switch (err) {
        error.ReadFailed => return reader.err orelse err,
        error.EndOfStream => return error.ShortEcho,
    };
    if (byte[0] != value) return error.EchoMismatch;
}

/// io_tcp_connect: io_connect_ops × connectOnce; the server accepts and echoes each.
pub fn tcpConnect(ctx: *Ctx, io: Io) Error!void {
    const c = ctx.constants;
    var server: EchoServer = undefined;
    try server.start(ctx, io);
    const address = server.address();
    for (0..totalIterations(ctx)) |i| {
        const mark = startTimed(ctx);
        const result: anyerror!void = for (0..c.io_connect_ops) |k| {
            connectOnce(io, address, @truncate(k)) catch |err| break err;
        };
        const sample = stopTimed(ctx, mark, i);
        result catch |err| return ctx.fail("connect: {s}", .{@errorName(err)});
        ctx.record(i, c.warmup, sample);
    }
    try server.stop(ctx, totalIterations(ctx) * c.io_connect_ops);
}

test "pattern and sizes" {
    try std.testing.expectEqual(@as(u8, 5), patternByte(5, 0));
    try std.testing.expectEqual(@as(u8, 38), patternByte(5, 1));
    try std.testing.expectEqual(@as(u64, 10), pingpongRounds(1000, 100));
    try std.testing.expectEqual(@as(u64, 1), pingpongRounds(50, 100));
    try std.testing.expectEqual(@as(u64, 9000), fanItems(9999, 1000));
}
