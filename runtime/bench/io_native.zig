//! The io suite's rows on Ampere's native API (`ampere`: poll-based state machines, no
//! fibers), beside the `std.Io` program (io_benches.zig, `ampere.io` on Ampere's fibers) and
//! the Tokio twins (rust_bench/src/io.rs). BENCHMARKS.md, "Io suite": where the native API has
//! the same row, `ampere` runs it too. It has io_queue_pingpong, io_fan_in, io_fan_out,
//! io_spawn, io_spawn_group and io_sleep; io_mutex_contended and the TCP rows have their own
//! native rows in the micro and net suites (mutex_contended, tcp_*) and are not repeated here.
//!
//! Same parameters, ops and checks as io_benches.zig, row for row (the parameter lists and
//! the ops per iteration come from `io_benches.cases`, which the io program uses too), and
//! the same topology as Tiers 3–4 (async_tiers.zig): one runtime per worker count of the
//! sweep, a driver task (`async_tiers.Driver`) that times each iteration from before the
//! first spawn to after the last join and checks it after the timed region.
//!
//! What maps onto what:
//! - `Io.Queue(u64)` → `ampere.channel.Bounded(u64)` (MPMC, so io_fan_out runs on it as the
//!   io program's queue does). The channels are made once per case, before the first
//!   iteration (the io program's queues are set up untimed on a caller buffer; a Bounded
//!   allocates its ring, which would otherwise be timed); the driver keeps the one sender and
//!   one receiver of each, and tasks use them by pointer (the io program's tasks get a
//!   `*Io.Queue`). Every iteration leaves them empty (checked).
//! - `Group.concurrent` + `Group.await` → `ampere.spawn` + every `JoinHandle` awaited in spawn
//!   order; `io.concurrent` + `Future.await` → `ampere.spawn` + its `JoinHandle`.
//! - `io.sleep(d)` → `ampere.time.sleep(d)`, created when the task first runs (Tokio's
//!   `sleep(d).await` in the task body; the io program's `io.sleep`).
//! - Task failures (a closed channel) come back as `TaskResult.failed` through the join.

const std = @import("std");
const ampere = @import("ampere");
const harness = @import("harness.zig");
const async_tiers = @import("async_tiers.zig");
const io_benches = @import("io_benches.zig");

const Ctx = harness.Ctx;
const Error = harness.Error;
const Context = ampere.Context;
const Poll = ampere.Poll;
const JoinHandle = ampere.JoinHandle;
const Runtime = ampere.Runtime;
const TaskResult = async_tiers.TaskResult;
const TaskError = async_tiers.TaskError;
const drive = async_tiers.drive;

const Channel = ampere.channel.Bounded(u64);

/// One channel with the driver's sender and receiver; tasks use them by pointer.
const Queue = struct {
    tx: Channel.Sender,
    rx: Channel.Receiver,

    fn init(allocator: std.mem.Allocator, capacity: u64) std.mem.Allocator.Error!Queue {
        const tx, const rx = try Channel.init(allocator, @intCast(capacity));
        return .{ .tx = tx, .rx = rx };
    }

    fn deinit(self: *Queue) void {
        self.tx.deinit();
        self.rx.deinit();
    }
};

/// Sends or receives one value over `queue` (the step of a task that does one at a time).
const Step = union(enum) {
    idle,
    sending: Channel.SendFuture,
    receiving: Channel.RecvFuture,

    fn cancel(self: *Step) void {
        switch (self.*) {
            .idle => {},
            inline else => |*operation| operation.cancel(),
        }
        self.* = .idle;
    }
};

// -- io_queue_pingpong --------------------------------------------------------------------

/// One pair's two capacity-1 channels: `there` (pinger → ponger) and `back`.
const Pair = struct {
    there: Queue,
    back: Queue,
};

