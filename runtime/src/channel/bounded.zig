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
//! Close: `close()` sets the mark bit in `tail` (seq_cst) and wakes every waiter. Senders then
//! get `error.Closed`; receivers drain what is left and then get `error.Closed`.

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
const Backoff = common.Backoff;
const Padded = common.Padded;

pub fn Bounded(comptime T: type) type {
    return struct {
        const Self = @This();

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

        /// Next position to read (written by consumers).
        head: Padded(std.atomic.Value(usize)),
        /// Next position to write, plus the closed mark (written by producers and `close`).
        tail: Padded(std.atomic.Value(usize)),
        /// Receivers waiting for a value.
        receivers: Padded(WaitQueue),
        /// Senders waiting for space.
        senders: Padded(WaitQueue),

        /// Allocates the ring (the only allocation the channel ever makes). The channel is
        /// returned by value: keep it at a stable address while it is in use (futures and
        /// other threads refer to it by pointer). Panics if `capacity` is 0 or above
        /// `capacity_limit`.
        pub fn init(allocator: Allocator, buffer_capacity: usize) Allocator.Error!Self {
            if (buffer_capacity == 0 or buffer_capacity > capacity_limit) {
                std.debug.panic("Bounded.init: capacity {d} outside 1..{d}", .{ buffer_capacity, capacity_limit });
            }
            const mark_bit = std.math.ceilPowerOfTwoAssert(usize, buffer_capacity + 1);
            const slots = try allocator.alloc(Slot, buffer_capacity);
            for (slots, 0..) |*slot, index| slot.stamp = .init(index);
            return .{
                .slots = slots,
                .mark_bit = mark_bit,
                .one_lap = mark_bit * 2,
                .allocator = allocator,
                .head = .{ .value = .init(0) },
                .tail = .{ .value = .init(0) },
                .receivers = .{ .value = .{} },
                .senders = .{ .value = .{} },
            };
        }

        /// Frees the ring. No future may be pending on the channel. Values still buffered are
        /// discarded (drain them first if they own resources).
        pub fn deinit(self: *Self) void {
            assert(self.receivers.value.isEmpty());
            assert(self.senders.value.isEmpty());
            self.allocator.free(self.slots);
            self.* = undefined;
        }

        pub fn capacity(self: *const Self) usize {
            return self.slots.len;
        }

        /// Sends without waiting. On error the value was not taken (the caller keeps it).
        pub fn trySend(self: *Self, value: T) error{ Full, Closed }!void {
            switch (self.pushRaw(&value)) {
                .ok => self.wakeReceiver(),
                .full, .busy => return error.Full,
                .closed => return error.Closed,
            }
        }

        /// Receives without waiting. After `close`, returns the values still buffered and
        /// then `error.Closed`.
        pub fn tryRecv(self: *Self) error{ Empty, Closed }!T {
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

        /// A future that sends `value`, waiting for space. Output `error{Closed}!void`; on
        /// `error.Closed` or after `cancel`, `takeBack()` returns the value.
        pub fn send(self: *Self, value: T) SendFuture {
            return .{ .channel = self, .value = value };
        }

        /// A future that receives a value, waiting for one. Output `error{Closed}!T`.
        pub fn recv(self: *Self) RecvFuture {
            return .{ .channel = self };
        }

        /// Closes the channel: senders fail from now on, receivers drain and then fail.
        /// Wakes every waiting future. Idempotent.
        pub fn close(self: *Self) void {
            // seq_cst: a position change like the claims; waiters re-check `tail` under their
            // queue lock, which this thread takes below, so they see the mark or get woken.
            const previous = self.tail.value.fetchOr(self.mark_bit, .seq_cst);
            if (previous & self.mark_bit != 0) return;
            self.senders.value.notifyAll();
            self.receivers.value.notifyAll();
        }

        pub fn isClosed(self: *const Self) bool {
            return self.tail.value.load(.seq_cst) & self.mark_bit != 0;
        }

        /// Number of buffered values (a snapshot; exact when no operation is in flight).
        pub fn len(self: *const Self) usize {
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
                    common.hook.beforeRegister();
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
                    common.hook.beforeRegister();
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
    var ch = try Bounded(u32).init(testing.allocator, 4);
    defer ch.deinit();
    try testing.expectError(error.Empty, ch.tryRecv());
    for (0..4) |i| try ch.trySend(@intCast(i));
    try testing.expectError(error.Full, ch.trySend(99));
    try testing.expectEqual(@as(usize, 4), ch.len());
    for (0..4) |i| try testing.expectEqual(@as(u32, @intCast(i)), try ch.tryRecv());
    try testing.expectError(error.Empty, ch.tryRecv());
    try testing.expectEqual(@as(usize, 0), ch.len());
}

test "bounded: capacity is honoured exactly across many laps" {
    for ([_]usize{ 1, 2, 3, 5, 7, 8, 100 }) |buffer_capacity| {
        var ch = try Bounded(u64).init(testing.allocator, buffer_capacity);
        defer ch.deinit();
        var next_in: u64 = 0;
        var next_out: u64 = 0;
        // Refill to full, then drain a varying amount, so that head and tail cross the lap
        // boundary at every index.
        for (0..buffer_capacity * 5 + 3) |round| {
            while (ch.trySend(next_in)) |_| next_in += 1 else |err| try testing.expectEqual(error.Full, err);
            try testing.expectEqual(buffer_capacity, next_in - next_out);
            try testing.expectEqual(buffer_capacity, ch.len());
            for (0..round % buffer_capacity + 1) |_| {
                try testing.expectEqual(next_out, try ch.tryRecv());
                next_out += 1;
            }
        }
        while (next_out < next_in) : (next_out += 1) try testing.expectEqual(next_out, try ch.tryRecv());
        try testing.expectError(error.Empty, ch.tryRecv());
        try testing.expectEqual(@as(usize, 0), ch.len());
    }
}

test "bounded: capacity 1 round trips" {
    var ch = try Bounded(u8).init(testing.allocator, 1);
    defer ch.deinit();
    for (0..1000) |i| {
        try ch.trySend(@truncate(i));
        try testing.expectError(error.Full, ch.trySend(0));
        try testing.expectEqual(@as(u8, @truncate(i)), try ch.tryRecv());
    }
}

test "bounded: close drains values, then reports Closed on both sides" {
    var ch = try Bounded(u32).init(testing.allocator, 3);
    defer ch.deinit();
    try ch.trySend(1);
    try ch.trySend(2);
    ch.close();
    ch.close();
    try testing.expect(ch.isClosed());
    try testing.expectError(error.Closed, ch.trySend(3));
    var send = ch.send(4);
    try testing.expectError(error.Closed, future.pollOnce(&send).ready);
    try testing.expectEqual(@as(?u32, 4), send.takeBack());
    try testing.expectEqual(@as(?u32, null), send.takeBack());
    try testing.expectEqual(@as(u32, 1), try ch.tryRecv());
    var recv = ch.recv();
    try testing.expectEqual(@as(u32, 2), try future.pollOnce(&recv).ready);
    try testing.expectError(error.Closed, ch.tryRecv());
    var recv_closed = ch.recv();
    try testing.expectError(error.Closed, future.pollOnce(&recv_closed).ready);
}

test "bounded: pending recv is woken by a send and gets the value" {
    var ch = try Bounded(u32).init(testing.allocator, 2);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try ch.trySend(7);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(u32, 7), try pollWith(&recv, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // Only our own reference.
}

test "bounded: pending send is woken by a recv and its value is delivered" {
    var ch = try Bounded(u32).init(testing.allocator, 1);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try ch.trySend(1);
    var send = ch.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    try testing.expectEqual(@as(u32, 1), try ch.tryRecv());
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    // The value is written only when the woken future runs again.
    try testing.expectError(error.Empty, ch.tryRecv());
    _ = try pollWith(&send, &waker).ready;
    try testing.expectEqual(@as(u32, 2), try ch.tryRecv());
    try testing.expectEqual(@as(?u32, null), send.takeBack());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: a woken sender that loses the space waits again and still delivers" {
    var ch = try Bounded(u32).init(testing.allocator, 1);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try ch.trySend(1);
    var send = ch.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    _ = try ch.tryRecv(); // Wakes `send` ...
    try ch.trySend(3); // ... but another sender takes the space first.
    try testing.expect(pollWith(&send, &waker) == .pending); // Registered again, value kept.
    try testing.expectEqual(@as(u32, 3), try ch.tryRecv());
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    _ = try pollWith(&send, &waker).ready;
    try testing.expectEqual(@as(u32, 2), try ch.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: cancel of a pending send hands the value back and unlinks" {
    var ch = try Bounded(u32).init(testing.allocator, 1);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try ch.trySend(1);
    var send = ch.send(42);
    try testing.expect(pollWith(&send, &waker) == .pending);
    send.cancel();
    send.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(?u32, 42), send.takeBack());
    try testing.expectEqual(@as(u32, 1), try ch.tryRecv());
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectError(error.Empty, ch.tryRecv());
    // Cancel before the first poll is allowed and also hands the value back.
    var fresh = ch.send(5);
    try testing.expectEqual(@as(?u32, 5), fresh.takeBack());
}

test "bounded: cancel of a pending recv unlinks; cancelled notified waiters pass it on" {
    var ch = try Bounded(u32).init(testing.allocator, 4);
    defer ch.deinit();
    var first_counter = Waker.Counting{};
    var second_counter = Waker.Counting{};
    const first_waker = first_counter.waker();
    defer first_waker.drop();
    const second_waker = second_counter.waker();
    defer second_waker.drop();

    var cancelled = ch.recv();
    try testing.expect(pollWith(&cancelled, &first_waker) == .pending);
    cancelled.cancel();
    try ch.trySend(1); // Nobody is waiting any more.
    try testing.expectEqual(@as(u32, 0), first_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), try ch.tryRecv());

    var first = ch.recv();
    var second = ch.recv();
    try testing.expect(pollWith(&first, &first_waker) == .pending);
    try testing.expect(pollWith(&second, &second_waker) == .pending);
    try ch.trySend(2); // Notifies `first` (FIFO).
    try testing.expectEqual(@as(u32, 1), first_counter.wakeCount());
    try testing.expectEqual(@as(u32, 0), second_counter.wakeCount());
    first.cancel(); // Woken but not taking the value: the wake goes to `second`.
    try testing.expectEqual(@as(u32, 1), second_counter.wakeCount());
    try testing.expectEqual(@as(u32, 2), try pollWith(&second, &second_waker).ready);
    try testing.expectEqual(@as(i32, 1), first_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), second_counter.outstanding());
}

test "bounded: close wakes waiting senders and receivers" {
    var ch = try Bounded(u32).init(testing.allocator, 1);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    ch.close();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);

    var ch2 = try Bounded(u32).init(testing.allocator, 1);
    defer ch2.deinit();
    try ch2.trySend(1);
    var send = ch2.send(2);
    try testing.expect(pollWith(&send, &waker) == .pending);
    ch2.close();
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&send, &waker).ready);
    try testing.expectEqual(@as(?u32, 2), send.takeBack());
    try testing.expectEqual(@as(u32, 1), try ch2.tryRecv()); // Drained after close.
    try testing.expectError(error.Closed, ch2.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: waker replacement wakes only the newest waker" {
    var ch = try Bounded(u32).init(testing.allocator, 1);
    defer ch.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &old_waker) == .pending);
    try testing.expect(pollWith(&recv, &old_waker) == .pending); // Same waker: kept.
    try testing.expectEqual(@as(i32, 2), old_counter.outstanding());
    try testing.expect(pollWith(&recv, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding()); // Old clone dropped.
    try ch.trySend(3);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    try testing.expectEqual(@as(u32, 3), try pollWith(&recv, &new_waker).ready);

    try ch.trySend(4);
    var send = ch.send(5);
    try testing.expect(pollWith(&send, &old_waker) == .pending);
    try testing.expect(pollWith(&send, &new_waker) == .pending);
    _ = try ch.tryRecv();
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
    var ch = try Ch.init(testing.allocator, 2);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    common.hook.set(.{ .context = &ch, .run = HookAction(Ch, .send).run });
    // The send in the window sees no waiter (and wakes nobody); the re-check must find it.
    try testing.expectEqual(@as(u32, 77), try pollWith(&recv, &waker).ready);
    try testing.expect(!common.hook.isSet());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: space freed between the full check and registration is not missed" {
    const Ch = Bounded(u32);
    var ch = try Ch.init(testing.allocator, 1);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    try ch.trySend(1);
    var send = ch.send(2);
    common.hook.set(.{ .context = &ch, .run = HookAction(Ch, .recv).run });
    _ = try pollWith(&send, &waker).ready;
    try testing.expectEqual(@as(u32, 2), try ch.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: close between the check and registration is not missed" {
    const Ch = Bounded(u32);
    var ch = try Ch.init(testing.allocator, 1);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    common.hook.set(.{ .context = &ch, .run = HookAction(Ch, .close).run });
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);

    var ch2 = try Ch.init(testing.allocator, 1);
    defer ch2.deinit();
    try ch2.trySend(1);
    var send = ch2.send(2);
    common.hook.set(.{ .context = &ch2, .run = HookAction(Ch, .close).run });
    try testing.expectError(error.Closed, pollWith(&send, &waker).ready);
    try testing.expectEqual(@as(?u32, 2), send.takeBack());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "bounded: an exhausted budget yields before doing anything" {
    var ch = try Bounded(u32).init(testing.allocator, 1);
    defer ch.deinit();
    try ch.trySend(1);
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    const scope = budget.Scope.begin(0);
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    scope.end();
    try testing.expectEqual(@as(usize, 1), ch.len()); // Nothing was taken.
    try testing.expectEqual(@as(u32, 1), try pollWith(&recv, &waker).ready);
}

test "bounded: values with payload are copied intact" {
    const Message = struct { id: u64, payload: [40]u8 };
    var ch = try Bounded(Message).init(testing.allocator, 3);
    defer ch.deinit();
    for (0..30) |i| {
        var message = Message{ .id = i, .payload = undefined };
        @memset(&message.payload, @truncate(i));
        try ch.trySend(message);
        const out = try ch.tryRecv();
        try testing.expectEqual(@as(u64, i), out.id);
        for (out.payload) |b| try testing.expectEqual(@as(u8, @truncate(i)), b);
    }
}
