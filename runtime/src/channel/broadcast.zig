//! `Broadcast(T)`: every receiver sees every value sent after it subscribed, unless it falls
//! more than `capacity` values behind, in which case it is told how many it missed.
//!
//! Handles, as Tokio's `broadcast`: `init(allocator, capacity)` allocates the shared state
//! (this struct) and the ring and returns one `Sender` and one `Receiver`. Both are counted
//! (`common.Handles`); senders are cloned with `clone`, receivers with `clone` (same position)
//! or `resubscribe` (from the newest value on), `Sender.subscribe` makes a receiver also when
//! none is left, and `deinit` gives a handle up; the last handle frees the state. `send` fails
//! with `error.Closed` and hands the value back when no receiver exists. When the last sender
//! goes the channel is closed: receivers get the values still retained for them, then
//! `error.Closed`.
//!
//! Layout: a ring of `capacity` slots (rounded up to a power of two, as Tokio does), a `tail`
//! word (next position to send, plus the closed mark in bit 63) and a wait queue of receivers.
//! A `Receiver` holds a pointer to the state, its own cursor `next` and the size of its last
//! lag.
//!
//! Two ways to hold the values, chosen at compile time by `common.Ownership(T)`:
//!
//! **Plain data: a seqlock per slot, lock-free.** The value is stored as atomic machine words
//! (`common.AtomicWords`), so readers copy it while a sender may be overwriting it without a
//! data race. Sequence values for the value sent at position `p`:
//!
//!     0          never written
//!     2p + 3     being written (odd)
//!     2p + 2     written (even)
//!
//! Send (never waits for receivers; overwrites the oldest value):
//! 1. Claim position `p` by moving `tail` from `p` to `p + 1` (compare-and-swap; seq_cst: the
//!    publication event of the waiter protocol).
//! 2. Wait until the slot's previous occupant, position `p - capacity`, is fully written
//!    (acquire). This waits only when `capacity` or more sends happened while another sender
//!    was between its claim and its last store, a few instructions; it spins boundedly and
//!    then sleeps (`Backoff.pause`) so that a preempted sender gets the CPU.
//! 3. Store `2p + 3`, store the value words with release, store `2p + 2` with seq_cst (a
//!    release store, and the write event of the busy protocol below).
//! 4. If receivers are waiting (seq_cst length check), wake them all: those that found the
//!    channel empty and those that found `p` (or another position) claimed but unwritten.
//!
//! Receive at cursor `next`: load the slot's sequence (seq_cst); if it is `2·next + 2`, copy
//! the words (acquire) and load the sequence again: equal means the copy is the value of
//! `next` (if any word came from a later writer, that writer's release store carries its
//! earlier odd sequence store to us, so the second load cannot see the old even value).
//! Otherwise read `tail` (seq_cst): `next == tail` is empty (or closed); `tail - next >
//! capacity` means the value was overwritten: the receiver lagged, skips to the oldest retained
//! position `tail - capacity` and reports `error.Lagged`, with the count of missed values in
//! `lastLagged()` (Zig errors carry no payload); otherwise a sender has claimed `next` but not
//! finished writing it (busy): `tryRecv` retries boundedly and then reports `Empty` (that send
//! has not completed); a receive future waits for the write as it waits for a send (below).
//!
//! **Owned values** (`*RcBuffer`, or a type with `clone` and `deinit`): Tokio's design. Each
//! slot has a `Lock` (runtime/src/Lock.zig: spins briefly, then sleeps) guarding its value,
//! position and `remaining` (the receivers that have yet to read it); a `tail_lock` serialises
//! sends with `subscribe`, receiver clones and receiver `deinit`, so the receiver count a send
//! stores in `remaining` is exact. Send: under `tail_lock`, write the slot under its lock
//! (taking out the value it evicts), then publish `tail` (seq_cst). Receive: under the slot's
//! lock, clone the value if the slot holds position `next` and count the read down; the
//! receiver that reads it last takes the channel's value out. Values taken out (read by all,
//! evicted by a send, still in the ring when the last handle goes) are released after the
//! lock is dropped, each exactly once; a receiver's `deinit` counts down the values it will
//! not read. A slot is written before `tail` moves past it, so a receive never finds a
//! claimed-but-unwritten slot; a reader never copies a value while it is replaced.
//!
//! Waiting: a receive future that finds nothing to read links its waker into `waiters` (the
//! length word's seq_cst increment) and then re-checks, under the queue's lock, with seq_cst
//! loads of the slot's sequence and of `tail`. Two events end the wait, and the sender makes
//! each of them with a seq_cst store before its seq_cst load of the length:
//!
//! - *empty* (`next == tail`): the event is the claim of `next` (step 1); the sender's length
//!   check (step 4) comes after it.
//! - *busy* (`next` claimed, not yet written): the event is the store of `2·next + 2` (step 3).
//!   A receiver must not spin or re-poll itself here: the writing sender may be preempted or
//!   asleep in step 2, and a receiver that keeps its worker busy keeps that sender off the CPU
//!   (with more workers than CPUs that cost seconds). It sleeps until the write.
//!
//! Both sides store then load, so with release/acquire both could miss each other; in the
//! single seq_cst order either the sender's length load follows the link (it sees the waiter
//! and wakes it, after its write) or the receiver's re-check follows the sender's store (it
//! sees the value, or a later lap: lagged). Every send wakes all waiting receivers; a woken
//! receiver whose position is still busy (another sender's write woke it) re-registers. No
//! notification is consumed, so a cancelled receive has nothing to pass on. Owned values
//! never report busy (a slot is written before `tail` moves past it).

