//! Fibers on a real runtime: spawn and await in both directions (fiber <-> state-machine
//! task), fibers waiting on ampere futures (timers, channels, mutexes, join handles), storms of
//! 100,000 fibers, deep await chains, migration between workers, abort and shutdown of
//! suspended fibers with every stack back in the pool, and the stack-overflow detector (a
//! child process that overflows on purpose).

const std = @import("std");
const builtin = @import("builtin");
const testing = std.testing;

const ampere = @import("../ampere.zig");
const Runtime = ampere.Runtime;
const fiber = ampere.fiber;
const future = @import("../future.zig");
const Worker = @import("../scheduler/Worker.zig");
const ampere_testing = @import("../testing.zig");
const yieldNow = @import("../task/yield_now.zig").yieldNow;
const TaskBlocks = @import("../scheduler/TaskBlocks.zig");
const Stack = @import("Stack.zig");
const assert = std.debug.assert;

fn newRuntime(workers: u32) !*Runtime {
    return Runtime.init(testing.allocator, .{ .workers = workers, .blocking_keep_alive_ns = 50 * std.time.ns_per_ms });
}

fn addOne(x: u64) u64 {
    return x + 1;
}

test "a fiber's JoinHandle yields its result to blockOn" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const handle = try rt.spawnFiber(addOne, .{41});
    try testing.expectEqual(@as(u64, 42), try rt.blockOn(handle));
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

fn sleepThenReturn(duration_ns: u64, value: u32) u32 {
    fiber.await(ampere.time.sleep(duration_ns));
    return value;
}

test "a fiber sleeps on the timer wheel without blocking its worker" {
    // One worker: if the sleep blocked the thread, the second fiber could not finish first.
    const rt = try newRuntime(1);
    defer rt.deinit();
    const slow = try rt.spawnFiber(sleepThenReturn, .{ 50 * std.time.ns_per_ms, 1 });
    const fast = try rt.spawnFiber(sleepThenReturn, .{ 1 * std.time.ns_per_ms, 2 });
    const start = ampere.os.clockNs(.MONOTONIC);
    try testing.expectEqual(@as(u32, 2), try rt.blockOn(fast));
    const fast_ns = ampere.os.clockNs(.MONOTONIC) - start;
    try testing.expectEqual(@as(u32, 1), try rt.blockOn(slow));
    try testing.expect(fast_ns < 45 * std.time.ns_per_ms); // Generous: the bug is >= 50 ms.
}

const Counter = struct {
    mutex: ampere.sync.Mutex = ampere.sync.Mutex.init(),
    value: u64 = 0,

    fn addLocked(self: *Counter, times: u32) void {
        for (0..times) |_| {
            var guard = fiber.await(self.mutex.lock());
            const before = self.value;
            // Hold the lock across a suspension: another fiber must not get in.
            fiber.await(yieldNow());
            self.value = before + 1;
            guard.unlock();
        }
    }
};

test "fibers contend on an ampere Mutex, suspending while they hold it" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    var counter = Counter{};
    const fibers_count = 16;
    const rounds: u32 = @intCast(ampere_testing.scaled(200, 10));
    var handles: [fibers_count]ampere.JoinHandle(void) = undefined;
    for (&handles) |*h| h.* = try rt.spawnFiber(Counter.addLocked, .{ &counter, rounds });
    for (&handles) |h| try rt.blockOn(h);
    try testing.expectEqual(@as(u64, fibers_count * rounds), counter.value);
}

const Channel = ampere.channel.Bounded(u64);

fn produce(sender: Channel.Sender, count: u64) void {
    var tx = sender;
    defer tx.deinit();
    for (0..count) |i| fiber.await(tx.send(i)) catch unreachable;
}

fn consume(receiver: Channel.Receiver) u64 {
    var rx = receiver;
    defer rx.deinit();
    var sum: u64 = 0;
    while (fiber.await(rx.recv())) |value| sum += value else |_| {}
    return sum;
}

