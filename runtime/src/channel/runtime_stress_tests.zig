//! Stress tests of the channels on the runtime (`Runtime` with 4 workers): waiting tasks
//! suspend with their waiter nodes inside their heap cells, more tasks than workers share each
//! channel, and wake-ups cross workers.
//!
//! Tasks never panic on a violated invariant: they count it in `failures`, checked after the
//! join. Sizes follow `testing.scaled` (full intensity: MPMC 4 x 4 with 1,000,000 values).

const std = @import("std");
const testing = std.testing;
const Atomic = std.atomic.Value;

const test_support = @import("../testing.zig");
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Runtime = @import("../Runtime.zig");
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const JoinError = @import("../task/cell.zig").JoinError;
const combinators = @import("../task/combinators.zig");
const CountingAllocator = @import("../CountingAllocator.zig");
const Bounded = @import("bounded.zig").Bounded;
const Oneshot = @import("oneshot.zig").Oneshot;
const Broadcast = @import("broadcast.zig").Broadcast;
const Watch = @import("watch.zig").Watch;

const workers = 4;

fn check(failures: *Atomic(u32), ok: bool) void {
    // Monotonic: read after the join, which synchronises.
    if (!ok) _ = failures.fetchAdd(1, .monotonic);
}

/// Awaits every handle from `blockOn`; fails if a task was cancelled.
fn joinAll(rt: *Runtime, handles: []JoinHandle(void)) !void {
    var results: [64]?(JoinError!void) = undefined;
    std.debug.assert(handles.len <= results.len);
    @memset(results[0..handles.len], null);
    rt.blockOn(combinators.joinAll(handles, results[0..handles.len]));
    for (results[0..handles.len]) |result| try result.?;
}

// -- Bounded: MPMC and MPSC ----------------------------------------------------------------

const Channel = Bounded(u64);

const MpmcShared = struct {
    channel: Channel,
    seen: []Atomic(u64),
    received: Atomic(u64) = .init(0),
    sum: Atomic(u64) = .init(0),
    failures: Atomic(u32) = .init(0),
    /// Tasks wait for this before their first operation (for the allocation test).
    gate: Watch(bool) = Watch(bool).init(false),

    fn markSeen(self: *MpmcShared, value: u64) bool {
        const bit = @as(u64, 1) << @intCast(value % 64);
        return self.seen[@intCast(value / 64)].fetchOr(bit, .monotonic) & bit == 0;
    }
};

/// Waits for the shared gate (if asked to) before running `body`'s loop.
const Gate = struct {
    receiver: ?Watch(bool).Receiver = null,
    changed: ?Watch(bool).ChangedFuture = null,
    open: bool,

    fn init(gate: ?*Watch(bool)) Gate {
        return if (gate) |g| .{ .receiver = g.subscribe(), .open = false } else .{ .open = true };
    }

    fn poll(self: *Gate, cx: *Context) bool {
        while (!self.open) {
            if (self.changed == null) self.changed = self.receiver.?.changed();
            switch (self.changed.?.poll(cx)) {
                .pending => return false,
                .ready => |result| {
                    self.changed = null;
                    result catch unreachable;
                    self.open = self.receiver.?.borrow();
                },
            }
        }
        return true;
    }

    fn cancel(self: *Gate) void {
        if (self.changed) |*c| c.cancel();
        self.changed = null;
    }
};

const Producer = struct {
    pub const Output = void;
    shared: *MpmcShared,
    next: u64,
    end: u64,
    gate: Gate,
    sending: ?Channel.SendFuture = null,

    pub fn poll(self: *Producer, cx: *Context) Poll(void) {
        if (!self.gate.poll(cx)) return .pending;
        while (self.next < self.end) {
            if (self.sending == null) self.sending = self.shared.channel.send(self.next);
            switch (self.sending.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    check(&self.shared.failures, result != error.Closed);
                    self.sending = null;
                    self.next += 1;
                },
            }
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Producer) void {
        self.gate.cancel();
        if (self.sending) |*s| s.cancel();
        self.sending = null;
    }
};

