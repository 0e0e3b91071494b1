//! `Bounded(T)`: a multi-producer multi-consumer channel of fixed capacity.
//!
//! Data path: Dmitry Vyukov's bounded MPMC queue, in the form crossbeam's `ArrayQueue` and
//! array channel use, so that the logical capacity is honoured exactly (capacity 1 holds one
//! value, capacity 3 holds three) without a division:
//!
//! - `slots` has exactly `capacity` entries, each a value plus a `stamp`.
//! - A position (`head`, `tail`, stamps) packs `index | mark | lap`: the low bits are the
//!   slot index (< capacity), `mark_bit = next_pow2(capacity + 1)` is the "closed" mark (only
//!   ever set in `tail`), and the bits from `one_lap = 2 * mark_bit` upwards count laps. The
//!   position after index `capacity - 1` is index 0 of the next lap.
//! - Slot `i` starts with stamp `i`. A producer at position `p` may write the slot when its
//!   stamp equals `p`; it claims `p` by moving `tail` from `p` to the next position with a
//!   compare-and-swap, writes the value and publishes it by storing stamp `p + 1`. A consumer
//!   at `p` may read when the stamp equals `p + 1`; it claims `p` by moving `head`, reads and
//!   frees the slot for the next lap by storing stamp `p + one_lap`.
//! - Full: the slot at `tail` still carries the previous lap's stamp and `head` is one lap
//!   behind `tail`. Empty: the slot at `head` has stamp `head` and `tail == head`. Between a
//!   claim and the matching stamp store the other side sees neither (`busy`): it spins a
//!   little, and the synchronous `try*` calls then report Full/Empty, which is a valid
//!   outcome because the operation they wait for has not completed yet.
//!
//! Orderings on the data path: stamp stores are release and stamp loads acquire, so a
//! consumer that sees `p + 1` sees the value written before it, and a producer that sees the
//! freed stamp sees the consumer's read completed. Claims (`head`/`tail` compare-and-swaps)
//! are seq_cst because they are the publication events of the waiter protocol below.
//!
//! Waiting: two `WaitQueue`s, one for receivers waiting for values and one for senders
//! waiting for space. Each waiter node lives in the waiting future (`SendFuture`,
//! `RecvFuture`); waiting never allocates.
//!
//! - Ring side: after a successful push (pop) the caller reads the receiver (sender) queue's
//!   length with seq_cst and, if non-zero, wakes the oldest waiter. The claim before it is a
//!   seq_cst read-modify-write: publish, then check.
//! - Waiter side: with its queue locked, the future links its node (seq_cst length increment)
//!   and then re-runs the ring operation, whose emptiness (fullness) decision reads `tail`
//!   (`head`) with seq_cst: register, then re-check.
//! - Both sides store then load, so both are seq_cst: in the single total order either the
//!   ring side's length load follows the link (a waiter is woken) or the re-check follows the
//!   claim (the future sees the value or space and does not sleep). A `busy` re-check (a claim
//!   seen, its stamp not yet) must not sleep either, because that claimant's length load may
//!   precede the link; the future yields (wakes itself) instead.
//! - A woken (notified) waiter has been unlinked by the notifier; it re-runs its operation and
//!   links itself again if it lost the race for the value or space. A notified future that is
//!   cancelled instead passes the notification on to the next waiter.
//! - No lock is held while calling the other side: the ring operations never touch a queue,
//!   and the wake after a successful push/pop happens after the queue lock is released. (An
//!   earlier runtime deadlocked by waking a receiver, under the receiver lock, from a slow path
//!   already holding it.)
//!
//! Send futures keep the value inside themselves until the ring accepts it, and report
//! success only right after writing it into a slot. On `error.Closed` or `cancel` the value is
//! still in the future and `takeBack()` returns it: a value is delivered exactly once or
//! handed back, never lost or duplicated.
//!
//! Handles: `init` allocates the shared state (this struct) and the ring and returns one
//! `Sender` and one `Receiver`. Both are counted (`common.Handles`) and cloned with `clone`,
//! given up with `deinit`, like the halves of Tokio's mpsc around their `Arc` (and, for
//! receivers, async-channel's). When the last sender goes the channel closes: receivers drain
//! what is queued and then get `error.Closed`. When the last receiver goes the channel closes
//! and drains itself: sends fail with `error.Closed` and hand the value back, and the values
//! left in the ring are popped and released (owned values, `common.Ownership`; plain data is
//! dropped), as Tokio's receiver drains its channel. The last handle of either kind frees the
//! state, releasing any value that a send in flight wrote after that drain. A future refers to the state, not to its handle: the
//! handle may move, but it must stay alive (not `deinit`) until its futures complete or are
//! cancelled; the last handle's `deinit` asserts that no future is still waiting.
//!
//! Close: `close()` (from either side, or by the last handle of a side) sets the mark bit in
//! `tail` (seq_cst) and wakes every waiter. Senders then get `error.Closed`; receivers drain
//! what is left and then get `error.Closed`.

