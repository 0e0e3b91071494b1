//! `OwnedOneshot(T)`: one value from one `Sender` to one `Receiver`, with Tokio's
//! `oneshot::channel()` lifetimes: the shared state is allocated once by `init`, each half
//! holds a reference to it, and the half that lets go last frees it. Either half may be given
//! up at any time — a receiver inside a `timeout` that fired, a sender in an aborted task —
//! and the other half's later `send`, `recv` or `deinit` is still safe.
//!
//! The caller-owned `Oneshot(T)` (oneshot.zig) allocates nothing, but its state must outlive
//! both halves, and the receiver cannot wait for the sender's last access: a receiver that
//! gives up (a timeout) cannot free a state a late `send` may still be writing. This type pays
//! one allocation per channel (none per operation) to remove that rule. Which to use when:
//! runtime/docs/channel.md, "Which oneshot".
//!
//! ## Protocol
//!
//! The state is a `Oneshot(T)` (the same state word, waker slots and `locked` protocol; see
//! oneshot.zig) plus `refs`, the halves still alive (2 at `init`). The halves are thin wrappers
//! around that type's `Sender` and `Receiver`; what they add is the release of their reference
//! after their last access to the state:
//!
//! - `Sender.send` / `Sender.deinit`: the inner send or close (its last read-modify-write sets
//!   `tx_gone`), then the reference.
//! - `Receiver.deinit`: the inner deinit (close, release of a value sent and never received,
//!   `rx_done`), then the reference. A receive future must be finished or cancelled first, as
//!   for every channel (its cancel takes the waker back).
//!
//! `refs` is `Arc`'s count: a release is `fetchSub(1, release)`, which orders this half's
//! accesses before it; the half that reaches zero loads `refs` with acquire (Rust's acquire
//! fence; Zig has none) — synchronising with the other half's release — and only then checks
//! the inner lifetime rule (`Oneshot.deinit` asserts that both halves are finished) and frees.
//! No other ordering is needed: the inner protocol orders the halves' use of the state.

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;

const Oneshot = @import("oneshot.zig").Oneshot;