test "a fiber producer and a fiber consumer over a bounded channel" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    const tx, const rx = try Channel.init(testing.allocator, 4);
    const count: u64 = ampere_testing.scaled(10_000, 10);
    const consumer = try rt.spawnFiber(consume, .{rx});
    const producer = try rt.spawnFiber(produce, .{ tx, count });
    try rt.blockOn(producer);
    try testing.expectEqual(count * (count - 1) / 2, try rt.blockOn(consumer));
}

fn triple(x: u64) u64 {
    return 3 * x;
}

/// A fiber that awaits a state-machine task's JoinHandle and a fiber's JoinHandle.
fn awaitBoth(x: u64) !u64 {
    const rt = Runtime.current().?;
    const machine = try rt.spawn(future.ready(x));
    const other = try rt.spawnFiber(triple, .{x});
    const a = try fiber.await(machine);
    const b = try fiber.await(other);
    return a + b;
}

/// A state-machine future that spawns a fiber and awaits its JoinHandle.
const AwaitFiber = struct {
    pub const Output = ampere.JoinError!u64;
    handle: ?ampere.JoinHandle(u64) = null,
    pub fn poll(self: *AwaitFiber, cx: *ampere.Context) ampere.Poll(Output) {
        if (self.handle == null) self.handle = Runtime.current().?.spawnFiber(triple, .{7}) catch unreachable;
        return self.handle.?.poll(cx);
    }
};

test "a fiber awaits tasks and fibers; a state-machine task awaits a fiber" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    try testing.expectEqual(@as(u64, 40), try rt.blockOn(try rt.spawnFiber(awaitBoth, .{10})));
    const machine = try rt.spawn(AwaitFiber{});
    try testing.expectEqual(@as(u64, 21), try rt.blockOn(machine));
}

fn leaf(index: u64) u64 {
    if (index % 3 == 0) fiber.await(yieldNow()); // Some suspend, some do not.
    return index;
}

/// Spawns `total` fibers in batches of `batch` (bounding the stacks alive at once) and sums
/// their results.
fn storm(total: u64, batch: u64) !u64 {
    const rt = Runtime.current().?;
    const handles = try testing.allocator.alloc(ampere.JoinHandle(u64), batch);
    defer testing.allocator.free(handles);
    var sum: u64 = 0;
    var next: u64 = 0;
    while (next < total) {
        const n = @min(batch, total - next);
        for (handles[0..n], next..) |*h, i| h.* = try rt.spawnFiber(leaf, .{i});
        for (handles[0..n]) |h| sum += try fiber.await(h);
        next += n;
    }
    return sum;
}

test "100,000 fibers spawned from a fiber, every result checked" {
    const rt = try Runtime.init(testing.allocator, .{ .workers = 4, .fiber_stacks_cached = 5_000 });
    defer rt.deinit();
    const total: u64 = ampere_testing.scaled(100_000, 20);
    const sum = try rt.blockOn(try rt.spawnFiber(storm, .{ total, 5_000 }));
    try testing.expectEqual(total * (total - 1) / 2, sum);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
    // Stacks are reused: far fewer mappings than fibers.
    try testing.expect(rt.fibers.stacks.mapped_total.load(.monotonic) <= 5_000 + 64);
}

fn chain(depth: u64) ampere.Runtime.SpawnFiberError!u64 {
    if (depth == 0) return 0;
    const child = try Runtime.current().?.spawnFiber(chain, .{depth - 1});
    return 1 + (fiber.await(child) catch |err| switch (err) {
        error.Cancelled => unreachable,
        else => |e| return e,
    });
}

test "a deep await chain: each fiber spawns the next and awaits it" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    const depth: u64 = ampere_testing.scaled(2_000, 10);
    try testing.expectEqual(depth, try rt.blockOn(try rt.spawnFiber(chain, .{depth})));
}

