//! `std.Io.Batch` on `ampere.Io`: several operations in flight at once, and a wait for the
//! first of them to complete (`awaitAsync`, `awaitConcurrent` with a timeout — which is also
//! how `operateTimeout` and `Socket.receiveTimeout` work — and `cancel`).
//!
//! An await starts every submitted operation:
//!
//! - `net_receive` on a socket: an `io/Registration.Op` on the epoll driver (no thread);
//! - a file, pipe or terminal read or write, or a device control: std.Io.Threaded's
//!   `operate` on the blocking pool (a pipe read waits there for data).
//!
//! and waits — one future polling every started operation — until at least one completed (or
//! the timeout passed, or the waiting fiber was canceled). Completed operations go to the
//! batch's `completed` list with their result. Then, whatever ended the wait, the receives
//! that did not complete are cancelled and go back to `submitted`, to be started again by the
//! next await: a socket wait holds nothing between awaits. Only pool operations — already
//! running, and a system call on a file cannot be interrupted — stay `pending`, with the state
//! that tracks them (`Batch.userdata`: their futures, allocated by the await that started
//! them); the next await collects them, and `batchCancel` waits for them (they appear in the
//! iteration: std.Io allows completions that raced the cancel). So `operateTimeout` on a
//! socket, which never calls `cancel`, leaves nothing behind; on a pipe that got no data it
//! leaves the read running on the pool until data or end of file arrives.

const std = @import("std");
const assert = std.debug.assert;
const Io = std.Io;
const Operation = Io.Operation;
const Batch = Io.Batch;

const future = @import("../future.zig");
const time = @import("../time.zig");
const sleep_future = @import("../time/sleep.zig");
const block_on = @import("../block_on.zig");
const Fiber = @import("../fiber/Fiber.zig");
const AmpereIo = @import("State.zig");
const net = @import("net.zig");
const clock = @import("clock.zig");
const delegate = @import("delegate.zig");

const Receive = @typeInfo(@typeInfo(@TypeOf(net.receiveFuture)).@"fn".return_type.?).error_union.payload;
const PoolWait = AmpereIo.OffloadWait(Io.Cancelable!Operation.Result);

/// One operation in flight. Not a tagged union: a waiting `receive` holds a waiter node that
/// the driver's thread writes, and Zig 0.16's Debug code reads a tagged union whole to check
/// its tag (runtime/README.md, "No whole reads of a waiting future"); `kind` is read alone.
const Slot = struct {
    operation: Operation,
    kind: enum { idle, receive, pool },
    receive: Receive,
    pool: PoolWait,
};

/// The operations in flight (index = storage index).
const State = struct {
    slots: []Slot,
};

fn stateOf(self: *AmpereIo, batch: *Batch) Io.ConcurrentError!*State {
    if (batch.userdata) |userdata| return @ptrCast(@alignCast(userdata));
    const allocator = self.allocator;
    const state = allocator.create(State) catch return error.ConcurrencyUnavailable;
    errdefer allocator.destroy(state);
    state.slots = allocator.alloc(Slot, batch.storage.len) catch return error.ConcurrencyUnavailable;
    for (state.slots) |*slot| slot.kind = .idle;
    batch.userdata = state;
    return state;
}

fn freeState(self: *AmpereIo, batch: *Batch) void {
    const state: *State = @ptrCast(@alignCast(batch.userdata.?));
    for (state.slots) |*slot| assert(slot.kind == .idle);
    const allocator = self.allocator;
    allocator.free(state.slots);
    allocator.destroy(state);
    batch.userdata = null;
}

// -- the lists -------------------------------------------------------------------------------

fn pushSubmitted(batch: *Batch, index: u32, operation: Operation) void {
    batch.storage[index] = .{ .submission = .{ .node = .{ .next = .none }, .operation = operation } };
    switch (batch.submitted.tail) {
        .none => batch.submitted.head = .fromIndex(index),
        else => |t| batch.storage[t.toIndex()].submission.node.next = .fromIndex(index),
    }
    batch.submitted.tail = .fromIndex(index);
}

fn pushPending(batch: *Batch, index: u32, tag: Operation.Tag) void {
    const tail = batch.pending.tail;
    batch.storage[index] = .{ .pending = .{ .node = .{ .prev = tail, .next = .none }, .tag = tag, .userdata = undefined } };
    switch (tail) {
        .none => batch.pending.head = .fromIndex(index),
        else => |t| batch.storage[t.toIndex()].pending.node.next = .fromIndex(index),
    }
    batch.pending.tail = .fromIndex(index);
}

fn unlinkPending(batch: *Batch, index: u32) void {
    const node = batch.storage[index].pending.node;
    switch (node.prev) {
        .none => batch.pending.head = node.next,
        else => |p| batch.storage[p.toIndex()].pending.node.next = node.next,
    }
    switch (node.next) {
        .none => batch.pending.tail = node.prev,
        else => |n| batch.storage[n.toIndex()].pending.node.prev = node.prev,
    }
}

