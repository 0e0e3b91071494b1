//! std.Io's cancellation and shutdown contract on `ampere.Io`, explored over seeds
//! (`explore.zig`): each scenario builds a fresh runtime, sets a handful of fibers, threads and
//! blocking functions racing at one handshake (a cancel against a wake, an abort against an
//! offloaded call, a shutdown against fibers in every state), and checks what the contract
//! promises afterwards. The explorer perturbs every hook point the race passes through; the
//! scenario's own seeded choices (worker count, who holds a lock, when a cancel lands) vary the
//! setting. A broken promise names its seed (runtime/docs/fibers.md, "The schedule explorer").
//!
//! | scenario | the race | what must hold |
//! |---|---|---|
//! | mutex_cancel | an `Io.Mutex` waiter canceled while the holder unlocks | the other waiter gets the lock |
//! | select_losers | `Select` losers canceled while a mutex is unlocked and a queue fed | the mutex is free, no item is lost |
//! | group_cancel | a group canceled while its members are woken (mutex, condition, queue) | every member ends; the mutex, condition and queue still work |
//! | abort_offload | `JoinHandle.abort` of a fiber inside an offloaded pipe read, the writer a fiber of the same runtime | the writer runs; the abort ends the reader |
//! | deinit_states | `Runtime.deinit` with fibers holding a mutex, waiting on a queue, a condition, a future, queued, uncancelable; a blocking function and a thread waiting on them | deinit returns; the fibers' defers ran; the waiting thread got the fiber's own result |

const std = @import("std");
const builtin = @import("builtin");
const testing = std.testing;
const Io = std.Io;
const linux = std.os.linux;

const Runtime = @import("../Runtime.zig");
const explore = @import("../explore.zig");
const hook = @import("../hook.zig");
const os = @import("../os.zig");
const block_on = @import("../block_on.zig");
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const Header = @import("../task/Header.zig");
const fiber_task = @import("../fiber/task.zig");

/// How long a scenario waits for something the contract promises before it calls it broken.
const promise_ns: u64 = if (builtin.sanitize_thread) 10 * std.time.ns_per_s else 3 * std.time.ns_per_s;

fn newRuntime(seed: u64, workers_min: u32, workers_spread: u32) !*Runtime {
    const workers = workers_min + @as(u32, @intCast(explore.choose(seed, 0x3017, workers_spread)));
    return Runtime.init(testing.allocator, .{
        .workers = workers,
        .blocking_keep_alive_ns = 20 * std.time.ns_per_ms,
        // Long enough for every cancelable fiber to unwind under the explorer's delays; a seed
        // with an uncancelable fiber waits it out.
        .shutdown_grace_ns = 100 * std.time.ns_per_ms,
    });
}

/// Waits until `flag` is set; a promise not kept within `promise_ns` fails the seed at once
/// (the runtime may be wedged: no clean-up is attempted).
fn expectSet(flag: *const std.atomic.Value(bool), what: []const u8) void {
    const start_ns = os.clockNs(.MONOTONIC);
    while (!flag.load(.acquire)) {
        if (os.clockNs(.MONOTONIC) -| start_ns > promise_ns) {
            std.debug.panic("explore: broken promise: {s} (not within {d} ms)", .{ what, promise_ns / std.time.ns_per_ms });
        }
        os.sleepNs(50 * std.time.ns_per_us);
    }
}

fn waitAtLeast(counter: *const std.atomic.Value(u32), n: u32) void {
    const start_ns = os.clockNs(.MONOTONIC);
    while (counter.load(.acquire) < n) {
        if (os.clockNs(.MONOTONIC) -| start_ns > promise_ns) std.debug.panic("explore: scenario set-up stalled", .{});
        os.sleepNs(20 * std.time.ns_per_us);
    }
}

/// A seeded pause of up to `max_us` microseconds on the calling thread.
fn pauseUs(seed: u64, salt: u64, max_us: u64) void {
    os.sleepNs(explore.choose(seed, salt, max_us + 1) * std.time.ns_per_us);
}

fn mutexState(mutex: *Io.Mutex) Io.Mutex.State {
    return mutex.state.load(.acquire);
}

// -- mutex_cancel ----------------------------------------------------------------------------

