//! A fiber: code with a stack of its own, which can stop in the middle of a function and go
//! on later, possibly on another thread. This file is the machinery every fiber task shares
//! (the scheduler side is `task.zig`): resuming a fiber from a poll, suspending it until a
//! future is ready, its std.Io cancellation state, and killing a suspended fiber.
//!
//! ## A fiber is polled like any task
//!
//! The scheduler knows no fibers: a fiber task is a `Header` whose `poll` *resumes* the fiber
//! (`resumeOnce`) and returns when the fiber either finished (ready) or suspended (pending).
//! The fiber suspends only in `awaitFuture`: it polls the future with the poll's `Context`
//! (the task's own waker), and if the future is pending — it has registered a clone of that
//! waker, as every future does — switches back to the worker. The poll returns pending; the
//! task goes idle; the future's waker later queues it again, and the next poll resumes the
//! fiber inside `awaitFuture`, which polls the future again. So a fiber task follows the
//! task life cycle of runtime/README.md to the letter, and a wake that races with the switch
//! back is handled by the state word: until the poll returns the task is `running`, so the
//! wake sets `notified` and the worker re-queues the task once the switch is complete. The
//! fiber's stack is touched only by the thread that holds `running`.
//!
//! ## Direct hand-off
//!
//! When a fiber suspends on a worker whose LIFO slot holds another fiber task (the task it
//! just woke, typically: a queue partner, a spawned child), switching back to the worker's
//! stack only to switch to that fiber at once costs two switches and a trip through the
//! worker loop per message. Instead the suspending fiber asks the task layer for a successor
//! (`Handoff.successor`, `Worker.takeHandoff`): the LIFO task, made `running` and counted as
//! a poll of the LIFO chain (so the LIFO caps and the cooperative budget bound a chain of
//! hand-offs as they bound the worker's LIFO loop), with its stack attached. The
//! suspending fiber then switches straight to it (`switchToPeer`), handing over the worker's
//! resume context: the successor returns to the worker's `resumeOnce` when it suspends in
//! turn (or hands off again), and the worker's `pollTask` finishes whichever task came back
//! (`Worker.polled` names it).
//!
//! A fiber that *finishes* with a fiber task in the LIFO slot hands off the same way (the
//! producer of a worker pool that woke its consumer: its last act, when nothing else is
//! queued; see `Worker.settleLifoOnFinish`).
//!
//! With the LIFO slot empty, the successor is the head of the worker's local queue if it is a
//! fiber task: the task the worker loop would pop next, so a burst of short fibers (a group's
//! members, a pool's producers) runs as a chain of hand-offs, at most `handoff_run_max` long
//! (`Worker.handoffSuccessor`).
//!
//! The one thing the suspending fiber cannot do itself is its own post-poll transition
//! (`running` -> idle, or re-queue if it was woken meanwhile; for a finished fiber: releasing
//! its stack, then completing the task): until it is off its stack, no other thread may
//! resume it, and nobody may reuse the stack. So the transition is owed
//! (`Worker.handoff_from`) and the fiber switched to makes it first thing on landing (`Handoff.landed`: after the switch in
//! `suspendNow`, and at the top of `main` for a fiber that never ran). Until then the task is
//! `running`, so a wake in between sets `notified` and the landing re-queues it — the same
//! race, resolved the same way, as a wake during an ordinary poll. Invariants: a hand-off
//! happens only on the worker's own thread, only from the fiber its `pollTask` is running,
//! and at most one transition is owed at a time (every landing pays it before the fiber's
//! own code runs; `pollTask` asserts none is left when the chain returns).
//!
//! ## Warming a cold stack
//!
//! A fiber that slept while a thousand others ran resumes on stack lines that left the cache
//! long ago: the registers the switch saved, then the frames it returns through. Those loads
//! come one after another as it unwinds, each a miss (io_sleep with 1,000 sleepers: 1.6 us of
//! CPU per wake-up, against 0.36 us for a state-machine task, whose state is one small block).
//! So the worker prefetches the live top of a suspended fiber's stack — from the saved stack
//! pointer up, at most `prefetch_bytes_max` — as soon as it holds the task (`prefetchStack`:
//! at the start of its poll, and when a hand-off takes it as the successor), before the
//! bookkeeping that precedes the switch; the misses then overlap each other and that work.
//! It reads only the task the worker now owns (a queued task's stack pointer is not read: a
//! thief may be freeing it), and a prefetch never faults. A stack that is still hot is not
//! prefetched: the task layer skips a fiber that suspended on the same worker within the last
//! few resumptions (`fiber/task.zig`, `stackMayBeCold`), which saved the two fibers of a
//! one-pair ping-pong ~50 instructions per message (16 lines of 1 KiB).
//!
//! ## Thread-locals
//!
//! A fiber may suspend on one worker and resume on another. Compilers treat the address of a
//! thread-local as constant within a function, so a function that reads a thread-local, then
//! suspends, then reads it again may read the first thread's. Therefore the fiber side reads
//! thread-locals only in functions that do not suspend (`current` and every future's `poll`
//! are called through `noinline` functions), and a function that suspends keeps the `*Fiber`
//! it started with.
//!
//! ## Cancellation (std.Io's rules)
//!
//! `cancel_status` is `none`, `requested` (a cancel request not yet delivered) or
//! `acknowledged` (delivered: a cancellation point returned `error.Canceled`). Any thread
//! may request (`requestCancel`: none -> requested, then the task layer wakes the fiber so
//! that a fiber suspended in a cancelable wait notices). Only the fiber itself acknowledges
//! (`takeCancel`, at a cancellation point, unless `protection` is `blocked`) and re-arms
//! (`recancel`: acknowledged -> requested). A request is delivered once: after it, further
//! cancellation points proceed normally until `recancel`.
//!
//! ## Killing
//!
//! A fiber that will never be resumed (`JoinHandle.abort`, and runtime shutdown once its grace
//! period is over: runtime/docs/fibers.md, "Cancellation and shutdown") is *killed*: the
//! future it is suspended on is cancelled (which unlinks every registration that points into
//! its stack) and the stack is released without running the rest of the fiber's code —
//! exactly what cancelling a state-machine future does. Its `defer`s do not run.
//!
//! One wait cannot be cancelled at once: a call offloaded to the blocking pool, which may still
//! read or write the fiber's memory (a buffer, a path on its stack). Its future says so
//! (`cancelWouldBlock`); a worker never blocks on it — `kill(false)` refuses, the task goes
//! idle with its cancellation still requested, and the call's completion (which wakes the
//! fiber's task, as any completion of a wait does) brings it back to be killed. Off a worker
//! (the shutdown's thread) `kill(true)` waits for the call.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const arch = @import("arch.zig");
const Stack = @import("Stack.zig");
const overflow = @import("overflow.zig");
const hook = @import("../hook.zig");