const std = @import("std");
const Allocator = std.mem.Allocator;
const assert = std.debug.assert;
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Waker = @import("../Waker.zig");
const budget = @import("../budget.zig");
const Lock = @import("../Lock.zig");
const WaitQueue = @import("WaitQueue.zig");
const common = @import("common.zig");
const hook = @import("../hook.zig");
const Backoff = common.Backoff;
const Padded = common.Padded;

pub fn Broadcast(comptime T: type) type {
    return struct {
        const Self = @This();
        const Values = common.Ownership(T);
        const owned = Values.owned;
        const Words = common.AtomicWords(T);

        const PlainSlot = struct {
            seq: std.atomic.Value(u64),
            words: Words,
        };

        /// Every field guarded by `lock`.
        const OwnedSlot = struct {
            lock: Lock = .{},
            /// The position whose value `value` is (valid while `occupied`).
            position: u64 = 0,
            /// Receivers that have not read `value` yet.
            remaining: usize = 0,
            occupied: bool = false,
            value: T = undefined,
        };

        const Slot = if (owned) OwnedSlot else PlainSlot;

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

        // Read-only after `init`.
        slots: []Slot,
        allocator: Allocator,
        handles: common.Handles,

        /// Next position to send, plus `closed_bit`.
        tail: Padded(std.atomic.Value(u64)),
        /// Owned values: serialises sends with receiver-count changes (module comment).
        tail_lock: if (owned) Lock else void,
        /// Receivers waiting for a value.
        waiters: Padded(WaitQueue),

        /// What `init` returns: destructure it as `const tx, var rx = try ...init(...)`.
        pub const Pair = struct { Sender, Receiver };

        /// Allocates the state and the ring of `ceil_pow2(capacity)` slots (the only
        /// allocations) and returns the first sender and receiver. Panics if `capacity` is 0
        /// or above `capacity_limit`.
        pub fn init(allocator: Allocator, requested_capacity: usize) Allocator.Error!Pair {
            if (requested_capacity == 0 or requested_capacity > capacity_limit) {
                std.debug.panic("Broadcast.init: capacity {d} outside 1..{d}", .{ requested_capacity, capacity_limit });
            }
            const slot_count = std.math.ceilPowerOfTwoAssert(usize, requested_capacity);
            const self = try allocator.create(Self);
            errdefer allocator.destroy(self);
            const slots = try allocator.alloc(Slot, slot_count);
            for (slots) |*slot| {
                // Plain: the words are read only after a sequence says they were written.
                slot.* = if (owned) .{} else .{ .seq = .init(0), .words = undefined };
            }
            self.* = .{
                .slots = slots,
                .allocator = allocator,
                .handles = .init(1, 1),
                .tail = .{ .value = .init(0) },
                .tail_lock = if (owned) .{} else {},
                .waiters = .{ .value = .{} },
            };
            return .{ .{ .channel = self }, .{ .channel = self, .next = 0 } };
        }

        /// Called by the last handle: releases the retained values and frees the state.
        fn destroy(self: *Self) void {
            assert(self.waiters.value.isEmpty()); // A receive future outlived its receiver.
            if (owned) {
                for (self.slots) |*slot| {
                    if (slot.occupied) Values.release(slot.value);
                }
            }
            const allocator = self.allocator;
            allocator.free(self.slots);
            allocator.destroy(self);
        }

        /// The sending half. Copy it only through `clone`; `deinit` it exactly once.
        pub const Sender = struct {
            channel: *Self,

            pub fn clone(self: *const Sender) Sender {
                self.channel.handles.addSender();
                return .{ .channel = self.channel };
            }

            /// Gives up this sender. The last sender closes the channel and wakes every
            /// waiting receiver; the last handle frees it.
            pub fn deinit(self: *Sender) void {
                const channel = self.channel;
                self.* = undefined;
                if (channel.handles.dropSender()) channel.close();
                if (channel.handles.release()) channel.destroy();
            }

            /// Sends `value` to every receiver, overwriting the oldest retained value, and
            /// returns the number of receivers. `error.Closed` when no receiver exists (Tokio's
            /// `SendError`): nothing was stored and the caller keeps `value`. Never waits for
            /// receivers.
            pub fn send(self: *const Sender, value: T) error{Closed}!usize {
                return if (owned) self.channel.sendOwned(value) else self.channel.sendPlain(value);
            }

            /// A new receiver that sees the values sent from now on.
            pub fn subscribe(self: *const Sender) Receiver {
                return self.channel.newReceiver();
            }

            pub fn receiverCount(self: *const Sender) usize {
                return self.channel.handles.receiverCount();
            }

            /// Values retained for lagging receivers (the requested capacity rounded up to a
            /// power of two).
            pub fn capacity(self: *const Sender) usize {
                return self.channel.slots.len;
            }
        };

        fn sendPlain(self: *Self, value: T) error{Closed}!usize {
            // Monotonic: a hint, like Tokio's count without its lock; also the result.
            const receivers = self.handles.receiverCount();
            if (receivers == 0) return error.Closed;
            self.publishPlain(self.claimPlain(), value);
            return receivers;
        }

        /// Send step 1: claims the next position.
        fn claimPlain(self: *Self) u64 {
            var tail = self.tail.value.load(.monotonic);
            while (true) {
                assert(tail & closed_bit == 0); // A sender exists.
                assert(tail < position_limit);
                // seq_cst: the claim is the publication event of the waiter protocol.
                tail = self.tail.value.cmpxchgWeak(tail, tail + 1, .seq_cst, .monotonic) orelse return tail;
            }
        }

        /// Send steps 2 to 4: writes the value of a claimed position, then wakes the waiting
        /// receivers — those that found the channel empty and those that found this position
        /// claimed but not yet written.
        fn publishPlain(self: *Self, position: u64, value: T) void {
            self.writeSlot(position, value);
            if (self.waiters.value.hasWaiters()) self.waiters.value.notifyAll();
        }

        fn writeSlot(self: *Self, position: u64, value: T) void {
            const slot = &self.slots[@intCast(position & (self.slots.len - 1))];
            const previous: u64 = if (position >= self.slots.len) written(position - self.slots.len) else 0;
            // Acquire: the previous writer's word stores happen before ours, so ours come later
            // in each word's modification order. Bounded spinning, then sleeping: see step 2.
            var backoff = Backoff{};
            while (slot.seq.load(.acquire) != previous) _ = backoff.pause();
            slot.seq.store(writing(position), .monotonic);
            // Release per word: a reader that copies any of these words also sees `writing`.
            slot.words.store(value, .release);
            // Release: publishes the words with the even sequence. Seq_cst besides: the store
            // half of the write-then-check side of the busy protocol (module comment), which
            // `publishPlain`'s length load follows.
            slot.seq.store(written(position), .seq_cst);
        }

        fn sendOwned(self: *Self, value: T) error{Closed}!usize {
            var evicted: ?T = null;
            self.tail_lock.lock();
            const receivers = self.handles.receiverCount(); // Exact: changed under tail_lock.
            if (receivers == 0) {
                self.tail_lock.unlock();
                return error.Closed;
            }
            // Monotonic: only senders change `tail`, under tail_lock.
            const position = self.tail.value.load(.monotonic);
            assert(position & closed_bit == 0); // A sender exists.
            assert(position < position_limit);
            const slot = &self.slots[@intCast(position & (self.slots.len - 1))];
            slot.lock.lock();
            if (slot.occupied) evicted = slot.value;
            slot.value = value;
            slot.position = position;
            slot.remaining = receivers;
            slot.occupied = true;
            slot.lock.unlock();
            // seq_cst: the publication event of the waiter protocol, after the slot is written.
            self.tail.value.store(position + 1, .seq_cst);
            self.tail_lock.unlock();
            if (evicted) |old| Values.release(old);
            if (self.waiters.value.hasWaiters()) self.waiters.value.notifyAll();
            return receivers;
        }

        /// The last sender went: receivers drain what is retained, then get `error.Closed`.
        fn close(self: *Self) void {
            // seq_cst like the claims; waiters re-check under the queue lock taken below.
            const previous = self.tail.value.fetchOr(closed_bit, .seq_cst);
            assert(previous & closed_bit == 0);
            self.waiters.value.notifyAll();
        }

        fn newReceiver(self: *Self) Receiver {
            if (owned) self.tail_lock.lock();
            defer if (owned) self.tail_lock.unlock();
            self.handles.addReceiver();
            // seq_cst: a consistent start with the claims (plain), or exact under tail_lock.
            const tail = self.tail.value.load(.seq_cst) & ~closed_bit;
            return .{ .channel = self, .next = tail };
        }

        pub const Receiver = struct {
            channel: *Self,
            /// The position of the next value to receive.
            next: u64,
            /// Values skipped by the most recent `error.Lagged`.
            lagged_count: u64 = 0,

            /// Another receiver at the same position (it will see the same values).
            pub fn clone(self: *const Receiver) Receiver {
                const channel = self.channel;
                if (!owned) {
                    channel.handles.addReceiver();
                    return .{ .channel = channel, .next = self.next };
                }
                channel.tail_lock.lock();
                defer channel.tail_lock.unlock();
                channel.handles.addReceiver();
                // Count the new receiver in every retained value it will read.
                const tail = channel.tail.value.load(.monotonic) & ~closed_bit;
                var position = @max(self.next, tail -| channel.slots.len);
                while (position < tail) : (position += 1) {
                    const slot = &channel.slots[@intCast(position & (channel.slots.len - 1))];
                    slot.lock.lock();
                    if (slot.occupied and slot.position == position) slot.remaining += 1;
                    slot.lock.unlock();
                }
                return .{ .channel = channel, .next = self.next };
            }

            /// A new receiver that sees the values sent from now on (Tokio's `resubscribe`).
            pub fn resubscribe(self: *const Receiver) Receiver {
                return self.channel.newReceiver();
            }

            /// Gives up this receiver: it stops counting in `send`, and (owned values) the
            /// retained values it did not read are counted down, released when nobody else
            /// needs them. The last handle frees the channel. No receive future may be
            /// pending.
            pub fn deinit(self: *Receiver) void {
                const channel = self.channel;
                if (owned) {
                    channel.tail_lock.lock();
                    _ = channel.handles.dropReceiver();
                    const tail = channel.tail.value.load(.monotonic) & ~closed_bit;
                    channel.tail_lock.unlock();
                    // Sends after the unlock do not count us; the ones before do.
                    var position = @max(self.next, tail -| channel.slots.len);
                    while (position < tail) : (position += 1) channel.skipOwned(position);
                } else {
                    _ = channel.handles.dropReceiver();
                }
                self.* = undefined;
                if (channel.handles.release()) channel.destroy();
            }

            /// The next value (owned values: the receiver's own clone); `error.Empty` if none
            /// yet; `error.Lagged` if values were overwritten before this receiver read them
            /// (see `lastLagged`; the next call continues with the oldest retained value);
            /// `error.Closed` once the last sender is gone and every retained value was
            /// received.
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
                // Owned values may be read just before `tail` moves past them.
                return tail -| self.next;
            }

            /// True once the last sender is gone (values may still be retained).
            pub fn isClosed(self: *const Receiver) bool {
                return self.channel.tail.value.load(.seq_cst) & closed_bit != 0;
            }

            fn recvRaw(self: *Receiver, out: *T) RecvResult {
                return if (owned) self.recvOwned(out) else self.recvPlain(out);
            }

            fn recvPlain(self: *Receiver, out: *T) RecvResult {
                const ch = self.channel;
                const slot = &ch.slots[@intCast(self.next & (ch.slots.len - 1))];
                // Acquire: pairs with the writer's release of the even sequence. Seq_cst
                // besides: after registering, this is the re-check half of the busy protocol
                // (module comment).
                const before = slot.seq.load(.seq_cst);
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
                if (tail - self.next > ch.slots.len) return self.lag(tail);
                // A sender claimed `next` and is writing it.
                return .busy;
            }

            /// Owned values. A send writes its slot and then moves `tail`, both under
            /// `tail_lock`, so the slot of `next` holds: `next` (read it, even if `tail` has
            /// not moved past it yet: the value is complete), an older position (`next` is
            /// not sent: empty, unless `tail` has moved on meanwhile, and then a second look
            /// finds it), or a later lap `q` (being sent or sent: `next` was overwritten, and
            /// `q` is retained).
            fn recvOwned(self: *Receiver, out: *T) RecvResult {
                const ch = self.channel;
                var attempts: u32 = 0;
                while (true) : (attempts += 1) {
                    assert(attempts < 2); // The second look finds `next` or a later lap.
                    switch (ch.readOwned(self.next, out)) {
                        .ok => {
                            self.next += 1;
                            return .ok;
                        },
                        .overwritten => |position| {
                            // `position` is sent or being sent; `tail` may be further on.
                            const tail = ch.tail.value.load(.seq_cst) & ~closed_bit;
                            return self.lag(@max(position + 1, tail));
                        },
                        .older => {},
                    }
                    // seq_cst: the re-check half of the waiter protocol.
                    const tail_word = ch.tail.value.load(.seq_cst);
                    const tail = tail_word & ~closed_bit;
                    if (self.next >= tail) return if (tail_word & closed_bit != 0) .closed else .empty;
                    if (tail - self.next > ch.slots.len) return self.lag(tail);
                    // `next` was sent after our look at its slot: look again.
                }
            }

            /// Skips to the oldest position retained once positions below `tail` are sent.
            fn lag(self: *Receiver, tail: u64) RecvResult {
                const oldest = tail - self.channel.slots.len;
                assert(oldest > self.next);
                self.lagged_count = oldest - self.next;
                self.next = oldest;
                return .lagged;
            }
        };

        const OwnedRead = union(enum) { ok, older, overwritten: u64 };

        /// Clones the value of `position` into `out` if its slot holds it (owned values).
        fn readOwned(self: *Self, position: u64, out: *T) OwnedRead {
            const slot = &self.slots[@intCast(position & (self.slots.len - 1))];
            var taken: ?T = null;
            slot.lock.lock();
            if (!slot.occupied or slot.position != position) {
                // (Unoccupied and holding `position` is impossible: the caller has not read it.
                // `position` stays valid after the last reader took the value out.)
                const seen: OwnedRead = if (slot.position > position) .{ .overwritten = slot.position } else .older;
                slot.lock.unlock();
                return seen;
            }
            out.* = Values.clone(&slot.value);
            taken = countDownLocked(slot);
            slot.lock.unlock();
            if (taken) |value| Values.release(value);
            return .ok;
        }

        /// One receiver is done with the value of `slot` (lock held): the last one takes it out
        /// for release after unlocking.
        fn countDownLocked(slot: *OwnedSlot) ?T {
            assert(slot.remaining > 0);
            slot.remaining -= 1;
            if (slot.remaining != 0) return null;
            slot.occupied = false;
            return slot.value;
        }

        /// A departing receiver will not read `position`: count it down (owned values).
        fn skipOwned(self: *Self, position: u64) void {
            const slot = &self.slots[@intCast(position & (self.slots.len - 1))];
            var taken: ?T = null;
            slot.lock.lock();
            if (slot.occupied and slot.position == position) taken = countDownLocked(slot);
            slot.lock.unlock();
            if (taken) |value| Values.release(value);
        }

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
                    if (!mustWait(result)) return self.finish(result, value);
                    hook.reached(.channel_before_register);
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
                if (!mustWait(result)) removed = queue.removeLocked(&self.waiter);
                queue.unlock();
                if (replaced) |w| w.drop();
                if (removed) |w| w.drop();
                if (mustWait(result)) {
                    budget.refund();
                    return .pending;
                }
                return self.finish(result, value);
            }

            /// Empty, or `next` claimed and not yet written (busy): either way a send still to
            /// complete wakes the registered waiter (module comment, "Waiting").
            fn mustWait(result: RecvResult) bool {
                return result == .empty or result == .busy;
            }

            fn finish(self: *RecvFuture, result: RecvResult, value: T) Poll(Output) {
                switch (result) {
                    .empty, .busy => unreachable,
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
    var tx, const first = try Broadcast(u64).init(testing.allocator, 16);
    defer tx.deinit();
    var receivers: [4]Broadcast(u64).Receiver = undefined;
    receivers[0] = first;
    for (receivers[1..]) |*rx| rx.* = tx.subscribe();
    for (0..100) |i| {
        try testing.expectEqual(@as(usize, 4), try tx.send(i));
        for (&receivers) |*rx| try testing.expectEqual(@as(u64, i), try rx.tryRecv());
    }
    for (&receivers) |*rx| {
        try testing.expectError(error.Empty, rx.tryRecv());
        rx.deinit();
    }
    try testing.expectError(error.Closed, tx.send(0)); // No receiver left.
}

test "broadcast: a receiver sees only values sent after it subscribed" {
    var tx, var early = try Broadcast(u32).init(testing.allocator, 4);
    defer tx.deinit();
    defer early.deinit();
    _ = try tx.send(1);
    var late = tx.subscribe();
    defer late.deinit();
    var resubscribed = early.resubscribe();
    defer resubscribed.deinit();
    var cloned = early.clone(); // Same position as `early`.
    defer cloned.deinit();
    _ = try tx.send(2);
    try testing.expectEqual(@as(u32, 1), try early.tryRecv());
    try testing.expectEqual(@as(u32, 2), try early.tryRecv());
    try testing.expectEqual(@as(u32, 1), try cloned.tryRecv());
    try testing.expectEqual(@as(u32, 2), try late.tryRecv());
    try testing.expectEqual(@as(u32, 2), try resubscribed.tryRecv());
    try testing.expectError(error.Empty, late.tryRecv());
}

test "broadcast: lagging reports the exact missed count, then continues in order" {
    var tx, var rx = try Broadcast(u32).init(testing.allocator, 3); // Rounded up to 4.
    defer tx.deinit();
    defer rx.deinit();
    try testing.expectEqual(@as(usize, 4), tx.capacity());
    var fast = tx.subscribe();
    defer fast.deinit();
    for (0..10) |i| {
        _ = try tx.send(@intCast(i));
        try testing.expectEqual(@as(u32, @intCast(i)), try fast.tryRecv());
    }
    try testing.expectEqual(@as(u64, 10), rx.len());
    try testing.expectError(error.Lagged, rx.tryRecv());
    try testing.expectEqual(@as(u64, 6), rx.lastLagged());
    for (6..10) |i| try testing.expectEqual(@as(u32, @intCast(i)), try rx.tryRecv());
    try testing.expectError(error.Empty, rx.tryRecv());
    // Exactly `capacity` behind is not lagging.
    for (10..14) |i| _ = try tx.send(@intCast(i));
    for (10..14) |i| try testing.expectEqual(@as(u32, @intCast(i)), try rx.tryRecv());
}

test "broadcast: the last sender closes; receivers drain, then Closed" {
    var tx, var rx = try Broadcast(u32).init(testing.allocator, 4);
    defer rx.deinit();
    var tx2 = tx.clone();
    _ = try tx.send(1);
    tx.deinit();
    try testing.expect(!rx.isClosed());
    _ = try tx2.send(2);
    tx2.deinit();
    try testing.expect(rx.isClosed());
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());
    try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    try testing.expectError(error.Closed, rx.tryRecv());
    var after = rx.resubscribe();
    defer after.deinit();
    try testing.expectError(error.Closed, after.tryRecv());
}

