//! Whether a thread that has run out of work spins before it sleeps, and for how long.
//!
//! Spinning turns a wake-up that comes within microseconds into a memory write instead of a
//! futex wake (tens of microseconds on a virtual machine whose vCPU halted). It costs the CPU
//! of the spin, and on many cores it costs more: a worker that wakes within a microsecond
//! steals tasks that the busy worker would have run from its own cache, and every idle
//! worker that spins is one more that comes back to search the same queues. So a thread
//! spins only where a wake-up is expected soon, decided per park:
//!
//! 1. **Bounded.** Never longer than `Options.spin_before_park_ns` (`bound_ns`); 0 turns
//!    spinning off everywhere (the `ampere.nospin` variant).
//! 2. **At most one spinning worker** (Go's scheduler rule). A worker about to park spins
//!    only if it can claim the runtime's spinning slot (`Idle.tryStartSpinning`); the others
//!    sleep at once. `Idle.workerToNotify` wakes the spinning worker first, so the one wake-up
//!    that is cheap is the one used, and the next worker to help pays the futex wake-up (as
//!    in Tokio), which spreads a burst of small tasks over fewer, longer-running workers.
//! 3. **Expected wake-ups spin regardless of the slot.** A worker whose task just handed a
//!    function to the blocking pool (`expectWakeup`) will be woken when the function returns;
//!    a `blockOn` thread waits for the reply to work it started. Both spin even while another
//!    worker holds the slot.
//! 4. **Backed off when spinning does not pay.** A spin pays when it ends with a notification
//!    *and* the thread then has something to run (`confirm`: a worker gets a task, a `blockOn`
//!    thread polls its future). A spin that ends without a notification (the wake-up came
//!    later than the bound, or never), or with one after which the thread parks again having
//!    run nothing (the announced task was taken by the worker that queued it, or stolen by
//!    another), doubles the number of following parks that sleep at once — 1, 3, 7, ... up to
//!    `skip_max`; a spin that pays resets it. A thread whose wake-ups come late or bring
//!    nothing thus spins on about one park in 64, and one whose wake-ups bring work soon
//!    spins on every park. (Counting a bare notification as success let a worker beside a
//!    serial chain — a contended lock's hand-offs — cycle notify, spin, find nothing, park
//!    every ~400 ns: 2x the CPU of the work itself at 2 workers.)
//!
//! The policy state is owned by the parking thread (plain fields, no atomics); the spinning
//! slot is in `Idle` (shared). Outcomes are counted in the thread's metrics recorder
//! (`spins_woken`, `spins_timed_out`, `spin_ns`).

const std = @import("std");
const assert = std.debug.assert;
const Parker = @import("../Parker.zig");
const clock = @import("../time/clock.zig");
const Metrics = @import("Metrics.zig");

const SpinPolicy = @This();

/// Longest run of parks without spinning after repeated fruitless spins (2^6 - 1).
pub const skip_max: u32 = 63;

/// Upper bound of one spin (0 = never spin).
bound_ns: u64,
/// Parks left that sleep at once (the back-off after a fruitless spin).
skip: u32 = 0,
/// Length of the next back-off: 1, 3, 7, ... `skip_max` parks.
backoff: u32 = 0,
/// Set by `expectWakeup`, consumed by the next park.
wakeup_expected: bool = false,
/// A spin ended with a notification and the thread has not confirmed since (`confirm`) that
/// the wake-up brought it something to do. The next `plan` still finding it set counts the
/// spin as fruitless.
unconfirmed: bool = false,

pub fn init(bound_ns: u64) SpinPolicy {
    return .{ .bound_ns = bound_ns };
}

/// The thread's next park waits for a wake-up it caused itself (e.g. a blocking-pool
/// hand-off): spin for it even if another worker holds the spinning slot.
pub fn expectWakeup(self: *SpinPolicy) void {
    self.wakeup_expected = true;
}

