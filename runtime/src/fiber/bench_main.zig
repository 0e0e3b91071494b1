//! Micro-measurements of fibers (`zig build fiber-bench`, ReleaseFast): the raw context switch,
//! a suspend/resume round trip through the scheduler, spawn + await of a fiber (by
//! `Runtime.spawnFiber` and by `std.Io.concurrent`) next to a state-machine task's, and the
//! memory an idle fiber holds. Prints one line per measurement; the numbers in
//! runtime/docs/fibers.md come from here.

const std = @import("std");
const ampere = @import("ampere");
const Io = std.Io;
const arch = ampere.fiber.arch;

fn nowNs() u64 {
    return ampere.os.clockNs(.MONOTONIC);
}

fn report(name: []const u8, total_ns: u64, count: u64) void {
    const per = @as(f64, @floatFromInt(total_ns)) / @as(f64, @floatFromInt(count));
    std.debug.print("{s}: {d:.1} ns\n", .{ name, per });
}

// -- the raw switch --------------------------------------------------------------------------

const PingPong = struct {
    context: arch.Context = undefined,
    caller: arch.Context = undefined,

    fn main(message: *const arch.Switch) callconv(.c) noreturn {
        const self: *PingPong = @fieldParentPtr("context", message.new);
        while (true) arch.switchTo(&self.context, &self.caller);
    }
};

fn rawSwitch(rounds: u64) !void {
    const stack = try ampere.fiber.Stack.map(64 * 1024, 4096);
    defer stack.unmap();
    var fiber = PingPong{};
    fiber.context = arch.initial(stack.top(), &PingPong.main);
    const start = nowNs();
    for (0..rounds) |_| arch.switchTo(&fiber.caller, &fiber.context);
    report("context switch (one direction)", nowNs() - start, 2 * rounds);
}

// -- through the scheduler -------------------------------------------------------------------

fn yielder(rounds: u64) void {
    for (0..rounds) |_| ampere.fiber.await(ampere.task.yieldNow());
}

fn leaf() u64 {
    return 1;
}

fn spawnAwaitFibers(count: u64) !u64 {
    const rt = ampere.Runtime.current().?;
    var sum: u64 = 0;
    for (0..count) |_| sum += try ampere.fiber.await(try rt.spawnFiber(leaf, .{}));
    return sum;
}

fn spawnAwaitTasks(count: u64) !u64 {
    const rt = ampere.Runtime.current().?;
    var sum: u64 = 0;
    for (0..count) |_| sum += try ampere.fiber.await(try rt.spawn(ampere.future.ready(@as(u64, 1))));
    return sum;
}

fn ioConcurrentAwait(io: Io, count: u64) !u64 {
    var sum: u64 = 0;
    for (0..count) |_| {
        var f = try io.concurrent(leaf, .{});
        sum += f.await(io);
    }
    return sum;
}

fn waitIdle(io: Io, event: *Io.Event) Io.Cancelable!void {
    try event.wait(io);
}

/// Two fibers hand a turn back and forth through std.Io's futex alone: `turn` is 0 when it is
/// the pinger's, 1 when it is the ponger's; each waits while the turn is not its own.
const FutexTurn = struct {
    turn: std.atomic.Value(u32) = .init(0),

    fn play(self: *FutexTurn, io: Io, mine: u32, rounds: u64) Io.Cancelable!void {
        for (0..rounds) |_| {
            while (self.turn.load(.acquire) != mine) try io.futexWait(u32, &self.turn.raw, 1 - mine);
            self.turn.store(1 - mine, .release);
            io.futexWake(u32, &self.turn.raw, 1);
        }
    }
};

/// One std.Io queue ping-pong pair (capacity 1 each way), as io_queue_pingpong pairs=1.
const QueuePair = struct {
    there: Io.Queue(u64),
    back: Io.Queue(u64),
    there_buffer: [1]u64 = undefined,
    back_buffer: [1]u64 = undefined,

    fn pinger(self: *QueuePair, io: Io, rounds: u64) (Io.Cancelable || Io.QueueClosedError)!void {
        for (0..rounds) |round| {
            try self.there.putOne(io, round);
            if (try self.back.getOne(io) != round) @panic("queue ping-pong: wrong answer");
        }
    }

    fn ponger(self: *QueuePair, io: Io, rounds: u64) (Io.Cancelable || Io.QueueClosedError)!void {
        for (0..rounds) |_| try self.back.putOne(io, try self.there.getOne(io));
    }
};