const std = @import("std");
const Allocator = std.mem.Allocator;
const assert = std.debug.assert;
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Waker = @import("../Waker.zig");
const budget = @import("../budget.zig");
const WaitQueue = @import("WaitQueue.zig");
const common = @import("common.zig");
const hook = @import("../hook.zig");
const Backoff = common.Backoff;
const Padded = common.Padded;

pub fn Bounded(comptime T: type) type {
    return struct {
        const Self = @This();
        const Values = common.Ownership(T);

        /// Largest capacity `init` accepts (positions need two bits above the index bits).
        pub const capacity_limit: usize = std.math.maxInt(usize) >> 3;

        const Slot = struct {
            stamp: std.atomic.Value(usize),
            value: T,
        };

        const PushResult = enum { ok, full, closed, busy };
        const PopResult = enum { ok, empty, closed, busy };

        // Read-only after `init`.
        slots: []Slot,
        mark_bit: usize,
        one_lap: usize,
        allocator: Allocator,
        /// Senders, receivers and all handles (see the module comment).
        handles: common.Handles,

        /// Next position to read (written by consumers).
        head: Padded(std.atomic.Value(usize)),
        /// Next position to write, plus the closed mark (written by producers and `close`).
        tail: Padded(std.atomic.Value(usize)),
        /// Receivers waiting for a value.
        receivers: Padded(WaitQueue),
        /// Senders waiting for space.
        senders: Padded(WaitQueue),

        /// What `init` returns: destructure it as `const tx, const rx = try ...init(...)`.
        pub const Pair = struct { Sender, Receiver };

        /// Allocates the shared state and the ring (the only allocations the channel ever
        /// makes) and returns the first sender and receiver. Panics if `capacity` is 0 or above
        /// `capacity_limit`.
        pub fn init(allocator: Allocator, buffer_capacity: usize) Allocator.Error!Pair {
            if (buffer_capacity == 0 or buffer_capacity > capacity_limit) {
                std.debug.panic("Bounded.init: capacity {d} outside 1..{d}", .{ buffer_capacity, capacity_limit });
            }
            const mark_bit = std.math.ceilPowerOfTwoAssert(usize, buffer_capacity + 1);
            const self = try allocator.create(Self);
            errdefer allocator.destroy(self);
            const slots = try allocator.alloc(Slot, buffer_capacity);
            for (slots, 0..) |*slot, index| slot.stamp = .init(index);
            self.* = .{
                .slots = slots,
                .mark_bit = mark_bit,
                .one_lap = mark_bit * 2,
                .allocator = allocator,
                .handles = .init(1, 1),
                .head = .{ .value = .init(0) },
                .tail = .{ .value = .init(0) },
                .receivers = .{ .value = .{} },
                .senders = .{ .value = .{} },
            };
            return .{ .{ .channel = self }, .{ .channel = self } };
        }

        /// Called by the last handle: no other thread refers to the state any more.
        fn destroy(self: *Self) void {
            assert(self.isClosed()); // The last sender or receiver closed it.
            assert(self.receivers.value.isEmpty()); // A future outlived its handle.
            assert(self.senders.value.isEmpty());
            self.releaseBuffered();
            const allocator = self.allocator;
            allocator.free(self.slots);
            allocator.destroy(self);
        }

        /// Pops every buffered value and releases it (owned values; plain data is dropped),
        /// as Tokio's receiver drains its channel when it goes. The channel is closed: no new
        /// value can be claimed; a send that claimed its slot before the close may still be
        /// writing it, and its value is released by the last handle instead.
        fn releaseBuffered(self: *Self) void {
            var remaining = self.slots.len; // Bounded: no value can be added meanwhile.
            while (remaining > 0) : (remaining -= 1) {
                var value: T = undefined;
                if (self.popRaw(&value) != .ok) return;
                Values.release(value);
            }
        }

        /// Closes the channel: senders fail from now on, receivers drain and then fail.
        /// Wakes every waiting future. Idempotent.
        fn close(self: *Self) void {
            // seq_cst: a position change like the claims; waiters re-check `tail` under their
            // queue lock, which this thread takes below, so they see the mark or get woken.
            const previous = self.tail.value.fetchOr(self.mark_bit, .seq_cst);
            if (previous & self.mark_bit != 0) return;
            self.senders.value.notifyAll();
            self.receivers.value.notifyAll();
        }

        fn isClosed(self: *const Self) bool {
            return self.tail.value.load(.seq_cst) & self.mark_bit != 0;
        }

        /// The sending half. Copy it only through `clone`; `deinit` it exactly once.
        pub const Sender = struct {
            channel: *Self,

            /// Another sender of the same channel.
            pub fn clone(self: *const Sender) Sender {
                self.channel.handles.addSender();
                return .{ .channel = self.channel };
            }

            /// Gives up this sender. The last sender closes the channel (receivers drain, then
            /// get `error.Closed`); the last handle frees it. No future made from this handle
            /// may still be pending.
            pub fn deinit(self: *Sender) void {
                const channel = self.channel;
                self.* = undefined;
                if (channel.handles.dropSender()) channel.close();
                if (channel.handles.release()) channel.destroy();
            }

            /// Sends without waiting. On error the value was not taken (the caller keeps it).
            pub fn trySend(self: *const Sender, value: T) error{ Full, Closed }!void {
                return self.channel.trySend(value);
            }

            /// A future that sends `value`, waiting for space. Output `error{Closed}!void`; on
            /// `error.Closed` or after `cancel`, `takeBack()` returns the value.
            pub fn send(self: *const Sender, value: T) SendFuture {
                return .{ .channel = self.channel, .value = value };
            }

            /// Closes the channel for every handle (async-channel's `close`). Idempotent.
            pub fn close(self: *const Sender) void {
                self.channel.close();
            }

            /// True once closed (by a `close`, the last sender or the last receiver).
            pub fn isClosed(self: *const Sender) bool {
                return self.channel.isClosed();
            }

            pub fn len(self: *const Sender) usize {
                return self.channel.len();
            }

            pub fn capacity(self: *const Sender) usize {
                return self.channel.slots.len;
            }

            /// Receivers alive now (a snapshot).
            pub fn receiverCount(self: *const Sender) usize {
                return self.channel.handles.receiverCount();
            }
        };

        /// The receiving half. Copy it only through `clone`; `deinit` it exactly once.
        pub const Receiver = struct {
            channel: *Self,

            /// Another receiver of the same channel (values go to one receiver each).
            pub fn clone(self: *const Receiver) Receiver {
                self.channel.handles.addReceiver();
                return .{ .channel = self.channel };
            }

            /// Gives up this receiver. The last receiver closes the channel (senders fail and
            /// keep their values) and releases the values still buffered; the last handle
            /// frees it. No future made from this handle may still be pending.
            pub fn deinit(self: *Receiver) void {
                const channel = self.channel;
                self.* = undefined;
                if (channel.handles.dropReceiver()) {
                    channel.close();
                    channel.releaseBuffered();
                }
                if (channel.handles.release()) channel.destroy();
            }

            /// Receives without waiting. After the close, returns the values still buffered
            /// and then `error.Closed`.
            pub fn tryRecv(self: *const Receiver) error{ Empty, Closed }!T {
                return self.channel.tryRecv();
            }

            /// A future that receives a value, waiting for one. Output `error{Closed}!T`.
            pub fn recv(self: *const Receiver) RecvFuture {
                return .{ .channel = self.channel };
            }

            /// Closes the channel (Tokio's `Receiver::close`): sends fail from now on; the
            /// values already buffered can still be received. Idempotent.
            pub fn close(self: *const Receiver) void {
                self.channel.close();
            }

            pub fn isClosed(self: *const Receiver) bool {
                return self.channel.isClosed();
            }

            pub fn len(self: *const Receiver) usize {
                return self.channel.len();
            }

            pub fn capacity(self: *const Receiver) usize {
                return self.channel.slots.len;
            }

            /// Senders alive now (a snapshot).
            pub fn senderCount(self: *const Receiver) usize {
                return self.channel.handles.senderCount();
            }
        };

        fn trySend(self: *Self, value: T) error{ Full, Closed }!void {
            switch (self.pushRaw(&value)) {
                .ok => self.wakeReceiver(),
                .full, .busy => return error.Full,
                .closed => return error.Closed,
            }
        }

        fn tryRecv(self: *Self) error{ Empty, Closed }!T {
            var value: T = undefined;
            switch (self.popRaw(&value)) {
                .ok => {
                    self.wakeSender();
                    return value;
                },
                .empty, .busy => return error.Empty,
                .closed => return error.Closed,
            }
        }

        /// Number of buffered values (a snapshot; exact when no operation is in flight).
        fn len(self: *const Self) usize {
            var backoff = Backoff{};
            while (true) {
                // seq_cst loads: `head` and `tail` read as one consistent snapshot when `tail`
                // is unchanged across the `head` load.
                const tail = self.tail.value.load(.seq_cst);
                const head = self.head.value.load(.seq_cst);
                if (self.tail.value.load(.seq_cst) == tail) {
                    const head_index = head & (self.mark_bit - 1);
                    const tail_index = tail & (self.mark_bit - 1);
                    if (head_index < tail_index) return tail_index - head_index;
                    if (head_index > tail_index) return self.slots.len - head_index + tail_index;
                    return if ((tail & ~self.mark_bit) == head) 0 else self.slots.len;
                }
                backoff.spin();
            }
        }

        fn wakeReceiver(self: *Self) void {
            if (self.receivers.value.hasWaiters()) self.receivers.value.notifyOne();
        }

        fn wakeSender(self: *Self) void {
            if (self.senders.value.hasWaiters()) self.senders.value.notifyOne();
        }

        fn nextPosition(self: *const Self, position: usize) usize {
            const index = position & (self.mark_bit - 1);
            if (index + 1 < self.slots.len) return position + 1;
            const lap = position & ~(self.one_lap - 1);
            return lap +% self.one_lap;
        }

        /// The ring's push. Never touches a wait queue (callers may hold one's lock).
        inline fn pushRaw(self: *Self, value: *const T) PushResult {
            var backoff = Backoff{};
            var tail = self.tail.value.load(.monotonic);
            while (true) {
                if (tail & self.mark_bit != 0) return .closed;
                const slot = &self.slots[tail & (self.mark_bit - 1)];
                // Acquire: pairs with the consumer's release that freed the slot (its read of
                // the previous value happens before our write).
                const stamp = slot.stamp.load(.acquire);
                if (stamp == tail) {
                    // seq_cst: the claim is the publication event of the waiter protocol.
                    if (self.tail.value.cmpxchgWeak(tail, self.nextPosition(tail), .seq_cst, .monotonic)) |actual| {
                        tail = actual;
                        backoff.spin();
                        continue;
                    }
                    slot.value = value.*;
                    // Release: publishes the value to the consumer's acquire stamp load.
                    slot.stamp.store(tail + 1, .release);
                    return .ok;
                }
                if (stamp +% self.one_lap == tail + 1) {
                    // The slot holds the previous lap's value. seq_cst: the re-check half of
                    // the sender-waiter protocol (crossbeam has a seq_cst fence here).
                    const head = self.head.value.load(.seq_cst);
                    if (head +% self.one_lap == tail) return .full;
                    // A consumer claimed the slot but has not freed it yet.
                }
                // Otherwise `tail` is stale (another producer claimed it: retry at once) or a
                // consumer is between its claim and its stamp store (wait, boundedly).
                const reloaded = self.tail.value.load(.monotonic);
                if (reloaded == tail) {
                    if (backoff.isCompleted()) return .busy;
                    backoff.snooze();
                }
                tail = self.tail.value.load(.monotonic);
            }
        }

        /// The ring's pop. Never touches a wait queue (callers may hold one's lock).
        inline fn popRaw(self: *Self, out: *T) PopResult {
            var backoff = Backoff{};
            var head = self.head.value.load(.monotonic);
            while (true) {
                const slot = &self.slots[head & (self.mark_bit - 1)];
                // Acquire: pairs with the producer's release that published the value.
                const stamp = slot.stamp.load(.acquire);
                if (stamp == head + 1) {
                    // seq_cst: the claim is the publication event of the waiter protocol.
                    if (self.head.value.cmpxchgWeak(head, self.nextPosition(head), .seq_cst, .monotonic)) |actual| {
                        head = actual;
                        backoff.spin();
                        continue;
                    }
                    out.* = slot.value;
                    // Release: our read completes before the next lap's producer writes.
                    slot.stamp.store(head +% self.one_lap, .release);
                    return .ok;
                }
                if (stamp == head) {
                    // seq_cst: the re-check half of the receiver-waiter protocol.
                    const tail = self.tail.value.load(.seq_cst);
                    if ((tail & ~self.mark_bit) == head) {
                        return if (tail & self.mark_bit != 0) .closed else .empty;
                    }
                    // A producer claimed the slot but has not published it yet.
                }
                // Otherwise `head` is stale (another consumer took it: retry at once) or a
                // producer is between its claim and its stamp store (wait, boundedly).
                const reloaded = self.head.value.load(.monotonic);
                if (reloaded == head) {
                    if (backoff.isCompleted()) return .busy;
                    backoff.snooze();
                }
                head = self.head.value.load(.monotonic);
            }
        }

        pub const SendFuture = struct {
            channel: *Self,
            value: T,
            waiter: WaitQueue.Waiter = .{},
            phase: Phase = .sending,

            const Phase = enum {
                /// Not finished; the value is here.
                sending,
                /// Finished successfully; the value is in the channel.
                delivered,
                /// Finished with `error.Closed` or cancelled; the value is here for `takeBack`.
                returned,
                /// `takeBack` returned the value.
                taken,
            };

            pub const Output = error{Closed}!void;

            pub fn poll(self: *SendFuture, cx: *Context) Poll(Output) {
                assert(self.phase == .sending); // Not polled after completion or cancel.
                if (!budget.proceed(cx)) return .pending;
                if (self.waiter.load() != .linked) {
                    self.waiter.reclaim();
                    switch (self.channel.pushRaw(&self.value)) {
                        .ok => return self.finishDelivered(),
                        .closed => return self.finishClosed(),
                        .busy => return common.yieldNow(cx, Output),
                        .full => {},
                    }
                    hook.reached(.channel_before_register);
                }
                return self.pollRegistered(cx);
            }

            /// Links (or refreshes) the waiter, then re-checks with the queue locked.
            fn pollRegistered(self: *SendFuture, cx: *Context) Poll(Output) {
                const queue = &self.channel.senders.value;
                var removed: ?Waker = null;
                queue.lock();
                const replaced = queue.registerLocked(&self.waiter, cx.waker());
                const result = self.channel.pushRaw(&self.value);
                if (result != .full) removed = queue.removeLocked(&self.waiter);
                queue.unlock();
                if (replaced) |w| w.drop();
                if (removed) |w| w.drop();
                switch (result) {
                    .ok => return self.finishDelivered(),
                    .closed => return self.finishClosed(),
                    .busy => return common.yieldNow(cx, Output),
                    .full => {
                        budget.refund();
                        return .pending;
                    },
                }
            }

            fn finishDelivered(self: *SendFuture) Poll(Output) {
                self.phase = .delivered;
                self.channel.wakeReceiver();
                return .{ .ready = {} };
            }

            fn finishClosed(self: *SendFuture) Poll(Output) {
                self.phase = .returned;
                return .{ .ready = error.Closed };
            }

            /// Unlinks the waiter; the value stays here for `takeBack`. Idempotent.
            pub fn cancel(self: *SendFuture) void {
                if (self.phase == .sending) self.phase = .returned;
                if (self.channel.senders.value.cancel(&self.waiter)) {
                    // We were woken for space we will not use: pass it on.
                    self.channel.wakeSender();
                }
            }

            /// The value, if it was not delivered (the future completed with `error.Closed`,
            /// was cancelled, or is cancelled by this call). Null once delivered or taken.
            pub fn takeBack(self: *SendFuture) ?T {
                self.cancel();
                if (self.phase != .returned) return null;
                self.phase = .taken;
                return self.value;
            }
        };

        pub const RecvFuture = struct {
            channel: *Self,
            waiter: WaitQueue.Waiter = .{},
            finished: bool = false,

            pub const Output = error{Closed}!T;

            pub fn poll(self: *RecvFuture, cx: *Context) Poll(Output) {
                assert(!self.finished); // Not polled after completion or cancel.
                if (!budget.proceed(cx)) return .pending;
                var value: T = undefined;
                if (self.waiter.load() != .linked) {
                    self.waiter.reclaim();
                    switch (self.channel.popRaw(&value)) {
                        .ok => return self.finishValue(value),
                        .closed => return self.finishClosed(),
                        .busy => return common.yieldNow(cx, Output),
                        .empty => {},
                    }
                    hook.reached(.channel_before_register);
                }
                return self.pollRegistered(cx);
            }

            fn pollRegistered(self: *RecvFuture, cx: *Context) Poll(Output) {
                const queue = &self.channel.receivers.value;
                var removed: ?Waker = null;
                var value: T = undefined;
                queue.lock();
                const replaced = queue.registerLocked(&self.waiter, cx.waker());
                const result = self.channel.popRaw(&value);
                if (result != .empty) removed = queue.removeLocked(&self.waiter);
                queue.unlock();
                if (replaced) |w| w.drop();
                if (removed) |w| w.drop();
                switch (result) {
                    .ok => return self.finishValue(value),
                    .closed => return self.finishClosed(),
                    .busy => return common.yieldNow(cx, Output),
                    .empty => {
                        budget.refund();
                        return .pending;
                    },
                }
            }

            fn finishValue(self: *RecvFuture, value: T) Poll(Output) {
                self.finished = true;
                self.channel.wakeSender();
                return .{ .ready = value };
            }

            fn finishClosed(self: *RecvFuture) Poll(Output) {
                self.finished = true;
                return .{ .ready = error.Closed };
            }

            /// Unlinks the waiter. Idempotent.
            pub fn cancel(self: *RecvFuture) void {
                self.finished = true;
                if (self.channel.receivers.value.cancel(&self.waiter)) {
                    // We were woken for a value we will not take: pass it on.
                    self.channel.wakeReceiver();
                }
            }
        };
    };
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

const testing = std.testing;

const pollWith = common.pollWith;

test "bounded: try paths, FIFO order, full and empty" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 4);
    defer tx.deinit();
    defer rx.deinit();
    try testing.expectError(error.Empty, rx.tryRecv());
    for (0..4) |i| try tx.trySend(@intCast(i));
    try testing.expectError(error.Full, tx.trySend(99));
    try testing.expectEqual(@as(usize, 4), rx.len());
    for (0..4) |i| try testing.expectEqual(@as(u32, @intCast(i)), try rx.tryRecv());
    try testing.expectError(error.Empty, rx.tryRecv());
    try testing.expectEqual(@as(usize, 0), rx.len());
}

