//! std.Io's concurrency on fibers: `async`, `concurrent`, `await`, `cancel`, groups, and the
//! cancellation primitives (`recancel`, `swapCancelProtection`, `checkCancel`).
//!
//! ## Futures
//!
//! `concurrent` spawns a type-erased fiber task (`fiber/task.zig`) whose allocation holds the
//! copied context and the result; the `*AnyFuture` is the task. The future keeps the task's
//! join-handle reference: `await` waits for completion through the join protocol of
//! `task/Header.zig` (the awaiter's waker in the join-waker slot), copies the result out and
//! drops the reference. `async` is `concurrent`, or — when no stack can be had — runs `start`
//! inline and returns null, as std.Io allows ("may run inline").
//!
//! ## Cancellation (std.Io's rules, as `std.Io.Threaded` implements them)
//!
//! - `cancel(future)` requests cancellation of the future's fiber (`Fiber.requestCancel`) and
//!   wakes its task, so that a fiber suspended at a cancellation point (a futex wait, a sleep, a
//!   socket operation) resumes and returns `error.Canceled` there; then awaits it.
//! - A fiber canceled while it *awaits* another future forwards the request to that future and
//!   keeps waiting; when the future finishes without having acknowledged the request, the
//!   awaiter re-arms its own (`recancel`), so its next cancellation point reports it.
//! - A canceled group (`groupCancel`, or a `groupAwait` whose awaiter is canceled) requests
//!   cancellation of every member running, and members spawned into it later start canceled.
//! - On a plain thread nothing is ever canceled: `swapCancelProtection` reports `unblocked`,
//!   `checkCancel` succeeds, `recancel` is a misuse (there was no `error.Canceled` to re-arm).
//!
//! ## Groups
//!
//! `Io.Group.token` points to a `GroupState` allocated by the first spawn into an idle group
//! (a compare-and-swap installs it; concurrent first spawns free the loser's) and freed by the
//! `groupAwait` or `groupCancel` that finds the group finished, which stores null again.
//!
//! - `running` counts the members spawned and not done: an atomic increment at the spawn, a
//!   decrement when the member's fiber is done (`Task.on_done`, on the thread that resumed or
//!   killed it). Only the decrement to 0 takes the state's lock, where the awaiter checks for
//!   0 and leaves its waker; the last member takes the waker there and wakes it after
//!   unlocking, never touching the state again (the awaiter may free it at once). See `leave`.
//! - The group keeps no list of its members: a cancel finds the suspended ones in the runtime's
//!   owned list (fiber tasks whose `user` is the state), and every member carries `canceled`
//!   (`Fiber.cancel_flag`) and reads it at each cancellation point — so a member queued or
//!   running, not yet linked (fiber/task.zig, "Owned lazily"), or spawned after the cancel, is
//!   canceled at its next one. See `cancelMembers` for why none is missed. A spawn and a member's end cost
//!   one atomic read-modify-write each on the state instead of a lock pair each (and the
//!   list's links).
//!
//! A member's task has no join handle (given up before it is published), so its allocation is
//! freed as soon as it completes: a long-lived group holds nothing for members that finished.

const std = @import("std");
const assert = std.debug.assert;
const Alignment = std.mem.Alignment;

const future = @import("../future.zig");
const Waker = @import("../Waker.zig");
const Lock = @import("../Lock.zig");
const Header = @import("../task/Header.zig");
const WakeList = @import("../wait/WakeList.zig");
const Fiber = @import("../fiber/Fiber.zig");
const fiber_task = @import("../fiber/task.zig");
const Task = fiber_task.Task;
const Worker = @import("../scheduler/Worker.zig");
const AmpereIo = @import("State.zig");
const hook = @import("../hook.zig");

// -- spawning --------------------------------------------------------------------------------

fn spawn(
    self: *AmpereIo,
    context: []const u8,
    context_alignment: Alignment,
    result_len: usize,
    result_alignment: Alignment,
    start: fiber_task.Start,
) fiber_task.CreateError!*Task {
    const shared = self.shared;
    return Task.create(
        shared.allocator,
        self.fibers,
        &shared.task_scheduler,
        Worker.nextTaskId(shared),
        &Task.erased_vtable,
        context,
        context_alignment,
        result_len,
        result_alignment,
        start,
    );
}