const MutexCancel = struct {
    mutex: Io.Mutex = .init,
    go: Io.Event = .unset,
    holding: std.atomic.Value(bool) = .init(false),
    waiting: std.atomic.Value(u32) = .init(0),
    first_done: std.atomic.Value(bool) = .init(false),
    second_done: std.atomic.Value(bool) = .init(false),
    hold_ns: u64,

    fn holder(self: *MutexCancel, io: Io) void {
        self.mutex.lockUncancelable(io);
        self.holding.store(true, .release);
        self.go.waitUncancelable(io);
        io.sleep(.fromNanoseconds(@intCast(self.hold_ns)), .awake) catch {};
        self.mutex.unlock(io);
    }

    fn waiter(self: *MutexCancel, io: Io, done: *std.atomic.Value(bool)) Io.Cancelable!void {
        _ = self.waiting.fetchAdd(1, .release);
        defer done.store(true, .release);
        try self.mutex.lock(io);
        self.mutex.unlock(io);
    }

    /// Until the `n`-th waiter has made the mutex contended (and, likely, is parked).
    fn waitContended(self: *MutexCancel, n: u32) void {
        waitAtLeast(&self.waiting, n);
        const start_ns = os.clockNs(.MONOTONIC);
        while (mutexState(&self.mutex) != .contended and os.clockNs(.MONOTONIC) -| start_ns < promise_ns) os.sleepNs(20 * std.time.ns_per_us);
        os.sleepNs(200 * std.time.ns_per_us);
    }
};

fn mutexCancel(seed: u64) !void {
    const rt = try newRuntime(seed, 1, 3);
    defer rt.deinit();
    const io = rt.io();
    var case = MutexCancel{ .hold_ns = explore.choose(seed, 1, 700) * std.time.ns_per_us };
    // The holder is a fiber (the unlock on another worker) or this thread (its unlock races
    // the worker that runs the cancel, at any worker count).
    const thread_holds = explore.choose(seed, 2, 2) == 0;
    var holder: ?Io.Future(void) = null;
    if (thread_holds) {
        case.mutex.lockUncancelable(io);
    } else {
        holder = try io.concurrent(MutexCancel.holder, .{ &case, io });
        expectSet(&case.holding, "the holder fiber took the mutex");
    }
    var first = try io.concurrent(MutexCancel.waiter, .{ &case, io, &case.first_done });
    case.waitContended(1);
    var second = try io.concurrent(MutexCancel.waiter, .{ &case, io, &case.second_done });
    case.waitContended(2);
    if (thread_holds) {
        pauseUs(seed, 3, 400);
        var canceller = try std.Thread.spawn(.{}, cancelAfter, .{ &first, io, seed });
        pauseUs(seed, 4, 400);
        case.mutex.unlock(io);
        canceller.join();
    } else {
        case.go.set(io);
        pauseUs(seed, 3, 700);
        first.cancel(io) catch {};
        holder.?.await(io);
    }
    // The waiter that was not canceled must get the lock, whatever the first one did.
    expectSet(&case.second_done, "the remaining Io.Mutex waiter acquired the lock after a canceled waiter left");
    try second.await(io);
    try testing.expect(case.mutex.tryLock());
    case.mutex.unlock(io);
}

fn cancelAfter(future: *Io.Future(Io.Cancelable!void), io: Io, seed: u64) void {
    pauseUs(seed, 5, 300);
    future.cancel(io) catch {};
}

test "explore: mutex_cancel" {
    _ = try explore.runScenario(hook.Point, "mutex_cancel", mutexCancel);
}

// -- select_losers ---------------------------------------------------------------------------

const SelectCase = struct {
    mutex: Io.Mutex = .init,
    queue: Io.Queue(u32),
    buffer: [8]u32 = undefined,
    got: std.atomic.Value(u32) = .init(0),
    started: std.atomic.Value(u32) = .init(0),

    const U = union(enum) { locked: Io.Cancelable!void, item: Io.Cancelable!u32, slept: Io.Cancelable!void };

    fn lockBranch(self: *SelectCase, io: Io) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        try self.mutex.lock(io);
        self.mutex.unlock(io);
    }

    fn queueBranch(self: *SelectCase, io: Io) Io.Cancelable!u32 {
        _ = self.started.fetchAdd(1, .release);
        const item = self.queue.getOne(io) catch |err| switch (err) {
            error.Canceled => return error.Canceled,
            error.Closed => unreachable,
        };
        _ = self.got.fetchAdd(1, .acq_rel);
        return item;
    }

    fn sleepBranch(self: *SelectCase, io: Io, ns: u64) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        try io.sleep(.fromNanoseconds(@intCast(ns)), .awake);
    }
};

