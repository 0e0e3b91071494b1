//! Tiers 3–4 of the micro suite on `ampere.Runtime`, mirroring rust_bench/src/async_tiers.rs.
//!
//! Topology: one runtime per worker count of the sweep, with the variant's options, built
//! outside timing (`harness.Runtimes`). Each benchmark runs as a driver task:
//! `rt.spawn(driver)` from the main thread, then `rt.blockOn(join handle)` (Tokio:
//! `rt.block_on(async { tokio::spawn(driver).await })`). The driver runs warmup and measured iterations and takes
//! the timestamps from before the first spawn to after the last join (`Mark`).
//!
//! Zig has no async/await, so every task is a hand-written future, and the driver is one
//! generic state machine (`Driver(B)`) over a benchmark description `B`:
//!
//!     per iteration:  B.setup (untimed)  → markStart →
//!                     for round in 0..B.rounds():
//!                         B.spawnRound(round, handles)   (spawns n tasks, keeps the handles)
//!                         await handles[0..n] in spawn order, B.collect(i, output) each
//!                     B.pollFinish (optional: await something else, e.g. chained_spawn's oneshot)
//!                     → mark.stop → B.verify (untimed) → record
//!
//! Rust's `for` loops of `spawn`/`.await` map onto rounds: Tier 3 and yield_many/ping_pong are
//! one round of all their tasks; task_spawn and blocking_spawn are `ops` rounds of 1 task;
//! task_spawn_batch is `ops / batch` rounds of `batch` tasks. Shared objects (channel, lock,
//! semaphore) live in `B`, inside the driver task (a stable address), created before the
//! first iteration; tasks get pointers to them (Rust: `Arc` clones made before `Mark::start`),
//! except channels: like Rust's tasks, each task gets its own channel handle, cloned in
//! `B.setup` (untimed) and given up (`deinit`) by the task when it finishes (timed).
//! The handle array is allocated with its final size before the driver is spawned.

const std = @import("std");
const ampere = @import("ampere");
const harness = @import("harness.zig");
const sync_tiers = @import("sync_tiers.zig");

const Ctx = harness.Ctx;
const Error = harness.Error;
const Mark = harness.Mark;
const Context = ampere.Context;
const Poll = ampere.Poll;
const JoinHandle = ampere.JoinHandle;
const Runtime = ampere.Runtime;
const sumBelow = sync_tiers.sumBelow;

/// Why a benchmark task could not do its work (Rust: the `&'static str` of a failed task).
pub const TaskError = error{ ChannelClosed, SemaphoreClosed, ValueDecreased, PingLost, PongLost, SpawnFailed, JoinFailed, OutOfMemory };
/// What a benchmark task returns: a count or checksum, or why it failed. A tagged union, not
/// an error union: ampere's task cell cannot yet hold an error-union output (`JoinError!T`
/// with T itself an error union does not compile in runtime/src/task/cell.zig).
pub const TaskResult = union(enum) {
    value: u64,
    failed: TaskError,

    pub fn ok(value: u64) Poll(TaskResult) {
        return .{ .ready = .{ .value = value } };
    }

    pub fn fail(err: TaskError) Poll(TaskResult) {
        return .{ .ready = .{ .failed = err } };
    }
};

// -- the driver -----------------------------------------------------------------------------

/// The driver task of benchmark `B` (see the module comment for the contract of `B`).
pub fn Driver(comptime B: type) type {
    return struct {
        const Self = @This();
        /// True when every iteration passed; otherwise `ctx` holds the failure message
        /// (a bool, not `Error!void`: see `TaskResult`).
        pub const Output = bool;
        const Handle = JoinHandle(B.Result);

        bench: B,
        ctx: *Ctx,
        handles: []Handle,
        iteration: u64 = 0,
        phase: Phase = .setup,
        round: u64 = 0,
        spawned: usize = 0,
        joined: usize = 0,
        mark: Mark = undefined,

        const Phase = enum { setup, spawn, join, finish };

        /// Allocates the handle array (untimed) and takes ownership of `bench`.
        pub fn init(ctx: *Ctx, bench: B) Error!Self {
            const handles = ctx.allocator().alloc(Handle, bench.maxHandles()) catch
                return ctx.fail("out of memory allocating join handles", .{});
            return .{ .bench = bench, .ctx = ctx, .handles = handles };
        }

        pub fn poll(self: *Self, cx: *Context) Poll(Output) {
            const c = self.ctx.constants;
            // Bounded: every pass advances a phase or returns pending.
            while (true) {
                switch (self.phase) {
                    .setup => {
                        if (self.iteration == c.warmup + c.iterations) {
                            self.finishAll();
                            return .{ .ready = true };
                        }
                        self.bench.setup(self.ctx) catch return .{ .ready = false };
                        self.round = 0;
                        self.ctx.metricsBegin();
                        self.mark = self.ctx.markStart();
                        self.phase = .spawn;
                    },
                    .spawn => {
                        if (self.round == self.bench.rounds()) {
                            self.phase = .finish;
                            continue;
                        }
                        self.spawned = self.bench.spawnRound(self.round, self.handles) catch |err|
                            return self.failed("spawn failed: {s}", .{@errorName(err)});
                        self.joined = 0;
                        self.phase = .join;
                    },
                    .join => {
                        while (self.joined < self.spawned) {
                            switch (self.handles[self.joined].poll(cx)) {
                                .pending => return .pending,
                                .ready => |output| {
                                    const result = output catch |err| {
                                        self.detachRest();
                                        return self.failed("task failed: {s}", .{@errorName(err)});
                                    };
                                    self.bench.collect(self.joined, result);
                                    self.joined += 1;
                                },
                            }
                        }
                        self.round += 1;
                        self.phase = .spawn;
                    },
                    .finish => {
                        if (@hasDecl(B, "pollFinish")) {
                            if (self.bench.pollFinish(cx) == .pending) return .pending;
                        }
                        const sample = self.mark.stop();
                        self.ctx.metricsEnd(self.iteration, c.warmup);
                        self.bench.verify(self.ctx) catch return .{ .ready = false };
                        self.ctx.record(self.iteration, c.warmup, sample);
                        self.iteration += 1;
                        self.phase = .setup;
                    },
                }
            }
        }

        fn failed(self: *Self, comptime format: []const u8, args: anytype) Poll(Output) {
            self.ctx.fail(format, args) catch {};
            return .{ .ready = false };
        }

        fn detachRest(self: *Self) void {
            for (self.handles[self.joined + 1 .. self.spawned]) |*handle| handle.detach();
        }

        /// After the last iteration: every task was joined, so the shared objects can go.
        fn finishAll(self: *Self) void {
            self.bench.deinit();
            self.ctx.allocator().free(self.handles);
        }
    };
}

