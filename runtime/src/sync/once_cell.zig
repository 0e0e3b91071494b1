//! `OnceCell(T)`: a value set at most once, readable without locking; async initialisation
//! where only one initializer runs and concurrent callers wait (intrusively).
//!
//! State word (`state`, one atomic u32):
//!
//!     bits 0-1   phase     empty (0), initializing (1), ready (2)
//!     bit 2      waiters   the wait list is non-empty (only while initializing)
//!
//! `ready` is terminal and never carries the waiters bit, so `get` is one acquire load
//! compared with `ready`.
//!
//! Whoever moves the phase empty -> initializing (one CAS: `set`, or the first
//! `getOrInit` poll) holds the *initializer role*: only it writes `value`. It publishes with
//! one swap to `ready` (release, so `get`'s acquire load sees the value); if the swapped-out
//! word had `waiters`, it takes the lock and completes every waiter.
//!
//! A `getOrInit` that finds another initializer running takes the lock, re-checks the word
//! and, still `initializing`, sets `waiters` (CAS, same word) and links its node. Because
//! "has waiters" lives in the word the publisher swaps, either the publisher's swap comes
//! first (the waiter then reads `ready` under the lock) or it reads `waiters` and completes
//! the waiter under the lock: no wake-up is lost with acquire/release RMWs alone.
//!
//! Cancelled initializer: the role is handed, under the lock, to the oldest waiter (its node
//! gets `take_over` and it is woken), which then runs *its own* init future; the phase stays
//! `initializing`. With nobody waiting, the phase returns to `empty`. A waiter that was
//! handed the role but is cancelled before it observed it passes it on the same way. This
//! mirrors Tokio, where initialisation is guarded by a one-permit semaphore.
//!
//! `getOrInit(init_future)` takes the init future *by value*: the returned future owns it
//! (`init_future: F`), polls it in place only if it gets the initializer role, and cancels it
//! when it is itself cancelled. `F.Output` must be `T`. A caller that finds the cell ready or
//! waits for another initializer never polls its init future (cancelling it is harmless).
//!
//! `set` while an initializer runs returns error.AlreadySet (the cell is being set; Tokio
//! reports this case as a separate "initializing" error). The cell does not own `value`
//! beyond storing it: a `T` that needs freeing is freed by the user, through `get`.

const std = @import("std");
const Lock = @import("../Lock.zig");
const assert = std.debug.assert;
const Waker = @import("../Waker.zig");
const future = @import("../future.zig");
const budget = @import("../budget.zig");
const intrusive_list = @import("../wait/intrusive_list.zig");
const WakeList = @import("../wait/WakeList.zig");
const hook = @import("../hook.zig");
const Context = future.Context;
const Poll = future.Poll;

const phase_mask: u32 = 0b11;
const empty: u32 = 0;
const initializing: u32 = 1;
const ready: u32 = 2;
const waiters_bit: u32 = 1 << 2;

const Status = enum(u8) { waiting, ready, take_over };

const Waiter = struct {
    link: intrusive_list.Node = .{},
    waker: ?Waker = null,
    status: std.atomic.Value(Status) = .init(.waiting),

    fn from(link: *intrusive_list.Node) *Waiter {
        return intrusive_list.entry(Waiter, "link", link);
    }

    fn takeWaker(self: *Waiter) Waker {
        const waker = self.waker.?;
        self.waker = null;
        return waker;
    }
};