/// One end of a pair, `rounds` × one round trip. The pinger sends the round number there
/// and receives it back, and returns how many answers were the value sent; the ponger
/// receives a value there and sends it back, and returns `rounds`.
const PairEnd = struct {
    pub const Output = TaskResult;
    pair: *const Pair,
    rounds: u64,
    pinger: bool,
    round: u64 = 0,
    answered: u64 = 0,
    step: Step = .idle,

    pub fn poll(self: *PairEnd, cx: *Context) Poll(Output) {
        // Bounded: every pass completes a step or returns pending.
        while (true) {
            switch (self.step) {
                .idle => {
                    if (self.round == self.rounds) return TaskResult.ok(if (self.pinger) self.answered else self.rounds);
                    self.step = if (self.pinger)
                        .{ .sending = self.pair.there.tx.send(self.round) }
                    else
                        .{ .receiving = self.pair.there.rx.recv() };
                },
                .sending => |*sending| switch (sending.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        result catch return self.closed();
                        if (self.pinger) {
                            self.step = .{ .receiving = self.pair.back.rx.recv() };
                        } else {
                            self.round += 1;
                            self.step = .idle;
                        }
                    },
                },
                .receiving => |*receiving| switch (receiving.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        const value = result catch return self.closed();
                        if (self.pinger) {
                            if (value == self.round) self.answered += 1;
                            self.round += 1;
                            self.step = .idle;
                        } else {
                            self.step = .{ .sending = self.pair.back.tx.send(value) };
                        }
                    },
                },
            }
        }
    }

    fn closed(self: *PairEnd) Poll(Output) {
        self.step = .idle;
        return TaskResult.fail(error.ChannelClosed);
    }

    pub fn cancel(self: *PairEnd) void {
        self.step.cancel();
    }
};

/// io_queue_pingpong(pairs): per pair a ponger then a pinger (the io program's spawn order),
/// each pair on its own two capacity-1 channels; ops = pairs × rounds per pair. Check: every
/// round trip answered with the value sent, every ponger did its rounds, channels empty.
const PingpongBench = struct {
    pub const Result = TaskResult;
    allocator: std.mem.Allocator,
    pairs: []Pair,
    rounds_per_pair: u64,
    answered: u64 = 0,
    echoed: u64 = 0,
    failure: ?TaskError = null,

    fn init(ctx: *Ctx, pairs_count: u64, rounds_per_pair: u64) Error!PingpongBench {
        const allocator = ctx.allocator();
        const pairs = allocator.alloc(Pair, @intCast(pairs_count)) catch return ctx.fail("out of memory", .{});
        for (pairs, 0..) |*pair, made| {
            pair.there = Queue.init(allocator, 1) catch return failInit(ctx, allocator, pairs[0..made], pairs);
            pair.back = Queue.init(allocator, 1) catch {
                pair.there.deinit();
                return failInit(ctx, allocator, pairs[0..made], pairs);
            };
        }
        return .{ .allocator = allocator, .pairs = pairs, .rounds_per_pair = rounds_per_pair };
    }

    fn failInit(ctx: *Ctx, allocator: std.mem.Allocator, made: []Pair, pairs: []Pair) Error {
        for (made) |*pair| {
            pair.there.deinit();
            pair.back.deinit();
        }
        allocator.free(pairs);
        return ctx.fail("out of memory creating the channels", .{});
    }

    pub fn maxHandles(self: *const PingpongBench) usize {
        return 2 * self.pairs.len;
    }

    pub fn rounds(_: *const PingpongBench) u64 {
        return 1;
    }

    pub fn setup(self: *PingpongBench, _: *Ctx) Error!void {
        self.answered = 0;
        self.echoed = 0;
        self.failure = null;
    }

    pub fn spawnRound(self: *PingpongBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        var n: usize = 0;
        for (self.pairs) |*pair| {
            handles[n] = try ampere.spawn(PairEnd{ .pair = pair, .rounds = self.rounds_per_pair, .pinger = false });
            handles[n + 1] = try ampere.spawn(PairEnd{ .pair = pair, .rounds = self.rounds_per_pair, .pinger = true });
            n += 2;
        }
        return n;
    }

    pub fn collect(self: *PingpongBench, index: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| if (index % 2 == 0) {
                self.echoed += value;
            } else {
                self.answered += value;
            },
        }
    }

    pub fn verify(self: *PingpongBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("queue: a task failed: {s}", .{@errorName(err)});
        const trips = self.pairs.len * self.rounds_per_pair;
        try ctx.expectEq("round trips answered", self.answered, trips);
        try ctx.expectEq("values sent back", self.echoed, trips);
        for (self.pairs) |*pair| {
            try ctx.expectEq("values left in a queue", pair.there.rx.len() + pair.back.rx.len(), 0);
        }
    }

    pub fn deinit(self: *PingpongBench) void {
        for (self.pairs) |*pair| {
            pair.there.deinit();
            pair.back.deinit();
        }
        self.allocator.free(self.pairs);
    }
};