/// Runs benchmark `bench` as a driver task on the micro-suite runtime.
pub fn drive(ctx: *Ctx, bench: anytype) Error!void {
    const rt = try ctx.microRuntime();
    const driver = try Driver(@TypeOf(bench)).init(ctx, bench);
    const handle = rt.spawn(driver) catch |err| return ctx.fail("cannot spawn the driver: {s}", .{@errorName(err)});
    const passed = rt.blockOn(handle) catch |err| return ctx.fail("driver task failed: {s}", .{@errorName(err)});
    if (!passed) return error.BenchmarkFailed; // the message is in ctx

}

// -- Tier 3 ---------------------------------------------------------------------------------

const Channel = ampere.channel.Bounded(u64);

/// Sends base + j for j in 0..count, each send awaited; returns count. `Tx` is either the
/// task's own `Channel.Sender` (Rust: the moved `tx` clone), given up when it finishes, or a
/// `*const Channel.Sender` it borrows (the native io rows' one sender per channel).
pub fn ProducerOn(comptime Tx: type) type {
    comptime std.debug.assert(Tx == Channel.Sender or Tx == *const Channel.Sender);
    return struct {
        const Self = @This();
        pub const Output = TaskResult;
        tx: Tx,
        base: u64,
        count: u64,
        next: u64 = 0,
        sending: ?Channel.SendFuture = null,

        pub fn poll(self: *Self, cx: *Context) Poll(Output) {
            while (true) {
                if (ampere.future.isNull(&self.sending)) {
                    if (self.next == self.count) return self.finish(TaskResult.ok(self.count));
                    self.sending = self.tx.send(self.base + self.next);
                }
                switch (self.sending.?.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        self.sending = null;
                        result catch return self.finish(TaskResult.fail(error.ChannelClosed));
                        self.next += 1;
                    },
                }
            }
        }

        fn finish(self: *Self, result: Poll(Output)) Poll(Output) {
            if (Tx == Channel.Sender) self.tx.deinit();
            return result;
        }

        pub fn cancel(self: *Self) void {
            if (self.sending) |*sending| sending.cancel();
            self.sending = null;
            if (Tx == Channel.Sender) self.tx.deinit();
        }
    };
}

/// Awaits exactly `count` receives; returns the sum of the values. `Rx` is either the task's
/// own `Channel.Receiver` (Rust: the moved `rx` clone), given up when it finishes, or a
/// `*const Channel.Receiver` it borrows (the native io rows' one receiver per channel).
pub fn ConsumerOn(comptime Rx: type) type {
    comptime std.debug.assert(Rx == Channel.Receiver or Rx == *const Channel.Receiver);
    return struct {
        const Self = @This();
        pub const Output = TaskResult;
        rx: Rx,
        count: u64,
        received: u64 = 0,
        sum: u64 = 0,
        receiving: ?Channel.RecvFuture = null,

        pub fn poll(self: *Self, cx: *Context) Poll(Output) {
            while (true) {
                if (ampere.future.isNull(&self.receiving)) {
                    if (self.received == self.count) return self.finish(TaskResult.ok(self.sum));
                    self.receiving = self.rx.recv();
                }
                switch (self.receiving.?.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        self.receiving = null;
                        self.sum += result catch return self.finish(TaskResult.fail(error.ChannelClosed));
                        self.received += 1;
                    },
                }
            }
        }

        fn finish(self: *Self, result: Poll(Output)) Poll(Output) {
            if (Rx == Channel.Receiver) self.rx.deinit();
            return result;
        }

        pub fn cancel(self: *Self) void {
            if (self.receiving) |*receiving| receiving.cancel();
            self.receiving = null;
            if (Rx == Channel.Receiver) self.rx.deinit();
        }
    };
}

const Producer = ProducerOn(Channel.Sender);
const Consumer = ConsumerOn(Channel.Receiver);