test "bounded: capacity is honoured exactly across many laps" {
    for ([_]usize{ 1, 2, 3, 5, 7, 8, 100 }) |buffer_capacity| {
        var tx, var rx = try Bounded(u64).init(testing.allocator, buffer_capacity);
        defer tx.deinit();
        defer rx.deinit();
        var next_in: u64 = 0;
        var next_out: u64 = 0;
        // Refill to full, then drain a varying amount, so that head and tail cross the lap
        // boundary at every index.
        for (0..buffer_capacity * 5 + 3) |round| {
            while (tx.trySend(next_in)) |_| next_in += 1 else |err| try testing.expectEqual(error.Full, err);
            try testing.expectEqual(buffer_capacity, next_in - next_out);
            try testing.expectEqual(buffer_capacity, rx.len());
            for (0..round % buffer_capacity + 1) |_| {
                try testing.expectEqual(next_out, try rx.tryRecv());
                next_out += 1;
            }
        }
        while (next_out < next_in) : (next_out += 1) try testing.expectEqual(next_out, try rx.tryRecv());
        try testing.expectError(error.Empty, rx.tryRecv());
        try testing.expectEqual(@as(usize, 0), rx.len());
    }
}

test "bounded: capacity 1 round trips" {
    var tx, var rx = try Bounded(u8).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    for (0..1000) |i| {
        try tx.trySend(@truncate(i));
        try testing.expectError(error.Full, tx.trySend(0));
        try testing.expectEqual(@as(u8, @truncate(i)), try rx.tryRecv());
    }
}