fn unlockAfter(mutex: *Io.Mutex, io: Io, seed: u64, salt: u64) void {
    pauseUs(seed, salt, 600);
    mutex.unlock(io);
}

fn selectLosers(seed: u64) !void {
    const rt = try newRuntime(seed, 1, 3);
    defer rt.deinit();
    const io = rt.io();
    var case = SelectCase{ .queue = undefined };
    case.queue = .init(&case.buffer);
    case.mutex.lockUncancelable(io);
    var results: [4]SelectCase.U = undefined;
    var select = Io.Select(SelectCase.U).init(io, &results);
    // Two branches of each kind: a wake of one races the cancel of its twin.
    for (0..2) |_| {
        try select.concurrent(.locked, SelectCase.lockBranch, .{ &case, io });
        try select.concurrent(.item, SelectCase.queueBranch, .{ &case, io });
    }
    try select.concurrent(.slept, SelectCase.sleepBranch, .{ &case, io, explore.choose(seed, 1, 600) * std.time.ns_per_us });
    waitAtLeast(&case.started, 5);
    // A waiter outside the select, queued behind the lock branches: a wake that a canceled
    // loser swallowed would strand it.
    var bystander_done = std.atomic.Value(bool).init(false);
    var bystander = try io.concurrent(lockOnce, .{ &case.mutex, io, &bystander_done });
    pauseUs(seed, 2, 300);
    const put = explore.choose(seed, 3, 3);
    for (0..put) |i| case.queue.putOneUncancelable(io, @intCast(i)) catch unreachable;
    // The unlock races the losers' cancel: from another thread, at a seeded moment.
    const unlocker = try std.Thread.spawn(.{}, unlockAfter, .{ &case.mutex, io, seed, 4 });
    _ = try select.await();
    select.cancelDiscard();
    unlocker.join();
    expectSet(&bystander_done, "a waiter behind the Select's canceled losers acquired the Io.Mutex");
    bystander.await(io);
    // The mutex is free (no loser kept it, and a wake was not lost), and every item put was
    // taken by a branch or is still in the queue.
    try expectLockable(&case.mutex, io);
    var drained: [8]u32 = undefined;
    const left: u32 = @intCast(case.queue.get(io, &drained, 0) catch unreachable);
    try testing.expectEqual(@as(u32, @intCast(put)), case.got.load(.acquire) + left);
}

fn lockOnce(mutex: *Io.Mutex, io: Io, done: *std.atomic.Value(bool)) void {
    mutex.lockUncancelable(io);
    mutex.unlock(io);
    done.store(true, .release);
}

/// The mutex can be taken again (by a fiber: a waiter parked on it would hang it, and the
/// promise fails the seed).
fn expectLockable(mutex: *Io.Mutex, io: Io) !void {
    var done = std.atomic.Value(bool).init(false);
    var locker = try io.concurrent(lockOnce, .{ mutex, io, &done });
    expectSet(&done, "the Io.Mutex is free once every waiter left");
    locker.await(io);
}

test "explore: select_losers" {
    _ = try explore.runScenario(hook.Point, "select_losers", selectLosers);
}

// -- group_cancel ----------------------------------------------------------------------------

const GroupCase = struct {
    mutex: Io.Mutex = .init,
    condition: Io.Condition = .init,
    ready: bool = false,
    queue: Io.Queue(u32),
    buffer: [16]u32 = undefined,
    got: std.atomic.Value(u32) = .init(0),
    started: std.atomic.Value(u32) = .init(0),
    ended: std.atomic.Value(u32) = .init(0),

    fn lockMember(self: *GroupCase, io: Io) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        defer _ = self.ended.fetchAdd(1, .release);
        try self.mutex.lock(io);
        self.mutex.unlock(io);
    }

    fn conditionMember(self: *GroupCase, io: Io) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        defer _ = self.ended.fetchAdd(1, .release);
        self.mutex.lockUncancelable(io);
        defer self.mutex.unlock(io);
        while (!self.ready) try self.condition.wait(io, &self.mutex);
    }

    fn queueMember(self: *GroupCase, io: Io) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        defer _ = self.ended.fetchAdd(1, .release);
        _ = self.queue.getOne(io) catch |err| switch (err) {
            error.Canceled => return error.Canceled,
            error.Closed => unreachable,
        };
        _ = self.got.fetchAdd(1, .acq_rel);
    }

    /// The waker side: feeds the waits while the group is being canceled.
    fn feeder(self: *GroupCase, io: Io, seed: u64, items: u32) void {
        pauseUs(seed, 10, 300);
        for (0..items) |i| self.queue.putOneUncancelable(io, @intCast(i)) catch unreachable;
        self.mutex.lockUncancelable(io);
        self.ready = true;
        self.condition.signal(io);
        self.mutex.unlock(io);
        pauseUs(seed, 11, 200);
        self.mutex.lockUncancelable(io);
        self.condition.broadcast(io);
        self.mutex.unlock(io);
    }
};