pub fn concurrent(
    userdata: ?*anyopaque,
    result_len: usize,
    result_alignment: Alignment,
    context: []const u8,
    context_alignment: Alignment,
    start: *const fn (context: *const anyopaque, result: *anyopaque) void,
) std.Io.ConcurrentError!*std.Io.AnyFuture {
    const self = AmpereIo.fromUserdata(userdata);
    const task = spawn(self, context, context_alignment, result_len, result_alignment, .{ .with_result = start }) catch
        return error.ConcurrencyUnavailable;
    fiber_task.submitNew(self.shared, task) catch return error.ConcurrencyUnavailable;
    return @ptrCast(task);
}

pub fn async(
    userdata: ?*anyopaque,
    result: []u8,
    result_alignment: Alignment,
    context: []const u8,
    context_alignment: Alignment,
    start: *const fn (context: *const anyopaque, result: *anyopaque) void,
) ?*std.Io.AnyFuture {
    return concurrent(userdata, result.len, result_alignment, context, context_alignment, start) catch {
        start(context.ptr, result.ptr);
        return null;
    };
}

/// A future ready when the task completed (the join-waker protocol; the caller holds the
/// task's join-handle reference). Registration holds only a waker clone: nothing to undo —
/// but a killed awaiter will never take the result, so it gives the handle up.
const Completion = struct {
    pub const Output = void;
    header: *Header,
    /// The awaiting fiber (null on a thread), to tell a kill from a cancellation.
    fiber: ?*Fiber,

    pub fn poll(self: *Completion, cx: *future.Context) future.Poll(void) {
        return switch (self.header.registerJoinWaker(cx.waker())) {
            .complete => .{ .ready = {} },
            .pending => .pending,
        };
    }

    pub fn cancel(self: *Completion) void {
        const fiber = self.fiber orelse return;
        if (fiber.status == .finished) self.header.dropJoinHandle();
    }
};

fn taskOf(any_future: *std.Io.AnyFuture) *Task {
    return @ptrCast(@alignCast(any_future));
}

/// Asks `task`'s fiber to cancel and wakes it. The caller holds a reference to the task.
pub fn requestCancel(task: *Task) void {
    hook.reached(.request_cancel);
    if (task.fiber.requestCancel()) task.header.wakeByRef();
}

/// Waits until `task` completed. On a fiber whose own cancellation is delivered meanwhile,
/// forwards it to `task` (see the module comment).
fn waitCompletion(self: *AmpereIo, task: *Task) void {
    const fiber = Fiber.current() orelse return self.blockThread(Completion{ .header = &task.header, .fiber = null });
    var completion = Completion{ .header = &task.header, .fiber = fiber };
    fiber.awaitCancelable(&completion) catch |err| switch (err) {
        error.Canceled => {
            requestCancel(task);
            fiber.awaitFuture(&completion);
            // Acquire through the state word (complete): the task's last status is visible.
            if (!task.fiber.acknowledgedCancel()) fiber.recancel();
        },
    };
}

fn takeResult(task: *Task, result: []u8) void {
    assert(task.header.load() & Header.complete != 0);
    // A std.Io future is never aborted; only a shutdown kills its fiber, after its grace
    // period, and a fiber awaiting it is killed too. A thread that awaits it across
    // `Runtime.deinit` has no result to take: the function never returned.
    if (task.killed) @panic("ampere.Io: await of a future whose fiber Runtime.deinit killed (it did not return within Options.shutdown_grace_ns): there is no result");
    fiber_task.copyBytes(result.ptr, task.resultPtr()[0..result.len]);
    task.header.dropJoinHandle();
}

pub fn await(userdata: ?*anyopaque, any_future: *std.Io.AnyFuture, result: []u8, result_alignment: Alignment) void {
    _ = result_alignment;
    const self = AmpereIo.fromUserdata(userdata);
    const task = taskOf(any_future);
    waitCompletion(self, task);
    takeResult(task, result);
}