pub fn OwnedOneshot(comptime T: type) type {
    return struct {
        const Self = @This();
        const Inner = Oneshot(T);

        inner: Inner,
        /// Halves still alive (see "Protocol").
        refs: std.atomic.Value(u32) = .init(2),
        allocator: Allocator,

        /// What `init` returns: destructure it as `var tx, var rx = try OwnedOneshot(T).init(a);`.
        pub const Pair = struct { Sender, Receiver };
        pub const RecvFuture = Inner.RecvFuture;
        pub const ClosedFuture = Inner.Sender.ClosedFuture;

        /// Allocates the state (the only allocation of the channel) and returns both halves.
        pub fn init(allocator: Allocator) Allocator.Error!Pair {
            const self = try allocator.create(Self);
            self.* = .{ .inner = Inner.init(), .allocator = allocator };
            const tx, const rx = self.inner.split();
            return .{ .{ .shared = self, .inner = tx }, .{ .shared = self, .inner = rx } };
        }

        /// Drops one half's reference; the last frees the state.
        fn release(self: *Self) void {
            const previous = self.refs.fetchSub(1, .release);
            assert(previous == 1 or previous == 2);
            if (previous != 1) return;
            // Acquire: synchronises with the other half's release (see "Protocol").
            _ = self.refs.load(.acquire);
            self.inner.deinit(); // Asserts that both halves are finished.
            self.allocator.destroy(self);
        }

        /// The sending half: `send` once, or `deinit` to close without a value.
        pub const Sender = struct {
            /// Null once the sender has sent or was deinitialised.
            shared: ?*Self,
            inner: Inner.Sender,

            /// Sends the value and wakes the receiver; consumes the sender (a later `deinit`
            /// does nothing). `error.Closed`: the receiver is gone (or closed); the value was
            /// not delivered and the caller keeps it. Safe at any time: the state lives until
            /// this returns. A `closed()` future must be finished or cancelled before.
            pub fn send(self: *Sender, value: T) error{Closed}!void {
                const shared = self.shared.?; // Sent twice.
                self.shared = null;
                defer shared.release();
                return self.inner.send(value);
            }

            /// Gives up the sender. Without a send, the receiver gets `error.Closed`.
            /// Idempotent.
            pub fn deinit(self: *Sender) void {
                const shared = self.shared orelse return;
                self.shared = null;
                self.inner.deinit();
                shared.release();
            }

            /// A future that completes once the receiver has closed or gone (Tokio's
            /// `Sender::closed`). The sender must not be given up while it is pending.
            pub fn closed(self: *const Sender) ClosedFuture {
                assert(self.shared != null);
                return self.inner.closed();
            }

            /// True once the receiver closed or is gone (a send would fail).
            pub fn isClosed(self: *const Sender) bool {
                assert(self.shared != null);
                return self.inner.isClosed();
            }
        };

        /// The receiving half: `recv`/`tryRecv` the value, then `deinit` (always).
        pub const Receiver = struct {
            /// Null once deinitialised.
            shared: ?*Self,
            inner: Inner.Receiver,

            /// A future for the value. Output `error{Closed}!T`. One receive future at a
            /// time; finish or cancel it before `deinit` (a `timeout` around it cancels it).
            pub fn recv(self: *const Receiver) RecvFuture {
                assert(self.shared != null);
                return self.inner.recv();
            }

            /// The value if it was sent; `error.Empty` if not yet; `error.Closed` if the
            /// sender is gone without a value, the receiver closed first, or the value was
            /// already returned.
            pub fn tryRecv(self: *const Receiver) error{ Empty, Closed }!T {
                assert(self.shared != null);
                return self.inner.tryRecv();
            }

            /// Refuses later sends; a value sent before can still be taken. Idempotent.
            pub fn close(self: *const Receiver) void {
                assert(self.shared != null);
                self.inner.close();
            }

            /// Gives up the receiver: closes, releases a value sent and never received, and
            /// drops the reference. Safe while the sender is sending. Idempotent.
            pub fn deinit(self: *Receiver) void {
                const shared = self.shared orelse return;
                self.shared = null;
                self.inner.deinit();
                shared.release();
            }
        };
    };
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

const testing = std.testing;
const Waker = @import("../Waker.zig");
const hook = @import("../hook.zig");
const common = @import("common.zig");
const CountingAllocator = @import("../CountingAllocator.zig");
const RcBuffer = @import("../RcBuffer.zig");

const pollWith = common.pollWith;

test "owned oneshot: send then receive; the last half frees the state (either order)" {
    var counting = CountingAllocator.init(testing.allocator);
    {
        var tx, var rx = try OwnedOneshot(u64).init(counting.allocator());
        try tx.send(7);
        try testing.expect(counting.liveBytes() > 0); // The receiver still holds it.
        try testing.expectEqual(@as(u64, 7), try rx.tryRecv());
        rx.deinit();
        tx.deinit(); // After a send: nothing.
    }
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());
    {
        var tx, var rx = try OwnedOneshot(u64).init(counting.allocator());
        var recv = rx.recv();
        const waker = Waker.noop();
        try testing.expect(pollWith(&recv, &waker) == .pending);
        try tx.send(8);
        try testing.expectEqual(@as(u64, 8), try pollWith(&recv, &waker).ready);
        rx.deinit(); // The sender let go first: the receiver frees.
    }
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());
    try testing.expectEqual(@as(u64, 2), counting.snapshot().count);
}

test "owned oneshot: send after the receiver was dropped hands the value back and frees the state" {
    var counting = CountingAllocator.init(testing.allocator);
    var tx, var rx = try OwnedOneshot(u32).init(counting.allocator());
    try testing.expect(!tx.isClosed());
    rx.deinit();
    try testing.expect(tx.isClosed());
    try testing.expectError(error.Closed, tx.send(3));
    tx.deinit(); // Consumed by the send: nothing.
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());
}