/// What the next park should do.
pub const Plan = struct {
    /// 0: sleep at once.
    spin_ns: u64,
    /// True when the spin needs the runtime's single spinning slot (no wake-up is expected).
    needs_slot: bool,
    /// True when spinning was skipped by the back-off (for the `spins_backed_off` count).
    backed_off: bool = false,
};

/// Decides the next park (call once per park; it consumes a back-off step and an expected
/// wake-up).
pub fn plan(self: *SpinPolicy) Plan {
    const expected = self.wakeup_expected;
    self.wakeup_expected = false;
    if (self.unconfirmed) {
        // Woken during the last spin, but parking again with nothing done in between: the
        // notification announced work that somebody else ran first.
        self.unconfirmed = false;
        self.backOff();
    }
    if (self.bound_ns == 0) return .{ .spin_ns = 0, .needs_slot = false };
    if (self.skip > 0) {
        self.skip -= 1;
        return .{ .spin_ns = 0, .needs_slot = false, .backed_off = true };
    }
    return .{ .spin_ns = self.bound_ns, .needs_slot = !expected };
}

/// Records how a spin ended. A timeout backs off at once; a notification is judged by what
/// follows: `confirm` (the thread ran something) resets the back-off, a park without it backs
/// off (see `plan`).
pub fn observe(self: *SpinPolicy, woken: bool) void {
    assert(self.skip == 0); // Only a park that spun reports.
    assert(!self.unconfirmed); // `plan` judged the previous one.
    if (woken) {
        self.unconfirmed = true;
    } else {
        self.backOff();
    }
}

/// The thread woke up to work (a worker got a task to run, a `blockOn` thread polled its
/// future): the spin that preceded paid for itself. Cheap enough for every task.
pub inline fn confirm(self: *SpinPolicy) void {
    if (!self.unconfirmed) return;
    self.unconfirmed = false;
    self.backoff = 0;
}

fn backOff(self: *SpinPolicy) void {
    self.backoff = @min(2 * self.backoff + 1, skip_max);
    self.skip = self.backoff;
    assert(self.backoff <= skip_max);
}

/// Spins up to `spin_ns` for a notification of `parker`; counts the outcome. True if one came.
pub fn spin(self: *SpinPolicy, parker: *Parker, spin_ns: u64, recorder: Metrics.Recorder) bool {
    assert(spin_ns > 0 and spin_ns <= self.bound_ns);
    const start_ns = clock.nowNs();
    const woken = parker.spinForNotification(spin_ns);
    recorder.count(.spin_ns, clock.nowNs() -| start_ns);
    recorder.count(if (woken) .spins_woken else .spins_timed_out, 1);
    self.observe(woken);
    return woken;
}

/// `spin` for the driver owner: also turns the I/O driver without blocking while it spins
/// (`Parker.spinForNotificationOrIo`); dispatched events end the spin like a notification.
pub fn spinIo(self: *SpinPolicy, parker: *Parker, spin_ns: u64, recorder: Metrics.Recorder) bool {
    assert(spin_ns > 0 and spin_ns <= self.bound_ns);
    const start_ns = clock.nowNs();
    const woken = parker.spinForNotificationOrIo(spin_ns);
    recorder.count(.spin_ns, clock.nowNs() -| start_ns);
    recorder.count(if (woken) .spins_woken else .spins_timed_out, 1);
    self.observe(woken);
    return woken;
}

/// Spins per `spin_ns` (0: not at all), then sleeps on `parker` until it is unparked.
pub fn park(self: *SpinPolicy, parker: *Parker, spin_ns: u64, recorder: Metrics.Recorder) void {
    if (spin_ns > 0 and self.spin(parker, spin_ns, recorder)) return;
    parker.park();
}