/// channel_mpmc and channel_mpsc: a bounded channel of mpmc_buffer; spawn order `producers`
/// producers (producer p sends p·per + j), then `consumers` consumers (each awaits exactly
/// ops / consumers receives and returns their sum). channel_mpsc is the same with one
/// consumer: ampere has one bounded channel type (MPMC); Tokio's side uses its mpsc there.
/// The driver keeps one sender and one receiver (Rust: `tx`, `rx`) so the channel stays open;
/// each iteration's handle clones are made in `setup` (untimed) and handed to the tasks.
const ChannelBench = struct {
    pub const Result = TaskResult;
    tx: Channel.Sender,
    rx: Channel.Receiver,
    allocator: std.mem.Allocator,
    /// The clones for the next round, made untimed; each moves into its task (null after).
    sender_clones: []?Channel.Sender,
    receiver_clones: []?Channel.Receiver,
    producers: u64,
    consumers: u64,
    per_producer: u64,
    per_consumer: u64,
    sent: u64 = 0,
    received_sum: u64 = 0,
    failure: ?TaskError = null,

    fn init(ctx: *Ctx, producers: u64, consumers: u64) Error!ChannelBench {
        const c = ctx.constants;
        const allocator = ctx.allocator();
        var tx, var rx = Channel.init(allocator, @intCast(c.mpmc_buffer)) catch
            return ctx.fail("out of memory creating the channel", .{});
        const sender_clones = allocator.alloc(?Channel.Sender, @intCast(producers)) catch {
            tx.deinit();
            rx.deinit();
            return ctx.fail("out of memory creating the channel", .{});
        };
        const receiver_clones = allocator.alloc(?Channel.Receiver, @intCast(consumers)) catch {
            allocator.free(sender_clones);
            tx.deinit();
            rx.deinit();
            return ctx.fail("out of memory creating the channel", .{});
        };
        @memset(sender_clones, null);
        @memset(receiver_clones, null);
        const per_producer = c.async_ops / producers;
        return .{
            .tx = tx,
            .rx = rx,
            .allocator = allocator,
            .sender_clones = sender_clones,
            .receiver_clones = receiver_clones,
            .producers = producers,
            .consumers = consumers,
            .per_producer = per_producer,
            // channel_mpsc: the single consumer takes everything (Rust: `for _ in 0..ops`).
            .per_consumer = producers * per_producer / consumers,
        };
    }

    pub fn maxHandles(self: *const ChannelBench) usize {
        return @intCast(self.producers + self.consumers);
    }

    pub fn rounds(_: *const ChannelBench) u64 {
        return 1;
    }

    pub fn setup(self: *ChannelBench, _: *Ctx) Error!void {
        self.sent = 0;
        self.received_sum = 0;
        self.failure = null;
        for (self.sender_clones) |*clone| {
            if (clone.* == null) clone.* = self.tx.clone();
        }
        for (self.receiver_clones) |*clone| {
            if (clone.* == null) clone.* = self.rx.clone();
        }
    }

    pub fn spawnRound(self: *ChannelBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        var n: usize = 0;
        for (self.sender_clones, 0..) |*clone, p| {
            handles[n] = try ampere.spawn(Producer{ .tx = clone.*.?, .base = p * self.per_producer, .count = self.per_producer });
            clone.* = null; // Moved into the task.
            n += 1;
        }
        for (self.receiver_clones) |*clone| {
            handles[n] = try ampere.spawn(Consumer{ .rx = clone.*.?, .count = self.per_consumer });
            clone.* = null;
            n += 1;
        }
        return n;
    }

    pub fn collect(self: *ChannelBench, index: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| if (index < self.producers) {
                self.sent += value;
            } else {
                self.received_sum += value;
            },
        }
    }

    pub fn verify(self: *ChannelBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("a task failed: {s}", .{@errorName(err)});
        const ops = self.producers * self.per_producer;
        try ctx.expectEq("values sent", self.sent, ops);
        try ctx.expectEq("sum of received values", self.received_sum, sumBelow(ops));
        try ctx.expectEq("values left in the channel", self.rx.len(), 0);
    }

    pub fn deinit(self: *ChannelBench) void {
        for (self.sender_clones) |*clone| if (clone.*) |*tx| tx.deinit();
        for (self.receiver_clones) |*clone| if (clone.*) |*rx| rx.deinit();
        self.allocator.free(self.sender_clones);
        self.allocator.free(self.receiver_clones);
        self.tx.deinit();
        self.rx.deinit();
    }
};

pub fn channelMpmc(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, try ChannelBench.init(ctx, c.mpmc_producers, c.mpmc_consumers));
}

pub fn channelMpsc(ctx: *Ctx) Error!void {
    return drive(ctx, try ChannelBench.init(ctx, ctx.constants.mpsc_producers, 1));
}

/// The state shared by mutex_contended tasks: the lock and the counter it protects.
const MutexShared = struct {
    mutex: ampere.sync.Mutex = ampere.sync.Mutex.init(),
    /// Only accessed while holding `mutex`.
    counter: u64 = 0,
};

/// count × (lock().await, increment, unlock the guard).
const Locker = struct {
    pub const Output = TaskResult;
    shared: *MutexShared,
    count: u64,
    done: u64 = 0,
    locking: ?ampere.sync.Mutex.Lock = null,

    pub fn poll(self: *Locker, cx: *Context) Poll(Output) {
        while (true) {
            if (ampere.future.isNull(&self.locking)) {
                if (self.done == self.count) return TaskResult.ok(self.count);
                self.locking = self.shared.mutex.lock();
            }
            switch (self.locking.?.poll(cx)) {
                .pending => return .pending,
                .ready => |guard| {
                    self.locking = null;
                    self.shared.counter += 1;
                    guard.unlock();
                    self.done += 1;
                },
            }
        }
    }

    pub fn cancel(self: *Locker) void {
        if (self.locking) |*locking| locking.cancel();
        self.locking = null;
    }
};

/// mutex_contended: `contended_mutex_tasks` tasks × (async_ops / tasks) × (lock, increment,
/// unlock). Check: the counter equals ops exactly.
const MutexBench = struct {
    pub const Result = TaskResult;
    shared: MutexShared = .{},
    tasks: u64,
    per_task: u64,
    acquisitions: u64 = 0,
    failure: ?TaskError = null,

    pub fn maxHandles(self: *const MutexBench) usize {
        return @intCast(self.tasks);
    }

    pub fn rounds(_: *const MutexBench) u64 {
        return 1;
    }

    pub fn setup(self: *MutexBench, ctx: *Ctx) Error!void {
        var guard = self.shared.mutex.tryLock() orelse return ctx.fail("mutex held between iterations", .{});
        self.shared.counter = 0;
        guard.unlock();
        self.acquisitions = 0;
        self.failure = null;
    }

    pub fn spawnRound(self: *MutexBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        for (handles[0..@intCast(self.tasks)]) |*handle| {
            handle.* = try ampere.spawn(Locker{ .shared = &self.shared, .count = self.per_task });
        }
        return @intCast(self.tasks);
    }

    pub fn collect(self: *MutexBench, _: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| self.acquisitions += value,
        }
    }

    pub fn verify(self: *MutexBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("a task failed: {s}", .{@errorName(err)});
        const ops = self.tasks * self.per_task;
        try ctx.expectEq("lock acquisitions", self.acquisitions, ops);
        var guard = self.shared.mutex.tryLock() orelse return ctx.fail("mutex still held after the iteration", .{});
        defer guard.unlock();
        try ctx.expectEq("shared counter", self.shared.counter, ops);
    }

    pub fn deinit(_: *MutexBench) void {}
};