pub fn OnceCell(comptime T: type) type {
    return struct {
        const Self = @This();

        /// Aligned like `T` so that the automatic layout places it first and `value` is
        /// never at offset 0: `&self.value` is then provably non-null and `get` compiles to a
        /// load and a compare, without a null test on `self` (measured: 0.42 -> 0.28 ns/op).
        state: std.atomic.Value(u32) align(@max(@alignOf(u32), @alignOf(T))) = .init(empty),
        value: T = undefined,
        mutex: Lock = .{},
        waiters: intrusive_list.List = .{},

        pub fn init() Self {
            return .{};
        }

        pub fn initValue(value: T) Self {
            return .{ .state = .init(ready), .value = value };
        }

        /// The value, if set. One acquire load (pairs with the publishing swap).
        pub fn get(self: *const Self) ?*const T {
            if (self.state.load(.acquire) == ready) return &self.value;
            return null;
        }

        /// Sets the value unless it is set or being initialised (error.AlreadySet).
        pub fn set(self: *Self, value: T) error{AlreadySet}!void {
            // Monotonic: winning only grants the right to write `value`, which nobody reads
            // before the release in `publish`; there is nothing to acquire from `empty`.
            if (self.state.cmpxchgStrong(empty, initializing, .monotonic, .monotonic) != null) {
                return error.AlreadySet;
            }
            self.value = value;
            self.publish();
        }

        /// A future that returns the value, running `init_future` (owned by value; Output T)
        /// only if no other initializer runs. Output: `*const T`.
        pub fn getOrInit(self: *Self, init_future: anytype) GetOrInit(@TypeOf(init_future)) {
            return .{ .cell = self, .init_future = init_future };
        }

        /// Called by the initializer role holder after writing `value`.
        fn publish(self: *Self) void {
            // Release: `value` becomes visible to `get`'s acquire load. Acquire: pairs with
            // the waiters' CAS that set the bit (their registration happens before).
            const before = self.state.swap(ready, .acq_rel);
            assert(before & phase_mask == initializing);
            if (before & waiters_bit != 0) self.completeWaiters();
        }

        noinline fn completeWaiters(self: *Self) void {
            self.mutex.lock();
            var wake = WakeList.init();
            // `ready` is terminal: no waiter registers any more, so the loop is bounded by
            // the waiters present now.
            while (self.waiters.popFront()) |link| {
                const waiter = Waiter.from(link);
                wake.push(waiter.takeWaker());
                // Release: the owner reads it with acquire. Last access to the node.
                waiter.status.store(.ready, .release);
                if (wake.isFull()) {
                    self.mutex.unlock();
                    wake.wakeAll();
                    self.mutex.lock();
                }
            }
            self.mutex.unlock();
            wake.wakeAll();
        }

        /// With the lock held, by the role holder giving up: hands the role to the oldest
        /// waiter (returns its waker) or returns the cell to `empty`.
        fn abandonLocked(self: *Self) ?Waker {
            assert(self.state.load(.monotonic) & phase_mask == initializing);
            const link = self.waiters.popFront() orelse {
                // No waiter => no waiters bit; only the role holder (us) leaves `initializing`.
                // Release: orders our (discarded) work before the next role holder's.
                self.state.store(empty, .release);
                return null;
            };
            if (self.waiters.isEmpty()) {
                // Monotonic: the bit is an in-word hint only read under this lock or by the
                // publisher's RMW; the phase is untouched (the new role holder publishes).
                _ = self.state.fetchAnd(~waiters_bit, .monotonic);
            }
            const waiter = Waiter.from(link);
            const waker = waiter.takeWaker();
            // Release: the new holder reads it with acquire. Last access to the node.
            waiter.status.store(.take_over, .release);
            return waker;
        }

        fn abandon(self: *Self) void {
            self.mutex.lock();
            const waker = self.abandonLocked();
            self.mutex.unlock();
            if (waker) |w| w.wake();
        }

        pub fn GetOrInit(comptime F: type) type {
            comptime assert(future.OutputOf(F) == T);
            return struct {
                const Op = @This();
                pub const Output = *const T;

                cell: *Self,
                init_future: F,
                phase: Phase = .idle,
                /// Initialised by `enqueueLocked`; meaningful only in phase `waiting`.
                waiter: Waiter = undefined,

                const Phase = enum { idle, waiting, initializing, done };

                pub fn poll(op: *Op, cx: *Context) Poll(*const T) {
                    assert(op.phase != .done);
                    if (!budget.proceed(cx)) return .pending;
                    const result = switch (op.phase) {
                        .idle => op.pollIdle(cx),
                        .waiting => op.pollWaiting(cx),
                        .initializing => op.pollInit(cx),
                        .done => unreachable,
                    };
                    if (result == .pending) budget.refund();
                    return result;
                }

                fn pollIdle(op: *Op, cx: *Context) Poll(*const T) {
                    const cell = op.cell;
                    if (cell.get()) |value| return op.finish(value);
                    // Monotonic: see `set`.
                    if (cell.state.cmpxchgStrong(empty, initializing, .monotonic, .monotonic) == null) {
                        op.phase = .initializing;
                        return op.pollInit(cx);
                    }
                    hook.reached(.once_cell_wait);
                    return op.waitSlow(cx);
                }

                /// Another initializer holds the role: re-check under the lock, then wait.
                noinline fn waitSlow(op: *Op, cx: *Context) Poll(*const T) {
                    const cell = op.cell;
                    cell.mutex.lock();
                    // Acquire: if we read `ready`, we see the value.
                    var state = cell.state.load(.acquire);
                    // Under the lock the word changes only by lock-free RMWs: empty ->
                    // initializing (a new role holder) and initializing -> ready (publish),
                    // so this loop runs at most three times.
                    for (0..3) |_| {
                        switch (state & phase_mask) {
                            ready => {
                                cell.mutex.unlock();
                                return op.finish(&cell.value);
                            },
                            empty => {
                                // The holder gave up with nobody waiting: take the role.
                                state = cell.state.cmpxchgStrong(empty, initializing, .acquire, .acquire) orelse {
                                    cell.mutex.unlock();
                                    op.phase = .initializing;
                                    return op.pollInit(cx);
                                };
                            },
                            initializing => {
                                if (state & waiters_bit == 0) {
                                    // Set the bit in the word the publisher swaps. Acquire on
                                    // failure: we may read `ready`.
                                    state = cell.state.cmpxchgStrong(state, state | waiters_bit, .acquire, .acquire) orelse {
                                        op.enqueueLocked(cx.waker());
                                        cell.mutex.unlock();
                                        return .pending;
                                    };
                                } else {
                                    op.enqueueLocked(cx.waker());
                                    cell.mutex.unlock();
                                    return .pending;
                                }
                            },
                            else => unreachable,
                        }
                    }
                    unreachable;
                }

                fn enqueueLocked(op: *Op, waker: *const Waker) void {
                    // Initialised only now, when it is about to be shared (the lock
                    // publishes it).
                    op.waiter = .{ .waker = waker.clone() };
                    op.cell.waiters.pushBack(&op.waiter.link);
                    op.phase = .waiting;
                }

                fn pollWaiting(op: *Op, cx: *Context) Poll(*const T) {
                    // Acquire: pairs with the release store of publish / abandon.
                    const status = op.waiter.status.load(.acquire);
                    if (status != .waiting) return op.onStatus(status, cx);
                    hook.reached(.once_cell_repoll);
                    const cell = op.cell;
                    cell.mutex.lock();
                    const locked = op.waiter.status.load(.monotonic); // written under this lock
                    if (locked != .waiting) {
                        cell.mutex.unlock();
                        return op.onStatus(locked, cx);
                    }
                    const replaced = WakeList.storeWaker(&op.waiter.waker, cx.waker());
                    cell.mutex.unlock();
                    if (replaced) |stale| stale.drop();
                    return .pending;
                }

                fn onStatus(op: *Op, status: Status, cx: *Context) Poll(*const T) {
                    switch (status) {
                        .ready => return op.finish(&op.cell.value),
                        .take_over => {
                            op.phase = .initializing;
                            return op.pollInit(cx);
                        },
                        .waiting => unreachable,
                    }
                }

                fn pollInit(op: *Op, cx: *Context) Poll(*const T) {
                    assert(op.phase == .initializing);
                    switch (op.init_future.poll(cx)) {
                        .pending => return .pending,
                        .ready => |value| {
                            op.cell.value = value;
                            op.cell.publish();
                            return op.finish(&op.cell.value);
                        },
                    }
                }

                fn finish(op: *Op, value: *const T) Poll(*const T) {
                    op.phase = .done;
                    return .{ .ready = value };
                }

                /// Cancels the owned init future; a pending initializer hands its role to the
                /// oldest waiter; a pending waiter unlinks (or passes on a role it was handed
                /// and never saw). Idempotent.
                pub fn cancel(op: *Op) void {
                    const phase = op.phase;
                    op.phase = .done;
                    future.cancel(&op.init_future);
                    switch (phase) {
                        .idle, .done => {},
                        .initializing => op.cell.abandon(),
                        .waiting => op.cancelWaiting(),
                    }
                }

                fn cancelWaiting(op: *Op) void {
                    const cell = op.cell;
                    var stale: ?Waker = null;
                    var handed: ?Waker = null;
                    cell.mutex.lock();
                    switch (op.waiter.status.load(.monotonic)) {
                        .waiting => {
                            cell.waiters.remove(&op.waiter.link);
                            stale = op.waiter.takeWaker();
                            if (cell.waiters.isEmpty()) {
                                // Monotonic: see abandonLocked. Harmless if the phase is
                                // already `ready` (that word has no waiters bit).
                                _ = cell.state.fetchAnd(~waiters_bit, .monotonic);
                            }
                        },
                        .take_over => handed = cell.abandonLocked(),
                        .ready => {},
                    }
                    cell.mutex.unlock();
                    if (stale) |w| w.drop();
                    if (handed) |w| w.wake();
                }
            };
        }
    };
}

