//! `Watch(T)`: one value with a version; receivers read the latest value and wait for changes.
//!
//! Layout: a sequence word `seq`, the value stored as atomic machine words
//! (`common.AtomicWords`), a `closed` flag and a wait queue for `changed()` futures. No
//! allocation at all: `var w = Watch(T).init(initial);`. A `Receiver` is a plain value: a
//! pointer and the version it has seen.
//!
//! `seq` is a seqlock with its writer lock built in:
//!
//!     seq = 2·version        no send in progress; `version` sends have completed
//!     seq = 2·version + 1    a send is writing version + 1
//!
//! Send: move `seq` from even `s` to `s + 1` with a compare-and-swap (waiting while it is odd:
//! another sender is writing; seq_cst: the publication event of the waiter protocol), store
//! the words with release, store `s + 2` with release, then wake all `changed()` waiters if
//! any (seq_cst length check).
//!
//! Read (`borrow`, `peek`): load `seq` (acquire) until even, copy the words (acquire loads),
//! load `seq` again; equal means the copy is exactly the value of that version (a word from a
//! later send carries, by its release store, that send's earlier odd store to the second load).
//! Readers never write shared memory and never block a sender; a reader retries only when a
//! send overlapped its copy. This suits small copyable `T` (a few words); readers cannot see a
//! torn value. For large values, put them behind a pointer or an `RcBuffer`.
//!
//! Versions: a receiver remembers the version it last saw. `changed()` and `hasChanged()` count
//! a send in progress as a change (`(seq + 1) / 2`), because a waiter that sees the odd claim
//! must not sleep: that sender's waiter check may precede its registration. The following
//! `borrow` then waits the few instructions until the write completes. `changed()` marks the new
//! version as seen (like Tokio's), so the next `changed()` waits for a later send.
//!
//! Waiting: register-then-recheck (`seq` load, seq_cst) against claim-then-check (the odd
//! compare-and-swap, then the queue length load, both seq_cst); close sets `closed` and wakes
//! everyone under the queue lock, which registrations re-check under.

const std = @import("std");
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

