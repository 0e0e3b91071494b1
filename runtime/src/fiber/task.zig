//! Fiber tasks: a `Header` (the scheduler's view of any task) whose poll resumes a fiber.
//!
//! One allocation per fiber: the `Task` (header, fiber, the start function) followed by the
//! start function's arguments (`context`, copied in) and its result. When it fits a task
//! block (`scheduler/TaskBlocks.zig`: 512 bytes), it comes from the spawning worker's block
//! cache and goes back to the cache of the worker that frees it — no allocator call in the
//! steady state; otherwise (a large context, a spawn from a plain thread's cache miss) from
//! the runtime's allocator. The stack is reserved in the runtime's stack pool (`Stack.Pool`) when the task is
//! created — a fiber that cannot get a stack is never spawned, so the spawner learns of it
//! (`OutOfMemory`; std.Io's `concurrent` reports `ConcurrencyUnavailable`) — taken when the
//! fiber first runs (a queued fiber holds none, and short fibers run one after another on the
//! same warm stack), and goes back to the pool as soon as the fiber finishes or is killed,
//! before anyone awaits the result (or, below, is counted out of use before that).
//!
//! ## Completing on the fiber's stack
//!
//! A fiber that finishes runs on its stack until it switches away, and its completion (which
//! wakes its awaiter) used to wait for that: the fiber switched back to the worker, the worker
//! gave the stack back and completed the task, and its loop then resumed the awaiter — three
//! switches per spawn + await, with an iteration of the loop in between. When the finishing
//! fiber has nothing queued to hand off to, its worker now completes it on its own stack
//! (`Worker.takeHandoff`): `retireStack` counts the stack out of use (`Stack.Pool.retire`) and
//! tells the creating layer (a group member leaves its group), the task completes — its
//! awaiter, woken on this worker, lands in the LIFO slot — and the fiber hands off to it. The
//! awaiter's landing gives the stack back and drops the task's references, before its own code
//! runs. Invariants: the task's references (the poller's and the owned list's) are held until
//! the stack is given back, so the allocation that holds the fiber's saved registers outlives
//! the switch; a thread that sees the completion never counts the stack in use (the retire came
//! first); and when no successor comes of it (the awaiter is not a fiber, or is on another
//! thread), the fiber switches back to the worker, which gives the stack back and drops the
//! references without completing the task twice (`Worker.finishPolled`).
//! The allocation itself lives on until its last reference goes (the scheduler's rules).
//!
//! | Header.VTable | what a fiber task does |
//! |---|---|
//! | `poll` | resumes the fiber (`Fiber.resumeOnce`); ready once the start function returned |
//! | `cancel` | kills the fiber (`Fiber.kill`: its current wait is cancelled, its stack released, its remaining code never runs); the output is `error.Cancelled`. On a worker, a kill that would block (the fiber waits for a blocking-pool call) is put off: false, and the call's completion wakes the task to be killed then |
//! | `take_output` | typed tasks (`spawn`): moves the result out as `JoinOutput(T)` |
//! | `dealloc` | frees the allocation |
//!
//! ## Owned lazily
//!
//! The runtime's owned list (`scheduler/OwnedTasks.zig`) exists for the tasks that nobody will
//! wake again at shutdown: the idle ones. A fiber task is idle only after it suspended, so a
//! fiber spawned on one of its runtime's workers is linked when it first suspends
//! (`linkSuspended`, on the polling worker, holding `running`), not at its spawn; one that
//! runs to its end without suspending (a group member that counts, a future that returns its
//! argument) never takes the list's lock. At 1 worker the two lock pairs were 7% of a spawn +
//! await (io_spawn 126 -> 117 ns/op with the list removed, measurement only). A task that is not
//! linked is queued (shutdown drains the queues) or running, and nothing runs at shutdown: the
//! list is closed only after every worker exited, so a lazy link cannot be refused. A spawn
//! from any other thread links at once, as before: such a spawn may race the close, and must be
//! refused then. Removal looks at `Header.in_owned` first (`OwnedTasks.remove`).
//!
//! A group's cancel finds its suspended members in the list; one not linked yet reads the
//! group's flag itself (`Fiber.cancel_flag`) at each cancellation point, and a member that
//! links reads it once more after the link, so a cancel whose walk passed before the link is
//! not lost (the argument is at `linkSuspended`).
//!
//! `spawn(function, args)` (`Runtime.spawnFiber`) returns an ordinary `JoinHandle(T)`: a
//! state-machine task awaits a fiber exactly as it awaits any task. std.Io futures are
//! type-erased fiber tasks (`create` with the byte-level context and result of
//! `Io.VTable.concurrent`), awaited through the same join protocol (`std_io/`).

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const Alignment = std.mem.Alignment;