const Fiber = @This();

pub const Status = enum { fresh, running, suspended, finished };
pub const CancelStatus = enum(u8) { none, requested, acknowledged };
pub const Protection = std.Io.CancelProtection;

/// The registers of this fiber while it does not run.
context: arch.Context = undefined,
/// While running: the resumer's registers, where `suspendNow` switches to.
caller: ?*arch.Context = null,
/// While running: the context of the poll that resumed it (the task's waker).
cx: ?*future.Context = null,
/// Attached just before the first resume (`attachStack`; the task reserved it at creation)
/// and owned until the fiber finished or was killed (then the task releases it). Null while
/// the fiber is fresh and waiting in a run queue: a queued fiber holds no stack.
stack: ?Stack = null,
status: Status = .fresh,
/// The future the fiber is suspended on, for `kill`.
waiting: ?Wait = null,
/// What the fiber runs (receives the fiber; the task recovers itself with @fieldParentPtr).
body: *const fn (fiber: *Fiber) void,
/// See "Cancellation". Written by any thread (requests) and by the fiber (acknowledgement).
cancel_status: std.atomic.Value(CancelStatus) = .init(.none),
/// Only the fiber reads and writes it.
protection: Protection = .unblocked,
/// A cancel flag from outside (a std.Io group's: `std_io/tasks.zig`), set before the fiber is
/// published. At a cancellation point a set flag becomes this fiber's own request, once (the
/// field is cleared): a group member that is not in the owned list (fiber/task.zig, "Owned
/// lazily") learns of its group's cancel this way. Only the fiber reads and writes the field;
/// the flag outlives every cancellation point of the fiber (a group's state outlives its
/// running members).
cancel_flag: ?*const std.atomic.Value(bool) = null,
/// The runtime's shutdown flag (`Fibers.shutting_down`), read like `cancel_flag`: a set flag
/// becomes this fiber's own request, once (the field is cleared). So a fiber that is queued or
/// running when `Runtime.deinit` asks every fiber to cancel sees it at its next cancellation
/// point; suspended ones are asked and woken by the shutdown's walk. Only the fiber reads and
/// writes the field; the flag outlives every fiber.
shutdown_flag: ?*const std.atomic.Value(bool) = null,
tsan_fiber: arch.TsanFiber = arch.tsan_none,
tsan_caller: arch.TsanFiber = arch.tsan_none,
/// The scheduler's direct hand-off (see "Direct hand-off"); null: always switch back to the
/// resumer.
handoff: ?*const Handoff = null,