// ---------------------------------------------------------------------------------------
// Tests

const testing = std.testing;

/// An init future for tests: pending until `release`d, counts its polls and cancels.
const TestInit = struct {
    pub const Output = u64;
    value: u64,
    gate: *Gate,
    polls: u32 = 0,
    cancelled: bool = false,

    const Gate = struct {
        open: bool = false,
        waker: ?Waker = null,

        fn release(gate: *Gate) void {
            gate.open = true;
            if (gate.waker) |w| w.wake();
            gate.waker = null;
        }
    };

    pub fn poll(self: *TestInit, cx: *Context) Poll(u64) {
        self.polls += 1;
        if (self.gate.open) return .{ .ready = self.value };
        if (self.gate.waker) |w| w.drop();
        self.gate.waker = cx.waker().clone();
        return .pending;
    }

    pub fn cancel(self: *TestInit) void {
        self.cancelled = true;
    }
};

const Cell = OnceCell(u64);

test "get, set, AlreadySet, initValue" {
    var cell = Cell.init();
    try testing.expectEqual(@as(?*const u64, null), cell.get());
    try cell.set(42);
    try testing.expectEqual(@as(u64, 42), cell.get().?.*);
    try testing.expectError(error.AlreadySet, cell.set(7));
    try testing.expectEqual(@as(u64, 42), cell.get().?.*);
    const preset = Cell.initValue(5);
    try testing.expectEqual(@as(u64, 5), preset.get().?.*);
}