pub fn cancel(userdata: ?*anyopaque, any_future: *std.Io.AnyFuture, result: []u8, result_alignment: Alignment) void {
    _ = result_alignment;
    const self = AmpereIo.fromUserdata(userdata);
    const task = taskOf(any_future);
    requestCancel(task);
    self.waitUncancelable(Completion{ .header = &task.header, .fiber = Fiber.current() });
    takeResult(task, result);
}

// -- cancellation primitives -----------------------------------------------------------------

pub fn recancel(userdata: ?*anyopaque) void {
    _ = userdata;
    const fiber = Fiber.current() orelse @panic("std.Io.recancel on a thread that was never canceled");
    fiber.recancel();
}

pub fn swapCancelProtection(userdata: ?*anyopaque, new: std.Io.CancelProtection) std.Io.CancelProtection {
    _ = userdata;
    const fiber = Fiber.current() orelse return .unblocked;
    const old = fiber.protection;
    fiber.protection = new;
    return old;
}

pub fn checkCancel(userdata: ?*anyopaque) std.Io.Cancelable!void {
    _ = userdata;
    const fiber = Fiber.current() orelse return;
    if (fiber.takeCancel()) return error.Canceled;
}

/// std.Io's crash handler: the crashing fiber sees no more cancellation (as Threaded does for
/// its thread), so that the panic handler's own I/O is not interrupted.
pub fn crashHandler(userdata: ?*anyopaque) void {
    _ = userdata;
    const fiber = Fiber.current() orelse return;
    fiber.protection = .blocked;
}

// -- groups ----------------------------------------------------------------------------------

const GroupState = struct {
    /// Members spawned and not done. Only the decrement to 0 takes `lock` (see `leave`).
    running: std.atomic.Value(usize) = .init(0),
    /// Set by a cancel before it walks the owned list (see `cancelMembers`).
    canceled: std.atomic.Value(bool) = .init(false),
    lock: Lock = .{},
    /// Guarded by `lock`: the awaiter's waker.
    awaiter: ?Waker = null,
    /// Guarded by `lock`: the awaiting fiber was killed (runtime shutdown) while members ran:
    /// the last member to leave frees the state.
    abandoned: bool = false,
};

fn stateOf(token: *anyopaque) *GroupState {
    return @ptrCast(@alignCast(token));
}

/// The group's state, created by the first spawn into an idle group.
fn groupState(self: *AmpereIo, group: *std.Io.Group) error{OutOfMemory}!*GroupState {
    // Acquire: a state installed by another spawner is initialised.
    if (group.token.load(.acquire)) |token| return stateOf(token);
    const allocator = self.allocator;
    const fresh = try allocator.create(GroupState);
    fresh.* = .{};
    // Release publishes the initialised state to other spawners and to the awaiter.
    if (group.token.cmpxchgStrong(null, fresh, .acq_rel, .acquire)) |winner| {
        allocator.destroy(fresh);
        return stateOf(winner.?);
    }
    return fresh;
}

const GroupStart = struct {
    start: *const fn (context: *const anyopaque) void,
};

/// A member leaves: `running` goes down by one. Above 1 a compare-and-swap does it (release:
/// the member's effects happen before the awaiter's acquire of the final count — every
/// read-modify-write continues the release sequence). The decrement to 0 happens under
/// `lock` only, where the awaiter checks for 0: so an awaiter that sees 0 knows that no
/// member will touch the state again and may free it, and one that sees more than 0 leaves its
/// waker for the last member, which takes it under the lock and wakes it after unlocking. A
/// member that reaches the lock finding a spawn came in meanwhile just decrements.
fn leave(state: *GroupState, allocator: std.mem.Allocator) void {
    var running = state.running.load(.monotonic);
    while (running > 1) {
        running = state.running.cmpxchgWeak(running, running - 1, .release, .monotonic) orelse return;
    }
    var free = false;
    const awaiter: ?Waker = blk: {
        state.lock.lock();
        defer state.lock.unlock();
        hook.reached(.group_leave_locked);
        const before = state.running.fetchSub(1, .acq_rel);
        assert(before >= 1);
        if (before > 1) break :blk null;
        free = state.abandoned;
        const waker = state.awaiter;
        state.awaiter = null;
        break :blk waker;
    };
    // The state may be freed from here on (the awaiter saw running == 0).
    if (free) allocator.destroy(state);
    if (awaiter) |waker| waker.wake();
}