fn pushCompleted(batch: *Batch, index: u32, result: Operation.Result) void {
    batch.storage[index] = .{ .completion = .{ .node = .{ .next = .none }, .result = result } };
    switch (batch.completed.tail) {
        .none => batch.completed.head = .fromIndex(index),
        else => |t| batch.storage[t.toIndex()].completion.node.next = .fromIndex(index),
    }
    batch.completed.tail = .fromIndex(index);
}

// -- starting, polling and parking operations ------------------------------------------------

const PoolJob = struct {
    fn run(io_state: *AmpereIo, operation: Operation) Io.Cancelable!Operation.Result {
        return delegate.callThreaded(io_state, "operate", .{operation});
    }
};

/// Threaded's `operate` on this thread (when the pool refuses work, at runtime shutdown).
fn operateHere(self: *AmpereIo, operation: Operation) Operation.Result {
    // Not one of Threaded's threads: never canceled.
    return delegate.callThreaded(self, "operate", .{operation}) catch unreachable;
}

/// Starts every submitted operation: submitted -> pending (or completed at once).
fn startSubmitted(self: *AmpereIo, batch: *Batch, state: *State) void {
    var index = batch.submitted.head;
    while (index != .none) {
        const i = index.toIndex();
        const submission = batch.storage[i].submission;
        index = submission.node.next;
        const operation = submission.operation;
        const slot = &state.slots[i];
        slot.operation = operation;
        switch (operation) {
            .net_receive => |o| {
                slot.receive = net.receiveFuture(self, o) catch |err| {
                    pushCompleted(batch, i, .{ .net_receive = .{ err, 0 } });
                    continue;
                };
                slot.kind = .receive;
            },
            .file_read_streaming, .file_write_streaming, .device_io_control => {
                const handle = self.spawnBlocking(PoolJob.run, .{ self, operation }) catch {
                    pushCompleted(batch, i, operateHere(self, operation));
                    continue;
                };
                slot.pool = .{ .handle = handle };
                slot.kind = .pool;
            },
        }
        pushPending(batch, i, operation);
    }
    batch.submitted = .{ .head = .none, .tail = .none };
}

/// Polls a started operation once; its result if it completed (the slot is then idle).
fn pollSlot(self: *AmpereIo, slot: *Slot, cx: *future.Context) ?Operation.Result {
    switch (slot.kind) {
        .idle => unreachable,
        .receive => switch (slot.receive.poll(cx)) {
            .pending => return null,
            .ready => |output| {
                slot.kind = .idle;
                const count = output catch |err| return .{ .net_receive = .{ switch (err) {
                    error.RuntimeShutdown => error.NetworkDown,
                    error.SocketClosed => net.ReceiveAttempt.closed_error,
                    else => |e| e,
                }, 0 } };
                return .{ .net_receive = .{ null, count } };
            },
        },
        .pool => switch (slot.pool.poll(cx)) {
            .pending => return null,
            .ready => |output| {
                slot.kind = .idle;
                return output catch operateHere(self, slot.operation);
            },
        },
    }
}

/// Moves every pending operation that completed to `completed`. True if `completed` is not
/// empty afterwards.
fn collect(self: *AmpereIo, batch: *Batch, state: *State, cx: *future.Context) bool {
    var index = batch.pending.head;
    while (index != .none) {
        const i = index.toIndex();
        index = batch.storage[i].pending.node.next;
        const result = pollSlot(self, &state.slots[i], cx) orelse continue;
        unlinkPending(batch, i);
        pushCompleted(batch, i, result);
    }
    return batch.completed.head != .none;
}

/// After a wait, however it ended: receives that did not complete are cancelled and go back
/// to `submitted`; the state is freed if no pool operation is still running.
fn park(self: *AmpereIo, batch: *Batch) void {
    const state: *State = @ptrCast(@alignCast(batch.userdata.?));
    var index = batch.pending.head;
    while (index != .none) {
        const i = index.toIndex();
        index = batch.storage[i].pending.node.next;
        const slot = &state.slots[i];
        switch (slot.kind) {
            .receive => {
                slot.receive.cancel();
                slot.kind = .idle;
                unlinkPending(batch, i);
                pushSubmitted(batch, i, slot.operation);
            },
            .pool => {},
            .idle => unreachable,
        }
    }
    if (batch.pending.head == .none) freeState(self, batch);
}