const future = @import("../future.zig");
const Waker = @import("../Waker.zig");
const Header = @import("../task/Header.zig");
const cell = @import("../task/cell.zig");
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const Shared = @import("../scheduler/Shared.zig");
const Worker = @import("../scheduler/Worker.zig");
const TaskBlocks = @import("../scheduler/TaskBlocks.zig");
const Fiber = @import("Fiber.zig");
const hook = @import("../hook.zig");
const Stack = @import("Stack.zig");
const Fibers = @import("Fibers.zig");
const overflow = @import("overflow.zig");

/// What a fiber task runs: a function of its context that writes a result (spawned fibers,
/// std.Io futures), or one without a result (std.Io group members).
pub const Start = union(enum) {
    with_result: *const fn (context: *const anyopaque, result: *anyopaque) void,
    no_result: *const fn (context: *const anyopaque) void,
};

pub const CreateError = Allocator.Error || Stack.MapError;

pub const Task = struct {
    header: Header,
    fiber: Fiber,
    allocator: Allocator,
    fibers: *Fibers,
    start: Start,
    /// The allocation: `len` bytes aligned to `alignment`, starting at this Task.
    len: usize,
    alignment: Alignment,
    context_offset: usize,
    result_offset: usize,
    /// The fiber never ran to the end (killed): the result was never written.
    killed: bool = false,
    /// The fiber finished and its stack was retired on it (`retireStack`), its completion
    /// published before the stack is given back ("Completing on the fiber's stack").
    retired: bool = false,
    stack_released: bool = false,
    /// Its stack was reserved on a worker's share of the pool (Stack.zig, "Worker caches"):
    /// taken and given back through the share of the worker that runs it. A task spawned by
    /// any other thread uses the pool alone, so that the stacks its spawner's later
    /// reservations count on are not left cached in a worker's share.
    stack_local: bool = false,
    /// For the layer that created the task (std.Io: the group it belongs to).
    user: ?*anyopaque = null,
    /// Link in a list of that layer (std.Io: the members a group cancel woke).
    cancel_next: ?*Task = null,
    /// Called by the thread that saw the fiber finish or killed it, before the task completes
    /// (std.Io: a group member leaves its group).
    on_done: ?*const fn (task: *Task) void = null,
    /// The task's own waker and the poll context that lends it, for every resumption of the
    /// fiber (by a worker's poll or by a peer's direct hand-off: the context must outlive the
    /// worker frame that started the chain).
    waker: Waker,
    cx: future.Context,
    /// The polling worker's `fiber_clock` when the fiber last suspended on a worker
    /// (`successor`), for `stackMayBeCold`.
    suspended_at: u64,

    /// Allocates a task for `start(context copy, result)` with a stack from `fibers`. Its
    /// state is `Header.initial_state` (queued, with a join handle); the caller links it into
    /// the owned list and submits it (`submitNew`).
    pub fn create(
        allocator: Allocator,
        fibers: *Fibers,
        scheduler: *const Header.Scheduler,
        id: u64,
        vtable: *const Header.VTable,
        context: []const u8,
        context_alignment: Alignment,
        result_len: usize,
        result_alignment: Alignment,
        start: Start,
    ) CreateError!*Task {
        const alignment = Alignment.of(Task).max(context_alignment).max(result_alignment);
        const context_offset = context_alignment.forward(@sizeOf(Task));
        const result_offset = result_alignment.forward(context_offset + context.len);
        const len = @max(result_offset + result_len, @sizeOf(Task));
        const taken: ?TaskBlocks.Taken = if (TaskBlocks.fits(len, alignment)) try Worker.allocTaskBlock(scheduler, allocator) else null;
        const home = if (taken) |t| t.home else TaskBlocks.home_none;
        const memory: [*]u8 = if (taken) |t| t.block else allocator.rawAlloc(len, alignment, @returnAddress()) orelse return error.OutOfMemory;
        errdefer freeMemory(allocator, scheduler, memory, len, alignment, home);
        // A task block's home is the calling worker: its share, without a second lookup.
        const share = if (taken) |t| fibers.stacks.local(t.home) else stackShare(fibers, scheduler);
        try fibers.stacks.reserveOn(share);
        const self: *Task = @ptrCast(@alignCast(memory));
        // Field by field: a struct literal was built on the stack and copied in 64-byte moves
        // that overlapped the literal's own narrower stores (a store-forwarding stall per
        // spawn, a quarter of `create`'s samples).
        self.header = Header.init(vtable, scheduler, id);
        self.header.block_home = home;
        self.fiber.initInPlace(body);
        self.fiber.shutdown_flag = &fibers.shutting_down;
        self.allocator = allocator;
        self.fibers = fibers;
        self.start = start;
        self.len = len;
        self.alignment = alignment;
        self.context_offset = context_offset;
        self.result_offset = result_offset;
        self.killed = false;
        self.retired = false;
        self.stack_released = false;
        self.stack_local = share != null;
        self.user = null;
        self.cancel_next = null;
        self.on_done = null;
        self.waker = self.header.borrowedWaker();
        self.cx = future.Context.init(&self.waker);
        self.fiber.handoff = &handoff;
        self.suspended_at = 0;
        comptime assert(@typeInfo(Task).@"struct".fields.len == 19); // Every field set above.
        copyBytes(memory + context_offset, context);
        return self;
    }

    /// Frees a task's memory: a task block (`home` names its worker) through the block caches,
    /// anything else (`home_none`) with the allocator at its exact size.
    fn freeMemory(allocator: Allocator, scheduler: *const Header.Scheduler, memory: [*]u8, len: usize, alignment: Alignment, home: u16) void {
        if (home == TaskBlocks.home_none) return allocator.rawFree(memory[0..len], alignment, @returnAddress());
        Worker.freeTaskBlock(scheduler, allocator, @alignCast(memory), home);
    }

    fn freeSelf(self: *Task) void {
        const memory: [*]u8 = @ptrCast(self);
        freeMemory(self.allocator, self.header.scheduler, memory, self.len, self.alignment, self.header.block_home);
    }

    /// The stack pool's share of the calling thread's worker (Stack.zig, "Worker caches"), or
    /// null when the caller is not one of `scheduler`'s workers.
    fn stackShare(fibers: *Fibers, scheduler: *const Header.Scheduler) ?*Stack.Pool.Local {
        const worker = Worker.currentFor(scheduler) orelse return null;
        return fibers.stacks.local(worker.index);
    }

    /// The share this task's stack goes through on `worker` (the calling thread's worker of
    /// this task's runtime, or null): null if it was reserved on the pool alone.
    fn shareOn(self: *Task, worker: ?*Worker) ?*Stack.Pool.Local {
        if (!self.stack_local) return null;
        const w = worker orelse return null;
        return self.fibers.stacks.local(w.index);
    }

    /// "Owned lazily": a suspending fiber on `worker` (its task `running` there) is linked into
    /// the owned list unless it already is. Then its cancel flags (a group member's group's,
    /// and the runtime's shutdown flag) are read again: a cancel stores its flag, then walks
    /// every shard under its lock (`cancelListed`); this links under the shard's lock, then
    /// reads the flag. If the walk locked the shard after the link, it found the task; if
    /// before, its unlock came before this lock, so this read sees the flag, and the fiber asks
    /// its own cancel (the task is `running`: the claim only marks it notified, and the worker
    /// re-queues it after the post-poll transition).
    fn linkSuspended(self: *Task, worker: *Worker) void {
        assert(self.fiber.status == .suspended);
        if (self.header.in_owned.load(.monotonic)) return;
        hook.reachedBy(.fiber_before_link, &self.fiber);
        worker.linkOwned(&self.header);
        // The group's and the runtime's shutdown flags alike (`cancelListed`).
        if (self.fiber.readCancelFlags()) assert(!self.header.claimWake());
    }

    pub fn fromHeader(header: *Header) *Task {
        return @fieldParentPtr("header", header);
    }

    pub fn fromFiber(fiber: *Fiber) *Task {
        return @fieldParentPtr("fiber", fiber);
    }

    pub fn contextPtr(self: *Task) [*]u8 {
        return @as([*]u8, @ptrCast(self)) + self.context_offset;
    }

    pub fn resultPtr(self: *Task) [*]u8 {
        return @as([*]u8, @ptrCast(self)) + self.result_offset;
    }

    fn body(fiber: *Fiber) void {
        const self = fromFiber(fiber);
        switch (self.start) {
            .with_result => |start| start(self.contextPtr(), self.resultPtr()),
            .no_result => |start| start(self.contextPtr()),
        }
    }

    /// The fiber is done (finished or killed): give its stack back (or its reservation, if it
    /// never ran), then tell the creating layer — which `retireStack` did already for a
    /// retired stack.
    fn releaseStack(self: *Task) void {
        self.releaseStackOn(Worker.currentFor(self.header.scheduler));
    }

    /// `releaseStack` on `worker` (the calling thread's worker of this runtime, or null).
    fn releaseStackOn(self: *Task, worker: ?*Worker) void {
        assert(!self.stack_released);
        self.fiber.retire();
        self.stack_released = true;
        const stacks = &self.fibers.stacks;
        const share = self.shareOn(worker);
        if (self.retired) return stacks.releaseRetiredOn(self.fiber.stack.?, share);
        if (self.fiber.stack) |stack| stacks.releaseOn(stack, share) else stacks.unreserveOn(share);
        if (self.on_done) |on_done| on_done(self);
    }

    /// On the stack of a finished fiber, right before the worker publishes its completion
    /// there (`Worker.takeHandoff`): the stack counted out of use (`Stack.Pool.retire`), then
    /// the creating layer told, as `releaseStack` would; `releaseStack` gives the stack back
    /// once the thread is off it.
    fn retireStack(header: *Header) void {
        const self = fromHeader(header);
        assert(self.fiber.status == .finished and self.fiber.stack != null);
        assert(!self.retired and !self.stack_released);
        self.fibers.stacks.retire();
        self.retired = true;
        if (self.on_done) |on_done| on_done(self);
    }

    // -- Header.VTable --------------------------------------------------------------------

    /// Resumes the fiber. A fiber may hand the thread to another fiber task of this worker
    /// ("Direct hand-off"): then the task that comes back is that one, which the worker reads
    /// from `Worker.polled` — the result is about it.
    pub fn poll(header: *Header) bool {
        const self = fromHeader(header);
        // Looked up once: every task this poll resumes (hand-offs included) is this worker's.
        const worker = Worker.currentFor(header.scheduler);
        self.warmStack(worker);
        overflow.ensureAltStack(&self.fibers.alt_stacks);
        if (self.fiber.stack == null) self.fiber.attachStack(self.fibers.stacks.takeReservedOn(self.shareOn(worker)));
        const back = fromFiber(self.fiber.resumeOnce(&self.cx));
        if (back.fiber.status != .finished) {
            // Linked by `successor`, which every fiber task's suspension calls (`handoff` is
            // set at creation), before the switch.
            assert(back.header.in_owned.load(.monotonic));
            return false;
        }
        // Before `releaseStack` (a group member wakes its awaiter there) and the completion
        // (join waiters): only what the fiber's own code woke is re-queued. A retired fiber's
        // worker did it before completing it (`Worker.takeHandoff`).
        if (!back.retired) {
            if (worker) |w| w.settleLifoOnFinish();
        }
        back.releaseStackOn(worker);
        return true;
    }

    /// Before the fiber resumes on `worker` (the calling thread's worker of this runtime, or
    /// null): counts the resumption and prefetches the fiber's stack unless it suspended on
    /// this worker within `warm_resumes` resumptions (`stackMayBeCold`).
    fn warmStack(self: *Task, worker: ?*Worker) void {
        const w = worker orelse return self.fiber.prefetchStack();
        if (stackMayBeCold(w.fiberResume(), self.suspended_at)) self.fiber.prefetchStack();
    }

    // -- direct hand-off (Fiber.Handoff) -------------------------------------------------

    const handoff = Fiber.Handoff{ .successor = successor, .landed = landed };

    /// On `from`'s stack as it suspends or finishes: the fiber task in this worker's LIFO slot,
    /// made `running` (`Worker.takeHandoff`), with its stack attached.
    fn successor(from: *Fiber) ?*Fiber {
        const self = fromFiber(from);
        assert(from.status == .suspended or from.status == .finished);
        const worker = Worker.currentFor(self.header.scheduler) orelse return null;
        if (from.status == .suspended) {
            self.linkSuspended(worker);
            self.suspended_at = worker.fiber_clock;
        }
        const retire: ?*const fn (*Header) void = if (from.status == .finished) retireStack else null;
        const next_header = worker.takeHandoff(&self.header, poll, retire) orelse return null;
        const next = fromHeader(next_header);
        next.warmStack(worker);
        if (next.fiber.stack == null) next.fiber.attachStack(next.fibers.stacks.takeReservedOn(next.shareOn(worker)));
        next.fiber.prepareSuccessor(&next.cx);
        return &next.fiber;
    }

    /// On the stack of the fiber switched to: the post-poll transition of the one that
    /// switched (`Worker.finishHandoff`; a finished one's stack goes back first).
    noinline fn landed() void {
        const worker = Worker.current() orelse return;
        worker.finishHandoff(releaseFinished);
    }

    fn releaseFinished(header: *Header) void {
        fromHeader(header).releaseStack();
    }

    /// Kills the fiber; false when that would block this thread, a worker (see
    /// `Fiber.kill`): the task goes idle until its wait wakes it.
    pub fn cancel(header: *Header) bool {
        const self = fromHeader(header);
        if (!self.fiber.kill(Worker.current() == null)) return false;
        self.killed = true;
        self.releaseStack();
        return true;
    }

    pub fn dealloc(header: *Header) void {
        const self = fromHeader(header);
        assert(self.stack_released);
        assert(Header.refCount(header.state.load(.monotonic)) == 0);
        self.freeSelf();
    }

    fn takeOutputUnsupported(header: *Header, out: *anyopaque) void {
        _ = header;
        _ = out;
        unreachable; // Type-erased tasks are awaited through std.Io, which reads the bytes.
    }

    /// The vtable of type-erased fiber tasks (std.Io futures and group members).
    pub const erased_vtable = Header.VTable{
        .poll = poll,
        .cancel = cancel,
        .take_output = takeOutputUnsupported,
        .dealloc = dealloc,
    };
};

