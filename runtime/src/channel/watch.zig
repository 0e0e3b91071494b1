//! `Watch(T)`: one value with a version; receivers read the latest value and wait for changes.
//!
//! Handles, as Tokio's `watch`: `init(allocator, initial)` allocates the shared state (this
//! struct; the only allocation) and returns one `Sender` and one `Receiver`. Both are counted
//! (`common.Handles`), cloned with `clone` and given up with `deinit`; the last handle frees the
//! state. `Sender.subscribe()` makes a new receiver, also when none is left. `send` fails with
//! `error.Closed` and hands the value back when no receiver exists (Tokio's `send`);
//! `sendReplace` always stores the value and returns the previous one. When the last sender
//! goes the channel is closed: `changed()` reports `error.Closed` once the latest version was
//! seen, `hasChanged()` at once.
//!
//! Versions: `seq` counts sends, `seq = 2·version`, plus 1 while a send of plain data is
//! writing, plus `closed_bit` (bit 63) once the last sender is gone (no send can follow, so no
//! writer ever sees that bit). A receiver remembers the version it last saw. `borrow()` returns
//! the latest value and marks its version seen (Tokio's `borrow_and_update`); `changed()`
//! completes when a later version exists and marks it seen; `peek()` and `Sender.borrow()` mark
//! nothing.
//!
//! Two ways to hold the value, chosen at compile time by `common.Ownership(T)`:
//!
//! **Plain data: a double-buffered seqlock.** The value of version `v` is in `words[v & 1]`
//! (`common.AtomicWords`, so a reader may copy while a sender writes without a data race).
//! Send: move `seq` from even `s` to `s + 1` with a compare-and-swap (seq_cst: the publication
//! event of the waiter protocol; it also makes this sender the only writer), store the new
//! value into the *other* buffer with release, store `s + 2` with release, then wake all
//! `changed()` waiters if any (seq_cst length check). Read: load `seq` (acquire), copy
//! `words[v & 1]` for `v = seq / 2` (acquire loads), load `seq` again: the buffer of `v` is
//! rewritten only by the send of version `v + 2`, whose claim (`seq = 2v + 3`) precedes its word
//! stores, and a reader that copied any such word (acquire) sees that claim in its second load.
//! So the copy is exactly version `v` if the second load is at most `2v + 2`; otherwise a later
//! version completed meanwhile and the reader retries with it. A reader never waits for a
//! sender: while one writes, the previous version stays readable in the other buffer (a
//! single-buffer seqlock would make readers spin behind a preempted sender). Concurrent senders
//! wait for each other (a send is a handful of stores): they spin boundedly and then sleep
//! (`Backoff.pause`), never loop on `Thread.yield`.
//!
//! **Owned values** (`*RcBuffer`, or a type with `clone` and `deinit`): the value sits behind a
//! `Lock` (runtime/src/Lock.zig: spins briefly, then sleeps), like Tokio's `RwLock`. A send
//! swaps the value and adds 2 to `seq` (seq_cst: the publication event) under the lock, then
//! releases the previous value (`send`) or returns it (`sendReplace`) outside the lock. A read
//! clones the value under the lock, so a receiver always gets its own reference and a torn or
//! freed pointer is never read. The value in the channel when the last handle goes is released
//! then: every value is released exactly once.
//!
//! Waiting: register-then-recheck (`seq` load, seq_cst, under the queue lock) against
//! claim-then-check (the claim, then the queue length load, both seq_cst). A plain send that
//! has claimed but not finished counts as a change the waiter must not sleep on (that sender's
//! length check may precede the registration) but cannot return yet (its value is not
//! readable): the `changed()` future yields and is polled again (`common.yieldNow`), as the
//! bounded channel does for a claim whose value is not written yet. The last sender's close
//! sets `closed_bit` (seq_cst) and wakes everyone under the queue lock, which registrations
//! re-check under.

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