fn residentBytes() !u64 {
    var buffer: [128]u8 = undefined;
    const file = try Io.Dir.openFileAbsolute(std.Io.Threaded.global_single_threaded.io(), "/proc/self/statm", .{});
    defer file.close(std.Io.Threaded.global_single_threaded.io());
    const n = try file.readPositional(std.Io.Threaded.global_single_threaded.io(), &.{&buffer}, 0);
    var fields = std.mem.tokenizeScalar(u8, buffer[0..n], ' ');
    _ = fields.next();
    const pages = try std.fmt.parseInt(u64, fields.next().?, 10);
    return pages * std.heap.page_size_min;
}

pub fn main() !void {
    const allocator = std.heap.smp_allocator;
    try rawSwitch(10_000_000);

    const rt = try ampere.Runtime.init(allocator, .{ .workers = 1 });
    defer rt.deinit();
    const io = rt.io();

    const rounds: u64 = 1_000_000;
    var start = nowNs();
    try rt.blockOn(try rt.spawnFiber(yielder, .{rounds}));
    report("fiber suspend + resume through the scheduler (yield, 1 worker)", nowNs() - start, rounds);

    const spawns: u64 = 200_000;
    start = nowNs();
    _ = try rt.blockOn(try rt.spawnFiber(spawnAwaitFibers, .{spawns}));
    report("fiber spawn + await (Runtime.spawnFiber, from a fiber, 1 worker)", nowNs() - start, spawns);
    start = nowNs();
    _ = try rt.blockOn(try rt.spawnFiber(spawnAwaitTasks, .{spawns}));
    report("state-machine task spawn + await (from a fiber, 1 worker)", nowNs() - start, spawns);
    start = nowNs();
    var f = try io.concurrent(ioConcurrentAwait, .{ io, spawns });
    _ = try f.await(io);
    report("std.Io concurrent + await (from a fiber, 1 worker)", nowNs() - start, spawns);

    // The std.Io ping-pong of the io suite, and the same hand-off through the futex alone: the
    // difference is what std.Io.Queue (its Mutex and Condition) adds on top of Ampere's futex
    // and scheduler.
    const handoffs: u64 = 500_000;
    var turn = FutexTurn{};
    start = nowNs();
    var ping = try io.concurrent(FutexTurn.play, .{ &turn, io, 0, handoffs });
    var pong = try io.concurrent(FutexTurn.play, .{ &turn, io, 1, handoffs });
    try ping.await(io);
    try pong.await(io);
    report("std.Io futex round trip between two fibers (wait + wake each way, 1 worker)", nowNs() - start, handoffs);
    var pair: QueuePair = undefined;
    pair.there = .init(&pair.there_buffer);
    pair.back = .init(&pair.back_buffer);
    start = nowNs();
    var pinger = try io.concurrent(QueuePair.pinger, .{ &pair, io, handoffs });
    var ponger = try io.concurrent(QueuePair.ponger, .{ &pair, io, handoffs });
    try pinger.await(io);
    try ponger.await(io);
    report("std.Io.Queue round trip between two fibers (io_queue_pingpong pairs=1, 1 worker)", nowNs() - start, handoffs);

    const idle: u64 = 10_000;
    var event: Io.Event = .unset;
    var group: Io.Group = .init;
    const before = try residentBytes();
    for (0..idle) |_| try group.concurrent(io, waitIdle, .{ io, &event });
    while (rt.fibers.stacks.inUse() < idle) try io.sleep(.fromMilliseconds(1), .awake);
    try io.sleep(.fromMilliseconds(50), .awake); // Every fiber has started and suspended.
    const after = try residentBytes();
    std.debug.print("idle fibers: {d}, resident memory per idle fiber: {d} bytes (stack {d} KiB reserved)\n", .{
        idle,
        (after - before) / idle,
        rt.fibers.stacks.usable_bytes / 1024,
    });
    event.set(io);
    try group.await(io);
}