test "broadcast: pending recv is woken by send; all waiting receivers are woken" {
    var tx, var a = try Broadcast(u32).init(testing.allocator, 4);
    defer tx.deinit();
    defer a.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var b = tx.subscribe();
    defer b.deinit();
    var recv_a = a.recv();
    var recv_b = b.recv();
    try testing.expect(pollWith(&recv_a, &waker) == .pending);
    try testing.expect(pollWith(&recv_b, &waker) == .pending);
    _ = try tx.send(5);
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    try testing.expectEqual(@as(u32, 5), try pollWith(&recv_a, &waker).ready);
    try testing.expectEqual(@as(u32, 5), try pollWith(&recv_b, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "broadcast: recv future reports Lagged and Closed" {
    var tx, var rx = try Broadcast(u32).init(testing.allocator, 2);
    defer rx.deinit();
    for (0..5) |i| _ = try tx.send(@intCast(i));
    var lagged = rx.recv();
    try testing.expectError(error.Lagged, future.pollOnce(&lagged).ready);
    try testing.expectEqual(@as(u64, 3), rx.lastLagged());
    var next = rx.recv();
    try testing.expectEqual(@as(u32, 3), try future.pollOnce(&next).ready);
    tx.deinit();
    var last = rx.recv();
    try testing.expectEqual(@as(u32, 4), try future.pollOnce(&last).ready);
    var closed = rx.recv();
    try testing.expectError(error.Closed, future.pollOnce(&closed).ready);
}

test "broadcast: the last sender wakes a pending recv; cancel unlinks; waker replacement" {
    var tx, var rx = try Broadcast(u32).init(testing.allocator, 2);
    defer rx.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();

    var cancelled = rx.recv();
    try testing.expect(pollWith(&cancelled, &old_waker) == .pending);
    cancelled.cancel();
    cancelled.cancel();
    _ = try tx.send(1);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try testing.expectEqual(@as(u32, 1), try rx.tryRecv());

    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &old_waker) == .pending);
    try testing.expect(pollWith(&recv, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    tx.deinit();
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &new_waker).ready);
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
}

fn broadcastSendHook(context: *anyopaque) void {
    const tx: *Broadcast(u32).Sender = @ptrCast(@alignCast(context));
    _ = tx.send(21) catch unreachable;
}

fn broadcastCloseHook(context: *anyopaque) void {
    const tx: *Broadcast(u32).Sender = @ptrCast(@alignCast(context));
    tx.deinit();
}

test "broadcast: a send or the close between the check and registration is not missed" {
    var tx, var rx = try Broadcast(u32).init(testing.allocator, 2);
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    hook.arm(.channel_before_register, @as(*anyopaque, &tx), broadcastSendHook);
    try testing.expectEqual(@as(u32, 21), try pollWith(&recv, &waker).ready);
    var recv_closed = rx.recv();
    hook.arm(.channel_before_register, @as(*anyopaque, &tx), broadcastCloseHook);
    try testing.expectError(error.Closed, pollWith(&recv_closed, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

/// A send split at the busy window: `position` claimed by the test, written by `run`.
const ClaimedSend = struct {
    channel: *Broadcast(u32),
    position: u64,
    value: u32,

    fn run(self: *ClaimedSend) void {
        self.channel.publishPlain(self.position, self.value);
    }
};

test "broadcast: a receive that finds its value claimed but unwritten sleeps until the write" {
    var tx, var rx = try Broadcast(u32).init(testing.allocator, 4);
    defer tx.deinit();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();

    // The sender writes after the receiver registered: the receiver waits, not woken by itself
    // (the old code re-polled itself at once, spinning while the sender was off the CPU), and
    // the write wakes it.
    var late = ClaimedSend{ .channel = tx.channel, .position = tx.channel.claimPlain(), .value = 7 };
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expect(pollWith(&recv, &waker) == .pending); // Re-polled spuriously: still waits.
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    late.run();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(u32, 7), try pollWith(&recv, &waker).ready);

    // The sender writes between the receiver's first look (busy) and its registration: the
    // re-check after registering sees the value.
    var early = ClaimedSend{ .channel = tx.channel, .position = tx.channel.claimPlain(), .value = 8 };
    var recv_early = rx.recv();
    hook.arm(.channel_before_register, &early, ClaimedSend.run);
    defer hook.disarm();
    try testing.expectEqual(@as(u32, 8), try pollWith(&recv_early, &waker).ready);
    try testing.expect(hook.fired());

    // Another sender's write wakes the waiter too; still busy, it registers again and the
    // write it waits for wakes it.
    var first = ClaimedSend{ .channel = tx.channel, .position = tx.channel.claimPlain(), .value = 9 };
    var second = ClaimedSend{ .channel = tx.channel, .position = tx.channel.claimPlain(), .value = 10 };
    var recv_first = rx.recv();
    try testing.expect(pollWith(&recv_first, &waker) == .pending);
    second.run();
    try testing.expectEqual(@as(u32, 2), counter.wakeCount());
    try testing.expect(pollWith(&recv_first, &waker) == .pending);
    first.run();
    try testing.expectEqual(@as(u32, 3), counter.wakeCount());
    try testing.expectEqual(@as(u32, 9), try pollWith(&recv_first, &waker).ready);
    try testing.expectEqual(@as(u32, 10), try rx.tryRecv());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "broadcast: multi-word values" {
    const Wide = struct { a: u64, b: u64, c: u64, tag: u8 };
    var tx, var rx = try Broadcast(Wide).init(testing.allocator, 8);
    defer tx.deinit();
    defer rx.deinit();
    for (0..50) |i| {
        _ = try tx.send(.{ .a = i, .b = i * 2, .c = i * 3, .tag = @truncate(i) });
        const out = try rx.tryRecv();
        try testing.expectEqual(@as(u64, i * 3), out.c);
        try testing.expectEqual(@as(u8, @truncate(i)), out.tag);
    }
}

test "broadcast: owned values are cloned per receiver, released after the last read" {
    const RcBuffer = @import("../RcBuffer.zig");
    const buffer = try RcBuffer.init(testing.allocator, "broadcast");
    defer buffer.release();
    var tx, var a = try Broadcast(*RcBuffer).init(testing.allocator, 4);
    var b = tx.subscribe();
    try testing.expectEqual(@as(usize, 2), try tx.send(buffer.clone()));
    try testing.expectEqual(@as(usize, 2), buffer.refCount()); // Ours and the channel's.
    const got_a = try a.tryRecv();
    try testing.expect(got_a == buffer);
    try testing.expectEqual(@as(usize, 3), buffer.refCount());
    const got_b = try b.tryRecv();
    // The last reader took the channel's reference out: ours, a's and b's remain.
    try testing.expectEqual(@as(usize, 3), buffer.refCount());
    got_a.release();
    got_b.release();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());

    // Evicted: values nobody read are released by the send that overwrites them.
    for (0..6) |_| _ = try tx.send(buffer.clone());
    try testing.expectEqual(@as(usize, 5), buffer.refCount()); // 4 retained.
    try testing.expectError(error.Lagged, a.tryRecv());
    try testing.expectEqual(@as(u64, 2), a.lastLagged());
    // A receiver that goes counts down what it did not read.
    b.deinit();
    for (0..4) |_| (try a.tryRecv()).release();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());

    // A clone is counted in the retained values it will read; values left at the end are
    // released by the last handle.
    _ = try tx.send(buffer.clone());
    var c = a.clone();
    (try a.tryRecv()).release();
    try testing.expectEqual(@as(usize, 2), buffer.refCount()); // c has not read it yet.
    _ = try tx.send(buffer.clone());
    try testing.expectEqual(@as(usize, 3), buffer.refCount());
    var second_tx = tx.clone();
    a.deinit();
    c.deinit();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());
    const refused = buffer.clone();
    try testing.expectError(error.Closed, tx.send(refused)); // No receiver: handed back.
    refused.release();
    second_tx.deinit();
    tx.deinit();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());
}

test "broadcast: owned values still retained when the last handle goes are released" {
    const RcBuffer = @import("../RcBuffer.zig");
    const buffer = try RcBuffer.init(testing.allocator, "left");
    defer buffer.release();
    var tx, var rx = try Broadcast(*RcBuffer).init(testing.allocator, 8);
    for (0..5) |_| _ = try tx.send(buffer.clone());
    tx.deinit();
    (try rx.tryRecv()).release();
    try testing.expectEqual(@as(usize, 5), buffer.refCount());
    rx.deinit(); // Counts down the 4 unread values: released.
    try testing.expectEqual(@as(usize, 1), buffer.refCount());

    var tx2, var rx2 = try Broadcast(*RcBuffer).init(testing.allocator, 8);
    for (0..3) |_| _ = try tx2.send(buffer.clone());
    var late = tx2.subscribe(); // Not counted in the 3 values.
    rx2.deinit();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());
    late.deinit();
    tx2.deinit();
}