/// How a suspending fiber hands the thread straight to the next one (the task layer provides
/// it: `fiber/task.zig`). Both functions run on the worker's thread, on a fiber's stack.
pub const Handoff = struct {
    /// On the suspending (or finishing) fiber's stack, `from` already `suspended` or
    /// `finished`: the fiber to run next on this thread, prepared (`prepareSuccessor`), or
    /// null to switch back to the resumer.
    successor: *const fn (from: *Fiber) ?*Fiber,
    /// First thing on the stack of a fiber that was switched to directly: finishes what the
    /// scheduler owed the fiber that switched to it (its post-poll transition).
    landed: *const fn () void,
};

const Wait = struct {
    future: *anyopaque,
    cancel: *const fn (future: *anyopaque) void,
    /// Whether `cancel` would block the calling thread now (the future's `cancelWouldBlock`:
    /// an offloaded call still running on the blocking pool); null: it never does.
    would_block: ?*const fn (future: *anyopaque) bool,
};

/// The fiber running on this thread. Read it before suspending and keep the pointer
/// (see "Thread-locals").
threadlocal var running: ?*Fiber = null;

pub fn init(body: *const fn (fiber: *Fiber) void) Fiber {
    return .{ .body = body };
}

/// `self.* = init(body)`, field by field: the literal was built on the stack and copied in with
/// 64-byte moves that read it back right after its own narrower stores (a store-forwarding
/// stall on every fiber spawn).
pub fn initInPlace(self: *Fiber, body: *const fn (fiber: *Fiber) void) void {
    self.context = undefined;
    self.caller = null;
    self.cx = null;
    self.stack = null;
    self.status = .fresh;
    self.waiting = null;
    self.body = body;
    self.cancel_status = .init(.none);
    self.protection = .unblocked;
    self.cancel_flag = null;
    self.shutdown_flag = null;
    self.tsan_fiber = arch.tsan_none;
    self.tsan_caller = arch.tsan_none;
    self.handoff = null;
    comptime assert(@typeInfo(Fiber).@"struct".fields.len == 14); // Every field set above.
}

/// Gives a fresh fiber the stack it will run on (before its first `resumeOnce`).
pub fn attachStack(self: *Fiber, stack: Stack) void {
    assert(self.status == .fresh and self.stack == null);
    self.stack = stack;
    self.context = arch.initial(stack.top(), &main);
}

/// The fiber running on the calling thread, or null on a plain thread (or a state-machine
/// task's poll).
pub noinline fn current() ?*Fiber {
    return running;
}

// -- the resumer's side (a worker polling the fiber's task) ---------------------------------

/// Runs the fiber until it suspends or finishes. `cx` is the poll's context; it stays valid
/// until this returns.
pub fn resumeOnce(self: *Fiber, cx: *future.Context) *Fiber {
    assert(self.status == .fresh or self.status == .suspended);
    assert(self.stack != null);
    var caller_context: arch.Context = undefined;
    self.caller = &caller_context;
    self.cx = cx;
    self.status = .running;
    const saved_fiber = running;
    const saved_stack = overflow.running;
    running = self;
    overflow.running = &self.stack.?;
    if (arch.tsan_enabled) {
        if (self.tsan_fiber == null) self.tsan_fiber = arch.tsanCreate();
        self.tsan_caller = arch.tsanCurrent();
        arch.tsanSwitch(self.tsan_fiber);
    }
    arch.switchTo(&caller_context, &self.context);
    // Back on this thread, on the worker's stack: the fiber that switched back (this one, or
    // one it handed the thread to) suspended or finished.
    const back = running.?;
    running = saved_fiber;
    overflow.running = saved_stack;
    back.caller = null;
    back.cx = null;
    assert(back.status == .suspended or back.status == .finished);
    return back;
}

