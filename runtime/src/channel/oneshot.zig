//! `Oneshot(T)`: one value, from one `Sender` to one `Receiver`, with no allocation.
//!
//! The shared state is this struct (one state word, the value, two waker slots). It lives in a
//! place the caller provides, typically inside the task that awaits the value:
//! `var reply = Oneshot(T).init(); const tx, var rx = reply.split();`. The handles are what
//! Tokio's `oneshot::channel()` returns, without the `Arc`:
//!
//! - `Sender.send(value)` consumes the sender; `error.Closed` (the receiver is gone) hands the
//!   value back. `Sender.deinit` without a send closes the sender's side: the receiver gets
//!   `error.Closed`. `Sender.closed()` is a future that completes when the receiver goes.
//! - `Receiver.recv()` / `tryRecv()` take the value; `Receiver.close()` refuses later sends
//!   (a value sent before can still be taken); `Receiver.deinit` closes the receiver's side and
//!   releases a value that was sent and never received (owned values, `common.Ownership`).
//!
//! Lifetime rule (the price of no `Arc`): the state must stay valid, and must not be reused,
//! until both handles are finished: the receiver was deinitialised and the sender has sent,
//! closed or been deinitialised (its last access to the state is the read-modify-write that
//! publishes it, which sets `tx_gone`). `deinit` on the state asserts exactly that
//! (`isFinished`); call it before the memory is reused or freed. In the usual shape (the
//! receiving task owns the state and awaits the value) both hold as soon as `recv` has
//! returned the value or the `error.Closed` the sender caused. A receiver that may give up
//! first (a `timeout` around `recv`, a task that may be aborted) cannot observe the sender's
//! last access: use `OwnedOneshot` (owned_oneshot.zig), whose halves keep the state alive.
//!
//! State word bits:
//!
//!     rx_task_set (1)   `rx_waker` holds the receiver's waker
//!     value_sent  (2)   `value` is written; the sender is done
//!     closed      (4)   closed by the receiver (`close`/`deinit`) or by the sender without a
//!                       value (`Sender.deinit`)
//!     tx_task_set (8)   `tx_waker` holds the waker of the sender's `closed()` future
//!     locked     (16)   one side is copying the other side's waker (see below)
//!     tx_gone    (32)   the sender made its last access to the state
//!
//! Waker slots: each side writes its own slot only while its `*_task_set` bit is clear and then
//! sets the bit with a release read-modify-write. Whoever clears the bit owns the waker in the
//! slot (wakes or drops it). A side clears its own bit only with a compare-and-swap that fails
//! while `locked` is set.
//!
//! Why `locked`: Tokio's sender wakes the receiver *after* publishing `VALUE_SENT`, which is
//! fine because an `Arc` keeps the state alive. Here the receiving side may free the state as
//! soon as it sees the value, so the sender copies the receiver's waker *before* publishing: it
//! sets `locked` (compare-and-swap, acquire: the slot's contents are visible), copies
//! `rx_waker`, then publishes `value_sent | tx_gone` and clears `locked | rx_task_set` with one
//! release compare-and-swap (it owns the copied waker), its last access, and then wakes its
//! copy. The receiver's close does the same with the sender's `tx_waker`.
//!
//! Nobody waits for the holder of `locked` (issue 11: no spinning on another thread's critical
//! section). While one side holds it, the other side only ever sets one bit with a `fetchOr`
//! and goes on: the receiver's close sets `closed` (the sender's publishing compare-and-swap
//! then sees it, fails the send and hands the value back: the close came first), and the
//! sender sets `tx_gone` when it finds the receiver closing (its send fails). The holder's
//! final compare-and-swap retries over those (at most two) changes. A side that wants its own
//! waker back while the other holds `locked` leaves it to the holder, which wakes or drops it;
//! a receive that must re-register with a different waker meanwhile yields (polls again at
//! once), because the holder wakes the old one.
//!
//! Lost wake-ups: registration (`fetchOr(rx_task_set)`) and completion (the compare-and-swap
//! that sets `value_sent`/`closed`) are read-modify-writes of the same word, so one of them
//! comes first in its modification order and the second one sees the first: either the sender
//! sees the waker and wakes it, or the registering receiver sees the value and returns it
//! (taking its waker back). No seq_cst is needed for a single word.

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Waker = @import("../Waker.zig");
const budget = @import("../budget.zig");
const common = @import("common.zig");
const hook = @import("../hook.zig");

