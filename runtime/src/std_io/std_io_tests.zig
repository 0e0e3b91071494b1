//! `ampere.Io` on a real runtime: std.Io programs whose tasks are fibers. Futures and their
//! cancellation rules, groups, select, std.Io's synchronisation primitives parking fibers (on
//! one worker, where parking the thread would deadlock), sleeps, timeouts, randomness, and
//! calls from a plain thread.

const std = @import("std");
const testing = std.testing;
const Io = std.Io;

const Runtime = @import("../Runtime.zig");
const ampere_testing = @import("../testing.zig");
const os = @import("../os.zig");

fn newRuntime(workers: u32) !*Runtime {
    return Runtime.init(testing.allocator, .{ .workers = workers, .blocking_keep_alive_ns = 50 * std.time.ns_per_ms });
}

fn expectNoStacksInUse(rt: *Runtime) !void {
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

fn square(x: u64) u64 {
    return x * x;
}

test "concurrent and await from the main thread and from a fiber" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var f = try io.concurrent(square, .{7});
    try testing.expectEqual(@as(u64, 49), f.await(io));
    var a = io.async(square, .{8});
    try testing.expectEqual(@as(u64, 64), a.await(io));

    const Nested = struct {
        fn run(inner_io: Io, x: u64) u64 {
            var futures: [10]Io.Future(u64) = undefined;
            for (&futures, 0..) |*fut, i| fut.* = inner_io.async(square, .{x + i});
            var sum: u64 = 0;
            for (&futures) |*fut| sum += fut.await(inner_io);
            return sum;
        }
    };
    var outer = try io.concurrent(Nested.run, .{ io, 1 });
    try testing.expectEqual(@as(u64, 385), outer.await(io));
    try expectNoStacksInUse(rt);
}

/// Sleeps "forever" at a cancellation point; reports what the point returned and whether a
/// second point (after the first Canceled) proceeds normally.
const Sleeper = struct {
    fn run(io: Io, protection_blocked: bool) error{ Canceled, Unexpected }!u32 {
        if (protection_blocked) {
            const old = io.swapCancelProtection(.blocked);
            defer _ = io.swapCancelProtection(old);
            // With protection, a long sleep is not interrupted by the request: use a short one.
            io.sleep(.fromMilliseconds(20), .awake) catch return error.Unexpected;
            return 1;
        }
        io.sleep(.fromSeconds(3600), .awake) catch |err| switch (err) {
            error.Canceled => {
                // Delivered once: the next point proceeds.
                io.checkCancel() catch return error.Unexpected;
                io.sleep(.fromMilliseconds(1), .awake) catch return error.Unexpected;
                // Re-armed: the next point reports it again.
                io.recancel();
                io.checkCancel() catch return 2;
                return error.Unexpected;
            },
        };
        return error.Unexpected;
    }
};

test "cancel wakes a fiber sleeping at a cancellation point; delivered once; recancel re-arms" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var f = try io.concurrent(Sleeper.run, .{ io, false });
    os.sleepNs(5 * std.time.ns_per_ms); // Let it reach the sleep (not required for correctness).
    const start = os.clockNs(.MONOTONIC);
    try testing.expectEqual(@as(u32, 2), try f.cancel(io));
    try testing.expect(os.clockNs(.MONOTONIC) - start < 2 * std.time.ns_per_s);

    // Cancel protection: the request is not delivered while blocked.
    var g = try io.concurrent(Sleeper.run, .{ io, true });
    try testing.expectEqual(@as(u32, 1), try g.cancel(io));
    try expectNoStacksInUse(rt);
}

/// Awaits a child that sleeps; `acknowledge` decides whether the child reports Canceled.
const Parent = struct {
    fn child(io: Io, acknowledge: bool) u32 {
        if (!acknowledge) {
            const old = io.swapCancelProtection(.blocked);
            defer _ = io.swapCancelProtection(old);
            io.sleep(.fromMilliseconds(30), .awake) catch unreachable;
            return 10;
        }
        io.sleep(.fromSeconds(3600), .awake) catch return 20;
        return 30;
    }

    fn run(io: Io, acknowledge: bool) error{Canceled}!u32 {
        var f = io.concurrent(child, .{ io, acknowledge }) catch unreachable;
        const got = f.await(io); // Not a cancellation point; forwards our cancel to the child.
        // If the child did not acknowledge, our request was re-armed for the next point.
        io.checkCancel() catch |err| return if (acknowledge) 999 else err;
        return got;
    }
};