const Consumer = struct {
    pub const Output = void;
    shared: *MpmcShared,
    gate: Gate,
    count: u64 = 0,
    sum: u64 = 0,
    receiving: ?Channel.RecvFuture = null,

    pub fn poll(self: *Consumer, cx: *Context) Poll(void) {
        if (!self.gate.poll(cx)) return .pending;
        const shared = self.shared;
        while (true) {
            if (self.receiving == null) self.receiving = shared.channel.recv();
            switch (self.receiving.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.receiving = null;
                    const value = result catch break;
                    self.count += 1;
                    self.sum +%= value;
                    check(&shared.failures, shared.markSeen(value));
                },
            }
        }
        _ = shared.received.fetchAdd(self.count, .monotonic);
        _ = shared.sum.fetchAdd(self.sum, .monotonic);
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Consumer) void {
        self.gate.cancel();
        if (self.receiving) |*r| r.cancel();
        self.receiving = null;
    }
};

/// `producers` x `per_producer` values through a channel of `buffer_capacity` into
/// `consumers` tasks; checks the exact count, the sum and that no value arrived twice.
/// With a `counting` allocator, also checks that the steady state allocates nothing.
fn runBounded(producers: u64, consumers: u64, per_producer: u64, buffer_capacity: usize, counting: ?*CountingAllocator) !void {
    const allocator = if (counting) |c| c.allocator() else testing.allocator;
    const rt = try Runtime.init(allocator, .{ .workers = workers });
    defer rt.deinit();
    const total = producers * per_producer;
    const seen = try testing.allocator.alloc(Atomic(u64), @intCast((total + 63) / 64));
    defer testing.allocator.free(seen);
    for (seen) |*w| w.* = .init(0);
    var shared = MpmcShared{ .channel = try Channel.init(allocator, buffer_capacity), .seen = seen };
    defer shared.channel.deinit();
    const gate: ?*Watch(bool) = if (counting != null) &shared.gate else null;

    var producer_handles: [8]JoinHandle(void) = undefined;
    var consumer_handles: [8]JoinHandle(void) = undefined;
    for (producer_handles[0..producers], 0..) |*h, p| {
        h.* = try rt.spawn(Producer{ .shared = &shared, .next = p * per_producer, .end = (p + 1) * per_producer, .gate = Gate.init(gate) });
    }
    for (consumer_handles[0..consumers]) |*h| {
        h.* = try rt.spawn(Consumer{ .shared = &shared, .gate = Gate.init(gate) });
    }
    if (counting) |c| {
        // Every task is spawned (and its cell allocated); from here on nothing may allocate.
        c.reset();
        try shared.gate.send(true);
    }
    try joinAll(rt, producer_handles[0..producers]);
    shared.channel.close();
    try joinAll(rt, consumer_handles[0..consumers]);
    if (counting) |c| try testing.expectEqual(@as(u64, 0), c.snapshot().count);

    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(total, shared.received.load(.monotonic));
    try testing.expectEqual(total * (total - 1) / 2, shared.sum.load(.monotonic));
    var distinct: u64 = 0;
    for (seen) |*w| distinct += @popCount(w.load(.monotonic));
    try testing.expectEqual(total, distinct);
}

test "runtime stress: bounded MPMC 4 producers x 4 consumers on 4 workers" {
    const total = test_support.scaled(1_000_000, 100);
    try runBounded(4, 4, total / 4, 1024, null);
}

test "runtime stress: bounded MPMC with a small buffer, and MPSC" {
    const total = test_support.scaled(200_000, 50);
    try runBounded(4, 4, total / 4, 4, null);
    try runBounded(4, 1, total / 4, 1024, null);
}

test "runtime stress: steady-state channel traffic allocates nothing" {
    var counting = CountingAllocator.init(testing.allocator);
    try runBounded(4, 4, test_support.scaled(50_000, 20), 16, &counting);
}

// -- Oneshot: echo ---------------------------------------------------------------------------

const Request = struct { payload: u64, reply: *Oneshot(u64) };
const Requests = Bounded(Request);

const EchoShared = struct {
    requests: Requests,
    failures: Atomic(u32) = .init(0),
    answered: Atomic(u64) = .init(0),
};