pub fn Oneshot(comptime T: type) type {
    return struct {
        const Self = @This();
        const Values = common.Ownership(T);

        const rx_task_set: u32 = 1 << 0;
        const value_sent: u32 = 1 << 1;
        const closed_bit: u32 = 1 << 2;
        const tx_task_set: u32 = 1 << 3;
        const locked: u32 = 1 << 4;
        const tx_gone: u32 = 1 << 5;

        state: std.atomic.Value(u32) = .init(0),
        /// Receiver-private: the value has been returned (or released) once.
        value_taken: bool = false,
        /// Owner-private: `split` was called.
        split_done: bool = false,
        /// Receiver-private, read by the owner (ordered by whatever hands the receiver's work
        /// back to it, e.g. a join): the receiver was deinitialised.
        rx_done: bool = false,
        value: T = undefined,
        rx_waker: Waker = undefined,
        tx_waker: Waker = undefined,

        pub fn init() Self {
            return .{};
        }

        /// What `split` returns: destructure it as `const tx, var rx = state.split();`.
        pub const Pair = struct { Sender, Receiver };

        /// The two handles of this (fresh) state. At most once per `init`.
        pub fn split(self: *Self) Pair {
            assert(!self.split_done and self.state.load(.monotonic) == 0); // Reused without init.
            self.split_done = true;
            return .{ .{ .channel = self }, .{ .channel = self } };
        }

        /// True when neither handle will touch the state again (see the lifetime rule).
        pub fn isFinished(self: *const Self) bool {
            if (!self.split_done) return true;
            // Acquire: pairs with the sender's release read-modify-write that set `tx_gone`,
            // its last access: everything it did to the state happens before our return.
            return self.rx_done and self.state.load(.acquire) & tx_gone != 0;
        }

        /// Before the memory is reused or freed: asserts the lifetime rule.
        pub fn deinit(self: *Self) void {
            assert(self.isFinished()); // A handle still uses this state.
            self.* = undefined;
        }

        // -- sending side -----------------------------------------------------------------

        /// The sending half: `send` once, or `deinit` to close without a value.
        pub const Sender = struct {
            /// Null once the sender has sent or was deinitialised.
            channel: ?*Self,

            /// Sends the value and wakes the receiver; consumes the sender (a later `deinit`
            /// does nothing). `error.Closed`: the receiver closed first; the value was not
            /// delivered and the caller keeps it. A `closed()` future must be finished or
            /// cancelled before.
            pub fn send(self: *Sender, value: T) error{Closed}!void {
                const channel = self.channel.?; // Sent twice.
                self.channel = null;
                return channel.send(value);
            }

            /// Gives up the sender. Without a send, the receiver gets `error.Closed`.
            /// Idempotent.
            pub fn deinit(self: *Sender) void {
                const channel = self.channel orelse return;
                self.channel = null;
                channel.closeSender();
            }

            /// A future that completes once the receiver has closed (Tokio's
            /// `Sender::closed`). The sender must stay alive while it is pending.
            pub fn closed(self: *const Sender) ClosedFuture {
                return .{ .channel = self.channel.? };
            }

            /// True once the receiver closed (a send would fail).
            pub fn isClosed(self: *const Sender) bool {
                return self.channel.?.state.load(.acquire) & closed_bit != 0;
            }
        };

        fn send(self: *Self, value: T) error{Closed}!void {
            self.value = value; // Read by the receiver only after it sees `value_sent`.
            // Fast path: no waker registered, nothing closed. Release: publishes `value`; this
            // is the sender's last access.
            const observed = self.state.cmpxchgStrong(0, value_sent | tx_gone, .release, .monotonic) orelse return;
            if (!self.complete(observed, value_sent)) return error.Closed;
        }

        fn closeSender(self: *Self) void {
            const observed = self.state.load(.monotonic);
            assert(observed & (value_sent | tx_gone) == 0); // Closed after it was finished.
            _ = self.complete(observed, closed_bit);
        }

        /// Publishes `bit` (`value_sent` or `closed_bit`) with `tx_gone`, waking the receiver if
        /// it registered. False when the receiver closed first (nothing published).
        fn complete(self: *Self, observed: u32, comptime bit: u32) bool {
            var state = observed;
            while (true) {
                assert(state & (value_sent | tx_gone) == 0); // Sent twice.
                if (state & (closed_bit | locked) != 0) {
                    // Closed, or the receiver is closing right now (it holds `locked` to copy
                    // our `closed()` waker): the close comes first. Release: our last access.
                    _ = self.state.fetchOr(tx_gone, .release);
                    return false;
                }
                assert(state & tx_task_set == 0); // A `closed()` future is still registered.
                if (state & rx_task_set == 0) {
                    // Release: publishes `value` with `value_sent`; our last access.
                    state = self.state.cmpxchgWeak(state, state | bit | tx_gone, .release, .monotonic) orelse return true;
                    continue;
                }
                // The receiver is waiting: lock its slot to copy the waker before publishing.
                // Acquire: pairs with the receiver's release when it set `rx_task_set`.
                if (self.state.cmpxchgWeak(state, state | locked, .acquire, .monotonic)) |actual| {
                    state = actual;
                    continue;
                }
                const waker = self.rx_waker;
                hook.reached(.oneshot_send_locked);
                // We hold `locked`: only the receiver's close may set `closed` meanwhile.
                const published = self.publishLocked(state | locked, bit | tx_gone, rx_task_set);
                if (published & closed_bit != 0 and bit == value_sent) {
                    // The receiver closed while we held `locked`: the send fails.
                    waker.drop();
                    return false;
                }
                waker.wake();
                return true;
            }
        }

        /// The holder of `locked` sets `bits` (unless the other side closed meanwhile, then
        /// only `tx_gone`/`closed_bit` of them), clears `locked` and `task_bits`. Retries over
        /// the other side's `fetchOr`s. Release: publishes the value and is the holder's last
        /// access. Returns the new state.
        fn publishLocked(self: *Self, observed: u32, bits: u32, task_bits: u32) u32 {
            var state = observed;
            var attempts: u32 = 0;
            while (true) : (attempts += 1) {
                assert(attempts < 8); // At most two other changes are possible.
                assert(state & locked != 0);
                // A send that lost to the receiver's close publishes no value.
                const set = if (state & closed_bit != 0) bits & ~value_sent else bits;
                const next = (state | set) & ~(locked | task_bits);
                state = self.state.cmpxchgWeak(state, next, .release, .monotonic) orelse return next;
            }
        }

        /// A future that completes once the receiver has closed.
        pub const ClosedFuture = struct {
            channel: *Self,
            finished: bool = false,

            pub const Output = void;

            pub fn poll(self: *ClosedFuture, cx: *Context) Poll(void) {
                assert(!self.finished);
                if (!budget.proceed(cx)) return .pending;
                switch (self.channel.pollRegister(cx, tx_task_set, closed_bit)) {
                    // The receiver holds `locked`: it is closing, and wakes the old waker.
                    .busy, .done => {
                        self.finished = true;
                        return .{ .ready = {} };
                    },
                    .pending => {
                        budget.refund();
                        return .pending;
                    },
                }
            }

            /// Takes the registered waker back. Idempotent; touches nothing after completion.
            pub fn cancel(self: *ClosedFuture) void {
                if (self.finished) return;
                self.finished = true;
                if (self.channel.reclaim(tx_task_set)) |waker| waker.drop();
            }
        };

        // -- receiving side ---------------------------------------------------------------

        /// The receiving half: `recv`/`tryRecv` the value, then `deinit` (always).
        pub const Receiver = struct {
            /// Null once deinitialised.
            channel: ?*Self,

            /// A future for the value. Output `error{Closed}!T`. One receive future at a
            /// time; the receiver must stay alive while it is pending.
            pub fn recv(self: *const Receiver) RecvFuture {
                return .{ .channel = self.channel.? };
            }

            /// The value if it was sent; `error.Empty` if not yet; `error.Closed` if the
            /// sender closed, or the receiver closed before a value was sent, or the value was
            /// already returned.
            pub fn tryRecv(self: *const Receiver) error{ Empty, Closed }!T {
                const channel = self.channel.?;
                // Acquire: pairs with the sender's release publishing `value`.
                const state = channel.state.load(.acquire);
                if (state & (value_sent | closed_bit) == 0) return error.Empty;
                return channel.takeResult(state);
            }

            /// Refuses later sends (Tokio's `Receiver::close`); the sender's `closed()`
            /// completes. A value sent before can still be taken with `tryRecv`. Idempotent.
            pub fn close(self: *const Receiver) void {
                self.channel.?.closeReceiver();
            }

            /// Closes (if not done) and releases a value that was sent and never received.
            /// No receive future may be pending. Idempotent.
            pub fn deinit(self: *Receiver) void {
                const channel = self.channel orelse return;
                self.channel = null;
                if (channel.value_taken) {
                    // The value was received, so the sender is finished: nothing to close
                    // (Tokio's receiver likewise lets go of a completed channel).
                    channel.rx_done = true;
                    return;
                }
                channel.closeReceiver();
                // Acquire: the value, if it was sent, is visible. After our close, only a send
                // that published before it can have set `value_sent`.
                const state = channel.state.load(.acquire);
                if (state & value_sent != 0 and !channel.value_taken) {
                    channel.value_taken = true;
                    Values.release(channel.value);
                }
                channel.rx_done = true;
            }
        };

        /// The receiver gives up (see `Receiver.close`).
        fn closeReceiver(self: *Self) void {
            var state = self.state.load(.monotonic);
            while (true) {
                // Already closed: nothing left to do. Task bits seen together with `closed`
                // only exist inside the registering side's own fetchOr..fetchAnd window, and
                // that side takes its waker back itself — touching it here would consume it
                // twice. A value that was sent stays for `tryRecv`.
                if (state & (closed_bit | value_sent) != 0) {
                    if (state & closed_bit == 0) {
                        // Sent: mark closed for `isClosed` (nothing else changes any more).
                        _ = self.state.fetchOr(closed_bit, .monotonic);
                    }
                    return;
                }
                if (state & locked != 0) {
                    // The sender is publishing and copying our waker: it will see `closed` in
                    // its compare-and-swap and fail the send (the close comes first). It owns
                    // our waker now. Release: our earlier accesses before its view of it.
                    _ = self.state.fetchOr(closed_bit, .release);
                    return;
                }
                if (state & tx_task_set != 0) {
                    // Lock the sender's slot to copy its waker (acquire: its contents).
                    if (self.state.cmpxchgWeak(state, state | locked, .acquire, .monotonic)) |actual| {
                        state = actual;
                        continue;
                    }
                    const tx = self.tx_waker;
                    const rx: ?Waker = if (state & rx_task_set != 0) self.rx_waker else null;
                    _ = self.publishLocked(state | locked, closed_bit, tx_task_set | rx_task_set);
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

        fn takeResult(self: *Self, state: u32) error{Closed}!T {
            if (state & value_sent != 0 and !self.value_taken) {
                self.value_taken = true;
                return self.value;
            }
            return error.Closed;
        }

        /// Clears the caller's own `task_bit` to own its stored waker again. Null when the
        /// other side took the waker (it completed, or it holds `locked` and will wake or drop
        /// it).
        fn reclaim(self: *Self, comptime task_bit: u32) ?Waker {
            // Acquire: if the other side completed, its writes (the value) are visible.
            var state = self.state.load(.acquire);
            while (true) {
                if (state & (task_bit | locked) != task_bit) return null;
                if (self.state.cmpxchgWeak(state, state & ~task_bit, .acquire, .acquire)) |actual| {
                    state = actual;
                    continue;
                }
                return if (task_bit == rx_task_set) self.rx_waker else self.tx_waker;
            }
        }

        /// Shared poll logic of `RecvFuture` (task bit `rx_task_set`, done when a value was
        /// sent or the channel closed) and `ClosedFuture` (`tx_task_set`, done when closed).
        /// `busy`: the other side holds `locked`, and our registered waker is not the one to
        /// wake (it wakes the old one).
        fn pollRegister(self: *Self, cx: *Context, comptime task_bit: u32, comptime done_mask: u32) union(enum) { done: u32, pending, busy } {
            const slot = if (task_bit == rx_task_set) &self.rx_waker else &self.tx_waker;
            // Acquire: pairs with the other side's release when it completed.
            var state = self.state.load(.acquire);
            if (state & done_mask != 0) return .{ .done = state };
            if (state & task_bit != 0) {
                // Registered by an earlier poll. Reading our own slot is safe: only we write
                // it, and only while the bit is clear.
                if (slot.willWakeSame(cx.waker())) return .pending;
                if (self.reclaim(task_bit)) |old| {
                    old.drop();
                } else {
                    state = self.state.load(.acquire);
                    // The other side completed, or holds `locked` and completes now.
                    return if (state & done_mask != 0) .{ .done = state } else .busy;
                }
            }
            hook.reached(.channel_before_register);
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
                    // The sender is publishing right now and wakes our old waker: poll again.
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
                if (self.channel.reclaim(rx_task_set)) |waker| waker.drop();
            }
        };
    };
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

const testing = std.testing;

const pollWith = common.pollWith;

test "oneshot: send then tryRecv, exactly once; the state is finished after both deinits" {
    var ch = Oneshot(u64).init();
    var tx, var rx = ch.split();
    try testing.expectError(error.Empty, rx.tryRecv());
    try tx.send(5);
    tx.deinit(); // After a send: nothing to do.
    try testing.expect(!ch.isFinished()); // The receiver is still there.
    try testing.expectEqual(@as(u64, 5), try rx.tryRecv());
    try testing.expectError(error.Closed, rx.tryRecv());
    rx.deinit();
    rx.deinit(); // Idempotent.
    try testing.expect(ch.isFinished());
    ch.deinit();
}

test "oneshot: pending recv is woken by send" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expect(pollWith(&recv, &waker) == .pending);
    try testing.expectEqual(@as(i32, 2), counter.outstanding());
    try tx.send(9);
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 9), try pollWith(&recv, &waker).ready);
    recv.cancel(); // After completion: no effect.
}