test "getOrInit on a ready cell returns the value without polling init" {
    var cell = Cell.initValue(9);
    var gate = TestInit.Gate{ .open = true };
    var op = cell.getOrInit(TestInit{ .value = 1, .gate = &gate });
    try testing.expectEqual(@as(u64, 9), future.pollOnce(&op).ready.*);
    try testing.expectEqual(@as(u32, 0), op.init_future.polls);
    op.cancel(); // after completion: only cancels the unused init future
}

test "only one initializer runs; waiters get the same pointer" {
    var cell = Cell.init();
    var gate = TestInit.Gate{};
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var first = cell.getOrInit(TestInit{ .value = 1, .gate = &gate });
    var second = cell.getOrInit(TestInit{ .value = 2, .gate = &gate });
    var third = cell.getOrInit(TestInit{ .value = 3, .gate = &gate });
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    try testing.expect(third.poll(&cx) == .pending);
    try testing.expectError(error.AlreadySet, cell.set(4)); // initializing
    gate.release(); // wakes the initializer's task
    const p1 = first.poll(&cx).ready;
    try testing.expectEqual(@as(u64, 1), p1.*);
    try testing.expectEqual(@as(u32, 3), counter.wakeCount()); // gate + two waiters
    try testing.expectEqual(p1, second.poll(&cx).ready);
    try testing.expectEqual(p1, third.poll(&cx).ready);
    try testing.expectEqual(@as(u32, 0), second.init_future.polls);
    try testing.expectEqual(@as(u32, 0), third.init_future.polls);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "a cancelled initializer hands the role to the oldest waiter" {
    var cell = Cell.init();
    var gate1 = TestInit.Gate{};
    var gate2 = TestInit.Gate{ .open = true };
    var gate3 = TestInit.Gate{ .open = true };
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var first = cell.getOrInit(TestInit{ .value = 1, .gate = &gate1 });
    var second = cell.getOrInit(TestInit{ .value = 2, .gate = &gate2 });
    var third = cell.getOrInit(TestInit{ .value = 3, .gate = &gate3 });
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    try testing.expect(third.poll(&cx) == .pending);
    first.cancel();
    first.cancel();
    try testing.expect(first.init_future.cancelled);
    if (gate1.waker) |gw| gw.drop();
    try testing.expectEqual(@as(u32, 1), counter.wakeCount()); // only the new role holder
    try testing.expect(cell.get() == null);
    try testing.expectEqual(@as(u64, 2), second.poll(&cx).ready.*); // ran its own init
    try testing.expectEqual(@as(u32, 0), third.init_future.polls);
    try testing.expectEqual(@as(u64, 2), third.poll(&cx).ready.*);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "a cancelled initializer with no waiter returns the cell to empty" {
    var cell = Cell.init();
    var gate = TestInit.Gate{};
    const w = Waker.noop();
    var cx = Context.init(&w);
    var first = cell.getOrInit(TestInit{ .value = 1, .gate = &gate });
    try testing.expect(first.poll(&cx) == .pending);
    first.cancel();
    try cell.set(8);
    try testing.expectEqual(@as(u64, 8), cell.get().?.*);
}

test "a waiter handed the role and cancelled before seeing it passes it on" {
    var cell = Cell.init();
    var closed = TestInit.Gate{};
    var open = TestInit.Gate{ .open = true };
    const w = Waker.noop();
    var cx = Context.init(&w);
    var first = cell.getOrInit(TestInit{ .value = 1, .gate = &closed });
    var second = cell.getOrInit(TestInit{ .value = 2, .gate = &closed });
    var third = cell.getOrInit(TestInit{ .value = 3, .gate = &open });
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    try testing.expect(third.poll(&cx) == .pending);
    first.cancel(); // role -> second
    second.cancel(); // second never saw it: role -> third
    try testing.expectEqual(@as(u64, 3), third.poll(&cx).ready.*);
    try testing.expectEqual(@as(u32, 0), second.init_future.polls);
}

test "a cancelled waiter unlinks; the initializer still completes the rest" {
    var cell = Cell.init();
    var gate = TestInit.Gate{};
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var first = cell.getOrInit(TestInit{ .value = 1, .gate = &gate });
    var second = cell.getOrInit(TestInit{ .value = 2, .gate = &gate });
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    second.cancel();
    try testing.expectEqual(initializing, cell.state.load(.monotonic)); // bit cleared
    gate.release();
    try testing.expectEqual(@as(u64, 1), first.poll(&cx).ready.*);
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}

test "lost wake-up: set between the failed CAS and the lock" {
    var cell = Cell.init();
    var gate = TestInit.Gate{};
    const w = Waker.noop();
    var cx = Context.init(&w);
    // Hold the role by hand, as a concurrent `set` would between its CAS and its publish.
    try testing.expect(cell.state.cmpxchgStrong(empty, initializing, .monotonic, .monotonic) == null);
    const Publish = struct {
        fn run(c: *Cell) void {
            c.value = 77;
            c.publish();
        }
    };
    hook.arm(.once_cell_wait, &cell, Publish.run);
    defer hook.disarm();
    var op = cell.getOrInit(TestInit{ .value = 1, .gate = &gate });
    try testing.expectEqual(@as(u64, 77), op.poll(&cx).ready.*);
    try testing.expect(hook.fired());
}

test "lost wake-up: the holder gives up between the failed CAS and the lock" {
    var cell = Cell.init();
    var gate = TestInit.Gate{ .open = true };
    const w = Waker.noop();
    var cx = Context.init(&w);
    try testing.expect(cell.state.cmpxchgStrong(empty, initializing, .monotonic, .monotonic) == null);
    const GiveUp = struct {
        fn run(c: *Cell) void {
            c.abandon();
        }
    };
    hook.arm(.once_cell_wait, &cell, GiveUp.run);
    defer hook.disarm();
    var op = cell.getOrInit(TestInit{ .value = 5, .gate = &gate });
    try testing.expectEqual(@as(u64, 5), op.poll(&cx).ready.*); // took the role itself
    try testing.expect(hook.fired());
}

test "lost wake-up: publish between the queued status check and the lock" {
    var cell = Cell.init();
    var gate = TestInit.Gate{};
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();
    var cx = Context.init(&w);
    var first = cell.getOrInit(TestInit{ .value = 1, .gate = &gate });
    var second = cell.getOrInit(TestInit{ .value = 2, .gate = &gate });
    try testing.expect(first.poll(&cx) == .pending);
    try testing.expect(second.poll(&cx) == .pending);
    const Finish = struct {
        fn run(op: *Cell.GetOrInit(TestInit)) void {
            op.init_future.gate.open = true;
            _ = future.pollOnce(op); // publishes and completes `second`
        }
    };
    hook.arm(.once_cell_repoll, &first, Finish.run);
    defer hook.disarm();
    try testing.expectEqual(@as(u64, 1), second.poll(&cx).ready.*);
    try testing.expect(hook.fired());
    if (gate.waker) |gw| gw.drop();
    try testing.expectEqual(@as(i32, 1), counter.outstanding());
}