test "bounded: close drains values, then reports Closed on both sides" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 3);
    defer tx.deinit();
    defer rx.deinit();
    try tx.trySend(1);
    try tx.trySend(2);
    tx.close();
    tx.close();
    try testing.expect(tx.isClosed());
    try testing.expectError(error.Closed, tx.trySend(3));
    var send = tx.send(4);
    try testing.expectError(error.Closed, future.pollOnce(&send).ready);
    try testing.expectEqual(@as(?u32, 4), send.takeBack());
    try testing.expectEqual(@as(?u32, null), send.takeBack());
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());
    var recv = rx.recv();
    try testing.expectEqual(@as(u32, 2), try future.pollOnce(&recv).ready);
    try testing.expectError(error.Closed, rx.tryRecv());
    var recv_closed = rx.recv();
    try testing.expectError(error.Closed, future.pollOnce(&recv_closed).ready);
}

test "bounded: pending recv is woken by a send and gets the value" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 2);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try tx.trySend(7);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(u32, 7), try pollWith(&recv, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // Only our own reference.
}

test "bounded: pending send is woken by a recv and its value is delivered" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try tx.trySend(1);
    var send = tx.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    // The value is written only when the woken future runs again.
    try testing.expectError(error.Empty, rx.tryRecv());
    _ = try pollWith(&send, &waker).ready;
    try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    try testing.expectEqual(@as(?u32, null), send.takeBack());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: a woken sender that loses the space waits again and still delivers" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try tx.trySend(1);
    var send = tx.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    _ = try rx.tryRecv(); // Wakes `send` ...
    try tx.trySend(3); // ... but another sender takes the space first.
    try testing.expect(pollWith(&send, &waker) == .pending); // Registered again, value kept.
    try testing.expectEqual(@as(u32, 3), try rx.tryRecv());
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    _ = try pollWith(&send, &waker).ready;
    try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: cancel of a pending send hands the value back and unlinks" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try tx.trySend(1);
    var send = tx.send(42);
    try testing.expect(pollWith(&send, &waker) == .pending);
    send.cancel();
    send.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(?u32, 42), send.takeBack());
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectError(error.Empty, rx.tryRecv());
    // Cancel before the first poll is allowed and also hands the value back.
    var fresh = tx.send(5);
    try testing.expectEqual(@as(?u32, 5), fresh.takeBack());
}

