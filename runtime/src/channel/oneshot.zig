//! `Oneshot(T)`: one value, from one sender to one receiver, with no allocation.
//!
//! The whole channel is this struct (one state word, the value, two waker slots); it can live
//! on a stack or inside a task's future: `var ch = Oneshot(T).init();`, the sending side gets
//! `&ch`. After Tokio's `oneshot`, without the `Arc`:
//!
//! State word bits:
//!
//!     rx_task_set (1)   `rx_waker` holds the receiver's waker
//!     value_sent  (2)   `value` is written; the sender is done
//!     closed_bit  (4)   closed by the receiver (`closeReceiver`) or by the sender without a
//!                       value (`closeSender`)
//!     tx_task_set (8)   `tx_waker` holds the waker of the sender's `closed()` future
//!     locked     (16)   one side is copying the other side's waker (see below)
//!
//! Waker slots: each side writes its own slot only while its `*_task_set` bit is clear and then
//! sets the bit with a release read-modify-write. Whoever clears the bit owns the waker in the
//! slot (wakes or drops it). A side clears its own bit only with a compare-and-swap that fails
//! while `locked` is set.
//!
//! Lifetime, the reason for `locked`: Tokio's sender wakes the receiver *after* publishing
//! `VALUE_SENT`, which is fine because an `Arc` keeps the shared state alive. Here the state
//! may be freed by the receiving side as soon as it sees the value (the echo benchmark's caller
//! returns and its task memory goes away). So the sender must copy the receiver's waker
//! *before* publishing: it sets `locked` (compare-and-swap, acquire: the slot's contents are
//! visible), copies `rx_waker`, and then publishes `value_sent` and clears `locked` and
//! `rx_task_set` in one release store (it owns the copied waker). While `locked` is set the
//! state word is changed only by its holder (every other change is a compare-and-swap that
//! waits for `locked` to clear, or a registration that cannot happen while the bit that made
//! the holder lock is set), so a plain store suffices. The publishing store is the sender's
//! last access to the channel; it then wakes its copy. `closeReceiver` does the same with the
//! sender's `tx_waker`.
//!
//! The rule for the memory: the receiving side owns it. It may free or reuse it once `recv` or
//! `tryRecv` has returned the value or `error.Closed` caused by the sender. If the receiver
//! gives up first (`closeReceiver`, or cancels and drops the receive), the memory must stay
//! valid until the sender's `send`/`closeSender` call has returned.
//!
//! Lost wake-ups: registration (`fetchOr(rx_task_set)`) and completion (the compare-and-swap or
//! store that sets `value_sent`/`closed`) are read-modify-writes of the same word, so one of
//! them comes first in its modification order and the second one sees the first: either the
//! sender sees the waker and wakes it, or the registering receiver sees the value and returns
//! it (taking its waker back). No seq_cst is needed for a single word.
//!
//! Values handed back: `send` takes `value` by copy; on `error.Closed` it was not delivered and
//! the caller still owns it. A value sent and never received stays in the channel (Zig has no
//! destructors: a receiver that closes must `tryRecv` a value that owns resources).

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Waker = @import("../Waker.zig");
const budget = @import("../budget.zig");
const common = @import("common.zig");
const Backoff = common.Backoff;