fn groupCancel(seed: u64) !void {
    const rt = try newRuntime(seed, 1, 3);
    defer rt.deinit();
    const io = rt.io();
    var case = GroupCase{ .queue = undefined };
    case.queue = .init(&case.buffer);
    var group: Io.Group = .init;
    const per_kind: u32 = 2 + @as(u32, @intCast(explore.choose(seed, 1, 3)));
    // The mutex is held by this thread while the lock members queue up behind it.
    case.mutex.lockUncancelable(io);
    for (0..per_kind) |_| {
        try group.concurrent(io, GroupCase.lockMember, .{ &case, io });
        try group.concurrent(io, GroupCase.queueMember, .{ &case, io });
    }
    waitAtLeast(&case.started, 2 * per_kind);
    // Condition members queue on the mutex too, until the unlock.
    for (0..per_kind) |_| try group.concurrent(io, GroupCase.conditionMember, .{ &case, io });
    waitAtLeast(&case.started, 3 * per_kind);
    const unlocker = try std.Thread.spawn(.{}, unlockAfter, .{ &case.mutex, io, seed, 5 });
    const items: u32 = @intCast(explore.choose(seed, 2, per_kind + 1));
    var feeder = try io.concurrent(GroupCase.feeder, .{ &case, io, seed, items });
    pauseUs(seed, 3, 500);
    group.cancel(io);
    unlocker.join();
    feeder.await(io);
    try testing.expectEqual(3 * per_kind, case.ended.load(.acquire));
    // Still usable: the mutex is free, a fresh condition wait is woken, no item is lost.
    try expectLockable(&case.mutex, io);
    var drained: [16]u32 = undefined;
    const left: u32 = @intCast(case.queue.get(io, &drained, 0) catch unreachable);
    try testing.expectEqual(items, case.got.load(.acquire) + left);
    case.ready = false;
    var late = try io.concurrent(GroupCase.conditionMember, .{ &case, io });
    waitAtLeast(&case.started, 3 * per_kind + 1);
    case.mutex.lockUncancelable(io);
    case.ready = true;
    case.condition.signal(io);
    case.mutex.unlock(io);
    try late.await(io);
}

test "explore: group_cancel" {
    _ = try explore.runScenario(hook.Point, "group_cancel", groupCancel);
}

// -- abort_offload ---------------------------------------------------------------------------

fn pipe() ![2]Io.File {
    var fds: [2]i32 = undefined;
    if (linux.errno(linux.pipe2(&fds, .{ .CLOEXEC = true })) != .SUCCESS) return error.PipeFailed;
    return .{ .{ .handle = fds[0], .flags = .{ .nonblocking = false } }, .{ .handle = fds[1], .flags = .{ .nonblocking = false } } };
}

const AbortOffload = struct {
    io: Io,
    read_end: Io.File,
    write_end: Io.File,
    reading: std.atomic.Value(bool) = .init(false),
    written: std.atomic.Value(bool) = .init(false),
    write_after_ns: u64,

    fn reader(self: *AbortOffload) usize {
        var buffer: [16]u8 = undefined;
        var buffers = [_][]u8{&buffer};
        self.reading.store(true, .release);
        return self.read_end.readStreaming(self.io, &buffers) catch 0;
    }

    /// A fiber of the same runtime: the only thing that ends the reader's read.
    fn writer(self: *AbortOffload) void {
        self.io.sleep(.fromNanoseconds(@intCast(self.write_after_ns)), .awake) catch {};
        self.write_end.writeStreamingAll(self.io, "x") catch {};
        self.written.store(true, .release);
    }
};