test "oneshot: receiver deinitialised first, send hands the value back" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    try testing.expect(!tx.isClosed());
    rx.deinit();
    try testing.expect(tx.isClosed());
    try testing.expect(!ch.isFinished()); // The sender has not finished yet.
    try testing.expectError(error.Closed, tx.send(3));
    try testing.expect(ch.isFinished());
    ch.deinit();
}

test "oneshot: close after the value was sent keeps the value" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    try tx.send(4);
    rx.close();
    try testing.expect(tx.channel == null);
    try testing.expectEqual(@as(u32, 4), try rx.tryRecv());
    try testing.expectError(error.Closed, rx.tryRecv());
}

test "oneshot: a sender deinitialised without sending wakes the pending receiver with Closed" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    tx.deinit();
    tx.deinit();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectError(error.Closed, rx.tryRecv());
}

test "oneshot: receiver close with a pending recv drops its waker" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    rx.close();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);
    try testing.expectError(error.Closed, tx.send(1));
}

test "oneshot: waker replacement" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &old_waker) == .pending);
    try testing.expect(pollWith(&recv, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try tx.send(1);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), try pollWith(&recv, &new_waker).ready);
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
}

test "oneshot: cancel of a pending recv; the value stays for tryRecv" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    recv.cancel();
    recv.cancel();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try tx.send(8);
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectEqual(@as(u32, 8), try rx.tryRecv());
}