test "a canceled awaiter forwards the cancel to the awaited future, re-arming it if unacknowledged" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var acknowledged = try io.concurrent(Parent.run, .{ io, true });
    os.sleepNs(5 * std.time.ns_per_ms);
    try testing.expectEqual(@as(u32, 20), try acknowledged.cancel(io));
    var unacknowledged = try io.concurrent(Parent.run, .{ io, false });
    os.sleepNs(5 * std.time.ns_per_ms);
    try testing.expectError(error.Canceled, unacknowledged.cancel(io));
}

const Members = struct {
    done: std.atomic.Value(u32) = .init(0),
    canceled: std.atomic.Value(u32) = .init(0),

    fn quick(self: *Members, io: Io) void {
        io.sleep(.fromMilliseconds(1), .awake) catch {
            _ = self.canceled.fetchAdd(1, .monotonic);
            return;
        };
        _ = self.done.fetchAdd(1, .monotonic);
    }

    fn forever(self: *Members, io: Io) Io.Cancelable!void {
        io.sleep(.fromSeconds(3600), .awake) catch |err| {
            _ = self.canceled.fetchAdd(1, .monotonic);
            return err;
        };
        _ = self.done.fetchAdd(1, .monotonic);
    }

    fn respawn(self: *Members, io: Io, group: *Io.Group) Io.Cancelable!void {
        io.sleep(.fromSeconds(3600), .awake) catch |err| {
            _ = self.canceled.fetchAdd(1, .monotonic);
            group.concurrent(io, forever, .{ self, io }) catch unreachable;
            return err;
        };
    }
};

test "a group awaits all its members; cancel interrupts them; a canceled group's new members start canceled" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var members = Members{};
    var group: Io.Group = .init;
    for (0..50) |_| group.async(io, Members.quick, .{ &members, io });
    try group.await(io);
    try testing.expectEqual(@as(u32, 50), members.done.load(.monotonic));
    try testing.expect(group.token.load(.monotonic) == null);

    members = .{};
    for (0..20) |_| try group.concurrent(io, Members.forever, .{ &members, io });
    // One member, when canceled, spawns another into the (canceled) group: that one must
    // start canceled, or group.cancel would wait an hour for it.
    try group.concurrent(io, Members.respawn, .{ &members, io, &group });
    os.sleepNs(5 * std.time.ns_per_ms);
    group.cancel(io);
    try testing.expectEqual(@as(u32, 22), members.canceled.load(.monotonic));
    try testing.expect(group.token.load(.monotonic) == null);
    try expectNoStacksInUse(rt);
}

const Churn = struct {
    done: std.atomic.Value(u32) = .init(0),

    /// Finishes at once, or first spawns a child into its own group (a spawn that races the
    /// last member's decrement: `leave` in tasks.zig, "a spawn came in meanwhile").
    fn member(self: *Churn, io: Io, group: *Io.Group, depth: u32) void {
        if (depth > 0) group.async(io, member, .{ self, io, group, depth - 1 });
        _ = self.done.fetchAdd(1, .monotonic);
    }

    /// Waits on a futex nobody wakes: only a cancel ends it.
    fn blocked(self: *Churn, io: Io, never: *std.atomic.Value(u32)) Io.Cancelable!void {
        try io.futexWait(u32, &never.raw, 0);
        _ = self.done.fetchAdd(1, .monotonic);
    }
};

test "stress: group members end on 4 workers while the awaiter waits; cancels race spawns" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    const io = rt.io();
    const rounds = ampere_testing.scaled(300, 20);
    var never: std.atomic.Value(u32) = .init(0);
    for (0..rounds) |round| {
        var churn = Churn{};
        var group: Io.Group = .init;
        // 16 members of depth 2: each spawns a child, which spawns one more.
        for (0..16) |_| group.async(io, Churn.member, .{ &churn, io, &group, 2 });
        try group.await(io);
        try testing.expectEqual(@as(u32, 16 * 3), churn.done.load(.monotonic));
        try testing.expect(group.token.load(.monotonic) == null);
        // Members blocked forever, more spawned while the cancel walks: every one ends.
        var blocked: Io.Group = .init;
        for (0..8 + round % 8) |_| try blocked.concurrent(io, Churn.blocked, .{ &churn, io, &never });
        // A member spawns more while the cancel walks (std.Io allows spawns concurrent with a
        // cancel as long as the group cannot complete meanwhile: the spawner is a member).
        try blocked.concurrent(io, spawnBlocked, .{ io, &blocked, &churn, &never });
        blocked.cancel(io);
        try testing.expect(blocked.token.load(.monotonic) == null);
    }
    try expectNoStacksInUse(rt);
}

