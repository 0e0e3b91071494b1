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