/// The most of a suspended fiber's stack that `prefetchStack` fetches: a sleeper's frames
/// (576 bytes deep in io_sleep) and a queue waiter's (1,376 in io_queue_pingpong, whose
/// innermost 1 KiB are what it resumes into).
pub const prefetch_bytes_max = 1024;
/// The line size prefetched by (x86-64's and most aarch64 cores'; `std.atomic.cache_line` is
/// the false-sharing distance, 128 on x86-64, and would fetch every other line).
const prefetch_line_bytes = 64;

/// Lines `[first, end)` (`prefetch_line_bytes` aligned) that `prefetchStack` fetches for a
/// stack pointer `sp` on a stack whose top is `top`: from `sp`'s line up, not beyond the top,
/// at most `prefetch_bytes_max`.
pub fn prefetchSpan(sp: usize, top: usize) struct { first: usize, end: usize } {
    assert(sp <= top);
    const first = std.mem.alignBackward(usize, sp, prefetch_line_bytes);
    return .{ .first = first, .end = @min(top, first + prefetch_bytes_max) };
}

/// Prefetches the live top of a suspended fiber's stack ("Warming a cold stack"). The
/// caller holds the fiber's task (`running`); a fresh fiber has no frames yet.
pub fn prefetchStack(self: *const Fiber) void {
    if (self.status != .suspended) return;
    const span = prefetchSpan(arch.stackPointer(&self.context), self.stack.?.top());
    var line = span.first;
    while (line < span.end) : (line += prefetch_line_bytes) {
        @prefetch(@as(*const u8, @ptrFromInt(line)), .{ .rw = .read, .locality = 3, .cache = .data });
    }
}

test "prefetchSpan: from the stack pointer's line up, not past the top, at most prefetch_bytes_max" {
    const line = prefetch_line_bytes;
    const top: usize = 0x10_0000;
    // A shallow stack: every line up to the top.
    const shallow = prefetchSpan(top - 576, top);
    try std.testing.expectEqual(top - 576, shallow.first); // 576 is a multiple of the line.
    try std.testing.expectEqual(top, shallow.end);
    // Not aligned: from the line that holds the stack pointer.
    const odd = prefetchSpan(top - 100, top);
    try std.testing.expectEqual(top - 2 * line, odd.first);
    try std.testing.expectEqual(top, odd.end);
    // A deep stack: the innermost prefetch_bytes_max only.
    const deep = prefetchSpan(top - 14_720, top);
    try std.testing.expectEqual(top - 14_720, deep.first);
    try std.testing.expectEqual(deep.first + prefetch_bytes_max, deep.end);
    // An empty stack: nothing.
    const empty = prefetchSpan(top, top);
    try std.testing.expectEqual(empty.first, empty.end);
}

/// After the fiber finished or was killed: releases its TSan fiber. The caller releases the
/// stack.
pub fn retire(self: *Fiber) void {
    assert(self.status == .finished);
    arch.tsanDestroy(self.tsan_fiber);
    self.tsan_fiber = arch.tsan_none;
}

/// Kills a suspended (or never started) fiber: cancels the future it waits on; it will never
/// run again. The caller holds the task's `running` (no thread runs the fiber). True when it is
/// dead. False — nothing changed — when `may_block` is false and cancelling the wait would
/// block (a blocking-pool call that still uses the fiber's memory): the caller, a worker,
/// tries again when the wait's waker (the fiber task's own) has woken the task.
pub fn kill(self: *Fiber, may_block: bool) bool {
    assert(self.status == .fresh or self.status == .suspended);
    if (self.waiting) |wait| {
        if (wait.would_block) |wouldBlock| {
            if (!may_block and wouldBlock(wait.future)) return false;
        }
    }
    // Finished first: a wait's `cancel` can tell a kill (nothing will resume the fiber) from a
    // cancellation its fiber will see (std_io/batch.zig).
    self.status = .finished;
    if (self.waiting) |wait| wait.cancel(wait.future);
    self.waiting = null;
    return true;
}

// -- the fiber's side --------------------------------------------------------------------------

