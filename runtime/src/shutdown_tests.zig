//! Tests of `Runtime.deinit` with blocking-pool functions that wait on the runtime.
//!
//! Before the shutdown order of runtime/README.md ("Shutdown"), `deinit` joined the workers,
//! then waited for the blocking pool, and only then cancelled tasks — while timers were fired
//! only by workers. A blocking function waiting on a timer, on a task, or on a channel that a
//! task fed therefore never returned, and `deinit` hung. Each test below hung on that code
//! (checked); a watchdog turns a hang into a failure with a message instead of a stuck run.

const std = @import("std");
const testing = std.testing;

const future = @import("future.zig");
const Runtime = @import("Runtime.zig");
const JoinHandle = @import("task/join_handle.zig").JoinHandle;
const time = @import("time.zig");
const block_on = @import("block_on.zig");
const os = @import("os.zig");

/// Panics if `stop` is not called within `limit_ms` (a hang is a failure, not a stuck run).
const Watchdog = struct {
    done: std.atomic.Value(bool) = .init(false),
    thread: std.Thread = undefined,
    what: []const u8,

    const limit_ms: u32 = 20_000;

    fn start(self: *Watchdog) !void {
        self.thread = try std.Thread.spawn(.{}, run, .{self});
    }

    fn run(self: *Watchdog) void {
        var waited_ms: u32 = 0;
        while (!self.done.load(.acquire)) : (waited_ms += 1) {
            if (waited_ms >= limit_ms) std.debug.panic("hang: {s} did not return within {d} ms", .{ self.what, limit_ms });
            os.sleepNs(std.time.ns_per_ms);
        }
    }

    fn stop(self: *Watchdog) void {
        self.done.store(true, .release);
        self.thread.join();
    }
};

/// Counts blocking functions that have started (each test resets it).
var started = std.atomic.Value(u32).init(0);

fn waitUntilStarted(count: u32) void {
    while (started.load(.acquire) < count) std.Thread.yield() catch {};
    // Let the function reach its wait (a registration after shutdown is covered too).
    os.sleepNs(2 * std.time.ns_per_ms);
}

const hour_ns: u64 = 3600 * std.time.ns_per_s;

fn blockOnSleep() bool {
    const rt = Runtime.current() orelse unreachable;
    _ = started.fetchAdd(1, .acq_rel);
    rt.blockOn(time.sleep(hour_ns));
    return true;
}

fn deinitWithWatchdog(rt: *Runtime) !void {
    var watchdog = Watchdog{ .what = "Runtime.deinit" };
    try watchdog.start();
    rt.deinit();
    watchdog.stop();
}

test "deinit returns while a blocking function sleeps through blockOn (its timer fires at shutdown)" {
    started.store(0, .release);
    const rt = try Runtime.init(testing.allocator, .{ .workers = 2 });
    var handle = try rt.spawnBlocking(blockOnSleep, .{});
    waitUntilStarted(1);
    try deinitWithWatchdog(rt);
    try testing.expectEqual(true, try block_on.blockOnThread(&handle));
}

test "a sleep registered after shutdown expires at once" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    const driver = &rt.scheduler.shared.driver;
    rt.scheduler.stopWorkers();
    driver.shutdown();
    var entry = time.Driver.TimerEntry{};
    const waker = @import("Waker.zig").noop();
    try testing.expectEqual(time.Driver.Registration.expired, driver.register(&entry, driver.deadlineTickFor(time.nowNs() + 60 * std.time.ns_per_s), &waker));
    rt.deinit();
}

/// A future that is never ready and holds nothing: only cancellation ends its task.
const Forever = struct {
    pub const Output = void;
    pub fn poll(self: *Forever, cx: *future.Context) future.Poll(void) {
        _ = self;
        _ = cx;
        return .pending;
    }
    pub fn cancel(self: *Forever) void {
        _ = self;
    }
};

fn blockOnJoin(handle: JoinHandle(void)) bool {
    const rt = Runtime.current() orelse unreachable;
    _ = started.fetchAdd(1, .acq_rel);
    rt.blockOn(handle) catch |err| return err == error.Cancelled;
    return false;
}

