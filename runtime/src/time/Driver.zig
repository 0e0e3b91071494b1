//! The timer driver: the runtime's timing wheel behind a mutex, plus the protocol that lets a
//! parked worker sleep exactly until the next deadline.
//!
//! ## Time
//!
//! The driver counts ticks of `tick_ns` (2^16 ns = 65.536 µs; `Wheel.zig` says why) since it
//! started (`start_ns`). A deadline is the first tick at or after it (`deadlineTickFor`: rounded
//! up, never early, by less than one tick); the current tick is rounded down (`nowTicks`), so a
//! deadline tick is due only once the deadline itself has passed. Both are a shift, and a tick
//! converts back to nanoseconds exactly: the owner's timed wait (`parkTimeoutNs`) ends at the
//! tick's start to the nanosecond.
//!
//! ## Entries
//!
//! A `TimerEntry` lives inside the future that waits (`Sleep`), so registering never
//! allocates. `waker` and the wheel links are guarded by `mutex`. `fired` is set with release
//! *after* the waker was taken out of the entry, under the mutex; the future reads it with
//! acquire and may complete and be freed as soon as it sees it — so the firing thread never
//! touches the entry after setting `fired`, and wakes the collected wakers after unlocking.
//! Like every primitive, the driver never wakes or drops a waker under its lock (`process`,
//! `updateWaker` and `cancel` take it out under the lock and release it after): a drop may
//! free a task or recycle a parker, and a wake may run scheduler code.
//!
//! ## Who fires timers
//!
//! Workers do, in `process`: before parking, on waking, and every few ticks while busy. One
//! parked worker at a time is the "timer owner" (`owner`): it parks with a timeout until
//! `next_deadline_tick`; the others park without a timeout, so a parked runtime with no timers
//! uses no CPU. When a registration moves `next_deadline_tick` earlier, `kick` (set by the
//! runtime) wakes the owner, or any sleeping worker when there is no owner, so that someone
//! re-arms for the new deadline.
//!
//! Two store-then-load pairings keep a new, earlier deadline from being missed, so every access
//! to `next_deadline_tick`, `owner` and the sleeper set is seq_cst:
//! - the registering thread stores `next_deadline_tick` (under the mutex) and then reads `owner`;
//!   a worker becomes owner with a compare-and-swap on `owner` and then reads
//!   `next_deadline_tick` again before choosing its timeout. Either the registrar sees the owner
//!   (and unparks it) or the owner sees the new deadline.
//! - with no owner, the registrar reads the sleeper set; a parking worker registers as
//!   sleeping and then reads `next_deadline_tick`. Either the registrar unparks a sleeper (which
//!   re-arms), or the worker sees the deadline and tries to become the owner.

const std = @import("std");
const hook = @import("../hook.zig");
const Lock = @import("../Lock.zig");
const assert = std.debug.assert;
const Waker = @import("../Waker.zig");
const Wheel = @import("Wheel.zig");
const clock = @import("clock.zig");

const Driver = @This();

pub const none: u64 = std.math.maxInt(u64);
/// The timer resolution: deadlines are whole ticks (see "Time").
pub const tick_ns: u64 = Wheel.tick_ns;
pub const no_owner: u32 = std.math.maxInt(u32);

pub const TimerEntry = struct {
    node: Wheel.Entry = .{},
    /// Guarded by the driver's mutex.
    waker: ?Waker = null,
    fired: std.atomic.Value(bool) = .init(false),

    fn fromNode(node: *Wheel.Entry) *TimerEntry {
        return @fieldParentPtr("node", node);
    }
};

pub const Kick = struct {
    context: *anyopaque,
    function: *const fn (context: *anyopaque) void,
};

/// Cache-line aligned (so the driver's size is whole lines): the driver is written whenever a
/// timer is registered or fires and must not share a line with the scheduler's read-mostly
/// fields (see `scheduler/Shared.zig`, "Cache lines").
mutex: Lock align(std.atomic.cache_line) = .{},
wheel: Wheel,
start_ns: u64,
next_deadline_tick: std.atomic.Value(u64) = .init(none),
owner: std.atomic.Value(u32) = .init(no_owner),
kick: Kick,
/// Set by `shutdown` (under `mutex`): every registration from then on expires at once.
is_shut_down: bool = false,

pub fn init(kick: Kick) Driver {
    return .{ .wheel = Wheel.init(0), .start_ns = clock.nowNs(), .kick = kick };
}

/// Ticks since the driver started (rounded down).
pub fn nowTicks(self: *const Driver) u64 {
    return (clock.nowNs() -| self.start_ns) >> Wheel.tick_ns_log2;
}

