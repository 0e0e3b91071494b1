//! std.Io's cancellation and shutdown contract on `ampere.Io`, one test per defect of issue 41,
//! each at the interleaving that matters, pinned (with a hook where a window is involved) so
//! that it fails on the code before the fix every time (checked: each hung or crashed there)
//! and passes after. The schedule explorer (`explore_tests.zig`) looks for the next such bug
//! over seeds; these are the ones it found, made deterministic.

const std = @import("std");
const testing = std.testing;
const Io = std.Io;
const linux = std.os.linux;

const Runtime = @import("../Runtime.zig");
const Futex = @import("Futex.zig");
const hook = @import("../hook.zig");
const os = @import("../os.zig");
const block_on = @import("../block_on.zig");
const Header = @import("../task/Header.zig");
const fiber_task = @import("../fiber/task.zig");

/// Panics if `stop` is not called within the limit: a lost wake-up or a blocked worker is a
/// failure with a message, not a stuck test run.
const Watchdog = struct {
    done: std.atomic.Value(bool) = .init(false),
    thread: ?std.Thread = null,
    what: []const u8,

    const limit_ms = 10_000;

    fn start(self: *Watchdog) !void {
        self.thread = try std.Thread.spawn(.{}, run, .{self});
    }

    fn run(self: *Watchdog) void {
        var waited_ms: u32 = 0;
        while (!self.done.load(.acquire)) : (waited_ms += 5) {
            if (waited_ms > limit_ms) std.debug.panic("watchdog: {s} (not within {d} ms)", .{ self.what, limit_ms });
            os.sleepNs(5 * std.time.ns_per_ms);
        }
    }

    fn stop(self: *Watchdog) void {
        self.done.store(true, .release);
        self.thread.?.join();
    }
};

fn waitFor(flag: *const std.atomic.Value(bool)) void {
    while (!flag.load(.acquire)) os.sleepNs(20 * std.time.ns_per_us);
}

// -- 1. a canceled Io.Mutex waiter that a wake chose passes the wake on ----------------------

const ChosenThenCanceled = struct {
    var mutex: Io.Mutex = .init;
    var io: Io = undefined;
    var fired = std.atomic.Value(bool).init(false);
    var waiting = std.atomic.Value(u32).init(0);

    fn waiter(done: *std.atomic.Value(bool)) Io.Cancelable!void {
        _ = waiting.fetchAdd(1, .release);
        defer done.store(true, .release);
        try mutex.lock(io);
        mutex.unlock(io);
    }

    /// In the first waiter's cancel, before it takes the bucket's lock: the holder's unlock
    /// chooses that waiter (the oldest), which then leaves.
    fn hit(wait: *Futex.Wait) void {
        _ = wait;
        if (fired.swap(true, .acq_rel)) return;
        mutex.unlock(io);
    }

    fn waitParked(n: u32) void {
        while (waiting.load(.acquire) < n or mutex.state.load(.acquire) != .contended) os.sleepNs(20 * std.time.ns_per_us);
        os.sleepNs(2 * std.time.ns_per_ms); // Into its futex wait.
    }
};

test "an Io.Mutex waiter canceled after the unlock chose it passes the wake on: the next waiter gets the lock" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    defer rt.deinit();
    const S = ChosenThenCanceled;
    S.io = rt.io();
    S.mutex = .init;
    S.fired.store(false, .release);
    S.waiting.store(0, .release);
    var watchdog = Watchdog{ .what = "the second Io.Mutex waiter never got the lock" };
    try watchdog.start();
    defer watchdog.stop();

    S.mutex.lockUncancelable(S.io); // Held by this thread.
    var first_done = std.atomic.Value(bool).init(false);
    var second_done = std.atomic.Value(bool).init(false);
    var first = try S.io.concurrent(S.waiter, .{&first_done});
    S.waitParked(1);
    var second = try S.io.concurrent(S.waiter, .{&second_done});
    S.waitParked(2);
    hook.armAnyThread(.futex_cancel_before_lock, Futex.Wait, S.hit);
    defer hook.disarmAnyThread(.futex_cancel_before_lock);
    // The cancel wakes the first waiter, whose cancel reaches the hook, where this unlock
    // chooses it: it returns Canceled, and must not take the only wake with it.
    try testing.expectError(error.Canceled, first.cancel(S.io));
    try testing.expect(S.fired.load(.acquire));
    try second.await(S.io);
    try testing.expect(S.mutex.tryLock());
    S.mutex.unlock(S.io);
}

// -- 2. abort of a fiber inside an offloaded call does not block its worker -------------------

fn pipe() ![2]Io.File {
    var fds: [2]i32 = undefined;
    if (linux.errno(linux.pipe2(&fds, .{ .CLOEXEC = true })) != .SUCCESS) return error.PipeFailed;
    return .{ .{ .handle = fds[0], .flags = .{ .nonblocking = false } }, .{ .handle = fds[1], .flags = .{ .nonblocking = false } } };
}

const AbortInOffload = struct {
    var offloaded = std.atomic.Value(bool).init(false);

    fn reader(io: Io, read_end: Io.File) usize {
        var buffer: [8]u8 = undefined;
        var buffers = [_][]u8{&buffer};
        return read_end.readStreaming(io, &buffers) catch 0;
    }

    fn writer(io: Io, write_end: Io.File) void {
        write_end.writeStreamingAll(io, "x") catch {};
    }

    /// A blocking-pool thread is about to run the reader's read.
    fn hit() void {
        offloaded.store(true, .release);
    }
};

