//! Multi-threaded stress tests of the channels (OS threads driving futures with
//! `blockOnThread`), randomised cancellation, and the zero-allocation check.
//!
//! Sizes follow `AMPERE_TEST_INTENSITY` (`testing.scaled`); randomised tests print their seed
//! on failure (`AMPERE_TEST_SEED` replays it).

const std = @import("std");
const assert = std.debug.assert;
const future = @import("../future.zig");
const Context = future.Context;
const Waker = @import("../Waker.zig");
const SharedParker = @import("../SharedParker.zig");
const blockOnThread = @import("../block_on.zig").blockOnThread;
const test_support = @import("../testing.zig");
const CountingAllocator = @import("../CountingAllocator.zig");
const RcBuffer = @import("../RcBuffer.zig");
const Bounded = @import("bounded.zig").Bounded;
const Oneshot = @import("oneshot.zig").Oneshot;
const Broadcast = @import("broadcast.zig").Broadcast;
const Watch = @import("watch.zig").Watch;

const testing = std.testing;

/// A set of u64 values below a bound, filled concurrently; reports duplicates.
const SeenSet = struct {
    words: []std.atomic.Value(u64),

    fn init(allocator: std.mem.Allocator, bound: usize) !SeenSet {
        const words = try allocator.alloc(std.atomic.Value(u64), (bound + 63) / 64);
        for (words) |*w| w.* = .init(0);
        return .{ .words = words };
    }

    fn deinit(self: SeenSet, allocator: std.mem.Allocator) void {
        allocator.free(self.words);
    }

    /// False if `value` was already in the set.
    fn insert(self: SeenSet, value: u64) bool {
        const bit = @as(u64, 1) << @intCast(value % 64);
        return self.words[@intCast(value / 64)].fetchOr(bit, .monotonic) & bit == 0;
    }

    fn count(self: SeenSet) usize {
        var total: usize = 0;
        for (self.words) |*w| total += @popCount(w.load(.monotonic));
        return total;
    }
};

// -- Bounded: 4 producers x 4 consumers -------------------------------------------------

const MpmcShared = struct {
    sender: Bounded(u64).Sender,
    receiver: Bounded(u64).Receiver,
    seen: SeenSet,
    per_producer: u64,
    received: std.atomic.Value(u64) = .init(0),
    sum: std.atomic.Value(u64) = .init(0),
    duplicates: std.atomic.Value(u64) = .init(0),

    /// Each producer has its own sender clone; the last one to finish closes the channel.
    fn produce(self: *MpmcShared, sender: Bounded(u64).Sender, producer: u64) void {
        var tx = sender;
        defer tx.deinit();
        const first = producer * self.per_producer;
        for (first..first + self.per_producer) |value| {
            if (value % 5 == 0) {
                // Mix in the synchronous path.
                if (tx.trySend(value)) |_| continue else |_| {}
            }
            var send = tx.send(value);
            blockOnThread(&send) catch unreachable; // Closed only after the producers finish.
        }
    }

    /// Each consumer has its own receiver clone and drains until the last sender is gone.
    fn consume(self: *MpmcShared, receiver: Bounded(u64).Receiver) void {
        var rx = receiver;
        defer rx.deinit();
        var count: u64 = 0;
        var sum: u64 = 0;
        while (true) {
            var recv = rx.recv();
            const value = blockOnThread(&recv) catch break;
            count += 1;
            sum +%= value;
            if (!self.seen.insert(value)) _ = self.duplicates.fetchAdd(1, .monotonic);
        }
        _ = self.received.fetchAdd(count, .monotonic);
        _ = self.sum.fetchAdd(sum, .monotonic);
    }
};