/// The first tick at or after the monotonic time `deadline_ns` (rounded up: never early, and
/// less than one tick late).
pub fn deadlineTickFor(self: *const Driver, deadline_ns: u64) u64 {
    const since_start_ns = deadline_ns -| self.start_ns;
    const tick = std.math.divCeil(u64, since_start_ns, tick_ns) catch unreachable;
    assert(tick <= (std.math.maxInt(u64) >> Wheel.tick_ns_log2) + 1); // Never `none`.
    return tick;
}

/// The monotonic time at which `tick` starts (exact).
pub fn tickStartNs(self: *const Driver, tick: u64) u64 {
    return self.start_ns +| (tick *| tick_ns);
}

pub const Registration = enum { registered, expired };

/// Arms `entry` for `deadline_tick` with a clone of `waker`, unless the deadline has passed.
pub fn register(self: *Driver, entry: *TimerEntry, deadline_tick: u64, waker: *const Waker) Registration {
    assert(!entry.node.linked);
    if (deadline_tick <= self.nowTicks()) return .expired;
    var earlier = false;
    {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (deadline_tick <= self.wheel.elapsed_ticks or self.is_shut_down) return .expired;
        entry.fired.store(false, .monotonic);
        entry.waker = waker.clone();
        self.wheel.insert(&entry.node, deadline_tick);
        if (entry.node.deadline_tick < self.next_deadline_tick.load(.seq_cst)) {
            self.next_deadline_tick.store(entry.node.deadline_tick, .seq_cst);
            earlier = true;
        }
    }
    if (earlier) self.kick.function(self.kick.context);
    return .registered;
}

/// Replaces the stored waker if it would wake someone else. False if the entry already fired.
/// The replaced waker is dropped after unlocking (a drop may free a task or a parker).
pub fn updateWaker(self: *Driver, entry: *TimerEntry, waker: *const Waker) bool {
    const replaced: Waker = blk: {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (entry.fired.load(.monotonic)) return false;
        assert(entry.node.linked);
        const stored = entry.waker.?;
        if (stored.willWakeSame(waker)) return true;
        entry.waker = waker.clone();
        break :blk stored;
    };
    replaced.drop();
    return true;
}

/// Disarms `entry` if it has not fired. Afterwards the driver holds no reference to it; its
/// waker is dropped after unlocking.
pub fn cancel(self: *Driver, entry: *TimerEntry) void {
    const removed: ?Waker = blk: {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (!entry.node.linked) return;
        self.wheel.remove(&entry.node);
        const stored = entry.waker;
        entry.waker = null;
        break :blk stored;
    };
    // `next_deadline_tick` may now be early; the owner wakes, finds nothing and re-arms.
    if (removed) |w| w.drop();
}

/// Fires every entry due at `now_tick`; returns how many fired.
pub fn process(self: *Driver, now_tick: u64) usize {
    var fired_total: usize = 0;
    while (true) {
        var wakers: [Wheel.DueList.capacity_max]Waker = undefined;
        var due = Wheel.DueList{};
        const finished = blk: {
            self.mutex.lock();
            defer self.mutex.unlock();
            const finished = self.wheel.advance(now_tick, &due);
            for (due.slice(), 0..) |node, index| {
                const entry = TimerEntry.fromNode(node);
                wakers[index] = entry.waker.?;
                entry.waker = null;
                // Release: the future may complete (and free the entry) once it sees this.
                entry.fired.store(true, .release);
            }
            self.next_deadline_tick.store(self.wheel.nextDeadline() orelse none, .seq_cst);
            break :blk finished;
        };
        if (due.len > 0) hook.reachedBy(.driver_before_wake, self);
        for (wakers[0..due.len]) |w| w.wake();
        fired_total += due.len;
        if (finished) return fired_total;
    }
}

/// Shutdown: fires every armed timer now and makes every later registration expire at once
/// (Tokio fires its timers with a shutdown error). Called after the workers — the only
/// threads that fire timers — stopped, so that a blocking function waiting on a timer (e.g.
/// `blockOn(sleep(...))`) returns and the blocking pool can be joined.
pub fn shutdown(self: *Driver) void {
    while (true) {
        var wakers: [Wheel.DueList.capacity_max]Waker = undefined;
        var count: usize = 0;
        {
            self.mutex.lock();
            defer self.mutex.unlock();
            self.is_shut_down = true;
            while (count < wakers.len) : (count += 1) {
                const node = self.wheel.popAny() orelse break;
                const entry = TimerEntry.fromNode(node);
                wakers[count] = entry.waker.?;
                entry.waker = null;
                // Release: the future may complete (and free the entry) once it sees this.
                entry.fired.store(true, .release);
            }
            self.next_deadline_tick.store(none, .seq_cst);
        }
        for (wakers[0..count]) |w| w.wake();
        if (count < wakers.len) return;
    }
}

