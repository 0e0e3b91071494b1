//! A program that misuses `ampere.sync` locks and `ampere.Io` on purpose, one scenario per
//! run, for the misuse tests (sync/misuse_tests.zig, std_io/std_io_tests.zig). build.zig
//! builds it in ReleaseFast — the mode in which an `assert` would have been undefined
//! behaviour — and the tests run it as a child process: every scenario except `ok` must die of
//! the runtime's panic (SIGABRT, message on stderr), and `ok` (the lock calls, used correctly)
//! must exit 0.

const std = @import("std");
const ampere = @import("ampere");

const Mutex = ampere.sync.Mutex;
const RwLock = ampere.sync.RwLock;

const Scenario = enum {
    ok,
    mutex_double_unlock,
    mutex_unlock_copy,
    rwlock_read_double_unlock,
    rwlock_read_unlock_copy,
    rwlock_read_unlock_after_writer,
    rwlock_write_double_unlock,
    rwlock_write_unlock_copy,
    /// A state-machine task's poll calls a waiting std.Io function (it would block its worker).
    io_wait_in_task,
    /// A thread awaits a std.Io future across `Runtime.deinit`, whose fiber waits where
    /// cancellation cannot reach it: the grace period ends, the fiber is killed, and there is
    /// no result to return.
    io_await_killed,
};

pub fn main(init: std.process.Init.Minimal) u8 {
    var args = init.args.iterate();
    _ = args.skip();
    const name = args.next() orelse return usage();
    const scenario = std.meta.stringToEnum(Scenario, name) orelse return usage();
    run(scenario);
    return 0;
}

fn usage() u8 {
    std.debug.print("usage: ampere_sync_misuse <scenario>; scenarios:", .{});
    for (std.meta.fieldNames(Scenario)) |field| std.debug.print(" {s}", .{field});
    std.debug.print("\n", .{});
    return 2;
}

/// The locks live behind an opaque pointer, so the optimiser cannot see which state they
/// are in and every check runs as it would in a real program.
fn opaquePtr(ptr: anytype) @TypeOf(ptr) {
    return asm volatile (""
        : [ret] "=r" (-> @TypeOf(ptr)),
        : [in] "0" (ptr),
        : .{ .memory = true });
}

fn run(scenario: Scenario) void {
    switch (scenario) {
        .io_wait_in_task => return ioWaitInTask(),
        .io_await_killed => return ioAwaitKilled(),
        else => {},
    }
    var mutex_storage = Mutex.init();
    var rwlock_storage = RwLock.init();
    const mutex = opaquePtr(&mutex_storage);
    const rwlock = opaquePtr(&rwlock_storage);
    switch (scenario) {
        .ok => {
            var guard = mutex.tryLock() orelse fail("tryLock failed on a free mutex");
            guard.unlock();
            var reader = rwlock.tryRead() orelse fail("tryRead failed on a free lock");
            reader.unlock();
            var writer = rwlock.tryWrite() orelse fail("tryWrite failed on a free lock");
            writer.unlock();
            // Guards unlocked where they are captured.
            if (mutex.tryLock()) |g| g.unlock() else fail("tryLock failed on a free mutex");
            if (rwlock.tryRead()) |g| g.unlock() else fail("tryRead failed on a free lock");
            if (rwlock.tryWrite()) |g| g.unlock() else fail("tryWrite failed on a free lock");
        },
        .mutex_double_unlock => {
            var guard = mutex.tryLock() orelse fail("tryLock failed on a free mutex");
            const again = opaquePtr(&guard);
            guard.unlock();
            again.unlock();
        },
        .mutex_unlock_copy => {
            var guard = mutex.tryLock() orelse fail("tryLock failed on a free mutex");
            var copy = opaquePtr(&guard).*;
            guard.unlock();
            copy.unlock();
        },
        .rwlock_read_double_unlock => {
            var guard = rwlock.tryRead() orelse fail("tryRead failed on a free lock");
            const again = opaquePtr(&guard);
            guard.unlock();
            again.unlock();
        },
        .rwlock_read_unlock_copy => {
            var guard = rwlock.tryRead() orelse fail("tryRead failed on a free lock");
            var copy = opaquePtr(&guard).*;
            guard.unlock();
            copy.unlock();
        },
        .rwlock_read_unlock_after_writer => {
            var guard = rwlock.tryRead() orelse fail("tryRead failed on a free lock");
            const again = opaquePtr(&guard);
            guard.unlock();
            const writer = rwlock.tryWrite() orelse fail("tryWrite failed on a free lock");
            again.unlock();
            writer.unlock();
        },
        .rwlock_write_double_unlock => {
            var guard = rwlock.tryWrite() orelse fail("tryWrite failed on a free lock");
            const again = opaquePtr(&guard);
            guard.unlock();
            again.unlock();
        },
        .rwlock_write_unlock_copy => {
            var guard = rwlock.tryWrite() orelse fail("tryWrite failed on a free lock");
            var copy = opaquePtr(&guard).*;
            guard.unlock();
            copy.unlock();
        },
        .io_wait_in_task, .io_await_killed => unreachable,
    }
}

/// A future whose poll sleeps through `ampere.Io`: a state-machine task must not.
const SleepInPoll = struct {
    pub const Output = void;
    io: std.Io,
    pub fn poll(self: *SleepInPoll, cx: *ampere.Context) ampere.Poll(void) {
        _ = cx;
        self.io.sleep(.fromMilliseconds(1), .awake) catch {};
        return .{ .ready = {} };
    }
};

fn ioWaitInTask() void {
    const rt = ampere.Runtime.init(std.heap.page_allocator, .{ .workers = 1 }) catch fail("Runtime.init failed");
    defer rt.deinit();
    const handle = rt.spawn(SleepInPoll{ .io = rt.io() }) catch fail("spawn failed");
    rt.blockOn(handle) catch {};
    fail("the wait in a task's poll returned");
}

var never_woken: u32 = 0;

fn waitUncancelably(io: std.Io) u32 {
    io.futexWaitUncancelable(u32, &never_woken, 0);
    return 1;
}

fn awaitOnThread(future: *std.Io.Future(u32), io: std.Io, entered: *std.atomic.Value(bool)) void {
    entered.store(true, .release);
    _ = future.await(io);
    fail("await returned a result the killed fiber never produced");
}

fn ioAwaitKilled() void {
    const rt = ampere.Runtime.init(std.heap.page_allocator, .{ .workers = 1, .shutdown_grace_ns = 10 * std.time.ns_per_ms }) catch fail("Runtime.init failed");
    const io = rt.io();
    var future = io.concurrent(waitUncancelably, .{io}) catch fail("concurrent failed");
    var entered = std.atomic.Value(bool).init(false);
    _ = std.Thread.spawn(.{}, awaitOnThread, .{ &future, io, &entered }) catch fail("thread spawn failed");
    while (!entered.load(.acquire)) std.Thread.yield() catch {};
    // Let the thread park in `await` (its panic comes after `deinit`'s kill either way; an
    // await that started after `deinit` would be a use of a destroyed Io).
    var ts = std.os.linux.timespec{ .sec = 0, .nsec = 50 * std.time.ns_per_ms };
    _ = std.os.linux.nanosleep(&ts, null);
    rt.deinit();
    // The awaiting thread panics; until it does, wait.
    while (true) _ = std.os.linux.nanosleep(&ts, null);
}

fn fail(message: []const u8) noreturn {
    std.debug.print("ampere_sync_misuse: {s}\n", .{message});
    std.process.exit(3);
}