test "bounded: cancel of a pending recv unlinks; cancelled notified waiters pass it on" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 4);
    defer tx.deinit();
    defer rx.deinit();
    var first_counter = Waker.Counting{};
    var second_counter = Waker.Counting{};
    const first_waker = first_counter.waker();
    defer first_waker.drop();
    const second_waker = second_counter.waker();
    defer second_waker.drop();

    var cancelled = rx.recv();
    try testing.expect(pollWith(&cancelled, &first_waker) == .pending);
    cancelled.cancel();
    try tx.trySend(1); // Nobody is waiting any more.
    try testing.expectEqual(@as(u32, 0), first_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());

    var first = rx.recv();
    var second = rx.recv();
    try testing.expect(pollWith(&first, &first_waker) == .pending);
    try testing.expect(pollWith(&second, &second_waker) == .pending);
    try tx.trySend(2); // Notifies `first` (FIFO).
    try testing.expectEqual(@as(u32, 1), first_counter.wakeCount());
    try testing.expectEqual(@as(u32, 0), second_counter.wakeCount());
    first.cancel(); // Woken but not taking the value: the wake goes to `second`.
    try testing.expectEqual(@as(u32, 1), second_counter.wakeCount());
    try testing.expectEqual(@as(u32, 2), try pollWith(&second, &second_waker).ready);
    try testing.expectEqual(@as(i32, 1), first_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), second_counter.outstanding());
}