fn runMpmc(total: u64, buffer_capacity: usize) !void {
    const producers = 4;
    const consumers = 4;
    const tx, const rx = try Bounded(u64).init(testing.allocator, buffer_capacity);
    var shared = MpmcShared{
        .sender = tx,
        .receiver = rx,
        .seen = try SeenSet.init(testing.allocator, total),
        .per_producer = total / producers,
    };
    defer shared.seen.deinit(testing.allocator);
    var consumer_threads: [consumers]std.Thread = undefined;
    for (&consumer_threads) |*t| t.* = try std.Thread.spawn(.{}, MpmcShared.consume, .{ &shared, shared.receiver.clone() });
    var producer_threads: [producers]std.Thread = undefined;
    for (&producer_threads, 0..) |*t, p| t.* = try std.Thread.spawn(.{}, MpmcShared.produce, .{ &shared, shared.sender.clone(), p });
    // The channel closes when the last producer's clone goes: no explicit close.
    shared.sender.deinit();
    shared.receiver.deinit();
    for (producer_threads) |t| t.join();
    for (consumer_threads) |t| t.join();

    const sent = shared.per_producer * producers;
    try testing.expectEqual(sent, shared.received.load(.monotonic));
    try testing.expectEqual(@as(u64, 0), shared.duplicates.load(.monotonic));
    try testing.expectEqual(@as(usize, sent), shared.seen.count());
    try testing.expectEqual(sent * (sent - 1) / 2, shared.sum.load(.monotonic));
}

test "stress: bounded MPMC 4 producers x 4 consumers, exact count, sum, no duplicates" {
    try runMpmc(test_support.scaled(1_000_000, 100), 64);
}

test "stress: bounded MPMC with capacity 1 and a non-power-of-two capacity" {
    try runMpmc(test_support.scaled(100_000, 50), 1);
    try runMpmc(test_support.scaled(100_000, 50), 5);
}

// -- Bounded: random cancellation --------------------------------------------------------

/// Polls `f` on this thread like `blockOnThread`, but at random moments while it is pending
/// cancels it instead (returns null; the caller takes the value back and retries).
fn pollOrCancel(f: anytype, random: std.Random) ?@TypeOf(f.*).Output {
    const parker = SharedParker.Pool.global().acquire() catch @panic("out of memory for a parker");
    defer parker.release();
    const waker = parker.waker();
    var cx = Context.init(&waker);
    while (true) {
        switch (f.poll(&cx)) {
            .ready => |output| return output,
            .pending => {
                if (random.uintLessThan(u32, 4) == 0) {
                    f.cancel();
                    return null;
                }
                parker.park();
            },
        }
    }
}

const CancelShared = struct {
    sender: Bounded(u64).Sender,
    receiver: Bounded(u64).Receiver,
    seen: SeenSet,
    per_producer: u64,
    seed: u64,
    received: std.atomic.Value(u64) = .init(0),
    duplicates: std.atomic.Value(u64) = .init(0),
    cancels: std.atomic.Value(u64) = .init(0),

    fn produce(self: *CancelShared, producer: u64) void {
        var prng = std.Random.DefaultPrng.init(self.seed +% producer);
        const first = producer * self.per_producer;
        for (first..first + self.per_producer) |value| {
            var pending_value: u64 = value;
            while (true) {
                var send = self.sender.send(pending_value);
                if (pollOrCancel(&send, prng.random())) |result| {
                    result catch unreachable;
                    break;
                }
                _ = self.cancels.fetchAdd(1, .monotonic);
                pending_value = send.takeBack() orelse unreachable; // Never lost.
                std.debug.assert(pending_value == value);
            }
        }
    }

    fn consume(self: *CancelShared, consumer: u64) void {
        var prng = std.Random.DefaultPrng.init(self.seed +% 1000 +% consumer);
        while (true) {
            var recv = self.receiver.recv();
            const result = pollOrCancel(&recv, prng.random()) orelse {
                _ = self.cancels.fetchAdd(1, .monotonic);
                continue;
            };
            const value = result catch break;
            _ = self.received.fetchAdd(1, .monotonic);
            if (!self.seen.insert(value)) _ = self.duplicates.fetchAdd(1, .monotonic);
        }
    }
};