/// The vtable of fiber tasks whose start function's result is a `T` (`spawn`).
pub fn TypedVTable(comptime T: type) type {
    return struct {
        pub const vtable = Header.VTable{
            .poll = Task.poll,
            .cancel = Task.cancel,
            .take_output = takeOutput,
            .dealloc = Task.dealloc,
        };

        fn takeOutput(header: *Header, out: *anyopaque) void {
            const self = Task.fromHeader(header);
            assert(header.load() & Header.complete != 0);
            const destination: *cell.JoinOutput(T) = @ptrCast(@alignCast(out));
            if (self.killed) {
                destination.* = error.Cancelled;
            } else {
                const result: *T = @ptrCast(@alignCast(self.resultPtr()));
                destination.* = result.*;
            }
        }
    };
}

/// Resumptions on one worker after which a suspended fiber's stack is treated as cold
/// (Fiber.zig, "Warming a cold stack"). The prefetch costs ~50 instructions for a queue
/// waiter's 1 KiB (16 lines): in a one-pair ping-pong, where the two fibers resume each
/// other and their stacks never leave L1, that was 6% of a round trip's instructions. A
/// resumption touches a few KiB (the stack's live top, the task, the queue's lines), so
/// eight of them stay well inside a 32 KiB L1.
pub const warm_resumes: u64 = 8;