/// Ready when at least one operation completed (or none is in flight).
const FirstCompletion = struct {
    pub const Output = void;
    self: *AmpereIo,
    batch: *Batch,
    state: *State,
    fiber: ?*Fiber,

    pub fn poll(wait: *FirstCompletion, cx: *future.Context) future.Poll(void) {
        if (collect(wait.self, wait.batch, wait.state, cx)) return .{ .ready = {} };
        if (wait.batch.pending.head == .none) return .{ .ready = {} };
        return .pending;
    }

    /// A kill would wait for a pool operation still running (`killPending`).
    pub fn cancelWouldBlock(wait: *const FirstCompletion) bool {
        var index = wait.batch.pending.head;
        while (index != .none) {
            const i = index.toIndex();
            index = wait.batch.storage[i].pending.node.next;
            const slot = &wait.state.slots[i];
            if (slot.kind == .pool and slot.pool.cancelWouldBlock()) return true;
        }
        return false;
    }

    /// A canceled or timed-out wait is followed by `park`. A killed fiber's is not: end the
    /// operations here, on the killing thread.
    pub fn cancel(wait: *FirstCompletion) void {
        const fiber = wait.fiber orelse return;
        if (fiber.status != .finished) return;
        killPending(wait.self, wait.batch, wait.state);
    }
};

fn killPending(self: *AmpereIo, batch: *Batch, state: *State) void {
    var index = batch.pending.head;
    while (index != .none) {
        const i = index.toIndex();
        index = batch.storage[i].pending.node.next;
        const slot = &state.slots[i];
        switch (slot.kind) {
            .receive => slot.receive.cancel(),
            // The pool function may write into the killed fiber's memory: wait for it.
            .pool => if (block_on.blockOnThread(&slot.pool.handle)) |_| {} else |_| {},
            .idle => unreachable,
        }
        slot.kind = .idle;
        unlinkPending(batch, i);
    }
    freeState(self, batch);
}

fn awaitBatch(self: *AmpereIo, batch: *Batch, timeout: Io.Timeout) (Io.ConcurrentError || Io.Cancelable || Io.Timeout.Error)!void {
    const state = try stateOf(self, batch);
    startSubmitted(self, batch, state);
    defer park(self, batch);
    const wait = FirstCompletion{ .self = self, .batch = batch, .state = state, .fiber = Fiber.current() };
    const deadline_ns = clock.monotonicDeadlineNs(timeout) orelse return self.waitCancelable(wait);
    const timed = time.Timeout(FirstCompletion){ .inner = wait, .timer = sleep_future.sleepUntil(deadline_ns) };
    const result = try self.waitCancelable(timed);
    return result;
}

pub fn batchAwaitAsync(userdata: ?*anyopaque, batch: *Batch) Io.Cancelable!void {
    const self = AmpereIo.fromUserdata(userdata);
    return awaitBatch(self, batch, .none) catch |err| switch (err) {
        error.Canceled => error.Canceled,
        // No memory for the operations' state: do them one after another.
        error.ConcurrencyUnavailable => sequential(self, batch),
        error.Timeout => unreachable, // No timeout.
    };
}

/// `awaitAsync` without concurrency: performs the submitted operations in order.
fn sequential(self: *AmpereIo, batch: *Batch) Io.Cancelable!void {
    while (batch.submitted.head != .none) {
        const i = batch.submitted.head.toIndex();
        const submission = batch.storage[i].submission;
        const result: Operation.Result = switch (submission.operation) {
            .net_receive => |o| .{ .net_receive = try net.receive(self, o) },
            else => try self.offload("operate", .{submission.operation}),
        };
        batch.submitted.head = submission.node.next;
        if (batch.submitted.head == .none) batch.submitted.tail = .none;
        pushCompleted(batch, i, result);
    }
}

pub fn batchAwaitConcurrent(userdata: ?*anyopaque, batch: *Batch, timeout: Io.Timeout) Batch.AwaitConcurrentError!void {
    const self = AmpereIo.fromUserdata(userdata);
    return awaitBatch(self, batch, timeout);
}

/// `Batch.cancel` already returned the submitted operations to `unused`; what is left are the
/// pool operations still running: wait for them (their results join the iteration).
pub fn batchCancel(userdata: ?*anyopaque, batch: *Batch) void {
    const self = AmpereIo.fromUserdata(userdata);
    const userdata_state = batch.userdata orelse {
        assert(batch.pending.head == .none);
        return;
    };
    const state: *State = @ptrCast(@alignCast(userdata_state));
    var index = batch.pending.head;
    while (index != .none) {
        const i = index.toIndex();
        index = batch.storage[i].pending.node.next;
        const slot = &state.slots[i];
        const output = switch (slot.kind) {
            .pool => self.waitUncancelable(slot.pool),
            .receive, .idle => unreachable, // `park` never leaves a receive pending.
        };
        slot.kind = .idle;
        unlinkPending(batch, i);
        pushCompleted(batch, i, output catch operateHere(self, slot.operation));
    }
    freeState(self, batch);
}