test "stress: bounded with random cancellation never loses or duplicates a value" {
    const seed = test_support.seed();
    errdefer test_support.reportSeed("bounded random cancellation", seed);
    const producers = 3;
    const consumers = 3;
    const total = test_support.scaled(60_000, 20);
    const tx, const rx = try Bounded(u64).init(testing.allocator, 2);
    var shared = CancelShared{
        .sender = tx,
        .receiver = rx,
        .seen = try SeenSet.init(testing.allocator, total),
        .per_producer = total / producers,
        .seed = seed,
    };
    defer shared.receiver.deinit();
    defer shared.seen.deinit(testing.allocator);
    var threads: [producers + consumers]std.Thread = undefined;
    for (threads[producers..], 0..) |*t, c| t.* = try std.Thread.spawn(.{}, CancelShared.consume, .{ &shared, c });
    for (threads[0..producers], 0..) |*t, p| t.* = try std.Thread.spawn(.{}, CancelShared.produce, .{ &shared, p });
    for (threads[0..producers]) |t| t.join();
    shared.sender.deinit(); // The last sender: the consumers drain, then see Closed.
    for (threads[producers..]) |t| t.join();
    const sent = shared.per_producer * producers;
    try testing.expectEqual(sent, shared.received.load(.monotonic));
    try testing.expectEqual(@as(u64, 0), shared.duplicates.load(.monotonic));
    try testing.expectEqual(@as(usize, sent), shared.seen.count());
}

// -- Oneshot: echo across threads ---------------------------------------------------------

const Request = struct { payload: u64, reply: Oneshot(u64).Sender };

fn echoServer(receiver: Bounded(Request).Receiver) void {
    var requests = receiver;
    defer requests.deinit();
    while (true) {
        var recv = requests.recv();
        var request = blockOnThread(&recv) catch return;
        // The caller may free the oneshot as soon as it sees the value: `send` must not
        // touch it after publishing.
        request.reply.send(request.payload + 1) catch unreachable;
    }
}

fn echoCaller(sender: Bounded(Request).Sender, caller: u64, calls: u64, failures: *std.atomic.Value(u64)) void {
    var requests = sender;
    defer requests.deinit();
    for (0..calls) |i| {
        var reply = Oneshot(u64).init(); // On this stack frame, reused every iteration.
        const reply_tx, var reply_rx = reply.split();
        defer reply.deinit(); // Asserts the lifetime rule before the next iteration reuses it.
        defer reply_rx.deinit();
        const payload = caller * 1_000_000_000 + i;
        var send = requests.send(.{ .payload = payload, .reply = reply_tx });
        blockOnThread(&send) catch unreachable;
        var recv = reply_rx.recv();
        const answer = blockOnThread(&recv) catch {
            _ = failures.fetchAdd(1, .monotonic);
            continue;
        };
        if (answer != payload + 1) _ = failures.fetchAdd(1, .monotonic);
    }
}

test "stress: oneshot replies across threads (echo), oneshot on the caller's stack" {
    const callers = 3;
    const calls = test_support.scaled(30_000, 30);
    var tx, const rx = try Bounded(Request).init(testing.allocator, 2 * callers);
    var failures = std.atomic.Value(u64).init(0);
    const server = try std.Thread.spawn(.{}, echoServer, .{rx});
    var threads: [callers]std.Thread = undefined;
    for (&threads, 0..) |*t, c| t.* = try std.Thread.spawn(.{}, echoCaller, .{ tx.clone(), c, calls, &failures });
    tx.deinit(); // The callers' clones keep it open; the last one closes it for the server.
    for (threads) |t| t.join();
    server.join();
    try testing.expectEqual(@as(u64, 0), failures.load(.monotonic));
}

const RaceOutcome = struct {
    sent: std.atomic.Value(u64) = .init(0),
    refused: std.atomic.Value(u64) = .init(0),
    received: std.atomic.Value(u64) = .init(0),
    mismatches: std.atomic.Value(u64) = .init(0),
    /// Tokens alive: each is released exactly once (by its receiver, by the receiver's
    /// deinit when it was never received, or by the sender when the send was refused).
    live: std.atomic.Value(i64) = .init(0),
    releases: std.atomic.Value(u64) = .init(0),
};