/// Whether a fiber that suspended at `suspended_at` (its worker's `fiber_clock` then) may
/// resume on cold stack lines now, at `now` (the resuming worker's clock, this resumption
/// counted). A fiber that moved to another worker differs in the index bits, and the wrapping
/// difference is then at least 2^48 less the counts either way: cold. A stale stamp (the
/// fiber last suspended off a worker) can only skip a prefetch, which costs time, never
/// correctness.
pub fn stackMayBeCold(now: u64, suspended_at: u64) bool {
    return now -% suspended_at > warm_resumes;
}

test "stackMayBeCold: warm within warm_resumes on the same worker, cold after or elsewhere" {
    const shift = Worker.fiber_clock_index_shift;
    const w0: u64 = 0;
    const w1: u64 = 1 << shift;
    // Same worker: the next resumption and up to warm_resumes later are warm.
    try std.testing.expect(!stackMayBeCold(w0 + 101, w0 + 100));
    try std.testing.expect(!stackMayBeCold(w1 + 100 + warm_resumes, w1 + 100));
    try std.testing.expect(stackMayBeCold(w1 + 101 + warm_resumes, w1 + 100));
    // Another worker, in either direction, whatever the counts.
    try std.testing.expect(stackMayBeCold(w1 + 5, w0 + 3));
    try std.testing.expect(stackMayBeCold(w0 + 5, w1 + 3));
}

