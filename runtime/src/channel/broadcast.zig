//! `Broadcast(T)`: every receiver sees every value sent after it subscribed, unless it falls
//! more than `capacity` values behind, in which case it is told how many it missed.
//!
//! Layout: a ring of `capacity` slots (rounded up to a power of two, as Tokio does), a `tail`
//! word (next position to send, plus the closed mark in bit 63), a wait queue of receivers,
//! and a receiver count. A `Receiver` is a plain value: a pointer to the channel, its own
//! cursor `next` and the size of its last lag. Subscribing allocates nothing.
//!
//! Each slot is a seqlock: a sequence word and the value stored as atomic machine words
//! (`common.AtomicWords`), so readers copy it while a sender may be overwriting it without a
//! data race. Sequence values for the value sent at position `p`:
//!
//!     0          never written
//!     2p + 3     being written (odd)
//!     2p + 2     written (even)
//!
//! Send (never waits for receivers; overwrites the oldest value):
//! 1. Claim position `p` by moving `tail` from `p` to `p + 1` (compare-and-swap, so a closed
//!    mark is never skipped; seq_cst: the publication event of the waiter protocol).
//! 2. Wait until the slot's previous occupant, position `p - capacity`, is fully written
//!    (acquire). Only when `capacity` or more senders race does this ever spin, and it waits
//!    for another sender's few instructions, never for a receiver.
//! 3. Store `2p + 3`, store the value words with release, store `2p + 2` with release.
//! 4. If receivers are waiting (seq_cst length check), wake them all.
//!
//! Receive at cursor `next`: load the slot's sequence (acquire); if it is `2·next + 2`, copy
//! the words (acquire) and load the sequence again: equal means the copy is the value of
//! `next` (if any word came from a later writer, that writer's release store carries its
//! earlier odd sequence store to us, so the second load cannot see the old even value).
//! Otherwise read `tail` (seq_cst): `next == tail` is empty (or closed); `tail - next >
//! capacity` means the value was overwritten: the receiver lagged, skips to the oldest retained
//! position `tail - capacity` and reports `error.Lagged`, with the count of missed values in
//! `lastLagged()` (Zig errors carry no payload); otherwise a sender has claimed `next` but not
//! finished writing it (busy).
//!
//! Waiting: register-then-recheck against claim-then-check, both store then load, so the
//! length word and `tail` are accessed with seq_cst on both sides (see `WaitQueue`). A busy
//! re-check must not sleep (that sender's check may precede the registration); the future
//! yields instead. Every send wakes all waiting receivers; no notification is consumed, so a
//! cancelled receive has nothing to pass on.
//!
//! Values are copied bit for bit to every receiver: `T` must be plain data whose copies are
//! independent (a pointer payload is shared, not owned, by the receivers).

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