pub fn queuePingpong(ctx: *Ctx) Error!void {
    const pairs = ctx.case.n;
    std.debug.assert(pairs >= 1);
    return drive(ctx, try PingpongBench.init(ctx, pairs, io_benches.pingpongRounds(ctx.constants.ping_pong_rounds, pairs)));
}

// -- io_fan_in / io_fan_out ---------------------------------------------------------------

/// Sends `base`, `base + 1`, ... (`count` values) into a queue's sender; returns `count`.
const Producer = async_tiers.ProducerOn(*const Channel.Sender);
/// Receives exactly `count` values from a queue's receiver; returns their sum.
const Consumer = async_tiers.ConsumerOn(*const Channel.Receiver);

/// io_fan_in (`fan_in`): one consumer of every item, then io_fan_tasks producers of
/// items / tasks each; io_fan_out: io_fan_tasks consumers of items / tasks each, then one
/// producer of every item (the io program's spawn orders). One channel of io_queue_capacity;
/// the values 1..items go through it. Check: items received, their sum, the producers'
/// sends, the channel empty.
const FanBench = struct {
    pub const Result = TaskResult;
    queue: Queue,
    fan_in: bool,
    tasks: u64,
    items: u64,
    /// Sends done (producers' counts) and values received (consumers' sums; each consumer
    /// that finished received exactly its count).
    sent: u64 = 0,
    received: u64 = 0,
    sum: u64 = 0,
    failure: ?TaskError = null,

    fn init(ctx: *Ctx, fan_in: bool) Error!FanBench {
        const c = ctx.constants;
        const queue = Queue.init(ctx.allocator(), c.io_queue_capacity) catch return ctx.fail("out of memory creating the channel", .{});
        return .{ .queue = queue, .fan_in = fan_in, .tasks = c.io_fan_tasks, .items = io_benches.fanItems(c.io_fan_items, c.io_fan_tasks) };
    }

    fn perTask(self: *const FanBench) u64 {
        return self.items / self.tasks;
    }

    pub fn maxHandles(self: *const FanBench) usize {
        return @intCast(self.tasks + 1);
    }

    pub fn rounds(_: *const FanBench) u64 {
        return 1;
    }

    pub fn setup(self: *FanBench, _: *Ctx) Error!void {
        self.sent = 0;
        self.received = 0;
        self.sum = 0;
        self.failure = null;
    }

    pub fn spawnRound(self: *FanBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        const per_task = self.perTask();
        var n: usize = 0;
        if (self.fan_in) {
            handles[n] = try ampere.spawn(Consumer{ .rx = &self.queue.rx, .count = self.items });
            n += 1;
            for (0..self.tasks) |t| {
                handles[n] = try ampere.spawn(Producer{ .tx = &self.queue.tx, .base = 1 + t * per_task, .count = per_task });
                n += 1;
            }
        } else {
            for (0..self.tasks) |_| {
                handles[n] = try ampere.spawn(Consumer{ .rx = &self.queue.rx, .count = per_task });
                n += 1;
            }
            handles[n] = try ampere.spawn(Producer{ .tx = &self.queue.tx, .base = 1, .count = self.items });
            n += 1;
        }
        return n;
    }

    fn isConsumer(self: *const FanBench, index: usize) bool {
        return if (self.fan_in) index == 0 else index < self.tasks;
    }

    pub fn collect(self: *FanBench, index: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| if (self.isConsumer(index)) {
                self.sum += value;
                self.received += if (self.fan_in) self.items else self.perTask();
            } else {
                self.sent += value;
            },
        }
    }

    pub fn verify(self: *FanBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("queue: a task failed: {s}", .{@errorName(err)});
        try ctx.expectEq("items sent", self.sent, self.items);
        try ctx.expectEq("items received", self.received, self.items);
        try ctx.expectEq("sum of the items", self.sum, self.items * (self.items + 1) / 2);
        try ctx.expectEq("values left in the queue", self.queue.rx.len(), 0);
    }

    pub fn deinit(self: *FanBench) void {
        self.queue.deinit();
    }
};