/// A member that spawns into its own group while another fiber cancels it: a member spawned
/// after the cancel's store starts canceled, one spawned before is found by the cancel's walk.
fn spawnBlocked(io: Io, group: *Io.Group, churn: *Churn, never: *std.atomic.Value(u32)) void {
    for (0..8) |_| {
        group.concurrent(io, Churn.blocked, .{ churn, io, never }) catch unreachable;
        std.atomic.spinLoopHint();
    }
}

const GroupAwaiter = struct {
    fn run(io: Io, members: *Members) Io.Cancelable!void {
        var group: Io.Group = .init;
        for (0..8) |_| group.concurrent(io, Members.forever, .{ members, io }) catch unreachable;
        return group.await(io);
    }
};

test "canceling a fiber that awaits a group cancels the group's members and reports Canceled" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var members = Members{};
    var f = try io.concurrent(GroupAwaiter.run, .{ io, &members });
    os.sleepNs(10 * std.time.ns_per_ms);
    try testing.expectError(error.Canceled, f.cancel(io));
    try testing.expectEqual(@as(u32, 8), members.canceled.load(.monotonic));
}

const PingPong = struct {
    mutex: Io.Mutex = .init,
    condition: Io.Condition = .{ .state = .init(.{ .waiters = 0, .signals = 0 }), .epoch = .init(0) },
    turn: u32 = 0,

    fn player(self: *PingPong, io: Io, me: u32, rounds: u32) Io.Cancelable!void {
        for (0..rounds) |_| {
            try self.mutex.lock(io);
            defer self.mutex.unlock(io);
            while (self.turn % 2 != me) try self.condition.wait(io, &self.mutex);
            self.turn += 1;
            self.condition.signal(io);
        }
    }
};

test "std.Io Mutex and Condition between two fibers on one worker (the fiber parks, not the thread)" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    var game = PingPong{};
    const rounds: u32 = @intCast(ampere_testing.scaled(2_000, 10));
    var a = try io.concurrent(PingPong.player, .{ &game, io, 0, rounds });
    var b = try io.concurrent(PingPong.player, .{ &game, io, 1, rounds });
    try a.await(io);
    try b.await(io);
    try testing.expectEqual(2 * rounds, game.turn);
}

const Pipeline = struct {
    fn produce(io: Io, queue: *Io.Queue(u64), first: u64, count: u64) Io.Cancelable!void {
        for (first..first + count) |i| queue.putOne(io, i) catch |err| switch (err) {
            error.Closed => unreachable,
            error.Canceled => |e| return e,
        };
    }

    fn consume(io: Io, queue: *Io.Queue(u64), sum: *std.atomic.Value(u64)) Io.Cancelable!void {
        while (queue.getOne(io)) |value| {
            _ = sum.fetchAdd(value, .monotonic);
        } else |err| switch (err) {
            error.Closed => {},
            error.Canceled => |e| return e,
        }
    }
};

test "std.Io Queue: four producers and three consumers on two workers" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    var buffer: [8]u64 = undefined;
    var queue = Io.Queue(u64).init(&buffer);
    var sum = std.atomic.Value(u64).init(0);
    const per_producer: u64 = ampere_testing.scaled(5_000, 10);
    var consumers: Io.Group = .init;
    for (0..3) |_| try consumers.concurrent(io, Pipeline.consume, .{ io, &queue, &sum });
    var producers: Io.Group = .init;
    for (0..4) |p| try producers.concurrent(io, Pipeline.produce, .{ io, &queue, p * per_producer, per_producer });
    try producers.await(io);
    queue.close(io);
    try consumers.await(io);
    const total = 4 * per_producer;
    try testing.expectEqual(total * (total - 1) / 2, sum.load(.monotonic));
}