test "JoinHandle.abort of a fiber inside an offloaded pipe read leaves its worker free: a writer fiber of the same runtime runs" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    defer rt.deinit();
    const io = rt.io();
    const ends = try pipe();
    defer ends[0].close(io);
    defer ends[1].close(io);
    var watchdog = Watchdog{ .what = "a fiber aborted in an offloaded read held its only worker" };
    try watchdog.start();
    defer watchdog.stop();
    AbortInOffload.offloaded.store(false, .release);

    var reader = try rt.spawnFiber(AbortInOffload.reader, .{ io, ends[0] });
    // The read runs on the blocking pool (it waits there for data) before the abort.
    while (rt.blocking.liveThreads() == 0) os.sleepNs(50 * std.time.ns_per_us);
    os.sleepNs(5 * std.time.ns_per_ms);
    reader.abort();
    // On the only worker: before the fix, the abort's kill waited for the read right there,
    // and the read waited for this writer, which never ran.
    try rt.blockOn(try rt.spawnFiber(AbortInOffload.writer, .{ io, ends[1] }));
    try testing.expectError(error.Cancelled, rt.blockOn(reader));
}

// -- 3. a thread awaiting a future across deinit gets the fiber's own result -------------------

const AwaitAcrossDeinit = struct {
    fn sleeper(io: Io) Io.Cancelable!void {
        try io.sleep(.fromSeconds(3600), .awake);
    }

    fn awaiter(future: *Io.Future(Io.Cancelable!void), io: Io, result: *?Io.Cancelable!void) void {
        result.* = future.await(io);
    }
};

test "a thread awaiting a std.Io future during deinit receives the fiber's own result (its sleep canceled), not a killed fiber's" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    const io = rt.io();
    var future = try io.concurrent(AwaitAcrossDeinit.sleeper, .{io});
    var result: ?Io.Cancelable!void = null;
    const thread = try std.Thread.spawn(.{}, AwaitAcrossDeinit.awaiter, .{ &future, io, &result });
    // Until the thread is inside `await` (its waker in the join slot).
    const header = &@as(*fiber_task.Task, @ptrCast(@alignCast(future.any_future.?))).header;
    while (header.load() & Header.join_waker == 0) os.sleepNs(20 * std.time.ns_per_us);
    var watchdog = Watchdog{ .what = "deinit with a thread awaiting a future" };
    try watchdog.start();
    rt.deinit();
    thread.join();
    watchdog.stop();
    try testing.expectError(error.Canceled, result.?);
}

// -- 4. deinit with a blocking function waiting on a mutex a fiber holds -----------------------

const MutexAcrossDeinit = struct {
    var mutex: Io.Mutex = .init;
    var holding = std.atomic.Value(bool).init(false);
    var waiting = std.atomic.Value(bool).init(false);

    /// Holds the mutex across a cancellation point: only its `defer` lets the mutex go.
    fn holder(io: Io) Io.Cancelable!void {
        mutex.lockUncancelable(io);
        defer mutex.unlock(io);
        holding.store(true, .release);
        try io.sleep(.fromSeconds(3600), .awake);
    }

    fn blockingLocker(io: Io) bool {
        waiting.store(true, .release);
        mutex.lockUncancelable(io);
        mutex.unlock(io);
        return true;
    }
};

test "deinit while a blocking function waits on an Io.Mutex that a fiber holds: the fiber is canceled first, its defer unlocks, deinit returns" {
    const S = MutexAcrossDeinit;
    S.mutex = .init;
    S.holding.store(false, .release);
    S.waiting.store(false, .release);
    const rt = try Runtime.init(testing.allocator, .{ .workers = 2 });
    const io = rt.io();
    var holder = try rt.spawnFiber(S.holder, .{io});
    waitFor(&S.holding);
    var locker = try rt.spawnBlocking(S.blockingLocker, .{io});
    waitFor(&S.waiting);
    var watchdog = Watchdog{ .what = "Runtime.deinit with a blocking function waiting on a fiber's Io.Mutex" };
    try watchdog.start();
    rt.deinit();
    watchdog.stop();
    try testing.expectEqual(true, try block_on.blockOnThread(&locker));
    // The holder ran to its end: its sleep returned Canceled (its own result), not a kill.
    try testing.expectError(error.Canceled, block_on.blockOnThread(&holder));
}

// -- the shutdown's grace period -------------------------------------------------------------

const Uncancelable = struct {
    var word: u32 = 0;
    var waiting = std.atomic.Value(bool).init(false);

    fn run(io: Io) void {
        waiting.store(true, .release);
        io.futexWaitUncancelable(u32, &word, 0);
    }
};

test "deinit kills a fiber that cancellation cannot reach once the grace period is over" {
    Uncancelable.waiting.store(false, .release);
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1, .shutdown_grace_ns = 20 * std.time.ns_per_ms });
    var stuck = try rt.spawnFiber(Uncancelable.run, .{rt.io()});
    waitFor(&Uncancelable.waiting);
    var watchdog = Watchdog{ .what = "deinit with an uncancelable fiber" };
    try watchdog.start();
    rt.deinit();
    watchdog.stop();
    try testing.expectError(error.Cancelled, block_on.blockOnThread(&stuck));
}