const EchoTask = struct {
    pub const Output = void;
    shared: *EchoShared,
    receiving: ?Requests.RecvFuture = null,

    pub fn poll(self: *EchoTask, cx: *Context) Poll(void) {
        while (true) {
            if (self.receiving == null) self.receiving = self.shared.requests.recv();
            switch (self.receiving.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.receiving = null;
                    const request = result catch return .{ .ready = {} };
                    // The caller frees the oneshot right after seeing the value.
                    request.reply.send(request.payload + 1) catch check(&self.shared.failures, false);
                    _ = self.shared.answered.fetchAdd(1, .monotonic);
                },
            }
        }
    }

    pub fn cancel(self: *EchoTask) void {
        if (self.receiving) |*r| r.cancel();
        self.receiving = null;
    }
};

/// `calls` sequential calls, each with a fresh Oneshot inside this task.
const Caller = struct {
    pub const Output = void;
    shared: *EchoShared,
    base: u64,
    calls: u64,
    done: u64 = 0,
    reply: Oneshot(u64) = Oneshot(u64).init(),
    phase: enum { start, send, receive } = .start,
    sending: Requests.SendFuture = undefined,
    receiving: Oneshot(u64).RecvFuture = undefined,

    pub fn poll(self: *Caller, cx: *Context) Poll(void) {
        while (self.done < self.calls) {
            switch (self.phase) {
                .start => {
                    self.reply = Oneshot(u64).init();
                    self.sending = self.shared.requests.send(.{ .payload = self.base + self.done, .reply = &self.reply });
                    self.phase = .send;
                },
                .send => switch (self.sending.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        check(&self.shared.failures, result != error.Closed);
                        self.receiving = self.reply.recv();
                        self.phase = .receive;
                    },
                },
                .receive => switch (self.receiving.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        const answer = result catch 0;
                        check(&self.shared.failures, answer == self.base + self.done + 1);
                        self.done += 1;
                        self.phase = .start;
                    },
                },
            }
        }
        return .{ .ready = {} };
    }

    pub fn cancel(self: *Caller) void {
        switch (self.phase) {
            .start => {},
            .send => self.sending.cancel(),
            .receive => self.receiving.cancel(),
        }
    }
};

test "runtime stress: echo over a bounded channel with oneshot replies" {
    const callers = 16;
    const calls = test_support.scaled(20_000, 50);
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    var shared = EchoShared{ .requests = try Requests.init(testing.allocator, 2 * callers) };
    defer shared.requests.deinit();
    var echo = [1]JoinHandle(void){try rt.spawn(EchoTask{ .shared = &shared })};
    var handles: [callers]JoinHandle(void) = undefined;
    for (&handles, 0..) |*h, c| h.* = try rt.spawn(Caller{ .shared = &shared, .base = c * 1_000_000_000, .calls = calls });
    try joinAll(rt, &handles);
    shared.requests.close();
    try joinAll(rt, &echo);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
    try testing.expectEqual(@as(u64, callers * calls), shared.answered.load(.monotonic));
}

// -- Broadcast and Watch ------------------------------------------------------------------------

const BroadcastShared = struct {
    channel: Broadcast(u64),
    sends: u64,
    failures: Atomic(u32) = .init(0),
};

const BroadcastSender = struct {
    pub const Output = void;
    shared: *BroadcastShared,
    next: u64 = 0,

    pub fn poll(self: *BroadcastSender, cx: *Context) Poll(void) {
        // Send in bursts and yield between them, so receivers interleave (and sometimes lag).
        var burst: u32 = 0;
        while (self.next < self.shared.sends) : (burst += 1) {
            if (burst == 16) {
                cx.waker().wakeByRef();
                return .pending;
            }
            _ = self.shared.channel.send(self.next) catch {
                check(&self.shared.failures, false);
                return .{ .ready = {} };
            };
            self.next += 1;
        }
        self.shared.channel.close();
        return .{ .ready = {} };
    }
};