test "std.Io Event, Semaphore and RwLock between fibers and the main thread" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    const Shared = struct {
        event: Io.Event = .unset,
        semaphore: Io.Semaphore = .{ .permits = 0 },
        rwlock: Io.RwLock = .init,
        value: u32 = 0,

        fn waiter(self: *@This(), inner: Io) Io.Cancelable!u32 {
            try self.event.wait(inner);
            try self.semaphore.wait(inner);
            try self.rwlock.lockShared(inner);
            defer self.rwlock.unlockShared(inner);
            return self.value;
        }
    };
    var shared = Shared{};
    var f = try io.concurrent(Shared.waiter, .{ &shared, io });
    try shared.rwlock.lock(io); // The main thread (blocking path) holds the write lock.
    shared.value = 42;
    shared.event.set(io);
    shared.semaphore.post(io);
    os.sleepNs(5 * std.time.ns_per_ms);
    shared.rwlock.unlock(io);
    try testing.expectEqual(@as(u32, 42), try f.await(io));
}

test "futexWait with a timeout returns after the timeout; sleep waits at least its duration" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    const Timed = struct {
        fn run(inner: Io) !u64 {
            var word: u32 = 0;
            const start = Io.Clock.awake.now(inner);
            try inner.futexWaitTimeout(u32, &word, 0, .{ .duration = .{ .raw = .fromMilliseconds(20), .clock = .awake } });
            const waited = start.durationTo(Io.Clock.awake.now(inner));
            try inner.sleep(.fromMilliseconds(10), .awake);
            // A deadline on the real clock.
            const deadline = Io.Clock.Timestamp.fromNow(inner, .{ .raw = .fromMilliseconds(10), .clock = .real });
            try deadline.wait(inner);
            return @intCast(waited.nanoseconds);
        }
    };
    const start = os.clockNs(.MONOTONIC);
    var f = try io.concurrent(Timed.run, .{io});
    const waited_ns = try f.await(io);
    try testing.expect(waited_ns >= 20 * std.time.ns_per_ms);
    try testing.expect(os.clockNs(.MONOTONIC) - start >= 40 * std.time.ns_per_ms);
}

test "select returns the first finished and cancels the rest" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const io = rt.io();
    const Race = struct {
        fn slow(inner: Io) Io.Cancelable!u32 {
            try inner.sleep(.fromSeconds(3600), .awake);
            return 1;
        }
        fn fast(inner: Io) Io.Cancelable!u32 {
            try inner.sleep(.fromMilliseconds(2), .awake);
            return 2;
        }
    };
    const U = union(enum) { slow: Io.Cancelable!u32, fast: Io.Cancelable!u32 };
    var buffer: [2]U = undefined;
    var select = Io.Select(U).init(io, &buffer);
    try select.concurrent(.slow, Race.slow, .{io});
    try select.concurrent(.fast, Race.fast, .{io});
    const first = try select.await();
    try testing.expectEqual(@as(u32, 2), try first.fast);
    select.cancelDiscard();
    try expectNoStacksInUse(rt);
}

test "now, clockResolution, random and randomSecure" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    const a = Io.Clock.awake.now(io);
    const b = Io.Clock.awake.now(io);
    try testing.expect(b.nanoseconds >= a.nanoseconds);
    try testing.expect(Io.Clock.real.now(io).nanoseconds > 1_600_000_000 * std.time.ns_per_s);
    try testing.expect((try Io.Clock.awake.resolution(io)).nanoseconds > 0);
    var x: [32]u8 = @splat(0);
    var y: [32]u8 = @splat(0);
    io.random(&x);
    try io.randomSecure(&y);
    try testing.expect(!std.mem.allEqual(u8, &x, 0));
    try testing.expect(!std.mem.eql(u8, &x, &y));
}

test "a cancellation storm: many fibers canceled at random moments, none leaks" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    const io = rt.io();
    const Worker = struct {
        fn run(inner: Io, mutex: *Io.Mutex, counter: *u64) Io.Cancelable!void {
            while (true) {
                try mutex.lock(inner);
                counter.* += 1;
                mutex.unlock(inner);
                try inner.sleep(.fromMilliseconds(1), .awake);
            }
        }
    };
    var mutex: Io.Mutex = .init;
    var counter: u64 = 0;
    const count = ampere_testing.scaled(500, 10);
    const futures = try testing.allocator.alloc(Io.Future(Io.Cancelable!void), count);
    defer testing.allocator.free(futures);
    for (futures) |*f| f.* = try io.concurrent(Worker.run, .{ io, &mutex, &counter });
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("cancellation storm", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    for (futures) |*f| {
        if (prng.random().uintLessThan(u8, 4) == 0) os.sleepNs(prng.random().uintLessThan(u64, 200) * std.time.ns_per_us);
        try testing.expectError(error.Canceled, f.cancel(io));
    }
    try expectNoStacksInUse(rt);
}

