//! A program that misuses `ampere.sync` locks on purpose, one scenario per run, for the
//! misuse tests (sync/misuse_tests.zig). build.zig builds it in ReleaseFast — the mode in which
//! an `assert` would have been undefined behaviour — and the tests run it as a child process:
//! every scenario except `ok` must die of the lock's panic (SIGABRT, message on stderr), and
//! `ok` (the same calls, used correctly) must exit 0.

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
    }
}

fn fail(message: []const u8) noreturn {
    std.debug.print("ampere_sync_misuse: {s}\n", .{message});
    std.process.exit(3);
}