fn abortOffload(seed: u64) !void {
    const rt = try newRuntime(seed, 1, 2);
    defer rt.deinit();
    const ends = try pipe();
    defer ends[0].close(rt.io());
    defer ends[1].close(rt.io());
    var case = AbortOffload{
        .io = rt.io(),
        .read_end = ends[0],
        .write_end = ends[1],
        .write_after_ns = (500 + explore.choose(seed, 1, 1500)) * std.time.ns_per_us,
    };
    var reader = try rt.spawnFiber(AbortOffload.reader, .{&case});
    expectSet(&case.reading, "the reader fiber started");
    pauseUs(seed, 2, 400);
    const writer = try rt.spawnFiber(AbortOffload.writer, .{&case});
    pauseUs(seed, 3, 400);
    reader.abort();
    // The abort must not hold the worker: the writer (same runtime) runs, and its byte ends
    // the read the killed fiber left on the blocking pool.
    expectSet(&case.written, "a fiber of the same runtime ran while another was aborted inside an offloaded read");
    try rt.blockOn(writer);
    if (rt.blockOn(reader)) |count| {
        try testing.expectEqual(@as(usize, 1), count); // Finished before the abort landed.
    } else |err| try testing.expectEqual(error.Cancelled, err);
}

test "explore: abort_offload" {
    _ = try explore.runScenario(hook.Point, "abort_offload", abortOffload);
}

// -- deinit_states ---------------------------------------------------------------------------

const DeinitCase = struct {
    io: Io,
    mutex: Io.Mutex = .init,
    condition: Io.Condition = .init,
    queue: Io.Queue(u32),
    buffer: [4]u32 = undefined,
    word: u32 = 0,
    holding: std.atomic.Value(bool) = .init(false),
    unlocked_by_holder: std.atomic.Value(bool) = .init(false),
    blocking_started: std.atomic.Value(bool) = .init(false),
    blocking_locked: std.atomic.Value(bool) = .init(false),
    started: std.atomic.Value(u32) = .init(0),

    /// Holds the mutex across a cancellation point; its defer must run at shutdown.
    fn holder(self: *DeinitCase) Io.Cancelable!void {
        self.mutex.lockUncancelable(self.io);
        defer {
            self.unlocked_by_holder.store(true, .release);
            self.mutex.unlock(self.io);
        }
        self.holding.store(true, .release);
        try self.io.sleep(.fromSeconds(3600), .awake);
    }

    /// A blocking-pool function that needs the holder's mutex.
    fn blockingLocker(self: *DeinitCase) bool {
        self.blocking_started.store(true, .release);
        self.mutex.lockUncancelable(self.io);
        self.mutex.unlock(self.io);
        self.blocking_locked.store(true, .release);
        return true;
    }

    fn queueWaiter(self: *DeinitCase) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        _ = self.queue.getOne(self.io) catch |err| switch (err) {
            error.Canceled => return error.Canceled,
            error.Closed => unreachable,
        };
    }

    fn conditionWaiter(self: *DeinitCase) Io.Cancelable!void {
        _ = self.started.fetchAdd(1, .release);
        self.mutex.lockUncancelable(self.io);
        defer self.mutex.unlock(self.io);
        while (true) try self.condition.wait(self.io, &self.mutex);
    }

    fn sleeper(io: Io) Io.Cancelable!void {
        try io.sleep(.fromSeconds(3600), .awake);
    }

    /// Never woken, never a cancellation point: only the kill after the grace period ends it.
    fn uncancelable(self: *DeinitCase) void {
        _ = self.started.fetchAdd(1, .release);
        self.io.futexWaitUncancelable(u32, &self.word, 0);
    }

    fn awaiter(future: *Io.Future(Io.Cancelable!void), io: Io, result: *?Io.Cancelable!void, done: *std.atomic.Value(bool)) void {
        result.* = future.await(io);
        done.store(true, .release);
    }
};