pub fn Broadcast(comptime T: type) type {
    return struct {
        const Self = @This();
        const Words = common.AtomicWords(T);

        const Slot = struct {
            seq: std.atomic.Value(u64),
            words: Words,
        };

        const closed_bit: u64 = 1 << 63;
        /// Positions stay far below the closed bit and the sequence encoding's range.
        const position_limit: u64 = 1 << 61;
        pub const capacity_limit: usize = 1 << 30;

        fn written(position: u64) u64 {
            return 2 * position + 2;
        }

        fn writing(position: u64) u64 {
            return 2 * position + 3;
        }

        const RecvResult = enum { ok, empty, closed, lagged, busy };

        // Read-only after `init`, except the rarely written receiver count.
        slots: []Slot,
        allocator: Allocator,
        receiver_count: std.atomic.Value(usize),

        /// Next position to send, plus `closed_bit`.
        tail: Padded(std.atomic.Value(u64)),
        /// Receivers waiting for a value.
        waiters: Padded(WaitQueue),

        /// Allocates the ring of `ceil_pow2(capacity)` slots (the only allocation). Returned by
        /// value: keep it at a stable address while in use. Panics if `capacity` is 0 or above
        /// `capacity_limit`.
        pub fn init(allocator: Allocator, requested_capacity: usize) Allocator.Error!Self {
            if (requested_capacity == 0 or requested_capacity > capacity_limit) {
                std.debug.panic("Broadcast.init: capacity {d} outside 1..{d}", .{ requested_capacity, capacity_limit });
            }
            const slot_count = std.math.ceilPowerOfTwoAssert(usize, requested_capacity);
            const slots = try allocator.alloc(Slot, slot_count);
            // The words are read only after a sequence says they were written.
            for (slots) |*slot| slot.seq = .init(0);
            return .{
                .slots = slots,
                .allocator = allocator,
                .receiver_count = .init(0),
                .tail = .{ .value = .init(0) },
                .waiters = .{ .value = .{} },
            };
        }

        /// Frees the ring. No receive future may be pending.
        pub fn deinit(self: *Self) void {
            assert(self.waiters.value.isEmpty());
            self.allocator.free(self.slots);
            self.* = undefined;
        }

        /// Values retained for lagging receivers (the requested capacity rounded up to a
        /// power of two).
        pub fn capacity(self: *const Self) usize {
            return self.slots.len;
        }

        /// A new receiver that sees the values sent from now on.
        pub fn subscribe(self: *Self) Receiver {
            _ = self.receiver_count.fetchAdd(1, .monotonic); // A statistic: no ordering.
            const tail = self.tail.value.load(.seq_cst) & ~closed_bit;
            return .{ .channel = self, .next = tail };
        }

        pub fn receiverCount(self: *const Self) usize {
            return self.receiver_count.load(.monotonic);
        }

        /// Sends `value` to every receiver, overwriting the oldest retained value, and returns
        /// the number of subscribed receivers (0 is not an error: the value is still stored,
        /// but no current receiver will see it). Never waits for receivers.
        pub fn send(self: *Self, value: T) error{Closed}!usize {
            var tail = self.tail.value.load(.monotonic);
            while (true) {
                if (tail & closed_bit != 0) return error.Closed;
                assert(tail < position_limit);
                // seq_cst: the claim is the publication event of the waiter protocol.
                tail = self.tail.value.cmpxchgWeak(tail, tail + 1, .seq_cst, .monotonic) orelse break;
            }
            self.writeSlot(tail, value);
            if (self.waiters.value.hasWaiters()) self.waiters.value.notifyAll();
            return self.receiver_count.load(.monotonic);
        }

        fn writeSlot(self: *Self, position: u64, value: T) void {
            const slot = &self.slots[@intCast(position & (self.slots.len - 1))];
            const previous: u64 = if (position >= self.slots.len) written(position - self.slots.len) else 0;
            // Acquire: the previous writer's word stores happen before ours, so ours come later
            // in each word's modification order.
            var backoff = Backoff{};
            while (slot.seq.load(.acquire) != previous) backoff.snooze();
            slot.seq.store(writing(position), .monotonic);
            // Release per word: a reader that copies any of these words also sees `writing`.
            slot.words.store(value, .release);
            // Release: publishes the words with the even sequence.
            slot.seq.store(written(position), .release);
        }

        /// Closes the channel: `send` fails from now on; receivers get the values still
        /// retained for them and then `error.Closed`. Wakes every waiting receiver.
        pub fn close(self: *Self) void {
            // seq_cst like the claims; waiters re-check under the queue lock taken below.
            const previous = self.tail.value.fetchOr(closed_bit, .seq_cst);
            if (previous & closed_bit != 0) return;
            self.waiters.value.notifyAll();
        }

        pub fn isClosed(self: *const Self) bool {
            return self.tail.value.load(.seq_cst) & closed_bit != 0;
        }

        pub const Receiver = struct {
            channel: *Self,
            /// The position of the next value to receive.
            next: u64,
            /// Values skipped by the most recent `error.Lagged`.
            lagged_count: u64 = 0,

            /// The next value; `error.Empty` if none yet; `error.Lagged` if values were
            /// overwritten before this receiver read them (see `lastLagged`; the next call
            /// continues with the oldest retained value); `error.Closed` after `close` once
            /// every retained value was received.
            pub fn tryRecv(self: *Receiver) error{ Empty, Closed, Lagged }!T {
                var value: T = undefined;
                var backoff = Backoff{};
                while (true) {
                    switch (self.recvRaw(&value)) {
                        .ok => return value,
                        .empty => return error.Empty,
                        .closed => return error.Closed,
                        .lagged => return error.Lagged,
                        .busy => {
                            // A sender claimed the position and is writing it; if it takes
                            // too long, report Empty (that send has not completed).
                            if (backoff.isCompleted()) return error.Empty;
                            backoff.snooze();
                        },
                    }
                }
            }

            /// A future for the next value. Output `error{Closed, Lagged}!T`. The receiver must
            /// stay at its address and not be used otherwise while the future is pending.
            pub fn recv(self: *Receiver) RecvFuture {
                return .{ .receiver = self };
            }

            /// How many values the most recent `error.Lagged` skipped.
            pub fn lastLagged(self: *const Receiver) u64 {
                return self.lagged_count;
            }

            /// Values sent and not yet received (may exceed `capacity` when lagging).
            pub fn len(self: *const Receiver) u64 {
                const tail = self.channel.tail.value.load(.seq_cst) & ~closed_bit;
                return tail - self.next;
            }

            /// Stops counting this receiver in `send`'s result. The receiver is not used after.
            pub fn unsubscribe(self: *Receiver) void {
                const previous = self.channel.receiver_count.fetchSub(1, .monotonic);
                assert(previous > 0);
                self.* = undefined;
            }

            fn recvRaw(self: *Receiver, out: *T) RecvResult {
                const ch = self.channel;
                const slot = &ch.slots[@intCast(self.next & (ch.slots.len - 1))];
                // Acquire: pairs with the writer's release of the even sequence.
                const before = slot.seq.load(.acquire);
                if (before == written(self.next)) {
                    // Acquire per word: see the module comment.
                    const value = slot.words.load(.acquire);
                    if (slot.seq.load(.monotonic) == before) {
                        out.* = value;
                        self.next += 1;
                        return .ok;
                    }
                }
                // seq_cst: the re-check half of the waiter protocol.
                const tail_word = ch.tail.value.load(.seq_cst);
                const tail = tail_word & ~closed_bit;
                assert(self.next <= tail);
                if (self.next == tail) return if (tail_word & closed_bit != 0) .closed else .empty;
                if (tail - self.next > ch.slots.len) {
                    const oldest = tail - ch.slots.len;
                    self.lagged_count = oldest - self.next;
                    self.next = oldest;
                    return .lagged;
                }
                return .busy;
            }
        };

        pub const RecvFuture = struct {
            receiver: *Receiver,
            waiter: WaitQueue.Waiter = .{},
            finished: bool = false,

            pub const Output = error{ Closed, Lagged }!T;

            pub fn poll(self: *RecvFuture, cx: *Context) Poll(Output) {
                assert(!self.finished);
                if (!budget.proceed(cx)) return .pending;
                if (self.waiter.load() != .linked) {
                    self.waiter.reclaim();
                    var value: T = undefined;
                    const result = self.receiver.recvRaw(&value);
                    if (result != .empty) return self.finish(cx, result, value);
                    common.hook.beforeRegister();
                }
                return self.pollRegistered(cx);
            }

            fn pollRegistered(self: *RecvFuture, cx: *Context) Poll(Output) {
                const queue = &self.receiver.channel.waiters.value;
                var removed: ?Waker = null;
                var value: T = undefined;
                queue.lock();
                const replaced = queue.registerLocked(&self.waiter, cx.waker());
                const result = self.receiver.recvRaw(&value);
                if (result != .empty) removed = queue.removeLocked(&self.waiter);
                queue.unlock();
                if (replaced) |w| w.drop();
                if (removed) |w| w.drop();
                if (result == .empty) {
                    budget.refund();
                    return .pending;
                }
                return self.finish(cx, result, value);
            }

            fn finish(self: *RecvFuture, cx: *Context, result: RecvResult, value: T) Poll(Output) {
                switch (result) {
                    .busy => return common.yieldNow(cx, Output),
                    .empty => unreachable,
                    .ok => {
                        self.finished = true;
                        return .{ .ready = value };
                    },
                    .closed => {
                        self.finished = true;
                        return .{ .ready = error.Closed };
                    },
                    .lagged => {
                        self.finished = true;
                        return .{ .ready = error.Lagged };
                    },
                }
            }

            /// Unlinks the waiter. Idempotent; touches nothing after completion.
            pub fn cancel(self: *RecvFuture) void {
                if (self.finished) return;
                self.finished = true;
                // Sends and close wake every waiter (notifyAll): no notification is consumed, so
                // there is none to pass on.
                _ = self.receiver.channel.waiters.value.cancel(&self.waiter);
            }
        };
    };
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

const testing = std.testing;

const pollWith = common.pollWith;

test "broadcast: every receiver gets every value in order" {
    var ch = try Broadcast(u64).init(testing.allocator, 16);
    defer ch.deinit();
    var receivers: [4]Broadcast(u64).Receiver = undefined;
    for (&receivers) |*rx| rx.* = ch.subscribe();
    for (0..100) |i| {
        try testing.expectEqual(@as(usize, 4), try ch.send(i));
        for (&receivers) |*rx| try testing.expectEqual(@as(u64, i), try rx.tryRecv());
    }
    for (&receivers) |*rx| {
        try testing.expectError(error.Empty, rx.tryRecv());
        rx.unsubscribe();
    }
    try testing.expectEqual(@as(usize, 0), try ch.send(0));
}

test "broadcast: a receiver sees only values sent after it subscribed" {
    var ch = try Broadcast(u32).init(testing.allocator, 4);
    defer ch.deinit();
    var early = ch.subscribe();
    _ = try ch.send(1);
    var late = ch.subscribe();
    _ = try ch.send(2);
    try testing.expectEqual(@as(u32, 1), try early.tryRecv());
    try testing.expectEqual(@as(u32, 2), try early.tryRecv());
    try testing.expectEqual(@as(u32, 2), try late.tryRecv());
    try testing.expectError(error.Empty, late.tryRecv());
}

test "broadcast: lagging reports the exact missed count, then continues in order" {
    var ch = try Broadcast(u32).init(testing.allocator, 3); // Rounded up to 4.
    defer ch.deinit();
    try testing.expectEqual(@as(usize, 4), ch.capacity());
    var rx = ch.subscribe();
    var fast = ch.subscribe();
    for (0..10) |i| {
        _ = try ch.send(@intCast(i));
        try testing.expectEqual(@as(u32, @intCast(i)), try fast.tryRecv());
    }
    try testing.expectEqual(@as(u64, 10), rx.len());
    try testing.expectError(error.Lagged, rx.tryRecv());
    try testing.expectEqual(@as(u64, 6), rx.lastLagged());
    for (6..10) |i| try testing.expectEqual(@as(u32, @intCast(i)), try rx.tryRecv());
    try testing.expectError(error.Empty, rx.tryRecv());
    // Exactly `capacity` behind is not lagging.
    for (10..14) |i| _ = try ch.send(@intCast(i));
    for (10..14) |i| try testing.expectEqual(@as(u32, @intCast(i)), try rx.tryRecv());
}

test "broadcast: close lets receivers drain, then Closed" {
    var ch = try Broadcast(u32).init(testing.allocator, 4);
    defer ch.deinit();
    var rx = ch.subscribe();
    _ = try ch.send(1);
    _ = try ch.send(2);
    ch.close();
    ch.close();
    try testing.expect(ch.isClosed());
    try testing.expectError(error.Closed, ch.send(3));
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());
    try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    try testing.expectError(error.Closed, rx.tryRecv());
    var after = ch.subscribe();
    try testing.expectError(error.Closed, after.tryRecv());
}