fn migrate(rounds: u32) !u32 {
    const self = fiber.current().?;
    var moved: u32 = 0;
    var last = Worker.current().?;
    for (0..rounds) |_| {
        fiber.await(yieldNow());
        // Read through the thread-local after every resume: it names this fiber, on whatever
        // thread resumed it.
        if (fiber.current().? != self) return error.WrongFiber;
        const now = Worker.current().?;
        if (now != last) moved += 1;
        last = now;
    }
    return moved;
}

test "fibers resume on other workers and see that worker's thread-locals" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    var handles: [32]ampere.JoinHandle(@typeInfo(@TypeOf(migrate)).@"fn".return_type.?) = undefined;
    const rounds: u32 = @intCast(ampere_testing.scaled(2_000, 10));
    for (&handles) |*h| h.* = try rt.spawnFiber(migrate, .{rounds});
    // How often they moved is not asserted: on a loaded 2-vCPU machine one worker may run
    // everything.
    for (handles) |h| _ = try rt.blockOn(h);
}

fn waitForever(cancels: *std.atomic.Value(u32)) void {
    const Forever = struct {
        pub const Output = void;
        cancels: *std.atomic.Value(u32),
        pub fn poll(self: *@This(), cx: *ampere.Context) ampere.Poll(void) {
            _ = self;
            _ = cx;
            return .pending;
        }
        pub fn cancel(self: *@This()) void {
            _ = self.cancels.fetchAdd(1, .acq_rel);
        }
    };
    fiber.await(Forever{ .cancels = cancels });
    unreachable; // Killed while suspended: never resumed.
}

test "abort kills a suspended fiber: its wait is cancelled and its stack returns" {
    const rt = try newRuntime(2);
    defer rt.deinit();
    var cancels = std.atomic.Value(u32).init(0);
    const handle = try rt.spawnFiber(waitForever, .{&cancels});
    // Let it start and suspend.
    while (rt.fibers.stacks.inUse() != 1 or rt.metrics().total().get(.polls) == 0) ampere.os.sleepNs(std.time.ns_per_ms);
    ampere.os.sleepNs(5 * std.time.ns_per_ms);
    handle.abort();
    try testing.expectError(error.Cancelled, rt.blockOn(handle));
    try testing.expectEqual(@as(u32, 1), cancels.load(.acquire));
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

test "runtime shutdown kills suspended and never-started fibers; no stack leaks" {
    const rt = try newRuntime(2);
    var cancels = std.atomic.Value(u32).init(0);
    var handles: [8]ampere.JoinHandle(void) = undefined;
    for (&handles) |*h| h.* = try rt.spawnFiber(waitForever, .{&cancels});
    ampere.os.sleepNs(10 * std.time.ns_per_ms);
    rt.deinit(); // Asserts every stack is back in the pool.
    for (&handles) |h| try testing.expectError(error.Cancelled, ampere.blockOnThread(@constCast(&h)));
    try testing.expect(cancels.load(.acquire) <= 8);
}

test "a fiber touches only the stack pages it uses" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const Probe = struct {
        fn run() usize {
            return fiber.current().?.stack.?.residentBytes();
        }
    };
    const resident = try rt.blockOn(try rt.spawnFiber(Probe.run, .{}));
    try testing.expect(resident > 0);
    try testing.expect(resident <= 64 * 1024); // Of 256 KiB reserved.
}

test "stack overflow in a fiber ends the process with a message naming it" {
    if (ampere_testing.under_tsan) return error.SkipZigTest; // TSan reports the SEGV itself.
    const options = @import("misuse_options");
    const result = try std.process.run(testing.allocator, testing.io, .{
        .argv = &.{options.fiber_overflow_exe},
    });
    defer testing.allocator.free(result.stdout);
    defer testing.allocator.free(result.stderr);
    errdefer std.debug.print("term {any}, stderr:\n{s}\n", .{ result.term, result.stderr });
    try testing.expectEqual(std.process.Child.Term{ .signal = .ABRT }, result.term);
    try testing.expect(std.mem.indexOf(u8, result.stderr, fiber.overflow.message) != null);
}

fn stackTop() usize {
    return fiber.current().?.stack.?.top();
}