pub fn fanIn(ctx: *Ctx) Error!void {
    return drive(ctx, try FanBench.init(ctx, true));
}

pub fn fanOut(ctx: *Ctx) Error!void {
    return drive(ctx, try FanBench.init(ctx, false));
}

// -- io_spawn / io_spawn_group ------------------------------------------------------------

/// io_spawn: task_ops × (spawn a task returning its argument, await it) — the body of the
/// micro suite's task_spawn (async_tiers.SpawnBench with batches of 1), which checks every
/// result and their sum 0 + 1 + ... + (task_ops - 1).
pub fn spawn(ctx: *Ctx) Error!void {
    return drive(ctx, async_tiers.SpawnBench{ .batch = 1, .batches = ctx.constants.task_ops, .blocking = false });
}

fn countTask(counter: *std.atomic.Value(u64)) void {
    // Monotonic: read by the driver after joining every task (the join orders it).
    _ = counter.fetchAdd(1, .monotonic);
}

/// io_spawn_group(n): n tasks spawned at once, each counting itself, then every handle
/// awaited (the io program's `Io.Group`, Tokio's `JoinSet`). Check: every task ran.
const GroupBench = struct {
    pub const Result = void;
    tasks: u64,
    counter: std.atomic.Value(u64) = .init(0),
    joined: u64 = 0,

    pub fn maxHandles(self: *const GroupBench) usize {
        return @intCast(self.tasks);
    }

    pub fn rounds(_: *const GroupBench) u64 {
        return 1;
    }

    pub fn setup(self: *GroupBench, _: *Ctx) Error!void {
        self.counter.store(0, .monotonic);
        self.joined = 0;
    }

    pub fn spawnRound(self: *GroupBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        for (handles[0..@intCast(self.tasks)]) |*handle| handle.* = try ampere.spawn(ampere.task.fromFn(countTask, .{&self.counter}));
        return @intCast(self.tasks);
    }

    pub fn collect(self: *GroupBench, _: usize, _: Result) void {
        self.joined += 1;
    }

    pub fn verify(self: *GroupBench, ctx: *Ctx) Error!void {
        try ctx.expectEq("tasks joined", self.joined, self.tasks);
        try ctx.expectEq("tasks run", self.counter.load(.monotonic), self.tasks);
    }

    pub fn deinit(_: *GroupBench) void {}
};

pub fn spawnGroup(ctx: *Ctx) Error!void {
    return drive(ctx, GroupBench{ .tasks = ctx.constants.io_group_tasks });
}

// -- io_sleep -----------------------------------------------------------------------------

/// Sleeps `duration_ns` once (the timer made when the task first runs), then counts itself.
const Sleeper = struct {
    pub const Output = void;
    duration_ns: u64,
    counter: *std.atomic.Value(u64),
    sleeping: ?ampere.time.Sleep = null,

    pub fn poll(self: *Sleeper, cx: *Context) Poll(void) {
        if (self.sleeping == null) self.sleeping = ampere.time.sleep(self.duration_ns);
        switch (self.sleeping.?.poll(cx)) {
            .pending => return .pending,
            .ready => {
                // Monotonic: read by the driver after joining every task.
                _ = self.counter.fetchAdd(1, .monotonic);
                return .{ .ready = {} };
            },
        }
    }

    pub fn cancel(self: *Sleeper) void {
        if (self.sleeping) |*sleeping| sleeping.cancel();
        self.sleeping = null;
    }
};