test "deinit returns while a blocking function awaits a task that only cancellation ends" {
    started.store(0, .release);
    const rt = try Runtime.init(testing.allocator, .{ .workers = 2 });
    const task = try rt.spawn(Forever{});
    var handle = try rt.spawnBlocking(blockOnJoin, .{task});
    waitUntilStarted(1);
    try deinitWithWatchdog(rt);
    // The awaited task was cancelled by shutdown, before the blocking pool was joined.
    try testing.expectEqual(true, try block_on.blockOnThread(&handle));
}

fn blockOnJoinSleeper(handle: JoinHandle(void)) bool {
    const rt = Runtime.current() orelse unreachable;
    _ = started.fetchAdd(1, .acq_rel);
    rt.blockOn(handle) catch |err| return err == error.Cancelled;
    return true; // The sleep fired at shutdown and the task completed before cancellation.
}

test "deinit returns with many blocking functions awaiting sleeping tasks" {
    started.store(0, .release);
    const count = 8;
    const rt = try Runtime.init(testing.allocator, .{ .workers = 2 });
    var handles: [count]JoinHandle(bool) = undefined;
    for (&handles) |*h| {
        const sleeper = try rt.spawn(time.sleep(hour_ns));
        h.* = try rt.spawnBlocking(blockOnJoinSleeper, .{sleeper});
    }
    waitUntilStarted(count);
    try deinitWithWatchdog(rt);
    for (&handles) |*h| try testing.expectEqual(true, try block_on.blockOnThread(h));
}

fn spawnAfterShutdown(flag: *std.atomic.Value(bool)) bool {
    const rt = Runtime.current() orelse unreachable;
    _ = started.fetchAdd(1, .acq_rel);
    while (!rt.isShuttingDown()) std.Thread.yield() catch {};
    // Wait until the owned list is closed: then spawning must fail, never leak a task.
    while (true) {
        var handle = rt.spawn(Forever{}) catch |err| {
            flag.store(err == error.Shutdown, .release);
            return true;
        };
        handle.detach();
        std.Thread.yield() catch {};
    }
}

test "a blocking function spawning during shutdown gets error.Shutdown and leaks nothing" {
    started.store(0, .release);
    var flag = std.atomic.Value(bool).init(false);
    const rt = try Runtime.init(testing.allocator, .{ .workers = 2 });
    var handle = try rt.spawnBlocking(spawnAfterShutdown, .{&flag});
    waitUntilStarted(1);
    try deinitWithWatchdog(rt);
    try testing.expectEqual(true, try block_on.blockOnThread(&handle));
    try testing.expect(flag.load(.acquire));
}

/// Spawns, from a task on a worker, `count` tasks that never finish (linked into the owned list
/// only when they first go idle) and `count` that finish in their first poll (never linked).
const SpawnFromWorker = struct {
    pub const Output = void;
    count: u32,
    done: *std.atomic.Value(u32),

    const Quick = struct {
        pub const Output = void;
        done: *std.atomic.Value(u32),
        pub fn poll(self: *Quick, cx: *future.Context) future.Poll(void) {
            _ = cx;
            _ = self.done.fetchAdd(1, .monotonic);
            return .{ .ready = {} };
        }
    };

    pub fn poll(self: *SpawnFromWorker, cx: *future.Context) future.Poll(void) {
        _ = cx;
        const ampere = @import("ampere.zig");
        for (0..self.count) |_| {
            var forever = ampere.spawn(Forever{}) catch unreachable;
            forever.detach();
            var quick = ampere.spawn(Quick{ .done = self.done }) catch unreachable;
            quick.detach();
        }
        return .{ .ready = {} };
    }
};

test "tasks spawned on a worker are listed once idle, in that worker's shard, and shutdown cancels them; tasks ending at once are never listed" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    var done = std.atomic.Value(u32).init(0);
    const count = 50;
    try rt.blockOn(try rt.spawn(SpawnFromWorker{ .count = count, .done = &done }));
    const owned = &rt.scheduler.shared.owned;
    // Every quick task ran; every forever task has been polled once (idle, listed).
    var waited_ms: u32 = 0;
    while (done.load(.monotonic) < count or owned.count() < count) : (waited_ms += 1) {
        try testing.expect(waited_ms < 10_000);
        os.sleepNs(std.time.ns_per_ms);
    }
    try testing.expectEqual(@as(usize, count), owned.count());
    const shard = &owned.shards[owned.workerShard(0)];
    try testing.expectEqual(@as(usize, count), shard.count);
    try deinitWithWatchdog(rt); // Cancels and frees them (the testing allocator checks).
}