/// Copies `source` to `destination` (the two do not overlap). A std.Io context or result is
/// usually a word or two: from 8 to 16 bytes two (overlapping) unaligned word copies, anything
/// else `@memcpy`, which is a call to `memcpy` for a length known only at run time (2.7% of a
/// 1-worker io_spawn in the clock profile).
pub fn copyBytes(destination: [*]u8, source: []const u8) void {
    const len = source.len;
    if (len < 8 or len > 16) return @memcpy(destination[0..len], source);
    const Word = *align(1) u64;
    const ConstWord = *align(1) const u64;
    const first = @as(ConstWord, @ptrCast(source.ptr)).*;
    const last = @as(ConstWord, @ptrCast(source.ptr + len - 8)).*;
    @as(Word, @ptrCast(destination)).* = first;
    @as(Word, @ptrCast(destination + len - 8)).* = last;
}

test "copyBytes copies every length exactly, up to the bytes around it" {
    var source: [40]u8 = undefined;
    for (&source, 0..) |*byte, i| byte.* = @intCast(i + 1);
    for (0..33) |len| {
        var destination = [_]u8{0xAA} ** 48;
        copyBytes(destination[4..].ptr, source[0..len]);
        try std.testing.expectEqualSlices(u8, source[0..len], destination[4..][0..len]);
        for (destination[0..4]) |byte| try std.testing.expectEqual(@as(u8, 0xAA), byte);
        for (destination[4 + len ..]) |byte| try std.testing.expectEqual(@as(u8, 0xAA), byte);
    }
}