/// The fiber that owns the others: its group's members are the fibers in every state. At
/// shutdown its `await` is canceled (or it is killed), which cancels the group.
fn deinitRoot(case: *DeinitCase, with_uncancelable: bool) void {
    const io = case.io;
    var group: Io.Group = .init;
    group.concurrent(io, DeinitCase.holder, .{case}) catch return;
    group.concurrent(io, DeinitCase.queueWaiter, .{case}) catch return;
    group.concurrent(io, DeinitCase.conditionWaiter, .{case}) catch return;
    if (with_uncancelable) group.concurrent(io, DeinitCase.uncancelable, .{case}) catch return;
    group.await(io) catch {};
}

fn deinitStates(seed: u64) !void {
    const with_blocking = explore.choose(seed, 1, 2) == 0;
    const with_thread_awaiter = explore.choose(seed, 2, 2) == 0;
    const with_uncancelable = explore.choose(seed, 3, 8) == 0;
    const rt = try newRuntime(seed, 1, 2);
    var rt_alive = true;
    defer if (rt_alive) rt.deinit();
    const io = rt.io();
    var case = DeinitCase{ .io = io, .queue = undefined };
    case.queue = .init(&case.buffer);

    var root = try rt.spawnFiber(deinitRoot, .{ &case, with_uncancelable });
    expectSet(&case.holding, "the holder took the mutex");
    waitAtLeast(&case.started, if (with_uncancelable) 3 else 2);
    var blocking: ?JoinHandle(bool) = null;
    if (with_blocking) {
        blocking = try rt.spawnBlocking(DeinitCase.blockingLocker, .{&case});
        // Started (one that never started is only cancelled at shutdown): it waits for the
        // holder's mutex when the shutdown begins.
        expectSet(&case.blocking_started, "the blocking function started");
    }
    var thread_result: ?Io.Cancelable!void = null;
    var thread_done = std.atomic.Value(bool).init(false);
    var thread: ?std.Thread = null;
    var awaited: Io.Future(Io.Cancelable!void) = undefined;
    if (with_thread_awaiter) {
        awaited = try io.concurrent(DeinitCase.sleeper, .{io});
        thread = try std.Thread.spawn(.{}, DeinitCase.awaiter, .{ &awaited, io, &thread_result, &thread_done });
        // The thread is inside `await` (its waker registered) when the shutdown begins: an
        // await that starts after `deinit` would use a destroyed Io.
        const header = &@as(*fiber_task.Task, @ptrCast(@alignCast(awaited.any_future.?))).header;
        const start_ns = os.clockNs(.MONOTONIC);
        while (header.load() & Header.join_waker == 0 and header.load() & Header.complete == 0) {
            if (os.clockNs(.MONOTONIC) -| start_ns > promise_ns) std.debug.panic("explore: the awaiting thread never registered", .{});
            os.sleepNs(20 * std.time.ns_per_us);
        }
    }
    // Fibers still queued (or just started) when the shutdown begins.
    var late: [3]JoinHandle(Io.Cancelable!void) = undefined;
    const late_count = explore.choose(seed, 4, late.len + 1);
    for (late[0..late_count]) |*handle| handle.* = try rt.spawnFiber(DeinitCase.sleeper, .{io});
    pauseUs(seed, 5, 500);
    rt_alive = false;
    rt.deinit();

    if (thread) |t| {
        t.join();
        try testing.expect(thread_done.load(.acquire));
        // The awaited fiber's own result: its sleep was canceled.
        try testing.expectError(error.Canceled, thread_result.?);
    }
    // The holder was canceled at its sleep and its defer ran: the mutex is free.
    try testing.expect(case.unlocked_by_holder.load(.acquire));
    try testing.expect(case.mutex.tryLock());
    if (blocking) |*handle| {
        try testing.expect(case.blocking_locked.load(.acquire));
        try testing.expectEqual(true, try block_on.blockOnThread(handle));
    }
    for (late[0..late_count]) |*handle| {
        // Canceled at its sleep (its own result), or never started (killed: Cancelled); an
        // hour's sleep never ends by itself.
        const ended = if (block_on.blockOnThread(handle)) |_| false else |err| err == error.Canceled or err == error.Cancelled;
        try testing.expect(ended);
    }
    // The root ends by itself once its group is done — or is killed after the grace period
    // when an uncancelable member held the group.
    if (block_on.blockOnThread(&root)) |_| {} else |err| {
        try testing.expectEqual(error.Cancelled, err);
        try testing.expect(with_uncancelable);
    }
}

test "explore: deinit_states" {
    _ = try explore.runScenario(hook.Point, "deinit_states", deinitStates);
}