/// An owned value: `deinit` counts the release; a second release of the same token would
/// drive `live` below zero.
const Token = struct {
    id: u64,
    outcome: *RaceOutcome,

    fn create(id: u64, outcome: *RaceOutcome) Token {
        _ = outcome.live.fetchAdd(1, .monotonic);
        return .{ .id = id, .outcome = outcome };
    }

    pub fn clone(self: Token) Token {
        return create(self.id, self.outcome);
    }

    pub fn deinit(self: *Token) void {
        _ = self.outcome.releases.fetchAdd(1, .monotonic);
        const previous = self.outcome.live.fetchSub(1, .monotonic);
        if (previous <= 0) _ = self.outcome.mismatches.fetchAdd(1, .monotonic);
    }
};

fn raceSender(sender: Oneshot(Token).Sender, close_instead: bool, start: *std.atomic.Value(u32), outcome: *RaceOutcome) void {
    var tx = sender;
    while (start.load(.acquire) == 0) std.atomic.spinLoopHint();
    if (close_instead) {
        tx.deinit(); // The receiver must see Closed.
        _ = outcome.refused.fetchAdd(1, .monotonic);
        return;
    }
    var token = Token.create(7, outcome);
    if (tx.send(token)) |_| {
        _ = outcome.sent.fetchAdd(1, .monotonic);
    } else |_| {
        token.deinit(); // Handed back: ours to release.
        _ = outcome.refused.fetchAdd(1, .monotonic);
    }
}