test "runtime shutdown kills fibers waiting in std.Io; what they waited on is released" {
    const linux = std.os.linux;
    const rt = try newRuntime(2);
    const io = rt.io();
    const Waits = struct {
        fn event(inner: Io, e: *Io.Event) Io.Cancelable!void {
            try e.wait(inner);
        }
        fn sleep(inner: Io) Io.Cancelable!void {
            try inner.sleep(.fromSeconds(3600), .awake);
        }
        fn group(inner: Io, e: *Io.Event) Io.Cancelable!void {
            var g: Io.Group = .init;
            for (0..3) |_| g.concurrent(inner, event, .{ inner, e }) catch unreachable;
            try g.await(inner);
        }
        fn child(inner: Io, e: *Io.Event) Io.Cancelable!void {
            var f = inner.concurrent(event, .{ inner, e }) catch unreachable;
            return f.await(inner);
        }
        fn pipeRead(inner: Io, file: Io.File) !usize {
            var buffer: [8]u8 = undefined;
            return file.readStreaming(inner, &.{&buffer});
        }
    };
    var never: Io.Event = .unset;
    var fds: [2]i32 = undefined;
    try testing.expect(linux.errno(linux.pipe2(&fds, .{ .CLOEXEC = true })) == .SUCCESS);
    defer for (fds) |fd| os.close(fd);
    // Futures the killed fibers hold are never awaited: spawn them with spawnFiber-style
    // handles the test can drop. std.Io futures created here are awaited nowhere either, so
    // they are created through a fiber whose own handle is detached.
    var handles: [5]@import("../task/join_handle.zig").JoinHandle(void) = undefined;
    const Spawn = struct {
        fn run(inner: Io, which: u32, e: *Io.Event, file: Io.File) void {
            switch (which) {
                0 => Waits.event(inner, e) catch {},
                1 => Waits.sleep(inner) catch {},
                2 => Waits.group(inner, e) catch {},
                3 => Waits.child(inner, e) catch {},
                else => _ = Waits.pipeRead(inner, file) catch {},
            }
        }
    };
    const reader: Io.File = .{ .handle = fds[0], .flags = .{ .nonblocking = false } };
    for (&handles, 0..) |*h, i| h.* = try rt.spawnFiber(Spawn.run, .{ io, @as(u32, @intCast(i)), &never, reader });
    os.sleepNs(20 * std.time.ns_per_ms); // Every fiber is waiting now.
    // The pipe read runs on the blocking pool: shutdown waits for it, so give it data soon.
    const Writer = struct {
        fn run(fd: i32) void {
            os.sleepNs(50 * std.time.ns_per_ms);
            _ = linux.write(fd, "x", 1);
        }
    };
    const writer = try std.Thread.spawn(.{}, Writer.run, .{fds[1]});
    rt.deinit(); // Asserts every fiber stack is back; the testing allocator checks for leaks.
    writer.join();
    for (&handles) |*h| _ = ampere_blockOn(h);
}

fn ampere_blockOn(handle: anytype) void {
    _ = @import("../block_on.zig").blockOnThread(handle) catch {};
}

// -- the window between a fiber's registration and its switch (hook `fiber_before_suspend`) --

const hook = @import("../hook.zig");
const Fiber = @import("../fiber/Fiber.zig");
const fiber_task = @import("../fiber/task.zig");
const tasks = @import("tasks.zig");

/// Fails the test binary if the test does not finish in time (a lost wake-up hangs).
const Watchdog = struct {
    done: std.atomic.Value(bool) = .init(false),
    thread: ?std.Thread = null,

    fn start(self: *Watchdog) !void {
        self.thread = try std.Thread.spawn(.{}, run, .{self});
    }

    fn run(self: *Watchdog) void {
        var waited_ms: u32 = 0;
        while (!self.done.load(.acquire)) : (waited_ms += 10) {
            if (waited_ms > 10_000) @panic("watchdog: a lost wake-up (the test hung for 10 s)");
            os.sleepNs(10 * std.time.ns_per_ms);
        }
    }

    fn stop(self: *Watchdog) void {
        self.done.store(true, .release);
        self.thread.?.join();
    }
};