test "bounded: close wakes waiting senders and receivers" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    tx.close();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);

    var tx2, var rx2 = try Bounded(u32).init(testing.allocator, 1);
    defer tx2.deinit();
    defer rx2.deinit();
    try tx2.trySend(1);
    var send = tx2.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    tx2.close();
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&send, &waker).ready);
    try testing.expectEqual(@as(?u32, 2), send.takeBack());
    try testing.expectEqual(@as(u32, 1), try rx2.tryRecv()); // Drained after close.
    try testing.expectError(error.Closed, rx2.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: waker replacement wakes only the newest waker" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &old_waker) == .pending);
    try testing.expect(pollWith(&recv, &old_waker) == .pending); // Same waker: kept.
    try testing.expectEqual(@as(i32, 2), old_counter.outstanding());
    try testing.expect(pollWith(&recv, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding()); // Old clone dropped.
    try tx.trySend(3);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    try testing.expectEqual(@as(u32, 3), try pollWith(&recv, &new_waker).ready);

    try tx.trySend(4);
    var send = tx.send(5);
    try testing.expect(pollWith(&send, &old_waker) == .pending);
    try testing.expect(pollWith(&send, &new_waker) == .pending);
    _ = try rx.tryRecv();
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 2), new_counter.wakeCount());
    _ = try pollWith(&send, &new_waker).ready;
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
}