pub fn mutexContended(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, MutexBench{ .tasks = c.contended_mutex_tasks, .per_task = c.async_ops / c.contended_mutex_tasks });
}

const RwShared = struct {
    lock: ampere.sync.RwLock = ampere.sync.RwLock.init(),
    /// Read under a read lock, written under the write lock.
    value: u64 = 0,
};

/// Reader: count × (read().await, read the value — never decreasing — unlock the guard).
/// Writer: count × (write().await, increment, unlock the guard).
const RwTask = struct {
    pub const Output = TaskResult;
    shared: *RwShared,
    writer: bool,
    count: u64,
    done: u64 = 0,
    last: u64 = 0,
    /// The pending acquisition, if any (`writer` says which kind).
    acquiring: ?union(enum) {
        read: ampere.sync.RwLock.Read,
        write: ampere.sync.RwLock.Write,
    } = null,

    pub fn poll(self: *RwTask, cx: *Context) Poll(Output) {
        while (true) {
            if (ampere.future.isNull(&self.acquiring)) {
                if (self.done == self.count) return TaskResult.ok(self.count);
                self.acquiring = if (self.writer) .{ .write = self.shared.lock.write() } else .{ .read = self.shared.lock.read() };
            }
            switch (self.acquiring.?) {
                .write => |*acquisition| switch (acquisition.poll(cx)) {
                    .pending => return .pending,
                    .ready => |guard| {
                        self.acquiring = null;
                        self.done += 1;
                        self.shared.value += 1;
                        guard.unlock();
                    },
                },
                .read => |*acquisition| switch (acquisition.poll(cx)) {
                    .pending => return .pending,
                    .ready => |guard| {
                        self.acquiring = null;
                        self.done += 1;
                        const value = self.shared.value;
                        std.mem.doNotOptimizeAway(value);
                        guard.unlock();
                        if (value < self.last) return TaskResult.fail(error.ValueDecreased);
                        self.last = value;
                    },
                },
            }
        }
    }

    pub fn cancel(self: *RwTask) void {
        if (self.acquiring) |*acquiring| switch (acquiring.*) {
            inline else => |*acquisition| acquisition.cancel(),
        };
        self.acquiring = null;
    }
};

/// rwlock_contended: spawn order `rwlock_readers` readers, then `rwlock_writers` writers, each
/// doing `rwlock_ops_per_task` ops. Check: value = writers × per_task.
const RwLockBench = struct {
    pub const Result = TaskResult;
    shared: RwShared = .{},
    readers: u64,
    writers: u64,
    per_task: u64,
    acquisitions: u64 = 0,
    failure: ?TaskError = null,

    pub fn maxHandles(self: *const RwLockBench) usize {
        return @intCast(self.readers + self.writers);
    }

    pub fn rounds(_: *const RwLockBench) u64 {
        return 1;
    }

    pub fn setup(self: *RwLockBench, ctx: *Ctx) Error!void {
        var guard = self.shared.lock.tryWrite() orelse return ctx.fail("rwlock held between iterations", .{});
        self.shared.value = 0;
        guard.unlock();
        self.acquisitions = 0;
        self.failure = null;
    }

    pub fn spawnRound(self: *RwLockBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        var n: usize = 0;
        while (n < self.readers + self.writers) : (n += 1) {
            const writer = n >= self.readers;
            handles[n] = try ampere.spawn(RwTask{ .shared = &self.shared, .writer = writer, .count = self.per_task });
        }
        return n;
    }

    pub fn collect(self: *RwLockBench, _: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| self.acquisitions += value,
        }
    }

    pub fn verify(self: *RwLockBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("a task failed: {s}", .{@errorName(err)});
        try ctx.expectEq("lock acquisitions", self.acquisitions, (self.readers + self.writers) * self.per_task);
        var guard = self.shared.lock.tryRead() orelse return ctx.fail("rwlock still held after the iteration", .{});
        defer guard.unlock();
        try ctx.expectEq("shared counter", self.shared.value, self.writers * self.per_task);
    }

    pub fn deinit(_: *RwLockBench) void {}
};

pub fn rwlockContended(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, RwLockBench{ .readers = c.rwlock_readers, .writers = c.rwlock_writers, .per_task = c.rwlock_ops_per_task });
}

/// The semaphore under test plus a concurrency check: `in_use` counts tasks inside the
/// permit-protected section. Monotonic suffices: each permit hand-over (release → acquire) is
/// a release/acquire edge inside the semaphore, so a task's `fetchSub` happens-before the next
/// holder's `fetchAdd`, and RMWs on one atomic follow happens-before in modification order.
const GuardedSemaphore = struct {
    semaphore: ampere.sync.Semaphore,
    permits: u64,
    in_use: std.atomic.Value(u64) = .init(0),
    violations: std.atomic.Value(u64) = .init(0),
};