fn sendHook(context: *anyopaque) void {
    const tx: *Oneshot(u32).Sender = @ptrCast(@alignCast(context));
    tx.send(11) catch unreachable;
}

fn closeSenderHook(context: *anyopaque) void {
    const tx: *Oneshot(u32).Sender = @ptrCast(@alignCast(context));
    tx.deinit();
}

fn closeReceiverHook(context: *anyopaque) void {
    const rx: *Oneshot(u32).Receiver = @ptrCast(@alignCast(context));
    rx.close();
}

test "oneshot: a send between the check and registration is not missed" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    hook.arm(.channel_before_register, @as(*anyopaque, &tx), sendHook);
    try testing.expectEqual(@as(u32, 11), try pollWith(&recv, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // Waker taken back.

    var ch2 = Oneshot(u32).init();
    var tx2, var rx2 = ch2.split();
    defer rx2.deinit();
    var recv2 = rx2.recv();
    hook.arm(.channel_before_register, @as(*anyopaque, &tx2), closeSenderHook);
    try testing.expectError(error.Closed, pollWith(&recv2, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "oneshot: closed() completes when the receiver closes" {
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    {
        var ch = Oneshot(u32).init();
        var tx, var rx = ch.split();
        var closed_future = tx.closed();
        try testing.expect(pollWith(&closed_future, &waker) == .pending);
        rx.deinit();
        try testing.expectEqual(@as(u32, 1), counter.wakeCount());
        _ = pollWith(&closed_future, &waker).ready;
        try testing.expectEqual(@as(i32, 1), counter.outstanding());
        try testing.expectError(error.Closed, tx.send(1));
        ch.deinit();
    }
    {
        // Closed in the window between the check and the registration.
        var ch = Oneshot(u32).init();
        var tx, var rx = ch.split();
        defer rx.deinit();
        defer tx.deinit();
        var closed_future = tx.closed();
        hook.arm(.channel_before_register, @as(*anyopaque, &rx), closeReceiverHook);
        _ = pollWith(&closed_future, &waker).ready;
        try testing.expectEqual(@as(i32, 1), counter.outstanding());
    }
    {
        // Cancelled, then the sender sends normally.
        var ch = Oneshot(u32).init();
        var tx, var rx = ch.split();
        defer rx.deinit();
        var closed_future = tx.closed();
        try testing.expect(pollWith(&closed_future, &waker) == .pending);
        closed_future.cancel();
        try testing.expectEqual(@as(i32, 1), counter.outstanding());
        try tx.send(2);
        try testing.expectEqual(@as(u32, 2), try rx.tryRecv());
    }
}

test "oneshot: close is idempotent, also while the sender's closed() registers" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    rx.close();
    rx.close();
    // The sender registers after the close: sees it at once and takes its own waker back.
    var closed_future = tx.closed();
    _ = pollWith(&closed_future, &waker).ready;
    rx.deinit();
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectError(error.Closed, tx.send(3));
    ch.deinit();
}

test "oneshot: the receiver and the sender both waiting, receiver closes" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    defer tx.deinit();
    var rx_counter = Waker.Counting{};
    var tx_counter = Waker.Counting{};
    const rx_waker = rx_counter.waker();
    defer rx_waker.drop();
    const tx_waker = tx_counter.waker();
    defer tx_waker.drop();
    var recv = rx.recv();
    var closed_future = tx.closed();
    try testing.expect(pollWith(&recv, &rx_waker) == .pending);
    try testing.expect(pollWith(&closed_future, &tx_waker) == .pending);
    rx.close();
    try testing.expectEqual(@as(u32, 1), tx_counter.wakeCount());
    try testing.expectEqual(@as(u32, 0), rx_counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), rx_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), tx_counter.outstanding());
    _ = pollWith(&closed_future, &tx_waker).ready;
    recv.cancel();
    rx.deinit();
}