fn main(message: *const arch.Switch) callconv(.c) noreturn {
    const self: *Fiber = @fieldParentPtr("context", message.new);
    if (self.handoff) |handoff| handoff.landed();
    self.body(self);
    self.status = .finished;
    // The last switch: whoever runs next on this thread releases the stack once it is off it
    // (the resumer, or a peer on landing: "Direct hand-off").
    if (self.handoff) |handoff| if (handoff.successor(self)) |next| self.switchToPeer(next);
    if (arch.tsan_enabled) arch.tsanSwitch(self.tsan_caller);
    arch.switchTo(&self.context, self.caller.?);
    unreachable;
}

/// Switches to the next fiber of this thread (`Handoff.successor`) or back to the resumer;
/// returns when the fiber is resumed (on any thread).
noinline fn suspendNow(self: *Fiber) void {
    assert(self.status == .running);
    self.status = .suspended;
    const handoff = self.handoff orelse return self.switchToCaller();
    const next = handoff.successor(self) orelse return self.switchToCaller();
    self.switchToPeer(next);
    // Resumed by a worker (nothing owed) or by a peer (its transition is owed).
    handoff.landed();
    assert(self.status == .running);
}

fn switchToCaller(self: *Fiber) void {
    if (arch.tsan_enabled) arch.tsanSwitch(self.tsan_caller);
    arch.switchTo(&self.context, self.caller.?);
    // Resumed by a worker, or by a peer: see `suspendNow`.
    if (self.handoff) |handoff| handoff.landed();
    assert(self.status == .running);
}

/// Hands this thread to `next` (prepared by `Handoff.successor`): it inherits the resumer's
/// context, so the resumer's `resumeOnce` returns when `next` (or a fiber it hands to)
/// switches back.
fn switchToPeer(self: *Fiber, next: *Fiber) void {
    // A finished fiber is never resumed: this call does not return for it.
    defer assert(self.status == .running);
    assert(next != self);
    assert(next.status == .running and next.stack != null);
    next.caller = self.caller;
    self.caller = null;
    self.cx = null;
    setRunning(next);
    if (arch.tsan_enabled) {
        if (next.tsan_fiber == null) next.tsan_fiber = arch.tsanCreate();
        next.tsan_caller = self.tsan_caller;
        arch.tsanSwitch(next.tsan_fiber);
    }
    arch.switchTo(&self.context, &next.context);
}

/// The thread-locals of the fiber now running on this thread (before a direct switch: never
/// inlined into a function that suspends).
noinline fn setRunning(next: *Fiber) void {
    running = next;
    overflow.running = &next.stack.?;
}

/// Marks a fiber that a peer is about to switch to as running with the poll context `cx`
/// (`Handoff.successor`, on the worker's thread; the scheduler made its task `running`).
pub fn prepareSuccessor(self: *Fiber, cx: *future.Context) void {
    assert(self.status == .fresh or self.status == .suspended);
    assert(self.stack != null);
    self.cx = cx;
    self.status = .running;
}

/// Polls `f` (a pointer to a future) until it is ready, suspending the fiber in between.
/// Not a cancellation point.
pub fn awaitFuture(self: *Fiber, f: anytype) future.OutputOf(@typeInfo(@TypeOf(f)).pointer.child) {
    const F = @typeInfo(@TypeOf(f)).pointer.child;
    while (true) {
        switch (pollOnce(F, f, self.cx.?)) {
            .ready => |value| return value,
            .pending => {
                self.park(F, f);
                if (readyOnResume(F, f)) |value| return value;
            },
        }
    }
}

/// A future may tell, without a poll, that the wake which resumed its fiber completed it
/// (`fn readyOnResume(*F) ?Output`: a futex wait that the waker unlinked and marked woken).
/// Then the fiber returns at once: no cancellation check, no poll through `pollOnce` — a
/// future found ready is returned even if a cancel request came meanwhile, as
/// `awaitCancelable` promises, and the request stays for the next cancellation point. Read
/// after the switch back, on whatever thread resumed the fiber: such a check reads no
/// thread-local (see "Thread-locals"). Null: poll as usual.
inline fn readyOnResume(comptime F: type, f: *F) ?future.OutputOf(F) {
    if (comptime !@hasDecl(F, "readyOnResume")) return null;
    return f.readyOnResume();
}