/// Asks every fiber task in `shared`'s owned list for which `matches(context, task)` holds to
/// cancel (std.Io's request: `error.Canceled` at its next cancellation point) and wakes the
/// suspended ones. The caller stored the flag the fibers read (`Fiber.cancel_flag` or
/// `shutdown_flag`) before it calls this: a fiber that is not listed yet reads it itself
/// (see `linkSuspended` for one that links during the walk).
///
/// The wakes: a task is claimed (`Header.claimWake`: a queue reference taken) under the shard
/// lock, linked through `cancel_next`, and submitted after the walk (no scheduler code under
/// the lock). Only the walk that moved a fiber's request from none to requested claims it, so
/// a task is on one such list at a time. A fiber already asked (or one that acknowledged an
/// earlier request and was not re-armed) is left as it is; a finished fiber still listed
/// never reads the request, and a complete task ignores the wake.
pub fn cancelListed(shared: *Shared, context: anytype, comptime matches: fn (@TypeOf(context), *Task) bool) void {
    const Walk = struct {
        context: @TypeOf(context),
        claimed: ?*Task = null,

        pub fn visit(walk: *@This(), header: *Header) void {
            if (header.vtable.poll != &Task.poll) return; // Not a fiber task.
            const task = Task.fromHeader(header);
            if (!matches(walk.context, task)) return;
            if (!task.fiber.requestCancel()) return; // Asked already.
            if (!header.claimWake()) return; // Running (it will see the request) or done.
            task.cancel_next = walk.claimed;
            walk.claimed = task;
        }
    };
    var walk = Walk{ .context = context };
    shared.owned.forEach(&walk);
    while (walk.claimed) |task| {
        walk.claimed = task.cancel_next;
        task.cancel_next = null;
        task.header.submitClaimed();
    }
}