const CancelInWindow = struct {
    var fired = std.atomic.Value(bool).init(false);

    /// At the first suspension of any fiber: request its cancellation, from the fiber's own
    /// thread, after its sleep registered and before it switched back.
    fn hit(fiber: *Fiber) void {
        if (fired.swap(true, .acq_rel)) return;
        tasks.requestCancel(fiber_task.Task.fromFiber(fiber));
    }

    fn sleeper(io: Io) Io.Cancelable!void {
        try io.sleep(.fromSeconds(3600), .awake);
    }
};

test "a cancel request between a fiber's registration and its switch is not lost" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    var watchdog = Watchdog{};
    try watchdog.start();
    defer watchdog.stop();
    CancelInWindow.fired.store(false, .release);
    hook.armAnyThread(.fiber_before_suspend, Fiber, CancelInWindow.hit);
    defer hook.disarmAnyThread(.fiber_before_suspend);
    var f = try io.concurrent(CancelInWindow.sleeper, .{io});
    // Awaited, not canceled: only the request made in the window can end the sleep.
    try testing.expectError(error.Canceled, f.await(io));
    try testing.expect(CancelInWindow.fired.load(.acquire));
}

const WakeInWindow = struct {
    var fired = std.atomic.Value(bool).init(false);
    var waker: ?@import("../Waker.zig") = null;
    var ready = std.atomic.Value(bool).init(false);

    /// Ready once `ready` is set; keeps its waker for the other thread.
    const Flag = struct {
        pub const Output = void;
        pub fn poll(self: *Flag, cx: *@import("../future.zig").Context) @import("../future.zig").Poll(void) {
            _ = self;
            if (ready.load(.acquire)) return .{ .ready = {} };
            if (waker == null) waker = cx.waker().clone();
            return .pending;
        }
    };

    fn wakeFromThread() void {
        ready.store(true, .release);
        waker.?.wake();
    }

    /// At the first suspension: another thread sets the flag and wakes the fiber's waker;
    /// the fiber switches back only after that thread finished.
    fn hit(fiber: *Fiber) void {
        _ = fiber;
        if (fired.swap(true, .acq_rel)) return;
        const thread = std.Thread.spawn(.{}, wakeFromThread, .{}) catch @panic("spawn");
        thread.join();
    }

    fn waiter() void {
        @import("../fiber.zig").await(Flag{});
    }
};

test "a wake from another thread between a fiber's registration and its switch is not lost" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    var watchdog = Watchdog{};
    try watchdog.start();
    defer watchdog.stop();
    WakeInWindow.fired.store(false, .release);
    WakeInWindow.ready.store(false, .release);
    WakeInWindow.waker = null;
    hook.armAnyThread(.fiber_before_suspend, Fiber, WakeInWindow.hit);
    defer hook.disarmAnyThread(.fiber_before_suspend);
    try rt.blockOn(try rt.spawnFiber(WakeInWindow.waiter, .{}));
    try testing.expect(WakeInWindow.fired.load(.acquire));
}

// -- a group's cancel racing a spawn into it (hooks `group_before_insert`,
// `group_before_publish`, `fiber_before_link`; the argument is at `cancelMembers` in
// tasks.zig) --

const CancelDuringSpawn = struct {
    io: Io,
    group: *Io.Group,

    /// The cancel's store and walk, inside the spawn's window, on the spawning thread.
    fn hit(self: *CancelDuringSpawn) void {
        tasks.cancelMembersOf(self.io.userdata, self.group);
    }
};