pub fn Watch(comptime T: type) type {
    return struct {
        const Self = @This();
        const Words = common.AtomicWords(T);

        const Snapshot = struct { value: T, seq: u64 };
        const Check = enum { changed, unchanged, closed };

        seq: std.atomic.Value(u64) align(std.atomic.cache_line),
        words: Words,
        closed: std.atomic.Value(bool),
        waiters: Padded(WaitQueue),

        pub fn init(initial: T) Self {
            return .{
                .seq = .init(0),
                .words = Words.init(initial),
                .closed = .init(false),
                .waiters = .{ .value = .{} },
            };
        }

        /// No `changed()` future may be pending. Nothing to free.
        pub fn deinit(self: *Self) void {
            assert(self.waiters.value.isEmpty());
            self.* = undefined;
        }

        /// Replaces the value (version + 1) and wakes the receivers waiting in `changed()`.
        pub fn send(self: *Self, value: T) error{Closed}!void {
            if (self.closed.load(.acquire)) return error.Closed;
            var backoff = Backoff{};
            var seq = self.seq.load(.monotonic);
            while (true) {
                if (seq & 1 != 0) {
                    // Another send is writing: a few instructions.
                    backoff.snooze();
                    seq = self.seq.load(.monotonic);
                    continue;
                }
                // seq_cst: the claim is the publication event of the waiter protocol; it also
                // acquires, so our word stores follow the previous send's in each word.
                seq = self.seq.cmpxchgWeak(seq, seq + 1, .seq_cst, .monotonic) orelse break;
            }
            // Release per word: a reader copying any new word also sees the odd claim.
            self.words.store(value, .release);
            // Release: publishes the words with the even sequence.
            self.seq.store(seq + 2, .release);
            if (self.waiters.value.hasWaiters()) self.waiters.value.notifyAll();
        }

        /// Number of completed sends.
        pub fn version(self: *const Self) u64 {
            return self.seq.load(.acquire) / 2;
        }

        /// The latest value, without marking anything (Tokio's `Sender::borrow`).
        pub fn borrow(self: *const Self) T {
            return self.read().value;
        }

        /// A receiver that has seen the current version.
        pub fn subscribe(self: *Self) Receiver {
            return .{ .channel = self, .seen = self.read().seq / 2 };
        }

        /// No more sends: `send` fails, `changed()` reports `error.Closed` once the latest
        /// version was seen. Wakes every waiting receiver. Idempotent.
        pub fn close(self: *Self) void {
            // seq_cst: registrations re-check under the queue lock that notifyAll takes.
            if (self.closed.swap(true, .seq_cst)) return;
            self.waiters.value.notifyAll();
        }

        pub fn isClosed(self: *const Self) bool {
            return self.closed.load(.acquire);
        }

        fn read(self: *const Self) Snapshot {
            var backoff = Backoff{};
            while (true) {
                // Acquire: pairs with the send's release of the even sequence.
                const before = self.seq.load(.acquire);
                if (before & 1 == 0) {
                    const value = self.words.load(.acquire);
                    if (self.seq.load(.monotonic) == before) return .{ .value = value, .seq = before };
                }
                backoff.snooze();
            }
        }

        pub const Receiver = struct {
            channel: *Self,
            /// The version this receiver has seen.
            seen: u64,

            /// The latest value; marks its version as seen (Tokio's `borrow_and_update`).
            pub fn borrow(self: *Receiver) T {
                const snapshot = self.channel.read();
                self.seen = snapshot.seq / 2;
                return snapshot.value;
            }

            /// The latest value, without marking it seen (Tokio's `Receiver::borrow`).
            pub fn peek(self: *const Receiver) T {
                return self.channel.read().value;
            }

            pub fn seenVersion(self: *const Receiver) u64 {
                return self.seen;
            }

            /// True if a send started after the version this receiver saw. `error.Closed`
            /// once the channel is closed (like Tokio).
            pub fn hasChanged(self: *const Receiver) error{Closed}!bool {
                if (self.channel.closed.load(.acquire)) return error.Closed;
                return latestVersion(self.channel.seq.load(.acquire)) > self.seen;
            }

            /// A future that completes when the version moves past the seen one, and marks the
            /// new version seen. Output `error{Closed}!void`: Closed only when closed and no
            /// unseen version is left. The receiver must stay put while it is pending.
            pub fn changed(self: *Receiver) ChangedFuture {
                return .{ .receiver = self };
            }

            fn check(self: *Receiver) Check {
                // seq_cst: the re-check half of the waiter protocol.
                const latest = latestVersion(self.channel.seq.load(.seq_cst));
                if (latest > self.seen) {
                    self.seen = latest;
                    return .changed;
                }
                return if (self.channel.closed.load(.seq_cst)) .closed else .unchanged;
            }
        };

        /// The version of the latest send, counting one in progress.
        fn latestVersion(seq: u64) u64 {
            return (seq + 1) / 2;
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
                    if (result != .unchanged) return self.finish(result);
                    common.hook.beforeRegister();
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
                return self.finish(result);
            }

            fn finish(self: *ChangedFuture, result: Check) Poll(Output) {
                self.finished = true;
                return switch (result) {
                    .changed => .{ .ready = {} },
                    .closed => .{ .ready = error.Closed },
                    .unchanged => unreachable,
                };
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
    var w = Watch(u64).init(10);
    defer w.deinit();
    var rx = w.subscribe();
    try testing.expectEqual(@as(u64, 0), w.version());
    try testing.expectEqual(@as(u64, 10), rx.borrow());
    try testing.expect(!try rx.hasChanged());
    try w.send(11);
    try w.send(12); // Coalesces: only the latest is visible.
    try testing.expectEqual(@as(u64, 2), w.version());
    try testing.expect(try rx.hasChanged());
    try testing.expectEqual(@as(u64, 12), rx.peek());
    try testing.expect(try rx.hasChanged()); // peek does not mark.
    try testing.expectEqual(@as(u64, 12), rx.borrow());
    try testing.expectEqual(@as(u64, 2), rx.seenVersion());
    try testing.expect(!try rx.hasChanged());
    try testing.expectEqual(@as(u64, 12), w.borrow());
    var late = w.subscribe();
    try testing.expect(!try late.hasChanged());
}

test "watch: changed() is ready for an unseen version and marks it seen" {
    var w = Watch(u32).init(0);
    defer w.deinit();
    var rx = w.subscribe();
    try w.send(1);
    var changed = rx.changed();
    _ = try future.pollOnce(&changed).ready;
    try testing.expect(!try rx.hasChanged());
    try testing.expectEqual(@as(u32, 1), rx.borrow());
    var again = rx.changed();
    try testing.expect(future.pollOnce(&again) == .pending);
    again.cancel();
}

test "watch: pending changed() is woken by send; waker replacement; cancel" {
    var w = Watch(u32).init(0);
    defer w.deinit();
    var old_counter = Waker.Counting{};
    var new_counter = Waker.Counting{};
    const old_waker = old_counter.waker();
    defer old_waker.drop();
    const new_waker = new_counter.waker();
    defer new_waker.drop();
    var rx = w.subscribe();
    var other = w.subscribe();

    var cancelled = other.changed();
    try testing.expect(pollWith(&cancelled, &old_waker) == .pending);
    cancelled.cancel();
    cancelled.cancel();

    var changed = rx.changed();
    try testing.expect(pollWith(&changed, &old_waker) == .pending);
    try testing.expect(pollWith(&changed, &new_waker) == .pending);
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
    try w.send(7);
    try testing.expectEqual(@as(u32, 0), old_counter.wakeCount());
    try testing.expectEqual(@as(u32, 1), new_counter.wakeCount());
    _ = try pollWith(&changed, &new_waker).ready;
    try testing.expectEqual(@as(u32, 7), rx.borrow());
    try testing.expectEqual(@as(i32, 1), new_counter.outstanding());
    try testing.expectEqual(@as(i32, 1), old_counter.outstanding());
}

test "watch: close wakes waiters; unseen versions are still reported first" {
    var w = Watch(u32).init(0);
    defer w.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var rx = w.subscribe();
    var pending_rx = w.subscribe();
    var pending = pending_rx.changed();
    try testing.expect(pollWith(&pending, &waker) == .pending);
    try w.send(1);
    w.close();
    w.close();
    try testing.expectError(error.Closed, w.send(2));
    try testing.expectError(error.Closed, rx.hasChanged());
    var changed = rx.changed();
    _ = try future.pollOnce(&changed).ready; // The version sent before close.
    var closed = rx.changed();
    try testing.expectError(error.Closed, future.pollOnce(&closed).ready);
    _ = try pollWith(&pending, &waker).ready;
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
    try testing.expectEqual(@as(u32, 1), rx.borrow());
}

fn watchSendHook(context: *anyopaque) void {
    const w: *Watch(u32) = @ptrCast(@alignCast(context));
    w.send(5) catch unreachable;
}

fn watchCloseHook(context: *anyopaque) void {
    const w: *Watch(u32) = @ptrCast(@alignCast(context));
    w.close();
}

test "watch: a send or close between the check and registration is not missed" {
    var w = Watch(u32).init(0);
    defer w.deinit();
    var counter = Waker.Counting{};
    const waker = counter.waker();
    defer waker.drop();
    var rx = w.subscribe();
    var changed = rx.changed();
    common.hook.set(.{ .context = &w, .run = watchSendHook });
    _ = try pollWith(&changed, &waker).ready;
    try testing.expectEqual(@as(u32, 5), rx.borrow());
    var closed = rx.changed();
    common.hook.set(.{ .context = &w, .run = watchCloseHook });
    try testing.expectError(error.Closed, pollWith(&closed, &waker).ready);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "watch: multi-word values" {
    const Pair = struct { low: u64, high: u64, flag: bool };
    var w = Watch(Pair).init(.{ .low = 1, .high = 2, .flag = false });
    defer w.deinit();
    var rx = w.subscribe();
    try w.send(.{ .low = 3, .high = 4, .flag = true });
    const value = rx.borrow();
    try testing.expectEqual(@as(u64, 3), value.low);
    try testing.expectEqual(@as(u64, 4), value.high);
    try testing.expect(value.flag);
}