/// Fires due timers if the earliest deadline has passed; cheap when nothing is due.
pub fn processIfDue(self: *Driver) usize {
    const next = self.next_deadline_tick.load(.seq_cst);
    if (next == none) return 0;
    const now = self.nowTicks();
    if (next > now) return 0;
    return self.process(now);
}

/// Whether a timer may be armed (a cancelled one may still count until the next firing pass:
/// the answer errs on the side of "yes"). Seq_cst, like every access to `next_deadline_tick`.
pub fn hasTimers(self: *const Driver) bool {
    return self.next_deadline_tick.load(.seq_cst) != none;
}

/// How long a parked timer owner should sleep, or null for "no timers".
pub fn parkTimeoutNs(self: *const Driver) ?u64 {
    const next = self.next_deadline_tick.load(.seq_cst);
    if (next == none) return null;
    // Exact: the wait ends at the deadline tick's start to the nanosecond, however far.
    return self.tickStartNs(next) -| clock.nowNs();
}

test "register, fire, cancel" {
    const Kicks = struct {
        count: u32 = 0,
        fn kick(context: *anyopaque) void {
            const self: *@This() = @ptrCast(@alignCast(context));
            self.count += 1;
        }
    };
    var kicks = Kicks{};
    var driver = Driver.init(.{ .context = &kicks, .function = Kicks.kick });
    var counter = Waker.Counting{};
    const w = counter.waker();
    defer w.drop();

    var a = TimerEntry{};
    var b = TimerEntry{};
    // Deadlines 5 and 10 ms away (a few ticks would expire if the thread were preempted).
    const a_tick = driver.deadlineTickFor(clock.nowNs() + 5 * std.time.ns_per_ms);
    const b_tick = driver.deadlineTickFor(clock.nowNs() + 10 * std.time.ns_per_ms);
    try std.testing.expectEqual(Registration.expired, driver.register(&a, driver.nowTicks(), &w));
    try std.testing.expectEqual(Registration.registered, driver.register(&a, a_tick, &w));
    try std.testing.expectEqual(Registration.registered, driver.register(&b, b_tick, &w));
    try std.testing.expectEqual(@as(u32, 1), kicks.count); // Only the earlier deadline kicks.
    try std.testing.expect(driver.parkTimeoutNs() != null);
    driver.cancel(&b);
    try std.testing.expectEqual(@as(usize, 0), driver.process(a_tick - 1));
    try std.testing.expectEqual(@as(usize, 1), driver.process(a_tick));
    try std.testing.expect(a.fired.load(.acquire));
    try std.testing.expect(!b.fired.load(.acquire));
    try std.testing.expectEqual(@as(u32, 1), counter.wakeCount());
    try std.testing.expect(!driver.updateWaker(&a, &w));
    try std.testing.expectEqual(@as(i32, 1), counter.outstanding());
    try std.testing.expectEqual(none, driver.next_deadline_tick.load(.seq_cst));
}