test "broadcast: pending recv is woken by send; all waiting receivers are woken" {
    var ch = try Broadcast(u32).init(testing.allocator, 4);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var a = ch.subscribe();
    var b = ch.subscribe();
    var recv_a = a.recv();
    var recv_b = b.recv();
    try testing.expect(pollWith(&recv_a, &waker) == .pending);
    try testing.expect(pollWith(&recv_b, &waker) == .pending);
    _ = try ch.send(5);
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    try testing.expectEqual(@as(u32, 5), try pollWith(&recv_a, &waker).ready);
    try testing.expectEqual(@as(u32, 5), try pollWith(&recv_b, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "broadcast: recv future reports Lagged and Closed" {
    var ch = try Broadcast(u32).init(testing.allocator, 2);
    defer ch.deinit();
    var rx = ch.subscribe();
    for (0..5) |i| _ = try ch.send(@intCast(i));
    var lagged = rx.recv();
    try testing.expectError(error.Lagged, future.pollOnce(&lagged).ready);
    try testing.expectEqual(@as(u64, 3), rx.lastLagged());
    var next = rx.recv();
    try testing.expectEqual(@as(u32, 3), try future.pollOnce(&next).ready);
    ch.close();
    var last = rx.recv();
    try testing.expectEqual(@as(u32, 4), try future.pollOnce(&last).ready);
    var closed = rx.recv();
    try testing.expectError(error.Closed, future.pollOnce(&closed).ready);
}

test "broadcast: close wakes a pending recv; cancel unlinks; waker replacement" {
    var ch = try Broadcast(u32).init(testing.allocator, 2);
    defer ch.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var rx = ch.subscribe();

    var cancelled = rx.recv();
    try testing.expect(pollWith(&cancelled, &old_waker) == .pending);
    cancelled.cancel();
    cancelled.cancel();
    _ = try ch.send(1);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());

    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &old_waker) == .pending);
    try testing.expect(pollWith(&recv, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    ch.close();
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &new_waker).ready);
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
}

