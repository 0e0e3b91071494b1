//! Test-only interleaving hooks for the lost-wake-up tests.
//!
//! Every waiting path in `sync` checks a condition without the lock ("not ready yet"), then
//! takes the lock to register its waker. A wake that lands between the two is the classic lost
//! wake-up. To test that each path handles it, the path calls `reached(.point)` exactly in that
//! window, and a test arms a one-shot hook for that point which performs the wake (release,
//! notify, set, arrive...) on the same thread, deterministically.
//!
//! Outside test builds `reached` is empty at compile time (`builtin.is_test` is false), so the
//! benchmark and release builds carry no trace of it. The armed hook is thread-local, so
//! parallel stress tests are unaffected.

const std = @import("std");
const builtin = @import("builtin");

pub const Point = enum {
    /// Semaphore.Acquire, first poll: fast path failed, before taking the lock.
    semaphore_acquire,
    /// Semaphore.Acquire, queued poll: status read "waiting", before taking the lock.
    semaphore_repoll,
    /// Notify.Notified, first poll: no stored permit, before taking the lock.
    notify_wait,
    /// Notify.Notified, queued poll: status read "waiting", before taking the lock.
    notify_repoll,
    /// OnceCell.GetOrInit: another initializer runs, before taking the lock.
    once_cell_wait,
    /// OnceCell.GetOrInit, queued poll: status read "waiting", before taking the lock.
    once_cell_repoll,
    /// Barrier.Wait, first poll: arrival counted, before taking the lock.
    barrier_wait,
    /// Barrier.Wait, queued poll: status read "waiting", before taking the lock.
    barrier_repoll,
    /// io/ScheduledIo.pollReady: lock-free check found no readiness, before taking the lock.
    io_readiness,
    /// io/Registration.Op: the system call returned WouldBlock, before the readiness is cleared.
    io_before_clear,
};

const Hook = struct {
    point: Point,
    context: *anyopaque,
    run: *const fn (context: *anyopaque) void,
};

threadlocal var armed: ?Hook = null;

/// Called by the primitives in the window under test. Runs the armed hook once.
pub inline fn reached(point: Point) void {
    if (!builtin.is_test) return;
    fire(point);
}

fn fire(point: Point) void {
    const hook = armed orelse return;
    if (hook.point != point) return;
    armed = null;
    hook.run(hook.context);
}

/// Arms a one-shot hook: `run(context)` executes the next time this thread reaches `point`.
pub fn arm(point: Point, context: anytype, comptime run: fn (@TypeOf(context)) void) void {
    const Context = @TypeOf(context);
    comptime std.debug.assert(@typeInfo(Context) == .pointer);
    const Erased = struct {
        fn call(erased: *anyopaque) void {
            run(@ptrCast(@alignCast(erased)));
        }
    };
    armed = .{ .point = point, .context = @ptrCast(context), .run = Erased.call };
}

/// True when the armed hook has run (tests assert it, so a hook that never fires fails).
pub fn fired() bool {
    return armed == null;
}

pub fn disarm() void {
    armed = null;
}

test "a hook fires once, only at its point" {
    const Counter = struct {
        runs: u32 = 0,
        fn run(self: *@This()) void {
            self.runs += 1;
        }
    };
    var counter = Counter{};
    arm(.notify_wait, &counter, Counter.run);
    reached(.barrier_wait);
    try std.testing.expect(!fired());
    reached(.notify_wait);
    reached(.notify_wait);
    try std.testing.expect(fired());
    try std.testing.expectEqual(@as(u32, 1), counter.runs);
}