pub fn Watch(comptime T: type) type {
    return struct {
        const Self = @This();
        const Values = common.Ownership(T);
        const owned = Values.owned;
        const Words = common.AtomicWords(T);

        const closed_bit: u64 = 1 << 63;

        const Snapshot = struct { value: T, version: u64 };
        const Check = enum { changed, unchanged, closed, busy };

        /// 2·version, +1 while a plain send writes, + `closed_bit` (module comment).
        seq: std.atomic.Value(u64) align(std.atomic.cache_line),
        /// Plain data: the value of version v is in `words[v & 1]`.
        words: if (owned) void else [2]Words,
        /// Owned values: guards `value` and the changes of `seq`.
        lock: if (owned) Lock else void,
        value: if (owned) T else void,
        handles: common.Handles,
        allocator: Allocator,
        waiters: Padded(WaitQueue),

        /// What `init` returns: destructure it as `const tx, var rx = try ...init(...)`.
        pub const Pair = struct { Sender, Receiver };

        /// Allocates the shared state holding `initial` (version 0); returns the first sender
        /// and receiver. The channel owns `initial` from here on.
        pub fn init(allocator: Allocator, initial: T) Allocator.Error!Pair {
            const self = try allocator.create(Self);
            self.* = .{
                .seq = .init(0),
                .words = if (owned) {} else .{ Words.init(initial), Words.init(initial) },
                .lock = if (owned) .{} else {},
                .value = if (owned) initial else {},
                .handles = .init(1, 1),
                .allocator = allocator,
                .waiters = .{ .value = .{} },
            };
            return .{ .{ .channel = self }, .{ .channel = self, .seen = 0 } };
        }

        /// Called by the last handle: releases the value in the channel and frees the state.
        fn destroy(self: *Self) void {
            assert(self.waiters.value.isEmpty()); // A `changed()` future outlived its receiver.
            if (owned) Values.release(self.value);
            const allocator = self.allocator;
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

            /// Replaces the value (version + 1) and wakes the receivers waiting in
            /// `changed()`, releasing the previous value. `error.Closed` when no receiver
            /// exists (Tokio's `send`): nothing changed and the caller keeps `value`.
            pub fn send(self: *const Sender, value: T) error{Closed}!void {
                // Monotonic: a hint, like Tokio's `receiver_count() == 0` check.
                if (self.channel.handles.receiverCount() == 0) return error.Closed;
                if (owned) {
                    Values.release(self.channel.sendReplace(value));
                } else {
                    // Plain data: the previous value is not needed, so it is not read.
                    _ = self.channel.swapWords(value, false);
                    self.channel.wakeChanged();
                }
            }

            /// Replaces the value even when no receiver exists (a later `subscribe` sees it)
            /// and returns the previous value, which the caller now owns (Tokio's
            /// `send_replace`).
            pub fn sendReplace(self: *const Sender, value: T) T {
                return self.channel.sendReplace(value);
            }

            /// The latest value, marking nothing (Tokio's `Sender::borrow`). Owned values:
            /// the caller's own clone, to release.
            pub fn borrow(self: *const Sender) T {
                return self.channel.read().value;
            }

            /// A new receiver that has seen the current version (reopens a channel whose
            /// receivers were all gone).
            pub fn subscribe(self: *const Sender) Receiver {
                self.channel.handles.addReceiver();
                return .{ .channel = self.channel, .seen = self.channel.version() };
            }

            /// Receivers alive now (a snapshot).
            pub fn receiverCount(self: *const Sender) usize {
                return self.channel.handles.receiverCount();
            }

            /// True when no receiver exists (a `send` would fail).
            pub fn isClosed(self: *const Sender) bool {
                return self.receiverCount() == 0;
            }

            /// Number of completed sends.
            pub fn version(self: *const Sender) u64 {
                return self.channel.version();
            }
        };

        fn version(self: *const Self) u64 {
            // Acquire: pairs with the release of the send that completed the version.
            return completedVersion(self.seq.load(.acquire));
        }

        fn sendReplace(self: *Self, value: T) T {
            const previous = if (owned) self.swapLocked(value) else self.swapWords(value, true).?;
            self.wakeChanged();
            return previous;
        }

        /// After a send: wakes the `changed()` waiters, if any (seq_cst length check).
        fn wakeChanged(self: *Self) void {
            if (self.waiters.value.hasWaiters()) self.waiters.value.notifyAll();
        }

        fn swapLocked(self: *Self, value: T) T {
            self.lock.lock();
            const previous = self.value;
            self.value = value;
            // seq_cst: the publication event of the waiter protocol (the lock orders the value
            // for readers, who read `seq` under it).
            const seq = self.seq.fetchAdd(2, .seq_cst);
            assert(seq & (closed_bit | 1) == 0); // A sender exists, and owned sends never leave seq odd.
            self.lock.unlock();
            return previous;
        }

        /// The plain send; returns the previous value if `want_previous`.
        fn swapWords(self: *Self, value: T, comptime want_previous: bool) ?T {
            var backoff = Backoff{};
            var seq = self.seq.load(.monotonic);
            while (true) {
                assert(seq & closed_bit == 0); // A sender exists.
                if (seq & 1 != 0) {
                    // Another send is writing: a handful of stores, unless it was preempted.
                    _ = backoff.pause();
                    seq = self.seq.load(.monotonic);
                    continue;
                }
                // seq_cst: the claim is the publication event of the waiter protocol; it also
                // acquires the previous send's even store, so the buffers are ours to use.
                seq = self.seq.cmpxchgWeak(seq, seq + 1, .seq_cst, .monotonic) orelse break;
            }
            const current = seq >> 1;
            // We are the only writer: the current buffer is stable.
            const previous: ?T = if (want_previous) self.words[current & 1].load(.monotonic) else null;
            // Release per word: a reader copying any of these words also sees our claim.
            self.words[(current + 1) & 1].store(value, .release);
            // Release: publishes the buffer with the even sequence.
            self.seq.store(seq + 2, .release);
            return previous;
        }

        /// The last sender went: `send` is impossible from now on. Wakes every receiver.
        fn close(self: *Self) void {
            // seq_cst: registrations re-check `seq` under the queue lock that notifyAll takes.
            const previous = self.seq.fetchOr(closed_bit, .seq_cst);
            assert(previous & (closed_bit | 1) == 0);
            self.waiters.value.notifyAll();
        }

        /// The latest value and its version (a clone for owned values).
        fn read(self: *Self) Snapshot {
            if (owned) {
                self.lock.lock();
                defer self.lock.unlock();
                return .{ .value = Values.clone(&self.value), .version = completedVersion(self.seq.load(.monotonic)) };
            }
            while (true) {
                // Acquire: pairs with the release of the even sequence of version v (an odd
                // claim read here continues that release sequence).
                const seq = self.seq.load(.acquire);
                const current = completedVersion(seq);
                // Acquire per word: see the module comment.
                const value = self.words[current & 1].load(.acquire);
                const rewrite_claim = 2 * current + 3;
                if (self.seq.load(.monotonic) & ~closed_bit < rewrite_claim) return .{ .value = value, .version = current };
                // Versions current + 1 and + 2 were sent meanwhile: read the newer one.
            }
        }

        /// The receiving half. Copy it only through `clone`; `deinit` it exactly once.
        pub const Receiver = struct {
            channel: *Self,
            /// The version this receiver has seen.
            seen: u64,

            /// Another receiver that has seen the same version.
            pub fn clone(self: *const Receiver) Receiver {
                self.channel.handles.addReceiver();
                return .{ .channel = self.channel, .seen = self.seen };
            }

            /// Gives up this receiver (the last handle frees the channel). No `changed()`
            /// future may be pending.
            pub fn deinit(self: *Receiver) void {
                const channel = self.channel;
                self.* = undefined;
                _ = channel.handles.dropReceiver();
                if (channel.handles.release()) channel.destroy();
            }

            /// The latest value; marks its version as seen (Tokio's `borrow_and_update`).
            /// Owned values: the caller's own clone, to release.
            pub fn borrow(self: *Receiver) T {
                const snapshot = self.channel.read();
                self.seen = snapshot.version;
                return snapshot.value;
            }

            /// The latest value, without marking it seen (Tokio's `Receiver::borrow`).
            pub fn peek(self: *const Receiver) T {
                return self.channel.read().value;
            }

            pub fn seenVersion(self: *const Receiver) u64 {
                return self.seen;
            }

            /// True if a send completed after the version this receiver saw. `error.Closed`
            /// once the last sender is gone (like Tokio).
            pub fn hasChanged(self: *const Receiver) error{Closed}!bool {
                // Acquire: pairs with the release of the send that completed the version.
                const seq = self.channel.seq.load(.acquire);
                if (seq & closed_bit != 0) return error.Closed;
                return completedVersion(seq) > self.seen;
            }

            /// True once the last sender is gone.
            pub fn isClosed(self: *const Receiver) bool {
                return self.channel.seq.load(.acquire) & closed_bit != 0;
            }

            /// A future that completes when a version after the seen one exists, and marks it
            /// seen. Output `error{Closed}!void`: Closed only when the last sender is gone and
            /// no unseen version is left. The receiver must stay put while it is pending.
            pub fn changed(self: *Receiver) ChangedFuture {
                return .{ .receiver = self };
            }

            fn check(self: *Receiver) Check {
                // seq_cst: the re-check half of the waiter protocol. One word holds the version
                // and the closed bit, so a version sent before the close is always seen first.
                const seq = self.channel.seq.load(.seq_cst);
                const latest = completedVersion(seq);
                if (latest > self.seen) {
                    self.seen = latest;
                    return .changed;
                }
                if (seq & closed_bit != 0) return .closed;
                // A send has claimed but not finished: its length check may precede our
                // registration, so we must not sleep; its value is not readable yet.
                if (seq & 1 != 0) return .busy;
                return .unchanged;
            }
        };

        /// The version of the latest completed send.
        fn completedVersion(seq: u64) u64 {
            return (seq & ~closed_bit) >> 1;
        }

        pub const ChangedFuture = struct {
            receiver: *Receiver,
            waiter: WaitQueue.Waiter = .{},
            finished: bool = false,

            pub const Output = error{Closed}!void;

            pub fn poll(self: *ChangedFuture, cx: *Context) Poll(Output) {
                assert(!self.finished);
                if (!budget.proceed(cx)) return .pending;
                if (self.waiter.load() != .linked) {
                    self.waiter.reclaim();
                    const result = self.receiver.check();
                    if (result != .unchanged) return self.finish(cx, result);
                    hook.reached(.channel_before_register);
                }
                const queue = &self.receiver.channel.waiters.value;
                var removed: ?Waker = null;
                queue.lock();
                const replaced = queue.registerLocked(&self.waiter, cx.waker());
                const result = self.receiver.check();
                if (result != .unchanged) removed = queue.removeLocked(&self.waiter);
                queue.unlock();
                if (replaced) |w| w.drop();
                if (removed) |w| w.drop();
                if (result == .unchanged) {
                    budget.refund();
                    return .pending;
                }
                return self.finish(cx, result);
            }

            fn finish(self: *ChangedFuture, cx: *Context, result: Check) Poll(Output) {
                switch (result) {
                    .busy => return common.yieldNow(cx, Output),
                    .changed => {
                        self.finished = true;
                        return .{ .ready = {} };
                    },
                    .closed => {
                        self.finished = true;
                        return .{ .ready = error.Closed };
                    },
                    .unchanged => unreachable,
                }
            }

            /// Unlinks the waiter. Idempotent; touches nothing after completion.
            pub fn cancel(self: *ChangedFuture) void {
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

test "watch: borrow, versions and hasChanged" {
    var tx, var rx = try Watch(u64).init(testing.allocator, 10);
    defer tx.deinit();
    defer rx.deinit();
    try testing.expectEqual(@as(u64, 0), tx.version());
    try testing.expectEqual(@as(u64, 10), rx.borrow());
    try testing.expect(!try rx.hasChanged());
    try tx.send(11);
    try tx.send(12); // Coalesces: only the latest is visible.
    try testing.expectEqual(@as(u64, 2), tx.version());
    try testing.expect(try rx.hasChanged());
    try testing.expectEqual(@as(u64, 12), rx.peek());
    try testing.expect(try rx.hasChanged()); // peek does not mark.
    try testing.expectEqual(@as(u64, 12), rx.borrow());
    try testing.expectEqual(@as(u64, 2), rx.seenVersion());
    try testing.expect(!try rx.hasChanged());
    try testing.expectEqual(@as(u64, 12), tx.borrow());
    var late = tx.subscribe();
    defer late.deinit();
    try testing.expect(!try late.hasChanged());
    try testing.expectEqual(@as(u64, 12), tx.sendReplace(13));
    try testing.expectEqual(@as(u64, 13), late.borrow());
}

test "watch: changed() is ready for an unseen version and marks it seen" {
    var tx, var rx = try Watch(u32).init(testing.allocator, 0);
    defer tx.deinit();
    defer rx.deinit();
    try tx.send(1);
    var changed = rx.changed();
    _ = try future.pollOnce(&changed).ready;
    try testing.expect(!try rx.hasChanged());
    try testing.expectEqual(@as(u32, 1), rx.borrow());
    var again = rx.changed();
    try testing.expect(future.pollOnce(&again) == .pending);
    again.cancel();
}

test "watch: pending changed() is woken by send; waker replacement; cancel" {
    var tx, var rx = try Watch(u32).init(testing.allocator, 0);
    defer tx.deinit();
    defer rx.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var other = rx.clone();
    defer other.deinit();

    var cancelled = other.changed();
    try testing.expect(pollWith(&cancelled, &old_waker) == .pending);
    cancelled.cancel();
    cancelled.cancel();

    var changed = rx.changed();
    try testing.expect(pollWith(&changed, &old_waker) == .pending);
    try testing.expect(pollWith(&changed, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try tx.send(7);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    _ = try pollWith(&changed, &new_waker).ready;
    try testing.expectEqual(@as(u32, 7), rx.borrow());
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
}

test "watch: the last sender closes; waiters are woken; unseen versions are still reported first" {
    var tx, var rx = try Watch(u32).init(testing.allocator, 0);
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var pending_rx = rx.clone();
    defer pending_rx.deinit();
    var pending = pending_rx.changed();
    try testing.expect(pollWith(&pending, &waker) == .pending);
    var tx2 = tx.clone();
    try tx2.send(1);
    tx.deinit();
    try testing.expect(!rx.isClosed()); // tx2 is left.
    tx2.deinit(); // The last sender.
    try testing.expect(rx.isClosed());
    try testing.expectError(error.Closed, rx.hasChanged());
    var changed = rx.changed();
    _ = try future.pollOnce(&changed).ready; // The version sent before the close.
    var closed = rx.changed();
    try testing.expectError(error.Closed, future.pollOnce(&closed).ready);
    _ = try pollWith(&pending, &waker).ready;
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 1), rx.borrow());
}

test "watch: send without receivers fails and hands the value back; sendReplace succeeds; subscribe reopens" {
    var tx, var rx = try Watch(u32).init(testing.allocator, 0);
    defer tx.deinit();
    try testing.expectEqual(@as(usize, 1), tx.receiverCount());
    rx.deinit();
    try testing.expect(tx.isClosed());
    try testing.expectError(error.Closed, tx.send(5));
    try testing.expectEqual(@as(u64, 0), tx.version()); // Nothing changed.
    try testing.expectEqual(@as(u32, 0), tx.sendReplace(6));
    var again = tx.subscribe();
    defer again.deinit();
    try testing.expectEqual(@as(u32, 6), again.borrow());
    try tx.send(7);
    try testing.expectEqual(@as(u32, 7), again.borrow());
}

fn watchSendHook(context: *anyopaque) void {
    const tx: *Watch(u32).Sender = @ptrCast(@alignCast(context));
    tx.send(5) catch unreachable;
}

fn watchCloseHook(context: *anyopaque) void {
    const tx: *Watch(u32).Sender = @ptrCast(@alignCast(context));
    tx.deinit();
}

test "watch: a send or the close between the check and registration is not missed" {
    var tx, var rx = try Watch(u32).init(testing.allocator, 0);
    defer rx.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var changed = rx.changed();
    hook.arm(.channel_before_register, @as(*anyopaque, &tx), watchSendHook);
    _ = try pollWith(&changed, &waker).ready;
    try testing.expectEqual(@as(u32, 5), rx.borrow());
    var closed = rx.changed();
    hook.arm(.channel_before_register, @as(*anyopaque, &tx), watchCloseHook);
    try testing.expectError(error.Closed, pollWith(&closed, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "watch: a send in progress makes changed() yield, and a reader still sees the previous version" {
    var tx, var rx = try Watch(u64).init(testing.allocator, 1);
    defer tx.deinit();
    defer rx.deinit();
    const channel = tx.channel;
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    // A sender claims version 1 and is preempted before writing (seq odd).
    try testing.expect(channel.seq.cmpxchgStrong(0, 1, .seq_cst, .monotonic) == null);
    try testing.expect(!try rx.hasChanged()); // The send has not completed.
    try testing.expectEqual(@as(u64, 1), rx.peek()); // Readers do not wait for it.
    var changed = rx.changed();
    try testing.expect(pollWith(&changed, &waker) == .pending); // Yields: woken at once.
    try testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try testing.expect(channel.waiters.value.isEmpty()); // Not registered.
    // The sender finishes.
    channel.words[1].store(2, .release);
    channel.seq.store(2, .release);
    _ = try pollWith(&changed, &waker).ready;
    try testing.expectEqual(@as(u64, 2), rx.borrow());
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "watch: a reader copying a buffer that is rewritten retries with the newer version" {
    var tx, var rx = try Watch(u64).init(testing.allocator, 0);
    defer tx.deinit();
    defer rx.deinit();
    try tx.send(1); // Version 1 in words[1].
    const channel = tx.channel;
    // Version 2 is sent and version 3 claimed (it rewrites words[1], the buffer of version 1).
    try tx.send(2);
    try testing.expect(channel.seq.cmpxchgStrong(4, 5, .seq_cst, .monotonic) == null);
    try testing.expectEqual(@as(u64, 2), rx.borrow()); // Version 2's buffer is stable.
    try testing.expectEqual(@as(u64, 2), rx.seenVersion());
    channel.words[1].store(3, .release);
    channel.seq.store(6, .release);
    try testing.expectEqual(@as(u64, 3), rx.borrow());
}

test "watch: multi-word values" {
    const Pair = struct { low: u64, high: u64, flag: bool };
    var tx, var rx = try Watch(Pair).init(testing.allocator, .{ .low = 1, .high = 2, .flag = false });
    defer tx.deinit();
    defer rx.deinit();
    try tx.send(.{ .low = 3, .high = 4, .flag = true });
    const value = rx.borrow();
    try testing.expectEqual(@as(u64, 3), value.low);
    try testing.expectEqual(@as(u64, 4), value.high);
    try testing.expect(value.flag);
}

test "watch: owned values are cloned per receiver and released exactly once" {
    const RcBuffer = @import("../RcBuffer.zig");
    const first = try RcBuffer.init(testing.allocator, "first");
    defer first.release();
    const second = try RcBuffer.init(testing.allocator, "second");
    defer second.release();
    var tx, var rx = try Watch(*RcBuffer).init(testing.allocator, first.clone());
    var rx2 = rx.clone();
    try testing.expectEqual(@as(usize, 2), first.refCount()); // Ours and the channel's.
    const seen = rx.borrow();
    try testing.expect(seen == first);
    try testing.expectEqual(@as(usize, 3), first.refCount()); // The receiver's own clone.
    seen.release();
    try tx.send(second.clone()); // Replaces (and releases) the channel's reference to first.
    try testing.expectEqual(@as(usize, 1), first.refCount());
    try testing.expectEqual(@as(usize, 2), second.refCount());
    const a = rx.borrow();
    const b = rx2.peek();
    try testing.expect(a == second and b == second);
    try testing.expectEqual(@as(usize, 4), second.refCount());
    a.release();
    b.release();
    // sendReplace hands the previous value to the caller.
    const previous = tx.sendReplace(first.clone());
    try testing.expect(previous == second);
    previous.release();
    try testing.expectEqual(@as(usize, 1), second.refCount());
    // No receiver: the send fails and the value stays the caller's.
    rx.deinit();
    rx2.deinit();
    const refused = second.clone();
    try testing.expectError(error.Closed, tx.send(refused));
    refused.release();
    // The last handle releases the value left in the channel.
    try testing.expectEqual(@as(usize, 2), first.refCount());
    tx.deinit();
    try testing.expectEqual(@as(usize, 1), first.refCount());
    try testing.expectEqual(@as(usize, 1), second.refCount());
}

test "watch: owned struct values with clone and deinit" {
    const Counted = struct {
        live: *i32,
        id: u32,
        pub fn clone(self: @This()) @This() {
            self.live.* += 1;
            return self;
        }
        pub fn deinit(self: *@This()) void {
            self.live.* -= 1;
        }
    };
    var live: i32 = 1;
    var tx, var rx = try Watch(Counted).init(testing.allocator, .{ .live = &live, .id = 0 });
    for (1..5) |i| {
        live += 1;
        try tx.send(.{ .live = &live, .id = @intCast(i) });
        var got = rx.borrow();
        try testing.expectEqual(@as(u32, @intCast(i)), got.id);
        got.deinit();
        try testing.expectEqual(@as(i32, 1), live); // Only the channel's value is alive.
    }
    rx.deinit();
    tx.deinit();
    try testing.expectEqual(@as(i32, 0), live);
}