fn broadcastSendHook(context: *anyopaque) void {
    const ch: *Broadcast(u32) = @ptrCast(@alignCast(context));
    _ = ch.send(21) catch unreachable;
}

fn broadcastCloseHook(context: *anyopaque) void {
    const ch: *Broadcast(u32) = @ptrCast(@alignCast(context));
    ch.close();
}

test "broadcast: a send or close between the check and registration is not missed" {
    var ch = try Broadcast(u32).init(testing.allocator, 2);
    defer ch.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var rx = ch.subscribe();
    var recv = rx.recv();
    common.hook.set(.{ .context = &ch, .run = broadcastSendHook });
    try testing.expectEqual(@as(u32, 21), try pollWith(&recv, &waker).ready);
    var recv_closed = rx.recv();
    common.hook.set(.{ .context = &ch, .run = broadcastCloseHook });
    try testing.expectError(error.Closed, pollWith(&recv_closed, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "broadcast: multi-word values" {
    const Wide = struct { a: u64, b: u64, c: u64, tag: u8 };
    var ch = try Broadcast(Wide).init(testing.allocator, 8);
    defer ch.deinit();
    var rx = ch.subscribe();
    for (0..50) |i| {
        _ = try ch.send(.{ .a = i, .b = i * 2, .c = i * 3, .tag = @truncate(i) });
        const out = try rx.tryRecv();
        try testing.expectEqual(@as(u64, i * 3), out.c);
        try testing.expectEqual(@as(u8, @truncate(i)), out.tag);
    }
}