/// count × (acquire(1).await, check ≤ permits holders, release(1)).
const SemaphoreTask = struct {
    pub const Output = TaskResult;
    shared: *GuardedSemaphore,
    count: u64,
    done: u64 = 0,
    acquiring: ?ampere.sync.Semaphore.Acquire = null,

    pub fn poll(self: *SemaphoreTask, cx: *Context) Poll(Output) {
        const shared = self.shared;
        while (true) {
            if (ampere.future.isNull(&self.acquiring)) {
                if (self.done == self.count) return TaskResult.ok(self.count);
                self.acquiring = shared.semaphore.acquire(1);
            }
            switch (self.acquiring.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.acquiring = null;
                    result catch return TaskResult.fail(error.SemaphoreClosed);
                    const holders = shared.in_use.fetchAdd(1, .monotonic) + 1;
                    if (holders > shared.permits) _ = shared.violations.fetchAdd(1, .monotonic);
                    _ = shared.in_use.fetchSub(1, .monotonic);
                    shared.semaphore.release(1);
                    self.done += 1;
                },
            }
        }
    }

    pub fn cancel(self: *SemaphoreTask) void {
        if (self.acquiring) |*acquiring| acquiring.cancel();
        self.acquiring = null;
    }
};

/// semaphore_contended: Semaphore(contended_sem_permits); `contended_sem_tasks` tasks ×
/// (async_ops / tasks) × (acquire, check, release). Check: no violation, every acquire done,
/// all permits back.
const SemaphoreBench = struct {
    pub const Result = TaskResult;
    shared: GuardedSemaphore,
    tasks: u64,
    per_task: u64,
    acquisitions: u64 = 0,
    failure: ?TaskError = null,

    pub fn maxHandles(self: *const SemaphoreBench) usize {
        return @intCast(self.tasks);
    }

    pub fn rounds(_: *const SemaphoreBench) u64 {
        return 1;
    }

    pub fn setup(self: *SemaphoreBench, _: *Ctx) Error!void {
        self.acquisitions = 0;
        self.failure = null;
    }

    pub fn spawnRound(self: *SemaphoreBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        for (handles[0..@intCast(self.tasks)]) |*handle| {
            handle.* = try ampere.spawn(SemaphoreTask{ .shared = &self.shared, .count = self.per_task });
        }
        return @intCast(self.tasks);
    }

    pub fn collect(self: *SemaphoreBench, _: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| self.acquisitions += value,
        }
    }

    pub fn verify(self: *SemaphoreBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("a task failed: {s}", .{@errorName(err)});
        try ctx.expectEq("acquisitions", self.acquisitions, self.tasks * self.per_task);
        try ctx.expectEq("holders above the permit count", self.shared.violations.load(.monotonic), 0);
        try ctx.expectEq("available permits", self.shared.semaphore.availablePermits(), self.shared.permits);
    }

    pub fn deinit(_: *SemaphoreBench) void {}
};

pub fn semaphoreContended(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const permits = c.contended_sem_permits;
    return drive(ctx, SemaphoreBench{
        .shared = .{ .semaphore = ampere.sync.Semaphore.init(@intCast(permits)), .permits = permits },
        .tasks = c.contended_sem_tasks,
        .per_task = c.async_ops / c.contended_sem_tasks,
    });
}

// -- Tier 4 ---------------------------------------------------------------------------------

/// The no-op task body of the spawn benchmarks: returns its index (Rust: `async move { i }`).
fn identity(value: u64) u64 {
    return value;
}

/// task_spawn (`blocking = false`): task_ops rounds of (spawn a task returning i, await it).
/// blocking_spawn (`blocking = true`): the same with `spawnBlocking`.
/// task_spawn_batch (`batch > 1`): task_ops / batch rounds of (spawn batch tasks returning
/// their index, await each in order).
pub const SpawnBench = struct {
    pub const Result = u64;
    batch: u64,
    batches: u64,
    blocking: bool,
    round: u64 = 0,
    matched: u64 = 0,
    sum: u64 = 0,

    pub fn maxHandles(self: *const SpawnBench) usize {
        return @intCast(self.batch);
    }

    pub fn rounds(self: *const SpawnBench) u64 {
        return self.batches;
    }

    pub fn setup(self: *SpawnBench, _: *Ctx) Error!void {
        self.matched = 0;
        self.sum = 0;
    }

    pub fn spawnRound(self: *SpawnBench, round: u64, handles: []JoinHandle(Result)) Runtime.SpawnBlockingError!usize {
        self.round = round;
        const n: usize = @intCast(self.batch);
        for (handles[0..n], 0..) |*handle, j| {
            const index = round * self.batch + j;
            handle.* = if (self.blocking)
                try ampere.spawnBlocking(identity, .{index})
            else
                try ampere.spawn(ampere.task.fromFn(identity, .{index}));
        }
        return n;
    }

    pub fn collect(self: *SpawnBench, index: usize, value: Result) void {
        if (value == self.round * self.batch + index) self.matched += 1;
        self.sum += value;
    }

    pub fn verify(self: *SpawnBench, ctx: *Ctx) Error!void {
        const ops = self.batches * self.batch;
        try ctx.expectEq("join results", self.matched, ops);
        try ctx.expectEq("sum of join results", self.sum, sumBelow(ops));
    }

    pub fn deinit(_: *SpawnBench) void {}
};

pub fn taskSpawn(ctx: *Ctx) Error!void {
    return drive(ctx, SpawnBench{ .batch = 1, .batches = ctx.constants.task_ops, .blocking = false });
}

pub fn taskSpawnBatch(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, SpawnBench{ .batch = c.spawn_batch_size, .batches = c.task_ops / c.spawn_batch_size, .blocking = false });
}

pub fn blockingSpawn(ctx: *Ctx) Error!void {
    return drive(ctx, SpawnBench{ .batch = 1, .batches = ctx.constants.task_ops, .blocking = true });
}