fn spawnShortFibers(count: usize, tops: []usize) !void {
    const rt = Runtime.current().?;
    const handles = try testing.allocator.alloc(ampere.JoinHandle(usize), count);
    defer testing.allocator.free(handles);
    for (handles) |*h| h.* = try rt.spawnFiber(stackTop, .{});
    for (handles, tops) |h, *top| top.* = try fiber.await(h);
}

test "queued fibers hold no stack: 1,000 short fibers run on a few warm stacks" {
    // One worker: the spawner queues 1,000 fibers, then awaits; each runs to the end before the
    // next starts. A stack taken at spawn time (the old design) gave each its own: 1,000
    // distinct stacks, each a cold cache and TLB miss. Taken at the first run, LIFO, the
    // same stack comes back every time.
    const rt = try newRuntime(1);
    defer rt.deinit();
    const count = 1_000;
    const tops = try testing.allocator.alloc(usize, count);
    defer testing.allocator.free(tops);
    try rt.blockOn(try rt.spawnFiber(spawnShortFibers, .{ count, tops }));
    std.mem.sort(usize, tops, {}, std.sort.asc(usize));
    var distinct: usize = 1;
    for (tops[1..], tops[0 .. count - 1]) |a, b| distinct += @intFromBool(a != b);
    try testing.expect(distinct <= 2);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

fn spawnAwaitSequentially(count: u64) !u64 {
    const rt = Runtime.current().?;
    var sum: u64 = 0;
    for (0..count) |i| sum += try fiber.await(try rt.spawnFiber(addOne, .{i}));
    return sum;
}

test "fiber tasks reuse task blocks: 1,000 spawn + await on a worker allocate a handful" {
    // Each task's block goes back to the worker's cache when its handle is dropped, and the
    // next spawn takes it: the allocator sees the first few blocks only.
    comptime assert(@sizeOf(fiber.task.Task) + 64 <= TaskBlocks.block_bytes);
    var counting = ampere.CountingAllocator.init(testing.allocator);
    const rt = try Runtime.init(counting.allocator(), .{ .workers = 1 });
    defer rt.deinit();
    const count = 1_000;
    _ = try rt.blockOn(try rt.spawnFiber(spawnAwaitSequentially, .{8})); // Warm the cache.
    const before = counting.snapshot().count;
    const sum = try rt.blockOn(try rt.spawnFiber(spawnAwaitSequentially, .{count}));
    try testing.expectEqual(@as(u64, count * (count + 1) / 2), sum);
    // The outer fiber's own block (spawned from this thread: no cache) and at most one more.
    try testing.expect(counting.snapshot().count - before <= 2);
    try testing.expect(rt.scheduler.workers[0].task_blocks.count > 0);
}

test "only workers make task blocks: a spawn from a plain thread allocates the task's own size" {
    var counting = ampere.CountingAllocator.init(testing.allocator);
    const rt = try Runtime.init(counting.allocator(), .{ .workers = 1 });
    defer rt.deinit();
    const before = counting.snapshot();
    const handle = try rt.spawn(ampere.future.ready(@as(u64, 7)));
    const after = counting.snapshot();
    try testing.expectEqual(@as(u64, 1), after.count - before.count);
    try testing.expect(after.bytes - before.bytes < TaskBlocks.block_bytes);
    try testing.expectEqual(@as(u64, 7), try rt.blockOn(handle));
}

// -- direct hand-off (Fiber.zig, "Direct hand-off") --------------------------------------------

/// Echoes every value back until its inbox closes.
fn echoBack(inbox: Channel.Receiver, outbox: Channel.Sender) void {
    var rx = inbox;
    defer rx.deinit();
    var tx = outbox;
    defer tx.deinit();
    while (fiber.await(rx.recv())) |value| fiber.await(tx.send(value)) catch unreachable else |_| {}
}

/// Where a ping-pong records its progress and, at round `observer_round`, spawns an observer
/// (into its worker's queue, behind the pair) that reads the progress when it runs.
const Watch = struct {
    progress: std.atomic.Value(u64) = .init(0),
    observer_round: u64 = std.math.maxInt(u64),
    observer: ?ampere.JoinHandle(u64) = null,
};

/// Sends 0..rounds-1 and checks every echo; returns the number of echoes received.
fn pingRounds(outbox: Channel.Sender, inbox: Channel.Receiver, rounds: u64, watch: *Watch) u64 {
    var tx = outbox;
    var rx = inbox;
    defer rx.deinit();
    var received: u64 = 0;
    for (0..rounds) |round| {
        if (round == watch.observer_round) watch.observer = Runtime.current().?.spawnFiber(observe, .{&watch.progress}) catch unreachable;
        fiber.await(tx.send(round)) catch unreachable;
        const echoed = fiber.await(rx.recv()) catch unreachable;
        if (echoed == round) received += 1;
        watch.progress.store(round + 1, .monotonic);
    }
    tx.deinit(); // Closes the echo fiber's inbox.
    return received;
}

fn observe(progress: *std.atomic.Value(u64)) u64 {
    return progress.load(.monotonic);
}

test "a fiber ping-pong on one worker hands off directly: to handoff_polls_max alone, within the LIFO cap beside queued work" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const there_tx, const there_rx = try Channel.init(testing.allocator, 1);
    const back_tx, const back_rx = try Channel.init(testing.allocator, 1);
    const rounds: u64 = @max(100, ampere_testing.scaled(20_000, 500));
    // Queued behind the pair at round 10: the LIFO cap (hand-offs count as LIFO polls) must let
    // it run within a chain or two, not when the pair is done.
    var watch = Watch{ .observer_round = 10 };
    const echo = try rt.spawnFiber(echoBack, .{ there_rx, back_tx });
    const ping = try rt.spawnFiber(pingRounds, .{ there_tx, back_rx, rounds, &watch });
    try testing.expectEqual(rounds, try rt.blockOn(ping));
    try rt.blockOn(echo);
    const seen = try rt.blockOn(watch.observer.?);
    try testing.expect(seen >= 10 and seen <= 10 + 2 * Worker.lifo_polls_max);
    const total = rt.metrics().total();
    // With nothing else queued a chain of hand-offs runs to handoff_polls_max (32), not
    // lifo_polls_max (3: then a quarter of the hops went through the worker's loop)...
    const polls = total.get(.polls);
    const handoffs = total.get(.handoffs);
    try testing.expect(handoffs * 10 >= polls * 9);
    // ...and no further: the worker's loop still polls at least once per 65 polls (its own
    // poll, then at most `handoff_run_max` hand-offs of either kind).
    try testing.expect((polls - handoffs) * (Worker.handoff_run_max + 1) + 64 >= polls);
    // Every hand-off is a LIFO poll or takes the queue's head.
    try testing.expect(handoffs - total.get(.queue_handoffs) <= total.get(.lifo_hits));
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

fn markRan(ran: *bool) void {
    ran.* = true;
}

/// Spawns a fiber (into the LIFO slot), aborts it, then awaits it: the suspension finds the
/// aborted fiber as the hand-off candidate and must cancel it instead of running it.
fn spawnAbortAwait(ran: *bool) bool {
    const rt = Runtime.current().?;
    const child = rt.spawnFiber(markRan, .{ran}) catch unreachable;
    child.abort();
    fiber.await(child) catch |err| return err == error.Cancelled;
    return false;
}

test "a hand-off candidate whose abort came first is cancelled, never run" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    var ran = false;
    try testing.expect(try rt.blockOn(try rt.spawnFiber(spawnAbortAwait, .{&ran})));
    try testing.expect(!ran);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

/// Spawns a fiber (into the LIFO slot), then yields: the yield wakes this fiber while it hands
/// the worker to the child, so the child's landing must re-queue it. Returns whether the child
/// had run when the yield returned.
fn spawnThenYield(ran: *bool) bool {
    const rt = Runtime.current().?;
    const child = rt.spawnFiber(markRan, .{ran}) catch unreachable;
    fiber.await(yieldNow());
    const child_first = ran.*;
    fiber.await(child) catch unreachable;
    return child_first;
}

test "a fiber woken while it hands off is re-queued by the fiber it handed to" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    var ran = false;
    const before = rt.metrics().total().get(.handoffs);
    try testing.expect(try rt.blockOn(try rt.spawnFiber(spawnThenYield, .{&ran})));
    try testing.expect(rt.metrics().total().get(.handoffs) > before);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

test "hand-offs at 4 workers: 64 ping-pong pairs migrate and every echo is right" {
    const rt = try newRuntime(4);
    defer rt.deinit();
    const pairs = 64;
    const rounds: u64 = ampere_testing.scaled(2_000, 50);
    var watches: [pairs]Watch = undefined;
    var pings: [pairs]ampere.JoinHandle(u64) = undefined;
    var echoes: [pairs]ampere.JoinHandle(void) = undefined;
    for (0..pairs) |i| {
        watches[i] = .{};
        const there_tx, const there_rx = try Channel.init(testing.allocator, 1);
        const back_tx, const back_rx = try Channel.init(testing.allocator, 1);
        echoes[i] = try rt.spawnFiber(echoBack, .{ there_rx, back_tx });
        pings[i] = try rt.spawnFiber(pingRounds, .{ there_tx, back_rx, rounds, &watches[i] });
    }
    for (pings) |h| try testing.expectEqual(rounds, try rt.blockOn(h));
    for (echoes) |h| try rt.blockOn(h);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

fn sendOne(sender: Channel.Sender, value: u64) void {
    var tx = sender;
    defer tx.deinit();
    fiber.await(tx.send(value)) catch unreachable;
}

/// Spawns `producers` fibers that each send one value and finish, then sums what arrives.
fn fanIn(receiver: Channel.Receiver, sender: Channel.Sender, producers: u64) !u64 {
    const rt = Runtime.current().?;
    var tx = sender;
    for (0..producers) |i| {
        var handle = try rt.spawnFiber(sendOne, .{ tx.clone(), i });
        handle.detach();
    }
    tx.deinit();
    return consume(receiver);
}

/// Spawns one producer at a time and receives its value before the next: the consumer waits
/// each time with nothing else queued.
fn oneByOne(receiver: Channel.Receiver, sender: Channel.Sender, producers: u64) !u64 {
    const rt = Runtime.current().?;
    var tx = sender;
    var rx = receiver;
    defer rx.deinit();
    var sum: u64 = 0;
    for (0..producers) |i| {
        var handle = try rt.spawnFiber(sendOne, .{ tx.clone(), i });
        handle.detach();
        sum += fiber.await(rx.recv()) catch unreachable;
    }
    tx.deinit();
    return sum;
}

test "a fiber that finishes with nothing else queued hands off to the fiber it woke; its stack is released on landing" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const tx, const rx = try Channel.init(testing.allocator, 1);
    const producers: u64 = ampere_testing.scaled(5_000, 50);
    const before = rt.metrics().total();
    try testing.expectEqual(producers * (producers - 1) / 2, try rt.blockOn(try rt.spawnFiber(oneByOne, .{ rx, tx, producers })));
    const counts = rt.metrics().total().minus(before);
    // Each round: the consumer waits and hands off to the producer it spawned; the producer's
    // send wakes the consumer into the LIFO slot, and it finishes and hands straight back.
    // Two hand-offs a round; the consumer's spawn is a LIFO push too, and chains stop at
    // `handoff_polls_max`.
    try testing.expect(counts.get(.handoffs) >= producers);
    try testing.expectEqual(@as(u64, 0), counts.get(.lifo_requeues));
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

test "a fiber that finishes with tasks queued sends the fiber it woke behind them: a fan-in consumer wakes once" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const producers: u64 = ampere_testing.scaled(200, 50); // Within the local queue (256).
    const tx, const rx = try Channel.init(testing.allocator, producers);
    const before = rt.metrics().total();
    try testing.expectEqual(producers * (producers - 1) / 2, try rt.blockOn(try rt.spawnFiber(fanIn, .{ rx, tx, producers })));
    const counts = rt.metrics().total().minus(before);
    // The first producer to run wakes the waiting consumer and finishes with the others
    // queued: the consumer goes behind them and then drains every value in one poll. Without
    // the rule it ran after each producer: about two polls per producer.
    try testing.expectEqual(@as(u64, 1), counts.get(.lifo_requeues));
    try testing.expect(counts.get(.polls) <= producers + 4);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

/// Where the steps of `burst` record the order they ran in.
const Order = struct {
    const capacity = 64;
    next: u32 = 0,
    seen: [capacity]u32 = undefined,

    /// One worker runs every step: plain memory.
    fn record(self: *Order, id: u32) void {
        self.seen[self.next] = id;
        self.next += 1;
    }
};

const NativeStep = struct {
    pub const Output = void;
    order: *Order,
    id: u32,

    pub fn poll(self: *NativeStep, cx: *future.Context) future.Poll(void) {
        _ = cx;
        self.order.record(self.id);
        return .{ .ready = {} };
    }
};

fn fiberStep(order: *Order, id: u32) void {
    order.record(id);
}

/// Spawns `count` steps (every third a state-machine task, the others fibers) and awaits them.
fn burst(order: *Order, count: u32) !void {
    const rt = Runtime.current().?;
    var natives: [Order.capacity]?ampere.JoinHandle(void) = @splat(null);
    var fibers: [Order.capacity]?ampere.JoinHandle(void) = @splat(null);
    for (0..count) |i| {
        const id: u32 = @intCast(i);
        if (i % 3 == 1) {
            natives[i] = try rt.spawn(NativeStep{ .order = order, .id = id });
        } else {
            fibers[i] = try rt.spawnFiber(fiberStep, .{ order, id });
        }
    }
    for (natives[0..count], fibers[0..count]) |n, f| {
        if (n) |h| try fiber.await(h);
        if (f) |h| try fiber.await(h);
    }
}

test "a suspending fiber hands off to the head of the local queue: the loop's order, a head that is not a fiber's runs next" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const count: u32 = 48;
    var order = Order{};
    const before = rt.metrics().total();
    try rt.blockOn(try rt.spawnFiber(burst, .{ &order, count }));
    const counts = rt.metrics().total().minus(before);
    try testing.expectEqual(count, order.next);
    // Each spawn took the LIFO slot and pushed the one before to the back of the queue: the
    // last step runs first (the awaiting fiber's hand-off), then the queue in spawn order —
    // the state-machine steps among them at their places, though a fiber could not switch to
    // them (the popped head runs next, on the worker's stack).
    try testing.expectEqual(count - 1, order.seen[0]);
    for (order.seen[1..count], 0..) |id, i| try testing.expectEqual(@as(u32, @intCast(i)), id);
    // Every fiber step after a fiber step was a hand-off from the queue's head.
    try testing.expect(counts.get(.queue_handoffs) >= count / 3);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

// -- completing on the fiber's stack (Worker.takeHandoff, "Completing on the fiber's stack" in
// fiber/task.zig)

test "spawn + await on one worker: the child completes on its stack and hands straight back to its awaiter" {
    const rt = try newRuntime(1);
    defer rt.deinit();
    const count: u64 = ampere_testing.scaled(2_000, 50);
    _ = try rt.blockOn(try rt.spawnFiber(spawnAwaitSequentially, .{8})); // Warm the stack pool.
    // The children's stacks came through the worker's share of the pool, the parent's (spawned
    // by this thread) through the pool alone (Stack.zig, "Worker caches").
    try testing.expectEqual(@as(u32, 1), Stack.Pool.Local.get(&rt.fibers.stacks.local(0).?.count));
    const mapped_before = rt.fibers.stacks.mapped_total.load(.monotonic);
    const before = rt.metrics().total();
    const sum = try rt.blockOn(try rt.spawnFiber(spawnAwaitSequentially, .{count}));
    try testing.expectEqual(count * (count + 1) / 2, sum);
    const counts = rt.metrics().total().minus(before);
    // Every child but at most a few (the chain's caps send one through the loop now and then)
    // completes on its stack, and its awaiter is its successor: the parent hands off to the
    // child, the child back to the parent — about two hand-offs per child. The worker's loop
    // polls only where a chain starts: once per `handoff_polls_max` polls (without the early
    // completion, every other poll: each parent was resumed by the loop).
    try testing.expect(counts.get(.early_completions) * 10 >= count * 9);
    try testing.expect(counts.get(.handoffs) * 10 >= count * 2 * 9);
    try testing.expect((counts.get(.polls) - counts.get(.handoffs)) * 16 <= counts.get(.polls));
    // The retired stack is given back on landing, before the parent's next spawn reserves one:
    // one warm stack serves every child. Nothing is mapped per child; a refill of the worker's
    // credits may map the few its batch lacks (one in `check_every` releases goes to the pool
    // and takes a credit's reservation with it: about one refill per 1,000 children).
    const mapped = rt.fibers.stacks.mapped_total.load(.monotonic) - mapped_before;
    try testing.expect(mapped <= Stack.Pool.credit_batch * (1 + count / 1000));
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

test "a fiber awaited by a state-machine task completes on its stack and is finished once by the worker" {
    // The completion wakes a task that is not a fiber's: no successor, the fiber switches back
    // to the worker, which gives the stack back and drops the references (`finishPolled`).
    const rt = try newRuntime(1);
    defer rt.deinit();
    const before = rt.metrics().total();
    for (0..ampere_testing.scaled(200, 10)) |_| {
        const machine = try rt.spawn(AwaitFiber{});
        try testing.expectEqual(@as(u64, 21), try rt.blockOn(machine));
    }
    try testing.expect(rt.metrics().total().minus(before).get(.early_completions) > 0);
    try testing.expectEqual(@as(usize, 0), rt.fibers.stacks.inUse());
}

const CompletedEarlyWindow = struct {
    var gate: ampere_testing.HookWindow = .{};

    fn hook(w: *Worker) void {
        _ = w;
        gate.hold();
    }
};

test "a thread that sees a fiber's early completion never counts its stack in use, though the fiber is still on it" {
    const hook = @import("../hook.zig");
    const rt = try newRuntime(1);
    defer rt.deinit();
    hook.armAnyThread(.fiber_completed_early, Worker, CompletedEarlyWindow.hook);
    defer hook.disarmAnyThread(.fiber_completed_early);
    const pool = &rt.fibers.stacks;
    for (0..ampere_testing.scaled(20, 5)) |round| {
        CompletedEarlyWindow.gate.arm();
        // A failed check lets the worker go, so that the runtime can stop.
        errdefer CompletedEarlyWindow.gate.release();
        // Spawned from this thread: the worker runs it alone, and it finishes with nothing
        // queued, so it completes on its stack; the hook holds the worker there.
        const result = try rt.blockOn(try rt.spawnFiber(addOne, .{round}));
        try testing.expectEqual(round + 1, result);
        // The completion is published before the hook point (`Worker.takeHandoff`: the task
        // completes, then the hook), so this thread can see it while the worker is still on
        // its way to the hook: wait for it (2-7% of tsan runs failed a plain check here).
        try testing.expect(CompletedEarlyWindow.gate.waitHeldFor(10 * std.time.ns_per_s));
        // The window: the completion is out, the fiber's thread still runs on the stack.
        try testing.expectEqual(@as(usize, 0), pool.inUse());
        try testing.expectEqual(@as(usize, 1), pool.retiredHeld());
        CompletedEarlyWindow.gate.release();
        CompletedEarlyWindow.gate.waitLeft();
    }
    // Every retired stack is given back.
    while (pool.retiredHeld() != 0) std.Thread.yield() catch {};
    try testing.expectEqual(@as(usize, 0), pool.inUse());
}