/// The receiver gives up (its timeout fired) while the sender is inside `send`.
const GiveUpInWindow = struct {
    channel: *Oneshot(u32),
    recv: *Oneshot(u32).RecvFuture,
    rx: *Oneshot(u32).Receiver,
    finished_in_window: bool = true,
    fn run(self: *GiveUpInWindow) void {
        self.recv.cancel();
        self.rx.deinit();
        self.finished_in_window = self.channel.isFinished();
    }
};

test "oneshot: a receiver that gives up while the sender is mid-send may not free the state yet" {
    // Why the caller-owned state needs both halves finished, and why a receiver that times out
    // needs OwnedOneshot instead: here the receiver is done, but the sender still writes.
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    const waker = Waker.noop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    var window = GiveUpInWindow{ .channel = &ch, .recv = &recv, .rx = &rx };
    hook.arm(.oneshot_send_locked, &window, GiveUpInWindow.run);
    defer hook.disarm();
    try testing.expectError(error.Closed, tx.send(1));
    try testing.expect(hook.fired());
    try testing.expect(!window.finished_in_window); // Freeing it there would be a use-after-free.
    try testing.expect(ch.isFinished());
    ch.deinit();
}

test "oneshot: works for larger values" {
    const Big = struct { a: [16]u64 };
    var ch = Oneshot(Big).init();
    var tx, var rx = ch.split();
    defer rx.deinit();
    var big: Big = undefined;
    for (&big.a, 0..) |*x, i| x.* = i * 3;
    try tx.send(big);
    const out = try rx.tryRecv();
    try testing.expectEqualSlices(u64, &big.a, &out.a);
}