/// `awaitFuture` as a cancellation point: returns `error.Canceled` (after cancelling `f`) if
/// a cancel request is pending before a poll and cancellation is not blocked. A future found
/// ready is returned even if a request came meanwhile (its result may own resources).
pub fn awaitCancelable(self: *Fiber, f: anytype) std.Io.Cancelable!future.OutputOf(@typeInfo(@TypeOf(f)).pointer.child) {
    const F = @typeInfo(@TypeOf(f)).pointer.child;
    while (true) {
        hook.reached(.fiber_cancel_point);
        if (self.takeCancel()) {
            future.cancel(f);
            return error.Canceled;
        }
        switch (pollOnce(F, f, self.cx.?)) {
            .ready => |value| return value,
            .pending => {
                self.park(F, f);
                if (readyOnResume(F, f)) |value| return value;
            },
        }
    }
}

fn park(self: *Fiber, comptime F: type, f: *F) void {
    self.waiting = .{ .future = f, .cancel = cancelErased(F), .would_block = wouldBlockErased(F) };
    // A wake or a cancel request from here until the switch completes finds the task
    // `running` and sets `notified`: the worker re-queues it once the fiber is off the stack.
    hook.reachedBy(.fiber_before_suspend, self);
    self.suspendNow();
    self.waiting = null;
}

/// Thread-locals read by `poll` (the budget, the runtime context) must be read on the
/// thread that runs it: never inline a poll into a function that suspends.
noinline fn pollOnce(comptime F: type, f: *F, cx: *future.Context) future.Poll(F.Output) {
    return f.poll(cx);
}

fn wouldBlockErased(comptime F: type) ?*const fn (*anyopaque) bool {
    if (comptime !@hasDecl(F, "cancelWouldBlock")) return null;
    return struct {
        fn wouldBlock(erased: *anyopaque) bool {
            return @as(*F, @ptrCast(@alignCast(erased))).cancelWouldBlock();
        }
    }.wouldBlock;
}

fn cancelErased(comptime F: type) *const fn (*anyopaque) void {
    return struct {
        fn cancel(erased: *anyopaque) void {
            future.cancel(@as(*F, @ptrCast(@alignCast(erased))));
        }
    }.cancel;
}

// -- cancellation ------------------------------------------------------------------------------

/// Any thread: requests cancellation. True if this call made the request (the caller then
/// wakes the fiber's task).
pub fn requestCancel(self: *Fiber) bool {
    // Release: what the requester did before is visible to the fiber that acknowledges
    // (acquire in `takeCancel`). A request on a fiber already requested or acknowledged is
    // absorbed: std.Io delivers one cancellation per request epoch.
    return self.cancel_status.cmpxchgStrong(.none, .requested, .release, .monotonic) == null;
}

/// The fiber, at a cancellation point: true (and acknowledged) if a request is pending and
/// cancellation is not blocked.
pub fn takeCancel(self: *Fiber) bool {
    _ = self.readCancelFlags();
    if (self.protection == .blocked) return false;
    if (self.cancel_status.load(.monotonic) != .requested) return false;
    // Only this fiber moves requested -> acknowledged; requesters only move none -> requested,
    // so the swap cannot fail.
    const previous = self.cancel_status.swap(.acknowledged, .acquire);
    assert(previous == .requested);
    return true;
}

/// The fiber: turns a set `cancel_flag` or `shutdown_flag` into its own request, once each.
/// True if this call made the request (none was pending or delivered: a walk that asked
/// already also woke the fiber).
pub fn readCancelFlags(self: *Fiber) bool {
    var requested = false;
    inline for (.{ "cancel_flag", "shutdown_flag" }) |name| {
        if (@field(self, name)) |flag| {
            // Acquire: pairs with the canceller's release store of the flag.
            if (flag.load(.acquire)) {
                @field(self, name) = null;
                if (self.requestCancel()) requested = true;
            }
        }
    }
    return requested;
}

/// The fiber: re-arms a request it acknowledged (std.Io `recancel`).
pub fn recancel(self: *Fiber) void {
    const previous = self.cancel_status.swap(.requested, .monotonic);
    assert(previous == .acknowledged); // recancel without a prior error.Canceled
}

pub fn acknowledgedCancel(self: *const Fiber) bool {
    return self.cancel_status.load(.monotonic) == .acknowledged;
}
