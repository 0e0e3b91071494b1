//! Test-only interleaving hooks: the one mechanism behind every deterministic lost-wake-up
//! test of the runtime (sync primitives, channels, I/O readiness, the scheduler's parking,
//! the timer driver).
//!
//! Every waiting path checks a condition without a lock ("not ready yet", "no work", "no
//! earlier timer"), then commits to waiting (registers a waker, goes to sleep). An event that
//! lands between the two is the classic lost wake-up. To test that each path handles it, the
//! path calls `reached(.point)` (or `reachedBy(.point, subject)`) exactly in that window, and a
//! test arms a hook for that point which makes the event happen there, deterministically.
//!
//! Two ways to arm, one registry of points:
//! - `arm`: a one-shot hook for the calling thread. The window is on the test's own thread
//!   (a primitive polled by the test), so the hook is thread-local and parallel stress tests
//!   are unaffected. `fired()` tells whether it ran.
//! - `armAnyThread`: a hook that runs on whichever thread reaches the point, every time, until
//!   `disarmAnyThread` — for windows inside the runtime's own threads (a worker about to
//!   sleep, the timer driver about to wake). It receives the subject that reached the point
//!   (the `Worker`, `Parker` or `Driver`), so a test can pick the thread it wants.
//!
//! Every point is also a decision point of the seeded schedule explorer (`explore.zig`): while
//! an exploration session runs, a thread that reaches a point may be held back there for a
//! seeded yield, spin or sleep, so that the other side of the handshake overtakes it.
//!
//! Outside test builds both call-site functions are empty at compile time (`builtin.is_test`
//! is false), so the benchmark and release builds carry no trace of them. The module imports
//! nothing of the runtime but the explorer (subjects are passed type-erased), so it stays at the
//! bottom of the import graph.

const std = @import("std");
const builtin = @import("builtin");
const explore = @import("explore.zig");

pub const Point = enum {
    // -- sync (thread-local: reached by the test's own poll) --
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
    // -- channels (thread-local) --
    /// Any channel's async path found it must wait, before it registers its waiter.
    channel_before_register,
    /// Oneshot send: the receiver's waker copied under `locked`, before the result is published
    /// (the sender's last access is still to come).
    oneshot_send_locked,
    // -- I/O (thread-local) --
    /// io/ScheduledIo.pollReady: lock-free check found no readiness, before taking the lock.
    io_readiness,
    /// io/Registration.Op: the system call returned WouldBlock, before the readiness is cleared.
    io_before_clear,
    // -- std.Io groups (thread-local: reached by the spawning or leaving thread) --
    /// std_io/tasks.groupConcurrent: the member is counted in `running`, before its owned-list
    /// insert (a cancel here walks the list without it).
    group_before_insert,
    /// std_io/tasks.groupConcurrent: the member is linked (from a thread that is not a worker),
    /// before it is published (a cancel here finds it in its walk, unpublished).
    group_before_publish,
    /// std_io/tasks.leave: the last member holds the group's lock, before its decrement (a
    /// spawn here makes the decrement not the last).
    group_leave_locked,
    // -- runtime threads (any thread; the subject is given) --
    /// Worker.park: the last look at the queues found nothing, before registering as asleep.
    /// Subject: the `Worker`.
    worker_before_sleep,
    /// Worker.parkOnce: the next timer deadline was read, before claiming timer (driver)
    /// ownership. Subject: the `Worker`.
    worker_before_owner_claim,
    /// Worker.watchOnce: the watcher found `watch_quiet_max` quiet bounds and decided to give
    /// the watch up, before it stores `watcher = none`. Subject: the `Worker`.
    watcher_before_give_up,
    /// Parker: about to block in the I/O driver (`epoll_wait`). Subject: the `Parker`.
    parker_before_block,
    /// time/Driver.process: due timers published as fired, before their wakers are woken.
    /// Subject: the `Driver`.
    driver_before_wake,
    /// fiber/Fiber.park: the awaited future returned pending (its waker is registered), before
    /// the fiber switches back to its worker. Subject: the `Fiber`.
    fiber_before_suspend,
    /// fiber/task.linkSuspended: a suspending fiber not yet in the owned list, before its link
    /// (a group cancel here walks the list without it). Subject: the `Fiber`.
    fiber_before_link,
    /// Worker.takeHandoff: a finished fiber was completed on its own stack (the completion is
    /// published; its stack is retired, not yet given back), before it looks for a successor
    /// and switches away. Subject: the `Worker`.
    fiber_completed_early,
    // -- handshakes the schedule explorer (explore.zig) perturbs --
    /// std_io/Futex.Wait: a first poll, before it takes the bucket's lock to register.
    /// Subject: the `Futex.Wait`.
    futex_register_before_lock,
    /// std_io/Futex.Wait.cancel: a linked waiter is withdrawn, before the bucket's lock (a wake
    /// here picks the waiter that is leaving). Subject: the `Futex.Wait`.
    futex_cancel_before_lock,
    /// std_io/Futex.wake: before the bucket's lock. Subject: the `Futex`.
    futex_wake_before_lock,
    // The points below are thread-local (`reached`, no subject).
    /// fiber/Fiber.awaitCancelable: before a cancellation point reads the fiber's request.
    fiber_cancel_point,
    /// std_io/tasks.requestCancel: before a fiber's cancellation is requested.
    request_cancel,
    /// task/Header.abort: before the abort's compare-and-swap.
    task_before_abort,
    /// scheduler/Shared.completeTask: the output is stored, before the task is published
    /// complete.
    task_before_complete,
    /// std_io/State.offload: the call was handed to the blocking pool, before the fiber waits.
    offload_before_wait,
    /// blocking/BlockingPool: a thread took a function, before it runs it.
    blocking_before_run,
    /// Runtime.deinit: between two steps of the shutdown.
    shutdown_step,
};