test "oneshot: an owned value sent and never received is released by the receiver's deinit" {
    const RcBuffer = @import("../RcBuffer.zig");
    const buffer = try RcBuffer.init(testing.allocator, "reply");
    defer buffer.release();
    var ch = Oneshot(*RcBuffer).init();
    var tx, var rx = ch.split();
    try tx.send(buffer.clone());
    try testing.expectEqual(@as(usize, 2), buffer.refCount());
    rx.deinit();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());
    // A failed send hands the value back: the caller still owns it.
    var ch2 = Oneshot(*RcBuffer).init();
    var tx2, var rx2 = ch2.split();
    rx2.deinit();
    const refused = buffer.clone();
    try testing.expectError(error.Closed, tx2.send(refused));
    refused.release();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());
    // Received values are the receiver's, not released twice.
    var ch3 = Oneshot(*RcBuffer).init();
    var tx3, var rx3 = ch3.split();
    try tx3.send(buffer.clone());
    const got = try rx3.tryRecv();
    rx3.deinit();
    try testing.expectEqual(@as(usize, 2), buffer.refCount());
    got.release();
}

test "oneshot: a receiver that closes while the sender holds locked fails the send, without waiting" {
    // Emulates the interleaving deterministically: the sender has locked the word (copied the
    // waker) when the receiver closes; the sender's publishing compare-and-swap then sees
    // `closed`, hands the value back and drops the copied waker.
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    // The sender's first steps of `complete`: value written, word locked, waker copied.
    ch.value = 5;
    const observed = ch.state.load(.monotonic);
    try testing.expect(ch.state.cmpxchgStrong(observed, observed | Oneshot(u32).locked, .acquire, .monotonic) == null);
    const copied = ch.rx_waker;
    // The receiver gives up now: it must not wait for the sender.
    recv.cancel(); // Leaves the waker to the holder.
    rx.close();
    const published = ch.publishLocked(observed | Oneshot(u32).locked, Oneshot(u32).value_sent | Oneshot(u32).tx_gone, Oneshot(u32).rx_task_set);
    try testing.expect(published & Oneshot(u32).value_sent == 0); // The send failed.
    try testing.expect(published & Oneshot(u32).tx_gone != 0);
    copied.drop();
    tx.channel = null; // The sender's `send` returned error.Closed here.
    try testing.expectError(error.Closed, rx.tryRecv());
    rx.deinit();
    try testing.expect(ch.isFinished());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
}

test "oneshot: a sender that finds the receiver closing fails at once, without waiting" {
    var ch = Oneshot(u32).init();
    var tx, var rx = ch.split();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var closed_future = tx.closed();
    try testing.expect(pollWith(&closed_future, &waker) == .pending);
    // The receiver's close has locked the word to copy the sender's waker.
    const observed = ch.state.load(.monotonic);
    try testing.expect(ch.state.cmpxchgStrong(observed, observed | Oneshot(u32).locked, .acquire, .monotonic) == null);
    const copied = ch.tx_waker;
    // The sender cancels its closed() (the waker stays with the receiver) and sends.
    closed_future.cancel();
    try testing.expectError(error.Closed, tx.send(1));
    // The receiver finishes its close over the sender's `tx_gone`.
    const published = ch.publishLocked(observed | Oneshot(u32).locked, Oneshot(u32).closed_bit, Oneshot(u32).tx_task_set | Oneshot(u32).rx_task_set);
    try testing.expect(published & Oneshot(u32).tx_gone != 0);
    copied.wake();
    rx.channel = null;
    ch.rx_done = true; // The receiver's deinit after its close.
    try testing.expect(ch.isFinished());
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}