/// count × `yieldNow()`; returns how many times the task really suspended (a yield that
/// returned ready at once would not count, so the check catches a yield that does nothing).
const Yielder = struct {
    pub const Output = TaskResult;
    count: u64,
    done: u64 = 0,
    suspended: u64 = 0,
    yielding: ?ampere.task.YieldNow = null,

    pub fn poll(self: *Yielder, cx: *Context) Poll(Output) {
        while (true) {
            if (self.yielding == null) {
                if (self.done == self.count) return TaskResult.ok(self.suspended);
                self.yielding = ampere.task.yieldNow();
            }
            switch (self.yielding.?.poll(cx)) {
                .pending => {
                    self.suspended += 1;
                    return .pending;
                },
                .ready => {
                    self.yielding = null;
                    self.done += 1;
                },
            }
        }
    }
};

/// yield_many: yield_tasks tasks × yield_per_task yields, then await each in order.
const YieldBench = struct {
    pub const Result = TaskResult;
    tasks: u64,
    per_task: u64,
    yields: u64 = 0,
    failure: ?TaskError = null,

    pub fn maxHandles(self: *const YieldBench) usize {
        return @intCast(self.tasks);
    }

    pub fn rounds(_: *const YieldBench) u64 {
        return 1;
    }

    pub fn setup(self: *YieldBench, _: *Ctx) Error!void {
        self.yields = 0;
    }

    pub fn spawnRound(self: *YieldBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        for (handles[0..@intCast(self.tasks)]) |*handle| handle.* = try ampere.spawn(Yielder{ .count = self.per_task });
        return @intCast(self.tasks);
    }

    pub fn collect(self: *YieldBench, _: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |value| self.yields += value,
        }
    }

    pub fn verify(self: *YieldBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("a task failed: {s}", .{@errorName(err)});
        try ctx.expectEq("suspensions in yields", self.yields, self.tasks * self.per_task);
    }

    pub fn deinit(_: *YieldBench) void {}
};

pub fn yieldMany(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    return drive(ctx, YieldBench{ .tasks = c.yield_tasks, .per_task = c.yield_per_task });
}

/// ping_pong's and chained_spawn's oneshot: the owned one (one allocation per channel, freed by
/// whichever half lets go last), as Tokio's `oneshot::channel()`, so both sides pay the same
/// for a channel whose halves may outlive their creator. The caller-owned `Oneshot` (no
/// allocation) is measured on its own by Tier 2 `oneshot`.
const Oneshot = ampere.channel.OwnedOneshot(u64);
/// A half that was moved away or never made (its `deinit` does nothing).
const no_sender: Oneshot.Sender = .{ .shared = null, .inner = .{ .channel = null } };
const no_receiver: Oneshot.Receiver = .{ .shared = null, .inner = .{ .channel = null } };

/// The ponger of one ping_pong round: awaits the ping, replies value + 1. Owns the ping's
/// receiver and the pong's sender (Rust: the moved `ping_rx`, `pong_tx`).
const Ponger = struct {
    /// null: replied.
    pub const Output = ?TaskError;
    ping: Oneshot.Receiver,
    pong: Oneshot.Sender,
    receiving: ?Oneshot.RecvFuture = null,

    pub fn poll(self: *Ponger, cx: *Context) Poll(Output) {
        if (ampere.future.isNull(&self.receiving)) self.receiving = self.ping.recv();
        switch (self.receiving.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.receiving = null;
                self.ping.deinit();
                const value = result catch return self.finish(error.PingLost);
                self.pong.send(value + 1) catch return self.finish(error.PongLost);
                return .{ .ready = null };
            },
        }
    }

    fn finish(self: *Ponger, failure: TaskError) Poll(Output) {
        self.pong.deinit(); // Closes the pong unless it was sent.
        return .{ .ready = failure };
    }

    pub fn cancel(self: *Ponger) void {
        if (self.receiving) |*receiving| receiving.cancel();
        self.receiving = null;
        self.ping.deinit();
        self.pong.deinit();
    }
};

/// The pinger of one ping_pong round (the shape of Tokio's `ping_pong` bench): create two
/// owned oneshots (one allocation each, as Tokio's); spawn the ponger with the ping's receiver
/// and the pong's sender, send the value, await the reply, then await the ponger's handle.
/// Each half frees its channel's state if it is the last to let go (Rust: the last `Arc`).
const Pinger = struct {
    pub const Output = TaskResult;
    value: u64,
    allocator: std.mem.Allocator,
    phase: enum { start, reply, ponger } = .start,
    ponger: JoinHandle(?TaskError) = undefined,
    pong_rx: Oneshot.Receiver = no_receiver,
    receiving: Oneshot.RecvFuture = undefined,
    reply: u64 = 0,

    pub fn poll(self: *Pinger, cx: *Context) Poll(Output) {
        while (true) {
            switch (self.phase) {
                .start => {
                    var ping_tx, var ping_rx = Oneshot.init(self.allocator) catch
                        return TaskResult.fail(error.OutOfMemory);
                    var pong_tx, self.pong_rx = Oneshot.init(self.allocator) catch {
                        ping_tx.deinit();
                        ping_rx.deinit();
                        return TaskResult.fail(error.OutOfMemory);
                    };
                    self.ponger = ampere.spawn(Ponger{ .ping = ping_rx, .pong = pong_tx }) catch {
                        ping_tx.deinit();
                        ping_rx.deinit();
                        pong_tx.deinit();
                        self.pong_rx.deinit();
                        return TaskResult.fail(error.SpawnFailed);
                    };
                    ping_tx.send(self.value) catch {
                        self.pong_rx.deinit();
                        return TaskResult.fail(error.PingLost);
                    };
                    self.receiving = self.pong_rx.recv();
                    self.phase = .reply;
                },
                .reply => switch (self.receiving.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        self.pong_rx.deinit();
                        self.reply = result catch return TaskResult.fail(error.PongLost);
                        self.phase = .ponger;
                    },
                },
                .ponger => switch (self.ponger.poll(cx)) {
                    .pending => return .pending,
                    .ready => |output| {
                        const ponger_failure = output catch return TaskResult.fail(error.JoinFailed);
                        if (ponger_failure) |err| return TaskResult.fail(err);
                        return TaskResult.ok(self.reply);
                    },
                },
            }
        }
    }

    /// At runtime shutdown: give the pong receiver up (safe while the ponger may still send:
    /// the state is owned) and detach the ponger's handle.
    pub fn cancel(self: *Pinger) void {
        switch (self.phase) {
            .start => {},
            .reply => {
                self.receiving.cancel();
                self.pong_rx.deinit();
                self.ponger.cancel();
            },
            .ponger => self.ponger.cancel(),
        }
    }
};