const BroadcastReceiver = struct {
    pub const Output = void;
    shared: *BroadcastShared,
    receiver: Broadcast(u64).Receiver,
    expected: u64 = 0,
    receiving: ?Broadcast(u64).RecvFuture = null,

    pub fn poll(self: *BroadcastReceiver, cx: *Context) Poll(void) {
        while (true) {
            if (self.receiving == null) self.receiving = self.receiver.recv();
            switch (self.receiving.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.receiving = null;
                    const value = result catch |err| switch (err) {
                        error.Lagged => {
                            self.expected += self.receiver.lastLagged();
                            continue;
                        },
                        error.Closed => break,
                    };
                    // The sender sends 0, 1, 2, ...: value == position, exactly.
                    check(&self.shared.failures, value == self.expected);
                    self.expected = value + 1;
                },
            }
        }
        check(&self.shared.failures, self.expected == self.shared.sends);
        return .{ .ready = {} };
    }

    pub fn cancel(self: *BroadcastReceiver) void {
        if (self.receiving) |*r| r.cancel();
        self.receiving = null;
    }
};

test "runtime stress: broadcast receivers see values in order with exact lag counts" {
    const receivers = 6;
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    var shared = BroadcastShared{
        .channel = try Broadcast(u64).init(testing.allocator, 16),
        .sends = test_support.scaled(200_000, 50),
    };
    defer shared.channel.deinit();
    var handles: [receivers + 1]JoinHandle(void) = undefined;
    for (handles[0..receivers]) |*h| {
        h.* = try rt.spawn(BroadcastReceiver{ .shared = &shared, .receiver = shared.channel.subscribe() });
    }
    handles[receivers] = try rt.spawn(BroadcastSender{ .shared = &shared });
    try joinAll(rt, &handles);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
}

const WatchShared = struct {
    channel: Watch([2]u64),
    sends: u64,
    failures: Atomic(u32) = .init(0),
};

const WatchSender = struct {
    pub const Output = void;
    shared: *WatchShared,
    next: u64 = 1,

    pub fn poll(self: *WatchSender, cx: *Context) Poll(void) {
        var burst: u32 = 0;
        while (self.next <= self.shared.sends) : (burst += 1) {
            if (burst == 8) {
                cx.waker().wakeByRef();
                return .pending;
            }
            self.shared.channel.send(.{ self.next, ~self.next }) catch check(&self.shared.failures, false);
            self.next += 1;
        }
        self.shared.channel.close();
        return .{ .ready = {} };
    }
};

const WatchReceiver = struct {
    pub const Output = void;
    shared: *WatchShared,
    receiver: Watch([2]u64).Receiver,
    last: u64 = 0,
    changed: ?Watch([2]u64).ChangedFuture = null,

    pub fn poll(self: *WatchReceiver, cx: *Context) Poll(void) {
        while (true) {
            if (self.changed == null) self.changed = self.receiver.changed();
            switch (self.changed.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.changed = null;
                    result catch break;
                    const value = self.receiver.borrow();
                    check(&self.shared.failures, value[1] == ~value[0]); // Never torn.
                    check(&self.shared.failures, value[0] > self.last); // Moved forward.
                    self.last = value[0];
                },
            }
        }
        check(&self.shared.failures, self.receiver.borrow()[0] == self.shared.sends);
        return .{ .ready = {} };
    }

    pub fn cancel(self: *WatchReceiver) void {
        if (self.changed) |*c| c.cancel();
        self.changed = null;
    }
};

test "runtime stress: watch receivers wake on changes and never see torn values" {
    const receivers = 6;
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    var shared = WatchShared{
        .channel = Watch([2]u64).init(.{ 0, ~@as(u64, 0) }),
        .sends = test_support.scaled(200_000, 50),
    };
    defer shared.channel.deinit();
    var handles: [receivers + 1]JoinHandle(void) = undefined;
    for (handles[0..receivers]) |*h| {
        h.* = try rt.spawn(WatchReceiver{ .shared = &shared, .receiver = shared.channel.subscribe() });
    }
    handles[receivers] = try rt.spawn(WatchSender{ .shared = &shared });
    try joinAll(rt, &handles);
    try testing.expectEqual(@as(u32, 0), shared.failures.load(.monotonic));
}