test "stress: oneshot send or sender deinit racing with recv, cancel, close and receiver deinit" {
    const seed = test_support.seed();
    errdefer test_support.reportSeed("oneshot race", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const random = prng.random();
    const rounds = test_support.scaled(5_000, 20);
    var outcome = RaceOutcome{};
    for (0..rounds) |_| {
        var channel = Oneshot(Token).init();
        const tx, var rx = channel.split();
        var start = std.atomic.Value(u32).init(0);
        const close_instead = random.uintLessThan(u32, 4) == 0;
        const sender = try std.Thread.spawn(.{}, raceSender, .{ tx, close_instead, &start, &outcome });
        start.store(1, .release);
        var got: ?Token = null;
        switch (random.uintLessThan(u32, 4)) {
            0 => {
                var recv = rx.recv();
                got = blockOnThread(&recv) catch null;
            },
            1 => {
                // Register, maybe see the value, then give up.
                var recv = rx.recv();
                switch (future.pollOnce(&recv)) {
                    .ready => |result| got = result catch null,
                    .pending => recv.cancel(),
                }
                rx.close();
            },
            2 => rx.close(),
            else => {}, // Deinitialise at once.
        }
        if (got == null and random.boolean()) got = rx.tryRecv() catch null; // Sent before the close.
        if (got) |*token| {
            if (token.id != 7) _ = outcome.mismatches.fetchAdd(1, .monotonic);
            _ = outcome.received.fetchAdd(1, .monotonic);
            token.deinit();
        }
        // Gives up, releasing a token that was sent and not taken; the state must outlive
        // the sender (joined next), and is finished after both.
        rx.deinit();
        sender.join();
        try testing.expect(channel.isFinished());
        channel.deinit();
    }
    // Every round either delivered a token or refused; every token was released exactly
    // once (received ones by the receiver, the rest by its deinit or by the refused sender).
    try testing.expectEqual(@as(u64, rounds), outcome.sent.load(.monotonic) + outcome.refused.load(.monotonic));
    try testing.expect(outcome.received.load(.monotonic) <= outcome.sent.load(.monotonic));
    try testing.expectEqual(@as(u64, 0), outcome.mismatches.load(.monotonic));
    try testing.expectEqual(@as(i64, 0), outcome.live.load(.monotonic));
}

// -- Broadcast ---------------------------------------------------------------------------

const BroadcastShared = struct {
    sent_per_sender: u64,
    errors: std.atomic.Value(u64) = .init(0),
    lags: std.atomic.Value(u64) = .init(0),

    /// Sends on its own sender handle and gives it up at the end: the last one closes.
    fn sendAll(self: *BroadcastShared, sender: Broadcast(u64).Sender, id: u64) void {
        var tx = sender;
        defer tx.deinit();
        for (0..self.sent_per_sender) |i| {
            _ = tx.send(id << 32 | i) catch unreachable;
            if (i % 64 == 0) std.Thread.yield() catch {};
        }
    }

    /// Single sender: value == position, so lag accounting is checked exactly.
    fn receiveExact(self: *BroadcastShared, receiver: *Broadcast(u64).Receiver) void {
        defer receiver.deinit();
        var expected: u64 = 0;
        while (true) {
            var recv = receiver.recv();
            const value = blockOnThread(&recv) catch |err| switch (err) {
                error.Lagged => {
                    expected += receiver.lastLagged();
                    _ = self.lags.fetchAdd(1, .monotonic);
                    continue;
                },
                error.Closed => break,
            };
            if (value != expected) _ = self.errors.fetchAdd(1, .monotonic);
            expected = value + 1;
        }
        if (expected != self.sent_per_sender) _ = self.errors.fetchAdd(1, .monotonic);
    }

    /// Several senders: per sender, values arrive in increasing order; received plus
    /// missed equals the number of values sent.
    fn receiveOrdered(self: *BroadcastShared, receiver: *Broadcast(u64).Receiver, senders: usize) void {
        defer receiver.deinit();
        var last: [4]?u64 = .{ null, null, null, null };
        var accounted: u64 = 0;
        while (true) {
            const value = receiver.tryRecv() catch |err| switch (err) {
                error.Lagged => {
                    accounted += receiver.lastLagged();
                    continue;
                },
                error.Empty => {
                    var recv = receiver.recv();
                    const v = blockOnThread(&recv) catch |e| switch (e) {
                        error.Lagged => {
                            accounted += receiver.lastLagged();
                            continue;
                        },
                        error.Closed => break,
                    };
                    self.checkOrdered(&last, v);
                    accounted += 1;
                    continue;
                },
                error.Closed => break,
            };
            self.checkOrdered(&last, value);
            accounted += 1;
        }
        if (accounted != self.sent_per_sender * senders) _ = self.errors.fetchAdd(1, .monotonic);
    }

    fn checkOrdered(self: *BroadcastShared, last: *[4]?u64, value: u64) void {
        const sender: usize = @intCast(value >> 32);
        const index = value & 0xffff_ffff;
        if (last[sender]) |previous| {
            if (index <= previous) _ = self.errors.fetchAdd(1, .monotonic);
        }
        last[sender] = index;
    }
};

test "stress: broadcast single sender, receivers see values in order, lag counted exactly" {
    const receivers = 3;
    var shared = BroadcastShared{ .sent_per_sender = test_support.scaled(200_000, 50) };
    const tx, const first = try Broadcast(u64).init(testing.allocator, 8);
    var handles: [receivers]Broadcast(u64).Receiver = undefined;
    handles[0] = first;
    for (handles[1..]) |*h| h.* = tx.subscribe();
    var threads: [receivers]std.Thread = undefined;
    for (&threads, &handles) |*t, *h| t.* = try std.Thread.spawn(.{}, BroadcastShared.receiveExact, .{ &shared, h });
    shared.sendAll(tx, 0); // Its deinit is the last sender's: receivers drain, then Closed.
    for (threads) |t| t.join();
    try testing.expectEqual(@as(u64, 0), shared.errors.load(.monotonic));
}

test "stress: broadcast concurrent senders, per-sender order, received + missed = sent" {
    const senders = 3;
    const receivers = 2;
    var shared = BroadcastShared{ .sent_per_sender = test_support.scaled(100_000, 50) };
    var tx, const first = try Broadcast(u64).init(testing.allocator, 4);
    var handles: [receivers]Broadcast(u64).Receiver = undefined;
    handles[0] = first;
    for (handles[1..]) |*h| h.* = tx.subscribe();
    var threads: [senders + receivers]std.Thread = undefined;
    for (threads[senders..], &handles) |*t, *h| t.* = try std.Thread.spawn(.{}, BroadcastShared.receiveOrdered, .{ &shared, h, senders });
    for (threads[0..senders], 0..) |*t, id| t.* = try std.Thread.spawn(.{}, BroadcastShared.sendAll, .{ &shared, tx.clone(), id });
    tx.deinit(); // The senders' clones keep the channel open until the last one finishes.
    for (threads) |t| t.join();
    try testing.expectEqual(@as(u64, 0), shared.errors.load(.monotonic));
}

// -- Watch -------------------------------------------------------------------------------

const Quad = [4]u64;

const WatchShared = struct {
    sends: u64,
    readers_started: std.atomic.Value(u32) = .init(0),
    torn: std.atomic.Value(u64) = .init(0),
    regressions: std.atomic.Value(u64) = .init(0),
    observed: std.atomic.Value(u64) = .init(0),

    /// Sends 1..sends, then gives the (only) sender up: the channel closes.
    fn write(self: *WatchShared, sender: Watch(Quad).Sender, readers: u32) void {
        var tx = sender;
        defer tx.deinit();
        while (self.readers_started.load(.acquire) < readers) std.Thread.yield() catch {};
        for (1..self.sends + 1) |i| {
            tx.send(.{ i, i, i, i }) catch unreachable;
            if (i % 256 == 0) std.Thread.yield() catch {};
        }
    }

    fn read(self: *WatchShared, receiver: *Watch(Quad).Receiver, use_changed: bool) void {
        defer receiver.deinit();
        _ = self.readers_started.fetchAdd(1, .release);
        var last: u64 = 0;
        var last_version: u64 = 0;
        var reads: u64 = 0;
        while (true) {
            if (use_changed) {
                var changed = receiver.changed();
                blockOnThread(&changed) catch break;
            }
            const closed = receiver.isClosed();
            const value = receiver.borrow();
            reads += 1;
            if (value[0] != value[1] or value[1] != value[2] or value[2] != value[3]) {
                _ = self.torn.fetchAdd(1, .monotonic);
            }
            if (value[0] < last or receiver.seenVersion() < last_version) {
                _ = self.regressions.fetchAdd(1, .monotonic);
            }
            // The value of version v is {v, v, v, v}.
            if (value[0] != receiver.seenVersion()) _ = self.torn.fetchAdd(1, .monotonic);
            last = value[0];
            last_version = receiver.seenVersion();
            if (!use_changed and closed) break;
        }
        // After close, the final value is visible.
        if (receiver.borrow()[0] != self.sends) _ = self.regressions.fetchAdd(1, .monotonic);
        _ = self.observed.fetchAdd(reads, .monotonic);
    }
};

test "stress: watch readers never see torn values or going back" {
    const readers = 3;
    var shared = WatchShared{ .sends = test_support.scaled(200_000, 20) };
    const tx, const first = try Watch(Quad).init(testing.allocator, .{ 0, 0, 0, 0 });
    var receivers: [readers]Watch(Quad).Receiver = undefined;
    receivers[0] = first;
    for (receivers[1..]) |*rx| rx.* = tx.subscribe();
    var threads: [readers]std.Thread = undefined;
    for (&threads, &receivers, 0..) |*t, *rx, i| t.* = try std.Thread.spawn(.{}, WatchShared.read, .{ &shared, rx, i != 0 });
    shared.write(tx, readers);
    for (threads) |t| t.join();
    try testing.expectEqual(@as(u64, 0), shared.torn.load(.monotonic));
    try testing.expectEqual(@as(u64, 0), shared.regressions.load(.monotonic));
    // Every reader read at least once after the writer started.
    try testing.expect(shared.observed.load(.monotonic) >= readers);
}

// -- Zero allocations after init ------------------------------------------------------------

test "no channel operation allocates after init" {
    var counting = CountingAllocator.init(testing.allocator);
    const allocator = counting.allocator();
    var bounded_tx, var bounded_rx = try Bounded(u64).init(allocator, 4);
    defer bounded_tx.deinit();
    defer bounded_rx.deinit();
    var broadcast_tx, const first = try Broadcast(u64).init(allocator, 16);
    defer broadcast_tx.deinit();
    var watch_tx, var watch_rx = try Watch(u64).init(allocator, 0);
    defer watch_tx.deinit();
    defer watch_rx.deinit();
    const buffer = try RcBuffer.init(allocator, "payload");
    defer buffer.release();
    var rc_watch_tx, var rc_watch_rx = try Watch(*RcBuffer).init(allocator, buffer.clone());
    defer rc_watch_tx.deinit();
    defer rc_watch_rx.deinit();
    var rc_broadcast_tx, var rc_broadcast_rx = try Broadcast(*RcBuffer).init(allocator, 4);
    defer rc_broadcast_tx.deinit();
    defer rc_broadcast_rx.deinit();
    var receivers: [4]Broadcast(u64).Receiver = undefined;
    receivers[0] = first;
    for (receivers[1..]) |*rx| rx.* = broadcast_tx.subscribe();
    defer for (&receivers) |*rx| rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var cx = Context.init(&waker);

    counting.reset();
    for (0..1000) |i| {
        // Bounded: synchronous paths, and futures that wait and are woken; handle clones.
        try bounded_tx.trySend(i);
        _ = try bounded_rx.tryRecv();
        var recv = bounded_rx.recv();
        assert(recv.poll(&cx) == .pending);
        try bounded_tx.trySend(i);
        _ = try recv.poll(&cx).ready;
        for (0..4) |_| try bounded_tx.trySend(i);
        var send = bounded_tx.send(i);
        assert(send.poll(&cx) == .pending);
        for (0..4) |_| _ = try bounded_rx.tryRecv();
        _ = try send.poll(&cx).ready;
        _ = try bounded_rx.tryRecv();
        var extra_tx = bounded_tx.clone();
        extra_tx.deinit();
        // Oneshot: the synchronous path and a waiting receive.
        var oneshot = Oneshot(u64).init();
        var oneshot_tx, var oneshot_rx = oneshot.split();
        try oneshot_tx.send(i);
        _ = try oneshot_rx.tryRecv();
        oneshot_rx.deinit();
        var reply = Oneshot(u64).init();
        var reply_tx, var reply_rx = reply.split();
        var reply_recv = reply_rx.recv();
        assert(reply_recv.poll(&cx) == .pending);
        try reply_tx.send(i);
        _ = try reply_recv.poll(&cx).ready;
        reply_rx.deinit();
        // Broadcast.
        _ = try broadcast_tx.send(i);
        for (&receivers) |*rx| _ = try rx.tryRecv();
        var broadcast_recv = receivers[0].recv();
        assert(broadcast_recv.poll(&cx) == .pending);
        _ = try broadcast_tx.send(i);
        _ = try broadcast_recv.poll(&cx).ready;
        for (receivers[1..]) |*rx| _ = try rx.tryRecv();
        // Watch.
        try watch_tx.send(i);
        _ = watch_rx.borrow();
        var changed = watch_rx.changed();
        assert(changed.poll(&cx) == .pending);
        try watch_tx.send(i);
        _ = try changed.poll(&cx).ready;
        // Owned values: clones and releases only.
        try rc_watch_tx.send(buffer.clone());
        rc_watch_rx.borrow().release();
        _ = try rc_broadcast_tx.send(buffer.clone());
        (try rc_broadcast_rx.tryRecv()).release();
        // RcBuffer.
        const copy = buffer.clone();
        copy.release();
    }
    try testing.expectEqual(@as(u64, 0), counting.snapshot().count);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}