/// ping_pong: ping_pong_rounds pingers spawned at once, then awaited in order. Check: the
/// reply of pinger i is i + 1.
const PingPongBench = struct {
    pub const Result = TaskResult;
    rounds_count: u64,
    /// The counted allocator: the oneshots' states (Rust: the global allocator).
    allocator: std.mem.Allocator,
    matched: u64 = 0,
    failure: ?TaskError = null,

    pub fn maxHandles(self: *const PingPongBench) usize {
        return @intCast(self.rounds_count);
    }

    pub fn rounds(_: *const PingPongBench) u64 {
        return 1;
    }

    pub fn setup(self: *PingPongBench, _: *Ctx) Error!void {
        self.matched = 0;
    }

    pub fn spawnRound(self: *PingPongBench, _: u64, handles: []JoinHandle(Result)) Runtime.SpawnError!usize {
        for (handles[0..@intCast(self.rounds_count)], 0..) |*handle, i| handle.* = try ampere.spawn(Pinger{ .value = i, .allocator = self.allocator });
        return @intCast(self.rounds_count);
    }

    pub fn collect(self: *PingPongBench, index: usize, result: Result) void {
        switch (result) {
            .failed => |err| self.failure = err,
            .value => |reply| if (reply == index + 1) {
                self.matched += 1;
            },
        }
    }

    pub fn verify(self: *PingPongBench, ctx: *Ctx) Error!void {
        if (self.failure) |err| return ctx.fail("a task failed: {s}", .{@errorName(err)});
        try ctx.expectEq("correct pong replies", self.matched, self.rounds_count);
    }

    pub fn deinit(_: *PingPongBench) void {}
};

pub fn pingPong(ctx: *Ctx) Error!void {
    return drive(ctx, PingPongBench{ .rounds_count = ctx.constants.ping_pong_rounds, .allocator = ctx.allocator() });
}