test "process fires timers in deadline order as time advances" {
    const ampere_testing = @import("../testing.zig");
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("driver fires in order", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const Noop = struct {
        fn kick(context: *anyopaque) void {
            _ = context;
        }
    };
    var driver = Driver.init(.{ .context = undefined, .function = Noop.kick });
    const w = Waker.noop();
    var entries: [300]TimerEntry = @splat(.{});
    // A second away: registering must not find the first deadlines passed.
    const base = driver.deadlineTickFor(clock.nowNs() + std.time.ns_per_s);
    for (&entries) |*e| try std.testing.expectEqual(Registration.registered, driver.register(e, base + prng.random().uintLessThan(u64, 5_000), &w));
    var last_fired_deadline: u64 = 0;
    var fired: usize = 0;
    var now = base;
    while (fired < entries.len) : (now += 1 + prng.random().uintLessThan(u64, 3)) {
        const before = fired;
        fired += driver.process(now);
        for (&entries) |*e| {
            if (e.fired.load(.acquire) and e.node.deadline_tick > last_fired_deadline and e.node.deadline_tick <= now) {
                try std.testing.expect(e.node.deadline_tick > now -| 3); // Fired in the step it became due.
            }
        }
        if (fired > before) last_fired_deadline = now;
        for (&entries) |*e| if (!e.fired.load(.acquire)) try std.testing.expect(e.node.deadline_tick > now);
    }
}

/// A waker that records whether it was dropped or woken while the driver's lock was held.
const LockProbe = struct {
    driver: *Driver,
    refs: i32 = 0,
    released: u32 = 0,
    released_under_lock: u32 = 0,

    fn waker(self: *LockProbe) Waker {
        self.refs += 1;
        return .{ .data = self, .vtable = &probe_vtable };
    }

    const probe_vtable = Waker.VTable{ .clone = clone, .wake = release, .wake_by_ref = wakeByRef, .drop = release };

    fn from(data: ?*anyopaque) *LockProbe {
        return @ptrCast(@alignCast(data.?));
    }

    fn clone(data: ?*anyopaque) ?*anyopaque {
        return from(data).waker().data;
    }

    fn wakeByRef(data: ?*anyopaque) void {
        from(data).check();
    }

    fn release(data: ?*anyopaque) void {
        const self = from(data);
        self.check();
        self.refs -= 1;
    }

    /// Single-threaded test: the lock is busy only if the driver holds it around this call.
    fn check(self: *LockProbe) void {
        self.released += 1;
        if (self.driver.mutex.tryLock()) self.driver.mutex.unlock() else self.released_under_lock += 1;
    }
};

test "wakers are dropped and woken outside the driver's lock" {
    const Noop = struct {
        fn kick(context: *anyopaque) void {
            _ = context;
        }
    };
    var driver = Driver.init(.{ .context = undefined, .function = Noop.kick });
    var first = LockProbe{ .driver = &driver };
    var second = LockProbe{ .driver = &driver };
    const first_waker = first.waker();
    defer first_waker.drop();
    const second_waker = second.waker();
    defer second_waker.drop();
    const deadline_tick = driver.deadlineTickFor(clock.nowNs() + 10 * std.time.ns_per_ms);

    var entry = TimerEntry{};
    try std.testing.expectEqual(Registration.registered, driver.register(&entry, deadline_tick, &first_waker));
    try std.testing.expect(driver.updateWaker(&entry, &second_waker)); // Drops first's clone.
    driver.cancel(&entry); // Drops second's clone.
    try std.testing.expectEqual(Registration.registered, driver.register(&entry, deadline_tick, &first_waker));
    try std.testing.expectEqual(@as(usize, 1), driver.process(deadline_tick)); // Wakes first's clone.

    try std.testing.expectEqual(@as(u32, 2), first.released);
    try std.testing.expectEqual(@as(u32, 1), second.released);
    try std.testing.expectEqual(@as(u32, 0), first.released_under_lock + second.released_under_lock);
    try std.testing.expectEqual(@as(i32, 1), first.refs); // Only the test's own wakers remain.
    try std.testing.expectEqual(@as(i32, 1), second.refs);
}

test "a deadline rounds up to its tick by less than one tick, and the owner's wait ends on it" {
    const ampere_testing = @import("../testing.zig");
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("driver tick rounding", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const random = prng.random();
    const Noop = struct {
        fn kick(context: *anyopaque) void {
            _ = context;
        }
    };
    var driver = Driver.init(.{ .context = undefined, .function = Noop.kick });
    const w = Waker.noop();
    // On a tick, just after one, just before one, and anywhere, from 1 µs to a year away.
    for (0..1000) |index| {
        const offset_ns = switch (index % 4) {
            0 => random.uintLessThan(u64, 1 << 20) * tick_ns,
            1 => random.uintLessThan(u64, 1 << 20) * tick_ns + 1,
            2 => (1 + random.uintLessThan(u64, 1 << 20)) * tick_ns - 1,
            else => std.time.ns_per_us + random.uintLessThan(u64, 365 * std.time.ns_per_day),
        };
        const deadline_ns = driver.start_ns + offset_ns;
        const tick = driver.deadlineTickFor(deadline_ns);
        try std.testing.expect(driver.tickStartNs(tick) >= deadline_ns);
        try std.testing.expect(driver.tickStartNs(tick) < deadline_ns + tick_ns);
        try std.testing.expectEqual(tick * tick_ns, driver.tickStartNs(tick) - driver.start_ns);
    }
    // The current tick is rounded down: a deadline's tick is never due before the deadline.
    const before_ns = clock.nowNs();
    const now_tick = driver.nowTicks();
    try std.testing.expect(driver.tickStartNs(now_tick) <= clock.nowNs());
    try std.testing.expect(driver.tickStartNs(now_tick + 1) > before_ns);

    // The owner's timeout ends at the tick's start to the nanosecond (not a millisecond later).
    var entry = TimerEntry{};
    const deadline_tick = driver.deadlineTickFor(clock.nowNs() + 20 * std.time.ns_per_ms + 12_345);
    try std.testing.expectEqual(Registration.registered, driver.register(&entry, deadline_tick, &w));
    const read_before_ns = clock.nowNs();
    const timeout_ns = driver.parkTimeoutNs().?;
    const read_after_ns = clock.nowNs();
    const end_ns = driver.tickStartNs(deadline_tick);
    try std.testing.expect(read_before_ns + timeout_ns <= end_ns and end_ns <= read_after_ns + timeout_ns);
    driver.cancel(&entry);
}