/// Actions the hook runs inside the check-then-register window.
fn HookAction(comptime Channel: type, comptime what: enum { send, recv, close }) type {
    return struct {
        fn run(context: *anyopaque) void {
            const ch: *Channel = @ptrCast(@alignCast(context));
            switch (what) {
                .send => ch.trySend(77) catch unreachable,
                .recv => _ = ch.tryRecv() catch unreachable,
                .close => ch.close(),
            }
        }
    };
}

test "bounded: a value arriving between the empty check and registration is not missed" {
    const Ch = Bounded(u32);
    var tx, var rx = try Ch.init(testing.allocator, 2);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    hook.arm(.channel_before_register, @as(*anyopaque, tx.channel), HookAction(Ch, .send).run);
    // The send in the window sees no waiter (and wakes nobody); the re-check must find it.
    try testing.expectEqual(@as(u32, 77), try pollWith(&recv, &waker).ready);
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: space freed between the full check and registration is not missed" {
    const Ch = Bounded(u32);
    var tx, var rx = try Ch.init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try tx.trySend(1);
    var send = tx.send(2);
    hook.arm(.channel_before_register, @as(*anyopaque, tx.channel), HookAction(Ch, .recv).run);
    _ = try pollWith(&send, &waker).ready;
    try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: close between the check and registration is not missed" {
    const Ch = Bounded(u32);
    var tx, var rx = try Ch.init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    hook.arm(.channel_before_register, @as(*anyopaque, tx.channel), HookAction(Ch, .close).run);
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);

    var tx2, var rx2 = try Ch.init(testing.allocator, 1);
    defer tx2.deinit();
    defer rx2.deinit();
    try tx2.trySend(1);
    var send = tx2.send(2);
    hook.arm(.channel_before_register, @as(*anyopaque, tx2.channel), HookAction(Ch, .close).run);
    try testing.expectError(error.Closed, pollWith(&send, &waker).ready);
    try testing.expectEqual(@as(?u32, 2), send.takeBack());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: an exhausted budget yields before doing anything" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    try tx.trySend(1);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    const scope = budget.Scope.begin(0);
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    scope.end();
    try testing.expectEqual(@as(usize, 1), rx.len()); // Nothing was taken.
    try testing.expectEqual(@as(u32, 1), try pollWith(&recv, &waker).ready);
}