test "owned oneshot: receive after the sender was dropped gets Closed" {
    var counting = CountingAllocator.init(testing.allocator);
    var tx, var rx = try OwnedOneshot(u32).init(counting.allocator());
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    tx.deinit();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expectError(error.Closed, pollWith(&recv, &waker).ready);
    try testing.expectError(error.Closed, rx.tryRecv());
    rx.deinit();
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "owned oneshot: an owned value sent to a receiver that never takes it is released once" {
    var counting = CountingAllocator.init(testing.allocator);
    const buffer = try RcBuffer.init(counting.allocator(), "reply");
    var tx, var rx = try OwnedOneshot(*RcBuffer).init(counting.allocator());
    try tx.send(buffer.clone());
    try testing.expectEqual(@as(usize, 2), buffer.refCount());
    rx.deinit();
    try testing.expectEqual(@as(usize, 1), buffer.refCount());
    buffer.release();
    try testing.expectEqual(@as(i64, 0), counting.liveBytes());
}

/// In the sender's window (receiver's waker copied under `locked`, nothing published yet):
/// the receiver's timeout fires and it is dropped.
const DropReceiverInWindow = struct {
    recv: *OwnedOneshot(u32).RecvFuture,
    rx: *OwnedOneshot(u32).Receiver,
    fn run(self: *DropReceiverInWindow) void {
        self.recv.cancel();
        self.rx.deinit();
    }
};

test "owned oneshot: a receiver that times out and is dropped while the sender is mid-send: the late send is safe" {
    var counting = CountingAllocator.init(testing.allocator);
    var tx, var rx = try OwnedOneshot(u32).init(counting.allocator());
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var recv = rx.recv();
    try testing.expect(pollWith(&recv, &waker) == .pending);
    var window = DropReceiverInWindow{ .recv = &recv, .rx = &rx };
    hook.arm(.oneshot_send_locked, &window, DropReceiverInWindow.run);
    defer hook.disarm();
    // With the caller-owned Oneshot the receiver could not free the state here (the send
    // below still writes it) and could not wait for it either.
    try testing.expectError(error.Closed, tx.send(5)); // The close came first: value back.
    try testing.expect(hook.fired());
    try testing.expectEqual(@as(i64, 0), counting.liveBytes()); // Freed by the sender.
    try testing.expectEqual(@as(u32, 0), counter.wakeCount());
    try testing.expectEqual(@as(i32, 1), counter.outstanding()); // The copied waker dropped.
}

const Token = struct { value: u64 };

const RaceStart = struct {
    ready: std.atomic.Value(u32) = .init(0),
    fn arrive(self: *RaceStart) void {
        _ = self.ready.fetchAdd(1, .acq_rel);
        while (self.ready.load(.acquire) < 2) std.Thread.yield() catch {};
    }
};

fn lateSender(tx: *OwnedOneshot(Token).Sender, start: *RaceStart, delay_spins: u32, delivered: *bool) void {
    start.arrive();
    for (0..delay_spins) |_| std.atomic.spinLoopHint();
    delivered.* = if (tx.send(.{ .value = 42 })) true else |_| false;
}

test "stress: owned oneshot receivers time out and are dropped while senders send" {
    const test_support = @import("../testing.zig");
    const seed = test_support.seed();
    errdefer test_support.reportSeed("owned oneshot timeout race", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    var counting = CountingAllocator.init(testing.allocator);
    var outcomes = [2]u32{ 0, 0 }; // received, timed out
    for (0..test_support.scaled(1_000, 10)) |_| {
        var tx, var rx = try OwnedOneshot(Token).init(counting.allocator());
        var start = RaceStart{};
        var delivered = false;
        const thread = try std.Thread.spawn(.{}, lateSender, .{ &tx, &start, prng.random().uintLessThan(u32, 400), &delivered });
        start.arrive();
        // A receive with a "timeout" of a few polls: then it is cancelled and the receiver
        // dropped, at once, while the sender may be anywhere in its send.
        var counter = Waker.Counting{};
        const waker = counter.waker();
        var recv = rx.recv();
        var received = false;
        for (0..prng.random().uintLessThan(u32, 4)) |_| {
            switch (pollWith(&recv, &waker)) {
                .ready => |result| {
                    try testing.expectEqual(@as(u64, 42), (try result).value);
                    received = true;
                    break;
                },
                .pending => std.atomic.spinLoopHint(),
            }
        }
        if (!received) recv.cancel();
        rx.deinit();
        thread.join();
        waker.drop();
        if (received) try testing.expect(delivered);
        outcomes[@intFromBool(!received)] += 1;
        try testing.expectEqual(@as(i32, 0), counter.outstanding());
        try testing.expectEqual(@as(i64, 0), counting.liveBytes());
    }
    try testing.expect(outcomes[1] > 0);
}