/// Shutdown's first step (`Runtime.deinit`): every fiber of the runtime is asked to cancel —
/// the flag first, for the fibers that are not listed, then the walk.
pub fn cancelAll(shared: *Shared, fibers: *Fibers) void {
    fibers.shutting_down.store(true, .release);
    cancelListed(shared, {}, anyFiber);
}

fn anyFiber(_: void, _: *Task) bool {
    return true;
}

/// Links a freshly created task into the runtime's owned list and queues it (as
/// `Runtime.spawn` does for a state-machine task). On `Shutdown` the task is freed.
pub fn submitNew(shared: *Shared, task: *Task) error{Shutdown}!void {
    try insertOwned(shared, task);
    schedule(shared, task);
}

/// The first half of `submitNew`: the spawn's owned-list insert (`Worker.insertSpawned`: none
/// on a worker, where the task is linked when it first suspends, "Owned lazily"), or, refused,
/// the task freed.
pub fn insertOwned(shared: *Shared, task: *Task) error{Shutdown}!void {
    Worker.insertSpawned(shared, &task.header) catch |err| {
        destroyUnstarted(task);
        return err;
    };
}

/// The second half of `submitNew`: queues the task.
pub fn schedule(shared: *Shared, task: *Task) void {
    Worker.submit(shared, &task.header, false);
}

/// Frees a task that was created but never submitted.
pub fn destroyUnstarted(task: *Task) void {
    const dead = task.fiber.kill(true); // Never started: it waits on nothing.
    assert(dead);
    task.killed = true;
    task.on_done = null; // It never joined anything.
    task.releaseStack();
    task.freeSelf();
}

pub fn ReturnOf(comptime function: anytype) type {
    return @typeInfo(@TypeOf(function)).@"fn".return_type.?;
}

pub const SpawnError = CreateError || error{Shutdown};

/// Spawns `function(args...)` as a fiber on `shared`'s scheduler.
pub fn spawn(
    shared: *Shared,
    fibers: *Fibers,
    comptime function: anytype,
    args: std.meta.ArgsTuple(@TypeOf(function)),
) SpawnError!JoinHandle(ReturnOf(function)) {
    const T = ReturnOf(function);
    const Args = @TypeOf(args);
    const Start_ = struct {
        fn start(context: *const anyopaque, result: *anyopaque) void {
            const typed_args: *const Args = @ptrCast(@alignCast(context));
            const typed_result: *T = @ptrCast(@alignCast(result));
            typed_result.* = @call(.auto, function, typed_args.*);
        }
    };
    const task = try Task.create(
        shared.allocator,
        fibers,
        &shared.task_scheduler,
        Worker.nextTaskId(shared),
        &TypedVTable(T).vtable,
        std.mem.asBytes(&args),
        .of(Args),
        @sizeOf(T),
        .of(T),
        .{ .with_result = Start_.start },
    );
    try submitNew(shared, task);
    return .{ .raw = &task.header };
}