/// io_sleep(d_ms): io_sleep_tasks tasks each sleeping d once, all awaited. Check: every task
/// woke, and the iteration did not end before d had passed (from the first spawn to the last
/// join, both inside the timed region, so the timed region is at least as long).
const SleepBench = struct {
    pub const Result = void;
    tasks: u64,
    duration_ns: u64,
    counter: std.atomic.Value(u64) = .init(0),
    spawned_ns: u64 = 0,
    joined_ns: u64 = 0,

    pub fn maxHandles(self: *const SleepBench) usize {
        return @intCast(self.tasks);
    }

    pub fn rounds(_: *const SleepBench) u64 {
        return 1;
    }

    pub fn setup(self: *SleepBench, _: *Ctx) Error!void {
        self.counter.store(0, .monotonic);
        self.spawned_ns = 0;
        self.joined_ns = 0;
    }

    pub fn spawnRound(self: *SleepBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        self.spawned_ns = harness.monotonicNs();
        for (handles[0..@intCast(self.tasks)]) |*handle| {
            handle.* = try ampere.spawn(Sleeper{ .duration_ns = self.duration_ns, .counter = &self.counter });
        }
        return @intCast(self.tasks);
    }

    pub fn collect(_: *SleepBench, _: usize, _: Result) void {}

    pub fn pollFinish(self: *SleepBench, _: *Context) Poll(void) {
        self.joined_ns = harness.monotonicNs();
        return .{ .ready = {} };
    }

    pub fn verify(self: *SleepBench, ctx: *Ctx) Error!void {
        try ctx.expectEq("sleepers woken", self.counter.load(.monotonic), self.tasks);
        const took_ns = self.joined_ns - self.spawned_ns;
        if (took_ns < self.duration_ns) return ctx.fail("all woke after {d} ns, before the {d} ns sleep ended", .{ took_ns, self.duration_ns });
    }

    pub fn deinit(_: *SleepBench) void {}
};

pub fn sleep(ctx: *Ctx) Error!void {
    return drive(ctx, SleepBench{ .tasks = ctx.constants.io_sleep_tasks, .duration_ns = ctx.case.size * std.time.ns_per_ms });
}

// -- tests --------------------------------------------------------------------------------

const testing = std.testing;
const constants = @import("constants.zig");

fn tinyIoConstants() !constants.Constants {
    var diag = constants.Diagnostic{};
    var c = try constants.Constants.load(testing.allocator, "quick", &diag);
    for ([_][]const u8{ "warmup=1", "iterations=2", "task_ops=20", "ping_pong_rounds=20", "io_fan_tasks=10", "io_fan_items=45", "io_queue_capacity=4", "io_group_tasks=10", "io_sleep_tasks=10" }) |set| {
        try c.applyOverride(set, &diag);
    }
    return c;
}

fn runOne(c: *const constants.Constants, runtimes: *harness.Runtimes, counting: *harness.CountingAllocator, case: harness.Case, bench: *const fn (*Ctx) Error!void) !void {
    var samples: [2]harness.Sample = undefined;
    var ctx = Ctx{ .constants = c, .counting = counting, .case = &case, .samples = &samples, .runtimes = runtimes };
    bench(&ctx) catch |err| {
        std.debug.print("{s}{s} failed: {s}\n", .{ case.name, case.param(), ctx.message() });
        return err;
    };
    try testing.expectEqual(@as(usize, 2), ctx.recorded().len);
}

test "every native io benchmark passes its check at 1 and 2 workers" {
    const c = try tinyIoConstants();
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    for ([_]u64{ 1, 2 }) |workers| {
        for (io_benches.queue_pairs) |pairs| {
            try runOne(&c, &runtimes, &counting, harness.Case.io("io_queue_pingpong", "pairs", pairs, 1).withWorkers(workers), queuePingpong);
        }
        try runOne(&c, &runtimes, &counting, harness.Case.io("io_fan_in", "producers", 10, 1).withWorkers(workers), fanIn);
        try runOne(&c, &runtimes, &counting, harness.Case.io("io_fan_out", "consumers", 10, 1).withWorkers(workers), fanOut);
        try runOne(&c, &runtimes, &counting, harness.Case.io("io_spawn", "", 0, 1).withWorkers(workers), spawn);
        try runOne(&c, &runtimes, &counting, harness.Case.io("io_spawn_group", "n", 10, 1).withWorkers(workers), spawnGroup);
        for (io_benches.sleep_ms) |ms| {
            try runOne(&c, &runtimes, &counting, harness.Case.io("io_sleep", "d_ms", ms, 1).withWorkers(workers), sleep);
        }
    }
}