pub fn Oneshot(comptime T: type) type {
    return struct {
        const Self = @This();

        const rx_task_set: u32 = 1 << 0;
        const value_sent: u32 = 1 << 1;
        const closed_bit: u32 = 1 << 2;
        const tx_task_set: u32 = 1 << 3;
        const locked: u32 = 1 << 4;

        state: std.atomic.Value(u32) = .init(0),
        /// Receiver-private: the value has been returned once.
        value_taken: bool = false,
        value: T = undefined,
        rx_waker: Waker = undefined,
        tx_waker: Waker = undefined,

        pub fn init() Self {
            return .{};
        }

        // -- sending side -----------------------------------------------------------------

        /// Sends the value and wakes the receiver. `error.Closed`: the receiver closed first;
        /// the value was not delivered and the caller keeps it. At most one call per channel
        /// (a send or a `closeSender`). A `closed()` future must be cancelled or complete
        /// before.
        pub fn send(self: *Self, value: T) error{Closed}!void {
            self.value = value; // Read by the receiver only after it sees `value_sent`.
            // Fast path: no waker registered, nothing closed. Release: publishes `value`.
            const observed = self.state.cmpxchgStrong(0, value_sent, .release, .monotonic) orelse return;
            if (!self.complete(observed, value_sent)) return error.Closed;
        }

        /// The sender gives up without a value: the receiver gets `error.Closed`. No effect
        /// after `send`.
        pub fn closeSender(self: *Self) void {
            const observed = self.state.load(.monotonic);
            if (observed & value_sent != 0) return;
            _ = self.complete(observed, closed_bit);
        }

        /// A future that completes once the receiver has closed (Tokio's `Sender::closed`).
        pub fn closed(self: *Self) ClosedFuture {
            return .{ .channel = self };
        }

        /// Publishes `bit` (`value_sent` or `closed`), waking the receiver if it registered.
        /// False when the channel was closed first (nothing published).
        fn complete(self: *Self, observed: u32, comptime bit: u32) bool {
            var backoff = Backoff{};
            var state = observed;
            while (true) {
                assert(state & value_sent == 0); // Sent twice.
                assert(state & tx_task_set == 0); // A `closed()` future is still registered.
                if (state & closed_bit != 0) return false;
                if (state & locked != 0) {
                    // The receiver is closing and copying our waker: a few instructions.
                    backoff.snooze();
                    state = self.state.load(.monotonic);
                    continue;
                }
                if (state & rx_task_set == 0) {
                    // Release: publishes `value` with `value_sent`.
                    state = self.state.cmpxchgWeak(state, state | bit, .release, .monotonic) orelse return true;
                    continue;
                }
                // The receiver is waiting: lock its slot to copy the waker before publishing.
                // Acquire: pairs with the receiver's release when it set `rx_task_set`.
                if (self.state.cmpxchgWeak(state, state | locked, .acquire, .monotonic)) |actual| {
                    state = actual;
                    continue;
                }
                const waker = self.rx_waker;
                // We hold `locked`: nobody else changes the word. Release: publishes `value`.
                // This store is the sender's last access to `self`.
                self.state.store((state | bit) & ~(locked | rx_task_set), .release);
                waker.wake();
                return true;
            }
        }

        // -- receiving side ---------------------------------------------------------------

        /// The value if it was sent; `error.Empty` if not yet; `error.Closed` if the sender
        /// closed, or the receiver closed before a value was sent, or the value was already
        /// returned.
        pub fn tryRecv(self: *Self) error{ Empty, Closed }!T {
            // Acquire: pairs with the sender's release publishing `value`.
            const state = self.state.load(.acquire);
            if (state & (value_sent | closed_bit) == 0) return error.Empty;
            return self.takeResult(state);
        }

        /// A future for the value. Output `error{Closed}!T`. One receive future at a time.
        pub fn recv(self: *Self) RecvFuture {
            return .{ .channel = self };
        }

        /// The receiver gives up: a later `send` fails with `error.Closed` and the sender's
        /// `closed()` future completes. A value sent before can still be taken with `tryRecv`.
        pub fn closeReceiver(self: *Self) void {
            var backoff = Backoff{};
            var state = self.state.load(.monotonic);
            while (true) {
                if (state & locked != 0) {
                    // The sender is copying our waker to complete: a few instructions.
                    backoff.snooze();
                    state = self.state.load(.monotonic);
                    continue;
                }
                // Already closed: nothing left to do. Task bits seen together with `closed` only
                // exist inside the registering side's own fetchOr..fetchAnd window, and that
                // side takes its waker back itself — touching it here would consume it twice.
                if (state & closed_bit != 0) return;
                if (state & tx_task_set != 0) {
                    // Lock the sender's slot to copy its waker (acquire: its contents).
                    if (self.state.cmpxchgWeak(state, state | locked, .acquire, .monotonic)) |actual| {
                        state = actual;
                        continue;
                    }
                    const tx = self.tx_waker;
                    const rx: ?Waker = if (state & rx_task_set != 0) self.rx_waker else null;
                    // We hold `locked`: nobody else changes the word.
                    self.state.store((state | closed_bit) & ~(locked | tx_task_set | rx_task_set), .release);
                    if (rx) |w| w.drop();
                    tx.wake();
                    return;
                }
                // Release: orders our earlier accesses before the sender's view of `closed`.
                if (self.state.cmpxchgWeak(state, (state | closed_bit) & ~rx_task_set, .release, .monotonic)) |actual| {
                    state = actual;
                    continue;
                }
                if (state & rx_task_set != 0) self.rx_waker.drop();
                return;
            }
        }

        /// True once either side closed (a sent value may still be waiting in the channel).
        pub fn isClosed(self: *const Self) bool {
            return self.state.load(.acquire) & closed_bit != 0;
        }

        fn takeResult(self: *Self, state: u32) error{Closed}!T {
            if (state & value_sent != 0 and !self.value_taken) {
                self.value_taken = true;
                return self.value;
            }
            return error.Closed;
        }

        const Reclaim = union(enum) {
            /// The bit was cleared by us: we own the stored waker again.
            reclaimed: Waker,
            /// The other side took the waker (the state after it did).
            taken: u32,
            /// The other side is copying the waker right now (only when not waiting).
            locked,
        };

        /// Clears the caller's own `task_bit` to own its stored waker again.
        fn reclaim(self: *Self, comptime task_bit: u32, comptime wait: bool) Reclaim {
            var backoff = Backoff{};
            // Acquire: if the other side completed, its writes (the value) are visible.
            var state = self.state.load(.acquire);
            while (true) {
                if (state & task_bit == 0) return .{ .taken = state };
                if (state & locked != 0) {
                    if (!wait) return .locked;
                    backoff.snooze();
                    state = self.state.load(.acquire);
                    continue;
                }
                if (self.state.cmpxchgWeak(state, state & ~task_bit, .acquire, .acquire)) |actual| {
                    state = actual;
                    continue;
                }
                return .{ .reclaimed = if (task_bit == rx_task_set) self.rx_waker else self.tx_waker };
            }
        }

        /// Shared poll logic of `RecvFuture` (task bit `rx_task_set`, done when a value was
        /// sent or the channel closed) and `ClosedFuture` (`tx_task_set`, done when closed).
        fn pollRegister(self: *Self, cx: *Context, comptime task_bit: u32, comptime done_mask: u32) union(enum) { done: u32, pending, busy } {
            const slot = if (task_bit == rx_task_set) &self.rx_waker else &self.tx_waker;
            // Acquire: pairs with the other side's release when it completed.
            var state = self.state.load(.acquire);
            if (state & done_mask != 0) return .{ .done = state };
            if (state & task_bit != 0) {
                // Registered by an earlier poll. Reading our own slot is safe: only we write it.
                if (slot.willWakeSame(cx.waker())) return .pending;
                switch (self.reclaim(task_bit, false)) {
                    .reclaimed => |old| old.drop(),
                    .taken => |now| {
                        // The other side took the waker: it completed.
                        assert(now & done_mask != 0);
                        return .{ .done = now };
                    },
                    // The other side is completing right now: poll again at once.
                    .locked => return .busy,
                }
            }
            common.hook.beforeRegister();
            slot.* = cx.waker().clone();
            // Release: publishes the slot to the other side's acquire when it locks. Acquire:
            // if the other side completed first, its writes are visible.
            state = self.state.fetchOr(task_bit, .acq_rel);
            assert(state & (task_bit | locked) == 0);
            if (state & done_mask != 0) {
                // It completed before it could see our waker: take the waker back. Nobody can
                // hold `locked` now (the other side is done and we are not closing).
                _ = self.state.fetchAnd(~task_bit, .monotonic);
                slot.drop();
                return .{ .done = state };
            }
            return .pending;
        }

        pub const RecvFuture = struct {
            channel: *Self,
            finished: bool = false,

            pub const Output = error{Closed}!T;

            pub fn poll(self: *RecvFuture, cx: *Context) Poll(Output) {
                assert(!self.finished);
                if (!budget.proceed(cx)) return .pending;
                switch (self.channel.pollRegister(cx, rx_task_set, value_sent | closed_bit)) {
                    .busy => return common.yieldNow(cx, Output),
                    .done => |state| {
                        self.finished = true;
                        return .{ .ready = self.channel.takeResult(state) };
                    },
                    .pending => {
                        budget.refund();
                        return .pending;
                    },
                }
            }

            /// Takes the registered waker back; a value that arrives stays in the channel.
            /// Idempotent; touches nothing after completion.
            pub fn cancel(self: *RecvFuture) void {
                if (self.finished) return;
                self.finished = true;
                switch (self.channel.reclaim(rx_task_set, true)) {
                    .reclaimed => |waker| waker.drop(),
                    .taken => {},
                    .locked => unreachable,
                }
            }
        };

        pub const ClosedFuture = struct {
            channel: *Self,
            finished: bool = false,

            pub const Output = void;

            pub fn poll(self: *ClosedFuture, cx: *Context) Poll(void) {
                assert(!self.finished);
                if (!budget.proceed(cx)) return .pending;
                switch (self.channel.pollRegister(cx, tx_task_set, closed_bit)) {
                    .busy => return common.yieldNow(cx, void),
                    .done => {
                        self.finished = true;
                        return .{ .ready = {} };
                    },
                    .pending => {
                        budget.refund();
                        return .pending;
                    },
                }
            }

            pub fn cancel(self: *ClosedFuture) void {
                if (self.finished) return;
                self.finished = true;
                switch (self.channel.reclaim(tx_task_set, true)) {
                    .reclaimed => |waker| waker.drop(),
                    .taken => {},
                    .locked => unreachable,
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

test "oneshot: send then tryRecv, exactly once" {
    var ch = Oneshot(u64).init();
    try testing.expectError(error.Empty, ch.tryRecv());
    try ch.send(5);
    try testing.expectEqual(@as(u64, 5), try ch.tryRecv());
    try testing.expectError(error.Closed, ch.tryRecv());
}

test "oneshot: pending recv is woken by send" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expectEqual(@as(i32, 2), counter.outstanding());
    try ch.send(9);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 9), try pollWith(&recv, &waker).ready);
    recv.cancel(); // After completion: no effect.
}

test "oneshot: receiver closed first, send hands the value back" {
    var ch = Oneshot(u32).init();
    ch.closeReceiver();
    try testing.expect(ch.isClosed());
    try testing.expectError(error.Closed, ch.send(3));
    try testing.expectError(error.Closed, ch.tryRecv());
}

test "oneshot: close receiver after the value was sent keeps the value" {
    var ch = Oneshot(u32).init();
    try ch.send(4);
    ch.closeReceiver();
    try testing.expectEqual(@as(u32, 4), try ch.tryRecv());
    try testing.expectError(error.Closed, ch.tryRecv());
}

test "oneshot: closeSender wakes the pending receiver with Closed" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    ch.closeSender();
    ch.closeSender();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "oneshot: closeReceiver with a pending recv drops its waker" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    ch.closeReceiver();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);
    try testing.expectError(error.Closed, ch.send(1));
}