test "bounded: values with payload are copied intact" {
    const Message = struct { id: u64, payload: [40]u8 };
    var tx, var rx = try Bounded(Message).init(testing.allocator, 3);
    defer tx.deinit();
    defer rx.deinit();
    for (0..30) |i| {
        var message = Message{ .id = i, .payload = undefined };
        @memset(&message.payload, @truncate(i));
        try tx.trySend(message);
        const out = try rx.tryRecv();
        try testing.expectEqual(@as(u64, i), out.id);
        for (out.payload) |b| try testing.expectEqual(@as(u8, @truncate(i)), b);
    }
}

test "bounded: the last sender closes; receivers drain, then get Closed; a waiting receiver is woken" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 4);
    defer rx.deinit();
    var tx2 = tx.clone();
    try testing.expectEqual(@as(usize, 2), rx.senderCount());
    try tx.trySend(1);
    tx.deinit();
    try testing.expect(!rx.isClosed()); // One sender left.
    try tx2.trySend(2);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());
    try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    tx2.deinit(); // The last sender: closes and wakes the waiting receiver.
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);
    try testing.expectError(error.Closed, rx.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: values queued before the last sender left are still received" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 4);
    defer rx.deinit();
    try tx.trySend(7);
    try tx.trySend(8);
    tx.deinit();
    try testing.expect(rx.isClosed());
    var recv = rx.recv();
    try testing.expectEqual(@as(u32, 7), try future.pollOnce(&recv).ready);
    try testing.expectEqual(@as(u32, 8), try rx.tryRecv());
    try testing.expectError(error.Closed, rx.tryRecv());
}

test "bounded: the last receiver closes; sends fail and hand the value back; a waiting sender is woken" {
    var tx, var rx = try Bounded(u32).init(testing.allocator, 1);
    defer tx.deinit();
    var rx2 = rx.clone();
    try testing.expectEqual(@as(usize, 2), tx.receiverCount());
    rx.deinit();
    try tx.trySend(1); // A receiver is left.
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var send = tx.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    rx2.deinit(); // The last receiver: closes, wakes the sender.
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&send, &waker).ready);
    try testing.expectEqual(@as(?u32, 2), send.takeBack());
    try testing.expectError(error.Closed, tx.trySend(3));
    try testing.expect(tx.isClosed());
    try testing.expectEqual(@as(usize, 0), tx.len()); // The buffered 1 was drained.
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: owned values left in the channel are released exactly once" {
    const RcBuffer = @import("../RcBuffer.zig");
    const buffer = try RcBuffer.init(testing.allocator, "payload");
    defer buffer.release();
    {
        // The last receiver goes first: it releases what is buffered.
        var tx, var rx = try Bounded(*RcBuffer).init(testing.allocator, 4);
        for (0..3) |_| try tx.trySend(buffer.clone());
        try testing.expectEqual(@as(usize, 4), buffer.refCount());
        rx.deinit();
        try testing.expectEqual(@as(usize, 1), buffer.refCount());
        const extra = buffer.clone();
        try testing.expectError(error.Closed, tx.trySend(extra)); // Handed back: ours.
        extra.release();
        tx.deinit();
    }
    {
        // The last sender goes first; the last handle (the receiver) frees the rest.
        var tx, var rx = try Bounded(*RcBuffer).init(testing.allocator, 4);
        for (0..4) |_| try tx.trySend(buffer.clone());
        tx.deinit();
        const received = try rx.tryRecv();
        received.release();
        try testing.expectEqual(@as(usize, 4), buffer.refCount());
        rx.deinit();
        try testing.expectEqual(@as(usize, 1), buffer.refCount());
    }
}