/// One link of chained_spawn: with `remaining` links left, spawn the next (its handle is
/// detached), moving the oneshot sender `done` into it (Rust: `done` moves down the chain), or,
/// at the end of the chain, send the chain's length on it.
const Link = struct {
    pub const Output = void;
    remaining: u64,
    depth: u64,
    done: Oneshot.Sender,

    pub fn poll(self: *Link, cx: *Context) Poll(void) {
        _ = cx;
        if (self.remaining == 0) {
            self.done.send(self.depth) catch {};
        } else {
            var next = ampere.spawn(Link{ .remaining = self.remaining - 1, .depth = self.depth + 1, .done = self.done }) catch {
                self.done.deinit(); // the driver then fails instead of waiting forever
                return .{ .ready = {} };
            };
            next.detach();
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Link) void {
        // A link cancelled at shutdown before it ran: the sender is still here.
        self.done.deinit();
    }
};

/// chained_spawn: the driver spawns task 1; task k spawns task k + 1 until chain_length tasks
/// ran; the last sends its depth on an owned oneshot (allocated before timing, as Rust's;
/// freed inside the timed region by the half that lets go last, the driver's receiver or the
/// last link's sender, as Rust's) that the driver awaits. Check: depth = chain_length.
const ChainBench = struct {
    pub const Result = void;
    length: u64,
    /// The counted allocator: the oneshot's state (Rust: the global allocator).
    allocator: std.mem.Allocator,
    done_tx: Oneshot.Sender = no_sender,
    done_rx: Oneshot.Receiver = no_receiver,
    receiving: ?Oneshot.RecvFuture = null,
    depth: ?u64 = null,

    pub fn maxHandles(_: *const ChainBench) usize {
        return 0;
    }

    pub fn rounds(_: *const ChainBench) u64 {
        return 1;
    }

    pub fn setup(self: *ChainBench, ctx: *Ctx) Error!void {
        // The previous iteration's halves are given up (moved into the chain, or `deinit`).
        std.debug.assert(self.done_tx.shared == null and self.done_rx.shared == null);
        self.done_tx, self.done_rx = Oneshot.init(self.allocator) catch
            return ctx.fail("out of memory creating the completion oneshot", .{});
        self.receiving = null;
        self.depth = null;
    }

    /// Rust: `chain_link(length, 0, done_tx)` called by the driver spawns the task (length-1, 1).
    pub fn spawnRound(self: *ChainBench, _: u64, _: []JoinHandle(Result)) Runtime.SpawnError!usize {
        var first = try ampere.spawn(Link{ .remaining = self.length - 1, .depth = 1, .done = self.done_tx });
        self.done_tx = no_sender; // Moved into the chain.
        first.detach();
        return 0;
    }

    pub fn collect(_: *ChainBench, _: usize, _: Result) void {
        unreachable; // no handles
    }

    pub fn pollFinish(self: *ChainBench, cx: *Context) Poll(void) {
        if (ampere.future.isNull(&self.receiving)) self.receiving = self.done_rx.recv();
        switch (self.receiving.?.poll(cx)) {
            .pending => return .pending,
            .ready => |result| {
                self.receiving = null;
                self.depth = result catch null;
                self.done_rx.deinit();
                return .{ .ready = {} };
            },
        }
    }

    pub fn verify(self: *ChainBench, ctx: *Ctx) Error!void {
        const depth = self.depth orelse return ctx.fail("the chain ended without reporting", .{});
        try ctx.expectEq("chain depth", depth, self.length);
    }

    pub fn deinit(self: *ChainBench) void {
        self.done_tx.deinit(); // Only if a spawn failed and it was never moved.
        self.done_rx.deinit();
    }
};

pub fn chainedSpawn(ctx: *Ctx) Error!void {
    return drive(ctx, ChainBench{ .length = ctx.constants.chain_length, .allocator = ctx.allocator() });
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;
const constants = @import("constants.zig");

fn tinyAsyncConstants() !constants.Constants {
    var diag = constants.Diagnostic{};
    var c = try constants.Constants.load(testing.allocator, "quick", &diag);
    for ([_][]const u8{ "warmup=1", "iterations=2", "async_ops=40", "task_ops=20", "rwlock_ops_per_task=10", "yield_tasks=4", "yield_per_task=5", "ping_pong_rounds=10", "chain_length=10", "mpmc_buffer=4", "num_workers=2" }) |set| {
        try c.applyOverride(set, &diag);
    }
    return c;
}

test "every tier 3-4 benchmark passes its check" {
    const c = try tinyAsyncConstants();
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    const benches = [_]*const fn (*Ctx) Error!void{
        channelMpmc, channelMpsc, mutexContended, rwlockContended, semaphoreContended,
        taskSpawn,   taskSpawnBatch, blockingSpawn, yieldMany, pingPong, chainedSpawn,
    };
    for (benches, 0..) |bench, index| {
        var samples: [2]harness.Sample = undefined;
        const case = harness.Case.micro(3, "async", 1);
        var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples, .runtimes = &runtimes };
        bench(&ctx) catch |err| {
            std.debug.print("benchmark {d} failed: {s}\n", .{ index, ctx.message() });
            return err;
        };
        try testing.expectEqual(@as(usize, 2), ctx.recorded().len);
    }
}

test "ping_pong and chained_spawn count the owned oneshots' allocations, and free them" {
    const c = try tinyAsyncConstants();
    // testing.allocator under the counter: a oneshot state left unfreed fails as a leak.
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    var samples: [2]harness.Sample = undefined;
    // A spawn allocates its task cell at most: after the first spawns on a worker the cell is
    // a recycled task block (runtime/src/scheduler/TaskBlocks.zig), not an allocation.
    const spawn_case = harness.Case.micro(4, "task_spawn", c.task_ops);
    var spawn_ctx = Ctx{ .constants = &c, .counting = &counting, .case = &spawn_case, .samples = &samples, .runtimes = &runtimes };
    try taskSpawn(&spawn_ctx);
    for (spawn_ctx.recorded()) |s| try testing.expect(s.alloc_count <= c.task_ops);
    // ping_pong: per round two tasks (pinger, ponger) and two oneshot states, all timed: the
    // two oneshots are always counted, the tasks only when their block was not recycled.
    const ping_case = harness.Case.micro(4, "ping_pong", c.ping_pong_rounds);
    var ping_ctx = Ctx{ .constants = &c, .counting = &counting, .case = &ping_case, .samples = &samples, .runtimes = &runtimes };
    try pingPong(&ping_ctx);
    for (ping_ctx.recorded()) |s| {
        try testing.expect(s.alloc_count >= 2 * c.ping_pong_rounds);
        try testing.expect(s.alloc_count <= 4 * c.ping_pong_rounds);
    }
    // chained_spawn: one task per link; the completion oneshot is allocated before timing
    // (as Rust's), so at most the tasks are counted.
    const chain_case = harness.Case.micro(4, "chained_spawn", c.chain_length);
    var chain_ctx = Ctx{ .constants = &c, .counting = &counting, .case = &chain_case, .samples = &samples, .runtimes = &runtimes };
    try chainedSpawn(&chain_ctx);
    for (chain_ctx.recorded()) |s| try testing.expect(s.alloc_count <= c.chain_length);
}

test "a failed check in the driver is reported" {
    const c = try tinyAsyncConstants();
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    var samples: [2]harness.Sample = undefined;
    const case = harness.Case.micro(4, "chained_spawn", 1);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples, .runtimes = &runtimes };
    // A chain whose expected length is wrong must fail its depth check, not report a time.
    const Wrong = struct {
        inner: ChainBench,
        pub const Result = void;
        pub fn maxHandles(self: *const @This()) usize {
            return self.inner.maxHandles();
        }
        pub fn rounds(self: *const @This()) u64 {
            return self.inner.rounds();
        }
        pub fn setup(self: *@This(), ctx_: *Ctx) Error!void {
            return self.inner.setup(ctx_);
        }
        pub fn spawnRound(self: *@This(), round: u64, handles: []JoinHandle(void)) Runtime.SpawnError!usize {
            return self.inner.spawnRound(round, handles);
        }
        pub fn collect(self: *@This(), index: usize, result: void) void {
            self.inner.collect(index, result);
        }
        pub fn pollFinish(self: *@This(), cx: *Context) Poll(void) {
            return self.inner.pollFinish(cx);
        }
        pub fn verify(self: *@This(), ctx_: *Ctx) Error!void {
            self.inner.length += 1; // claims one link more than was spawned
            return self.inner.verify(ctx_);
        }
        pub fn deinit(_: *@This()) void {}
    };
    try testing.expectError(error.BenchmarkFailed, drive(&ctx, Wrong{ .inner = .{ .length = 5, .allocator = ctx.allocator() } }));
    try testing.expectEqualStrings("chain depth = 5, expected 6", ctx.message());
}