test "oneshot: waker replacement" {
    var ch = Oneshot(u32).init();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &old_waker) == .pending);
    try testing.expect(pollWith(&recv, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try ch.send(1);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), try pollWith(&recv, &new_waker).ready);
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
}

test "oneshot: cancel of a pending recv; the value stays for tryRecv" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    recv.cancel();
    recv.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try ch.send(8);
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectEqual(@as(u32, 8), try ch.tryRecv());
}

fn sendHook(context: *anyopaque) void {
    const ch: *Oneshot(u32) = @ptrCast(@alignCast(context));
    ch.send(11) catch unreachable;
}

fn closeSenderHook(context: *anyopaque) void {
    const ch: *Oneshot(u32) = @ptrCast(@alignCast(context));
    ch.closeSender();
}

fn closeReceiverHook(context: *anyopaque) void {
    const ch: *Oneshot(u32) = @ptrCast(@alignCast(context));
    ch.closeReceiver();
}

test "oneshot: a send between the check and registration is not missed" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = ch.recv();
    common.hook.set(.{ .context = &ch, .run = sendHook });
    try testing.expectEqual(@as(u32, 11), try pollWith(&recv, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // Waker taken back.

    var ch2 = Oneshot(u32).init();
    var recv2 = ch2.recv();
    common.hook.set(.{ .context = &ch2, .run = closeSenderHook });
    try testing.expectError(error.Closed, pollWith(&recv2, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "oneshot: closed() completes when the receiver closes" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var closed_future = ch.closed();
    try testing.expect(pollWith(&closed_future, &waker) == .pending);
    ch.closeReceiver();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    _ = pollWith(&closed_future, &waker).ready;
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectError(error.Closed, ch.send(1));

    // Closed in the window between the check and the registration.
    var ch2 = Oneshot(u32).init();
    var closed2 = ch2.closed();
    common.hook.set(.{ .context = &ch2, .run = closeReceiverHook });
    _ = pollWith(&closed2, &waker).ready;
    try testing.expectEqual(@as(i32, 1), counter.outstanding());

    // Cancelled, then the sender sends normally.
    var ch3 = Oneshot(u32).init();
    var closed3 = ch3.closed();
    try testing.expect(pollWith(&closed3, &waker) == .pending);
    closed3.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try ch3.send(2);
    try testing.expectEqual(@as(u32, 2), try ch3.tryRecv());
}

test "oneshot: closeReceiver is idempotent, also while the sender's closed() registers" {
    var ch = Oneshot(u32).init();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    ch.closeReceiver();
    ch.closeReceiver();
    // The sender registers after the close: sees it at once and takes its own waker back.
    var closed_future = ch.closed();
    _ = pollWith(&closed_future, &waker).ready;
    ch.closeReceiver();
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectError(error.Closed, ch.send(3));
}

test "oneshot: the receiver and the sender both waiting, receiver closes" {
    var ch = Oneshot(u32).init();
    var rx_counter = Waker.Counting{};
    var tx_counter = Waker.Counting{};
    const rx_waker = rx_counter.waker();
    defer rx_waker.drop();
    const tx_waker = tx_counter.waker();
    defer tx_waker.drop();
    var recv = ch.recv();
    var closed_future = ch.closed();
    try testing.expect(pollWith(&recv, &rx_waker) == .pending);
    try testing.expect(pollWith(&closed_future, &tx_waker) == .pending);
    ch.closeReceiver();
    try testing.expectEqual(@as(u32, 1), tx_counter.wakeCount());
    try testing.expectEqual(@as(u32, 0), rx_counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), rx_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), tx_counter.outstanding());
    _ = pollWith(&closed_future, &tx_waker).ready;
    recv.cancel();
}

test "oneshot: works for larger values" {
    const Big = struct { a: [16]u64 };
    var ch = Oneshot(Big).init();
    var big: Big = undefined;
    for (&big.a, 0..) |*x, i| x.* = i * 3;
    try ch.send(big);
    const out = try ch.tryRecv();
    try testing.expectEqualSlices(u64, &big.a, &out.a);
}