fn memberDone(task: *Task) void {
    leave(@ptrCast(@alignCast(task.user.?)), task.allocator);
}

pub fn groupConcurrent(
    userdata: ?*anyopaque,
    group: *std.Io.Group,
    context: []const u8,
    context_alignment: Alignment,
    start: *const fn (context: *const anyopaque) void,
) std.Io.ConcurrentError!void {
    const self = AmpereIo.fromUserdata(userdata);
    const state = groupState(self, group) catch return error.ConcurrencyUnavailable;
    const task = spawn(self, context, context_alignment, 0, .@"1", .{ .no_result = start }) catch
        return error.ConcurrencyUnavailable;
    const shared = self.shared;
    // The group holds no handle: the task frees itself when it completes. Given up, and the
    // membership written, before the task is published (plain stores).
    task.header.detachUnpublished();
    task.user = state;
    task.on_done = memberDone;
    // A member not in the owned list learns of a cancel from the flag ("Owned lazily").
    task.fiber.cancel_flag = &state.canceled;
    // Counted before it can finish (or be killed at shutdown, which also calls `on_done`).
    _ = state.running.fetchAdd(1, .monotonic);
    hook.reached(.group_before_insert);
    fiber_task.insertOwned(shared, task) catch {
        // Refused at shutdown: freed unstarted (no `on_done`); it never was a member.
        leave(state, self.allocator);
        return error.ConcurrencyUnavailable;
    };
    hook.reached(.group_before_publish);
    // Spawned into a canceled group, it is canceled at its first cancellation point (it reads
    // the flag there); see `cancelMembers` for a cancel concurrent with the spawn.
    fiber_task.schedule(shared, task);
}

pub fn groupAsync(
    userdata: ?*anyopaque,
    group: *std.Io.Group,
    context: []const u8,
    context_alignment: Alignment,
    start: *const fn (context: *const anyopaque) void,
) void {
    groupConcurrent(userdata, group, context, context_alignment, start) catch start(context.ptr);
}

/// Ready when the group has no member running; keeps the awaiter's waker in the state.
const GroupIdle = struct {
    pub const Output = void;
    state: *GroupState,
    /// The awaiting fiber (null on a thread), to tell a kill from a cancellation in `cancel`.
    fiber: ?*Fiber,
    allocator: std.mem.Allocator,

    pub fn poll(self: *GroupIdle, cx: *future.Context) future.Poll(void) {
        const replaced: ?Waker = blk: {
            self.state.lock.lock();
            defer self.state.lock.unlock();
            // Acquire: the members' effects (see `leave`).
            if (self.state.running.load(.acquire) == 0) {
                const stale = self.state.awaiter;
                self.state.awaiter = null;
                if (stale) |waker| waker.drop();
                return .{ .ready = {} };
            }
            break :blk WakeList.storeWaker(&self.state.awaiter, cx.waker());
        };
        if (replaced) |waker| waker.drop();
        return .pending;
    }

    /// Drops the awaiter's waker: nothing in the state points to the awaiter afterwards. A
    /// killed awaiter never frees the state: it does it now if the group is finished, or
    /// leaves it to the last member.
    pub fn cancel(self: *GroupIdle) void {
        const killed = if (self.fiber) |fiber| fiber.status == .finished else false;
        var free = false;
        const dropped: ?Waker = blk: {
            self.state.lock.lock();
            defer self.state.lock.unlock();
            const waker = self.state.awaiter;
            self.state.awaiter = null;
            if (killed) {
                free = self.state.running.load(.acquire) == 0;
                self.state.abandoned = true;
            }
            break :blk waker;
        };
        if (dropped) |waker| waker.drop();
        if (free) self.allocator.destroy(self.state);
    }
};