/// A member is running when a cancel lands in the window `point` of a second member's spawn
/// (from the main thread). Awaited, not canceled: only the cancel made in the window can end
/// the two members; a member it misses sleeps an hour and the watchdog fails the test.
fn expectCancelInSpawnWindow(point: hook.Point) !void {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const io = rt.io();
    var watchdog = Watchdog{};
    try watchdog.start();
    defer watchdog.stop();
    var members = Members{};
    var group: Io.Group = .init;
    try group.concurrent(io, Members.forever, .{ &members, io });
    var cancel = CancelDuringSpawn{ .io = io, .group = &group };
    hook.arm(point, &cancel, CancelDuringSpawn.hit);
    defer hook.disarm();
    try group.concurrent(io, Members.forever, .{ &members, io });
    try testing.expect(hook.fired());
    try group.await(io);
    try testing.expectEqual(@as(u32, 2), members.canceled.load(.monotonic));
    try testing.expectEqual(@as(u32, 0), members.done.load(.monotonic));
    try expectNoStacksInUse(rt);
}

test "a cancel whose walk comes before a spawn's owned insert: the member reads the group's flag at its first cancellation point" {
    try expectCancelInSpawnWindow(.group_before_insert);
}

test "a cancel between a spawn's owned insert and its publication: the walk finds the unpublished member and does not queue it" {
    try expectCancelInSpawnWindow(.group_before_publish);
}

const CancelBeforeLink = struct {
    var io: Io = undefined;
    var group: Io.Group = .init;
    var fired = std.atomic.Value(bool).init(false);

    /// At the first lazy link (the member's first suspension, on a worker): the cancel's store
    /// and walk, which cannot find the member yet.
    fn hit(fiber: *Fiber) void {
        _ = fiber;
        if (fired.swap(true, .acq_rel)) return;
        tasks.cancelMembersOf(io.userdata, &group);
    }

    /// On a worker: spawns a member into the group (linked lazily), awaits the group.
    fn spawner(members: *Members) Io.Cancelable!void {
        group.concurrent(io, Members.forever, .{ members, io }) catch unreachable;
        try group.await(io);
    }
};

test "a cancel whose walk passes before a suspending member's lazy link: the member reads the flag after the link" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    var watchdog = Watchdog{};
    try watchdog.start();
    defer watchdog.stop();
    CancelBeforeLink.io = rt.io();
    CancelBeforeLink.group = .init;
    CancelBeforeLink.fired.store(false, .release);
    var members = Members{};
    hook.armAnyThread(.fiber_before_link, Fiber, CancelBeforeLink.hit);
    defer hook.disarmAnyThread(.fiber_before_link);
    // The spawner, spawned from this thread, is linked at once: the first lazy link is the
    // member's, in its hour-long sleep; only the cancel made in the window can end it.
    var f = try CancelBeforeLink.io.concurrent(CancelBeforeLink.spawner, .{&members});
    try f.await(CancelBeforeLink.io);
    try testing.expect(CancelBeforeLink.fired.load(.acquire));
    try testing.expectEqual(@as(u32, 1), members.canceled.load(.monotonic));
    try expectNoStacksInUse(rt);
}

test "without a stack, concurrent reports ConcurrencyUnavailable, async runs inline, spawnFiber fails" {
    // 200 TiB per stack: more than the x86_64 / aarch64 user address space, so mmap fails.
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1, .fiber_stack_bytes = 200 << 40 });
    defer rt.deinit();
    const io = rt.io();
    try testing.expectError(error.ConcurrencyUnavailable, io.concurrent(square, .{3}));
    var inline_future = io.async(square, .{4});
    try testing.expect(inline_future.any_future == null); // Ran inline: the result is there.
    try testing.expectEqual(@as(u64, 16), inline_future.await(io));
    var members = Members{};
    var group: Io.Group = .init;
    try testing.expectError(error.ConcurrencyUnavailable, group.concurrent(io, Members.quick, .{ &members, io }));
    group.async(io, Members.quick, .{ &members, io }); // Inline.
    try testing.expectEqual(@as(u32, 1), members.done.load(.monotonic));
    try group.await(io);
    try testing.expectError(error.OutOfMemory, rt.spawnFiber(square, .{5}));
}

// -- misuse and shutdown limits, in a child process (sync/misuse_main.zig, ReleaseFast) --------

const misuse = @import("../sync/misuse_tests.zig");

test "a waiting std.Io call from a state-machine task's poll panics instead of blocking its worker" {
    try misuse.expectPanic("io_wait_in_task", "a waiting std.Io call from a state-machine task's poll would block its worker");
}

test "a thread awaiting a future whose fiber deinit killed after the grace period panics: there is no result" {
    try misuse.expectPanic("io_await_killed", "await of a future whose fiber Runtime.deinit killed");
}