/// `park` with a timeout (the spin counts towards it). True when unparked, false on timeout.
pub fn parkTimeout(self: *SpinPolicy, parker: *Parker, timeout_ns: u64, spin_ns: u64, recorder: Metrics.Recorder) bool {
    assert(timeout_ns > 0);
    const spin_part_ns = @min(spin_ns, timeout_ns);
    if (spin_part_ns > 0 and self.spin(parker, spin_part_ns, recorder)) return true;
    if (timeout_ns == spin_part_ns) return false;
    return parker.parkTimeout(timeout_ns - spin_part_ns);
}

test "off means never, and a fruitless spin backs off exponentially" {
    var off = SpinPolicy.init(0);
    try std.testing.expectEqual(@as(u64, 0), off.plan().spin_ns);

    var policy = SpinPolicy.init(1000);
    try std.testing.expectEqual(Plan{ .spin_ns = 1000, .needs_slot = true }, policy.plan());
    policy.observe(false); // Skip 1.
    try std.testing.expectEqual(Plan{ .spin_ns = 0, .needs_slot = false, .backed_off = true }, policy.plan());
    try std.testing.expectEqual(@as(u64, 1000), policy.plan().spin_ns);
    policy.observe(false); // Skip 3.
    var skipped: u32 = 0;
    while (policy.plan().spin_ns == 0) skipped += 1;
    try std.testing.expectEqual(@as(u32, 3), skipped);
    policy.observe(true); // A wake-up during the spin that brought work: spin on every park again.
    policy.confirm();
    try std.testing.expectEqual(@as(u64, 1000), policy.plan().spin_ns);
    for (0..20) |_| {
        while (policy.plan().spin_ns == 0) {}
        policy.observe(false);
    }
    try std.testing.expectEqual(skip_max, policy.skip);
}

test "a wake-up that brought nothing to do backs off like a timeout" {
    var policy = SpinPolicy.init(1000);
    try std.testing.expectEqual(@as(u64, 1000), policy.plan().spin_ns);
    policy.observe(true); // Notified...
    // ...but parking again without `confirm`: somebody else ran the announced work.
    try std.testing.expectEqual(Plan{ .spin_ns = 0, .needs_slot = false, .backed_off = true }, policy.plan());
    try std.testing.expectEqual(@as(u64, 1000), policy.plan().spin_ns);
    policy.observe(true);
    var skipped: u32 = 0;
    while (policy.plan().spin_ns == 0) skipped += 1;
    try std.testing.expectEqual(@as(u32, 3), skipped); // Doubled, as after two timeouts.
    policy.observe(true);
    policy.confirm(); // This time the wake-up brought work: the back-off is forgotten.
    try std.testing.expectEqual(@as(u64, 1000), policy.plan().spin_ns);
    policy.observe(false);
    try std.testing.expectEqual(@as(u32, 1), policy.skip);
    policy.confirm(); // Running work after a timed-out spin changes nothing.
    try std.testing.expectEqual(@as(u32, 1), policy.skip);
}

test "an expected wake-up spins without the slot, once" {
    var policy = SpinPolicy.init(1000);
    policy.expectWakeup();
    try std.testing.expectEqual(Plan{ .spin_ns = 1000, .needs_slot = false }, policy.plan());
    try std.testing.expectEqual(Plan{ .spin_ns = 1000, .needs_slot = true }, policy.plan());
}

test "spin counts a notification and a timeout" {
    var counters = Metrics.Counters{};
    const recorder = Metrics.Recorder{ .counters = &counters, .owner = true };
    var parker = Parker{};
    var policy = SpinPolicy.init(200 * std.time.ns_per_us);
    parker.unpark();
    try std.testing.expect(policy.spin(&parker, policy.bound_ns, recorder));
    policy.confirm();
    try std.testing.expect(!policy.parkTimeout(&parker, 1 * std.time.ns_per_ms, policy.plan().spin_ns, recorder));
    const counts = counters.snapshot();
    try std.testing.expectEqual(@as(u64, 1), counts.get(.spins_woken));
    try std.testing.expectEqual(@as(u64, 1), counts.get(.spins_timed_out));
    try std.testing.expect(counts.get(.spin_ns) >= 200 * std.time.ns_per_us);
}