/// Marks the group canceled and asks every running member to cancel. The members are found
/// in the runtime's owned list (fiber tasks whose `user` is this state), not in a list of the
/// group's own: that list cost every spawn and every member's end a lock pair.
///
/// No member is missed. A member that is not suspended is queued or running; every member
/// carries the flag (`Fiber.cancel_flag`) and reads it at each cancellation point, so it is
/// canceled at the first one after this store. A suspended member is in the owned list: a
/// fiber spawned on a worker is linked when it first suspends, and reads the flag once more
/// after that link (`linkSuspended` in fiber/task.zig has the argument for a walk that passed
/// before it); one spawned from another thread was linked before it was published. A member
/// that already left but is still listed is asked too (`fiber_task.cancelListed`: the walk
/// and its wakes).
fn cancelMembers(self: *AmpereIo, state: *GroupState) void {
    state.canceled.store(true, .release);
    fiber_task.cancelListed(self.shared, state, isMember);
}

fn isMember(state: *GroupState, task: *Task) bool {
    return task.header.vtable == &Task.erased_vtable and task.user == @as(?*anyopaque, state);
}

/// For tests: a cancel's store and walk alone, without waiting for the members. A hook inside
/// a spawn's window calls it there, where `group.cancel` would wait for a member that is not
/// queued yet (on the thread that is to queue it).
pub fn cancelMembersOf(userdata: ?*anyopaque, group: *std.Io.Group) void {
    comptime assert(@import("builtin").is_test);
    cancelMembers(AmpereIo.fromUserdata(userdata), stateOf(group.token.load(.acquire).?));
}

fn finishGroup(self: *AmpereIo, group: *std.Io.Group, state: *GroupState) void {
    assert(state.running.load(.monotonic) == 0 and state.awaiter == null);
    group.token.store(null, .release);
    self.allocator.destroy(state);
}

pub fn groupAwait(userdata: ?*anyopaque, group: *std.Io.Group, token: *anyopaque) std.Io.Cancelable!void {
    const self = AmpereIo.fromUserdata(userdata);
    const state = stateOf(token);
    const fiber = Fiber.current();
    var idle = GroupIdle{ .state = state, .fiber = fiber, .allocator = self.allocator };
    if (fiber == null) {
        self.blockThread(idle);
        return finishGroup(self, group, state);
    }
    fiber.?.awaitCancelable(&idle) catch |err| switch (err) {
        error.Canceled => {
            cancelMembers(self, state);
            idle = .{ .state = state, .fiber = fiber, .allocator = self.allocator };
            fiber.?.awaitFuture(&idle);
            finishGroup(self, group, state);
            return error.Canceled;
        },
    };
    finishGroup(self, group, state);
}

pub fn groupCancel(userdata: ?*anyopaque, group: *std.Io.Group, token: *anyopaque) void {
    const self = AmpereIo.fromUserdata(userdata);
    const state = stateOf(token);
    cancelMembers(self, state);
    self.waitUncancelable(GroupIdle{ .state = state, .fiber = Fiber.current(), .allocator = self.allocator });
    finishGroup(self, group, state);
}

test "leave: a member that finds a spawn came in while it took the lock only decrements" {
    var state = GroupState{};
    state.running.store(1, .monotonic);
    var awaiter = Waker.Counting{};
    state.awaiter = awaiter.waker();
    const Spawn = struct {
        /// What a spawn does to the count; the spawn's owned insert needs no group lock.
        fn hit(group: *GroupState) void {
            _ = group.running.fetchAdd(1, .monotonic);
        }
    };
    hook.arm(.group_leave_locked, &state, Spawn.hit);
    defer hook.disarm();
    leave(&state, std.testing.allocator);
    try std.testing.expect(hook.fired());
    // Not the last: the awaiter's waker stays for the member that now is.
    try std.testing.expectEqual(@as(usize, 1), state.running.load(.monotonic));
    try std.testing.expect(state.awaiter != null);
    try std.testing.expectEqual(@as(u32, 0), awaiter.wakeCount());
    leave(&state, std.testing.allocator);
    try std.testing.expectEqual(@as(usize, 0), state.running.load(.monotonic));
    try std.testing.expect(state.awaiter == null);
    try std.testing.expectEqual(@as(u32, 1), awaiter.wakeCount());
    try std.testing.expectEqual(@as(i32, 0), awaiter.outstanding());
}