const point_count = @typeInfo(Point).@"enum".fields.len;

comptime {
    std.debug.assert(point_count <= explore.points_max);
}

// -- this thread, once ----------------------------------------------------------------------

const Hook = struct {
    point: Point,
    context: *anyopaque,
    run: *const fn (context: *anyopaque) void,
};

threadlocal var armed: ?Hook = null;

/// Called by the code under test in the window of `point`. Runs this thread's armed hook
/// once, if it is armed for `point`.
pub inline fn reached(point: Point) void {
    if (!builtin.is_test) return;
    explore.at(@intFromEnum(point));
    fire(point);
}

fn fire(point: Point) void {
    const hook = armed orelse return;
    if (hook.point != point) return;
    armed = null;
    hook.run(hook.context);
}

/// Arms a one-shot hook: `run(context)` executes the next time this thread reaches `point`.
/// `context` is any pointer (also `*anyopaque`, with `run` taking `*anyopaque`).
pub fn arm(point: Point, context: anytype, comptime run: fn (@TypeOf(context)) void) void {
    comptime assertTestBuild();
    const Context = @TypeOf(context);
    comptime std.debug.assert(@typeInfo(Context) == .pointer);
    const Erased = struct {
        fn call(erased: *anyopaque) void {
            run(@ptrCast(@alignCast(erased)));
        }
    };
    armed = .{ .point = point, .context = @ptrCast(@constCast(context)), .run = Erased.call };
}

/// True when this thread's armed hook has run (tests assert it, so a hook that never fires
/// fails) — or when none was armed.
pub fn fired() bool {
    return armed == null;
}

pub fn disarm() void {
    armed = null;
}

// -- any thread, until disarmed -------------------------------------------------------------

/// One slot per point. Written by the test thread, read by runtime threads: acquire/release so
/// that whatever the test set up before arming is visible to the thread that runs the hook.
var any_thread: if (builtin.is_test) [point_count]std.atomic.Value(?*const fn (subject: *anyopaque) void) else void =
    if (builtin.is_test) @splat(.init(null)) else {};

/// Called by runtime code in the window of `point` on any thread: runs the hook armed for
/// `point` with `subject` (a pointer to the Worker, Parker or Driver that reached it).
pub inline fn reachedBy(point: Point, subject: anytype) void {
    if (!builtin.is_test) return;
    comptime std.debug.assert(@typeInfo(@TypeOf(subject)) == .pointer);
    explore.at(@intFromEnum(point));
    if (any_thread[@intFromEnum(point)].load(.acquire)) |run| run(@ptrCast(@constCast(subject)));
}

/// Arms `run` for `point` on every thread until `disarmAnyThread(point)`. `Subject` is the type
/// that reaches the point (see `Point`).
pub fn armAnyThread(point: Point, comptime Subject: type, comptime run: fn (*Subject) void) void {
    comptime assertTestBuild();
    const Erased = struct {
        fn call(erased: *anyopaque) void {
            run(@ptrCast(@alignCast(erased)));
        }
    };
    any_thread[@intFromEnum(point)].store(Erased.call, .release);
}

pub fn disarmAnyThread(point: Point) void {
    comptime assertTestBuild();
    any_thread[@intFromEnum(point)].store(null, .release);
}

fn assertTestBuild() void {
    if (!builtin.is_test) @compileError("test hook armed outside tests");
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

test "an any-thread hook runs on another thread with its subject until disarmed" {
    const Subject = struct {
        runs: std.atomic.Value(u32) = .init(0),
        fn run(self: *@This()) void {
            _ = self.runs.fetchAdd(1, .monotonic);
        }
        fn reach(self: *@This()) void {
            reachedBy(.worker_before_sleep, self);
        }
    };
    var subject = Subject{};
    armAnyThread(.worker_before_sleep, Subject, Subject.run);
    const thread = try std.Thread.spawn(.{}, Subject.reach, .{&subject});
    thread.join();
    reachedBy(.worker_before_owner_claim, &subject); // Another point: nothing runs.
    try std.testing.expectEqual(@as(u32, 1), subject.runs.load(.monotonic));
    disarmAnyThread(.worker_before_sleep);
    subject.reach();
    try std.testing.expectEqual(@as(u32, 1), subject.runs.load(.monotonic));
}