/// The context of a test whose driver must fail its check, on the tiny constants. A failed
/// driver leaves its handle array and shared objects behind (the program exits): an arena,
/// not the leak-checking testing allocator. `init` in place, then `deinit`.
const FailingRun = struct {
    constants: constants.Constants,
    arena: std.heap.ArenaAllocator,
    counting: harness.CountingAllocator,
    runtimes: harness.Runtimes,
    samples: [2]harness.Sample,
    case: harness.Case,
    ctx: Ctx,

    fn init(self: *FailingRun, case: harness.Case) !void {
        self.constants = try tinyIoConstants();
        self.arena = std.heap.ArenaAllocator.init(std.heap.page_allocator);
        self.counting = harness.CountingAllocator.init(self.arena.allocator());
        self.runtimes = harness.Runtimes{ .allocator = self.counting.allocator() };
        self.case = case;
        self.ctx = Ctx{ .constants = &self.constants, .counting = &self.counting, .case = &self.case, .samples = &self.samples, .runtimes = &self.runtimes };
    }

    fn deinit(self: *FailingRun) void {
        self.runtimes.deinit();
        self.arena.deinit();
    }
};

test "a sleep shorter than asked fails its check" {
    var run: FailingRun = undefined;
    try run.init(harness.Case.io("io_sleep", "d_ms", 1, 1).withWorkers(1));
    defer run.deinit();
    const ctx = &run.ctx;
    // Tasks sleep 1 ms but the check claims 1 s: the iteration must fail, not report a time.
    const Short = struct {
        inner: SleepBench,
        pub const Result = void;
        pub fn maxHandles(self: *const @This()) usize {
            return self.inner.maxHandles();
        }
        pub fn rounds(_: *const @This()) u64 {
            return 1;
        }
        pub fn setup(self: *@This(), ctx_: *Ctx) Error!void {
            return self.inner.setup(ctx_);
        }
        pub fn spawnRound(self: *@This(), round: u64, handles: []JoinHandle(void)) Runtime.SpawnError!usize {
            return self.inner.spawnRound(round, handles);
        }
        pub fn collect(_: *@This(), _: usize, _: void) void {}
        pub fn pollFinish(self: *@This(), cx: *Context) Poll(void) {
            return self.inner.pollFinish(cx);
        }
        pub fn verify(self: *@This(), ctx_: *Ctx) Error!void {
            self.inner.duration_ns = std.time.ns_per_s;
            return self.inner.verify(ctx_);
        }
        pub fn deinit(_: *@This()) void {}
    };
    try testing.expectError(error.BenchmarkFailed, drive(ctx, Short{ .inner = .{ .tasks = 3, .duration_ns = std.time.ns_per_ms } }));
    try testing.expect(std.mem.startsWith(u8, ctx.message(), "all woke after "));
}

test "a fan-in that gets one value too many fails its check" {
    var run: FailingRun = undefined;
    try run.init(harness.Case.io("io_fan_in", "producers", 10, 1).withWorkers(2));
    defer run.deinit();
    const ctx = &run.ctx;
    // One extra producer sends a stray value: the consumer takes `items` values, so either a
    // value is left in the queue or the sum is off.
    const Stray = struct {
        inner: FanBench,
        pub const Result = TaskResult;
        pub fn maxHandles(self: *const @This()) usize {
            return self.inner.maxHandles() + 1;
        }
        pub fn rounds(_: *const @This()) u64 {
            return 1;
        }
        pub fn setup(self: *@This(), ctx_: *Ctx) Error!void {
            return self.inner.setup(ctx_);
        }
        pub fn spawnRound(self: *@This(), round: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
            const n = try self.inner.spawnRound(round, handles);
            handles[n] = try ampere.spawn(Producer{ .tx = &self.inner.queue.tx, .base = 7, .count = 1 });
            return n + 1;
        }
        pub fn collect(self: *@This(), index: usize, result: Result) void {
            if (index < self.inner.maxHandles()) self.inner.collect(index, result);
        }
        pub fn verify(self: *@This(), ctx_: *Ctx) Error!void {
            return self.inner.verify(ctx_);
        }
        pub fn deinit(self: *@This()) void {
            self.inner.deinit();
        }
    };
    try testing.expectError(error.BenchmarkFailed, drive(ctx, Stray{ .inner = try FanBench.init(ctx, true) }));
}
