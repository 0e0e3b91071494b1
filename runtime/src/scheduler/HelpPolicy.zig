//! Steal restraint: whether a worker that has run out of work takes work from the others
//! eagerly (Tokio's rules), or only from a worker that is stuck — decided by whether its
//! recent takes paid.
//!
//! Moving a task to another worker pays when the task is worth moving: it runs long, or it is
//! heavy per poll, or it brings its partners along (tasks that wake each other move whole). It
//! does not pay when every task on the busy worker funnels through one lock or channel. A
//! 2-worker pool of 1,000 consumers on one queue ran 3x slower with stealing (io_fan_out:
//! 190-230 ns/op, against 65 when one worker keeps the pool): each stolen consumer ran once,
//! for a fraction of a microsecond, and its next wake-up came from the producer's worker and
//! took it back, so the channel's lines and the tasks' headers bounced between the CPUs, and
//! the thief was back for more within microseconds, 85 times an iteration. Whether the two
//! modes occurred was up to the operating system (the row was bimodal across runs). Nothing in
//! a queue says which kind of work it holds, so each worker judges its own takes by what
//! followed them, as `SpinPolicy` judges a spin:
//!
//! 1. A **help** is a take of work — a steal, or a batch from the inject queue — by a worker
//!    that ran out of local work while another worker is running (a take when nobody runs moves
//!    nothing away from anyone: a remote wake-up, a blocking-pool reply). It lasts until the
//!    worker runs out of local work again. It **paid** if it ran at least `long_help_ns` and
//!    at least `long_help_task_ns` per task it took, or at least `heavy_poll_ns` per poll on
//!    average (system calls, real computation: moving the task costs little beside it), or
//!    made at least `sustained_polls` polls per task taken and `sustained_polls_min` more than
//!    it took (the stolen tasks kept each other busy here: independent ping-pong pairs move
//!    whole to the thief). The length alone does not make a help pay: a batch of 128 tasks
//!    from the inject queue runs 20 µs at 160 ns per task, which is what each task's move
//!    costs (its header, its stack, the lines of whatever it touches). Before the per-task
//!    bound, the helper of a 2-worker fan-in (1,000 producers, one consumer, one queue) took
//!    a batch of producers that had spilled from the spawner's queue, ran each once into the
//!    queue's lock for ~200 ns, and was judged paid: never restrained, it kept half the
//!    producers bouncing between the CPUs (io_fan_in under ampere.io: 290-330 ns/op against
//!    ~210 with the bound; task_spawn_batch, native, 87 -> 69).
//! 2. `restrain_after` helps in a row that did not pay **restrain** the worker for
//!    `restraint_ns`, which starts at `restraint_min_ns` and doubles with every restraint up to
//!    `restraint_max_ns`. When a restraint ends the worker is eager again — that is how it
//!    notices a workload that changed — but on probation: its next help that does not pay
//!    restrains it again at once. A help that pays ends the probation and resets the length.
//!    (Without the probation a 0.5 ms restraint ran out inside a 2 ms benchmark invocation and
//!    8 more unpaid helps, with their thrash, came before the next one.)
//! 3. A restrained worker takes nothing that is moving (`Worker.stealWork`). It looks at the
//!    other queues and at the inject queue, dozes (`doze_ns`, still counted as searching, so
//!    that pushes wake nobody for work it has seen), and looks again. It takes from a queue
//!    only if its owner took no task between the two looks (stuck in one long poll: the
//!    liveness rule), and from the inject queue only if nobody took from it between the two
//!    looks or no other worker is running. A worker that goes to sleep when nobody else runs
//!    ends the dozes at once (`Shared.kickDozers`): dozing only makes sense beside a runner.
//!
//! So an eager worker behaves as before; a restraint costs parallelism forgone for at most
//! `restraint_ns` on work whose takes did not pay, and a wake-up per doze (the 2-worker
//! fan-out: 62-68 ns/op with ~10% more CPU than one worker alone). A runnable task still never
//! waits for a long poll while a worker sleeps: a stuck queue is taken within two dozes.
//!
//! Owned by the worker's thread: plain fields, no atomics (kept in `Shared.Remote`, not in
//! `Worker`, whose hot fields the 300 bytes pushed apart). The clock is read when a help starts
//! and when it ends, and by a search only while a restraint is in force.

const std = @import("std");
const assert = std.debug.assert;

const HelpPolicy = @This();
const StealRestraint = @import("../Options.zig").StealRestraint;
const Idle = @import("Idle.zig");
const clock = @import("../time/clock.zig");

/// A help that ran this long paid, if it also ran `long_help_task_ns` per task it took.
pub const long_help_ns: u64 = 20 * std.time.ns_per_us;
/// What a long help must have run per task it took to pay: about what moving a task costs.
pub const long_help_task_ns: u64 = 500;
/// A help whose polls took this long on average paid (heavy tasks are worth moving).
pub const heavy_poll_ns: u64 = 1 * std.time.ns_per_us;
/// A help with this many polls per task taken, and at least `sustained_polls_min` polls more
/// than it took, paid (the stolen work sustained itself; one stolen producer that wakes its
/// consumer here once does not).
pub const sustained_polls: u64 = 2;
pub const sustained_polls_min: u64 = 16;
/// Helps in a row that did not pay before the worker is restrained.
pub const restrain_after: u32 = 8;
/// The first restraint's length, and the longest.
pub const restraint_min_ns: u64 = 500 * std.time.ns_per_us;
pub const restraint_max_ns: u64 = 64 * std.time.ns_per_ms;
/// How long a restrained worker sleeps between two looks at the queues.
pub const doze_ns: u64 = 50 * std.time.ns_per_us;

/// `Options.steal_restraint`: `.off` never restrains and `.always` always does (neither tracks
/// helps); `.adaptive` as above.
mode: StealRestraint = .adaptive,
/// The help in progress: when it started (0: none), the worker's poll count then, and how many
/// tasks it took.
help_start_ns: u64 = 0,
help_start_polls: u64 = 0,
help_taken: u64 = 0,
/// Helps in a row that did not pay.
unpaid: u32 = 0,
/// A restraint ended and no help has paid since: the next one that does not pay restrains
/// again at once (for twice as long).
probation: bool = false,
/// Restrained until this time (0: not restrained).
restrained_until_ns: u64 = 0,
/// The length of the next restraint.
restraint_ns: u64 = restraint_min_ns,
/// The restrained search's previous look (`Worker.stealWork`): bit i of `seen_valid` set when
/// `seen_taken[i]` holds worker i's `LocalQueue.takenCount`; the inject queue's `poppedCount`
/// when `seen_inject_valid`. Whether the last search wants a doze before the next look.
seen_valid: u64 = 0,
seen_taken: [Idle.workers_max]u32 = undefined,
seen_inject_popped: u64 = 0,
seen_inject_valid: bool = false,
doze_wanted: bool = false,

pub fn init(mode: StealRestraint) HelpPolicy {
    return .{ .mode = mode };
}

/// Whether helps are judged (only `.adaptive` tracks them).
pub fn tracking(self: *const HelpPolicy) bool {
    return self.mode == .adaptive;
}

/// Whether a help that ran `ran_ns` with `polls` polls, after taking `taken` tasks, paid.
pub fn paid(ran_ns: u64, polls: u64, taken: u64) bool {
    assert(taken > 0);
    if (ran_ns >= long_help_ns and ran_ns >= taken * long_help_task_ns) return true;
    if (polls > 0 and ran_ns >= polls * heavy_poll_ns) return true;
    return polls >= sustained_polls * taken and polls >= taken + sustained_polls_min;
}

/// The worker took `taken` tasks while searching (a steal, or from the inject queue); `polls`
/// is its poll count before it runs them.
pub fn beginHelp(self: *HelpPolicy, now_ns: u64, polls: u64, taken: u64) void {
    assert(taken > 0);
    if (!self.tracking()) return;
    assert(self.help_start_ns == 0); // The previous help ended when the worker ran out.
    self.help_start_ns = @max(now_ns, 1);
    self.help_start_polls = polls;
    self.help_taken = taken;
}

/// Whether a help is in progress (the worker has not run out of work since it took).
pub fn helping(self: *const HelpPolicy) bool {
    return self.help_start_ns != 0;
}

/// What ending a help did.
pub const Outcome = enum { paid, unpaid, restrained };

/// The worker ran out of work: judges the help in progress. `.restrained` when it was the
/// `restrain_after`-th unpaid help in a row (the restraint starts now).
pub fn endHelp(self: *HelpPolicy, now_ns: u64, polls: u64) Outcome {
    assert(self.helping());
    assert(polls >= self.help_start_polls);
    const ran_ns = now_ns -| self.help_start_ns;
    const outcome_paid = paid(ran_ns, polls - self.help_start_polls, self.help_taken);
    self.help_start_ns = 0;
    if (outcome_paid) {
        self.unpaid = 0;
        self.probation = false;
        self.restraint_ns = restraint_min_ns;
        return .paid;
    }
    self.unpaid += 1;
    if (self.unpaid < restrain_after and !self.probation) return .unpaid;
    self.unpaid = 0;
    self.probation = true;
    self.restrained_until_ns = now_ns +| self.restraint_ns;
    self.restraint_ns = @min(2 * self.restraint_ns, restraint_max_ns);
    assert(self.restraint_ns <= restraint_max_ns);
    return .restrained;
}

/// Whether a search starting at `now_ns` is restrained (call only when `mayBeRestrained`).
pub fn restrainedAt(self: *HelpPolicy, now_ns: u64) bool {
    if (self.mode == .always) return true;
    if (self.restrained_until_ns == 0) return false;
    if (now_ns < self.restrained_until_ns) return true;
    self.restrained_until_ns = 0; // Over: eager again.
    return false;
}

/// Whether a restraint may be in force (then `restrainedAt` needs the clock): no clock read on
/// the eager path.
pub fn mayBeRestrained(self: *const HelpPolicy) bool {
    return self.restrained_until_ns != 0 or self.mode == .always;
}

/// `restrainedAt` now; the clock is read only when a restraint may be in force.
pub fn restrainedNow(self: *HelpPolicy) bool {
    return self.mayBeRestrained() and self.restrainedAt(clock.nowNs());
}

const testing = std.testing;
const us = std.time.ns_per_us;
const ms = std.time.ns_per_ms;

test "what pays: long, heavy per poll, or self-sustaining" {
    try testing.expect(paid(long_help_ns, 30, 10)); // Long: 2 us per task taken.
    try testing.expect(paid(long_help_ns, 1000, 100)); // Sustained.
    try testing.expect(paid(10 * us, 8, 8)); // 1.25 us per poll.
    try testing.expect(paid(5 * us, 200, 100)); // Two polls per task taken.
    try testing.expect(!paid(5 * us, 100, 100)); // One short poll per stolen task.
    try testing.expect(!paid(long_help_ns - 1, 199, 100)); // Just short of all three.
    try testing.expect(!paid(1 * us, 2, 1)); // A stolen producer that woke its consumer here.
    try testing.expect(!paid(0, 0, 1)); // Taken, then nothing polled.
    // Long, but a batch of short tasks, each polled about once: 195 ns per task taken (the
    // helper of a fan-in: 128 producers that each ran into the queue's lock once).
    try testing.expect(!paid(25 * us, 140, 128));
    try testing.expect(paid(128 * long_help_task_ns, 140, 128)); // The same batch at 500 ns a task.
}

test "unpaid helps in a row restrain, for a doubling time; one that pays resets" {
    var policy = HelpPolicy.init(.adaptive);
    var now: u64 = 1 * ms;
    for (0..restrain_after - 1) |_| {
        policy.beginHelp(now, 0, 10);
        try testing.expectEqual(Outcome.unpaid, policy.endHelp(now + 2 * us, 10));
    }
    try testing.expect(!policy.mayBeRestrained());
    policy.beginHelp(now, 10, 10);
    try testing.expectEqual(Outcome.restrained, policy.endHelp(now + 2 * us, 20));
    try testing.expect(policy.restrainedAt(now + restraint_min_ns));
    try testing.expect(!policy.restrainedAt(now + 2 * us + restraint_min_ns)); // Over.
    try testing.expect(!policy.mayBeRestrained());
    // On probation: the next unpaid help restrains at once, for twice as long.
    now = 10 * ms;
    policy.beginHelp(now, 0, 10);
    try testing.expectEqual(Outcome.restrained, policy.endHelp(now, 10));
    try testing.expect(policy.restrainedAt(now + 2 * restraint_min_ns - 1));
    try testing.expect(!policy.restrainedAt(now + 2 * restraint_min_ns));
    // A help that pays forgets both the count and the doubling.
    policy.beginHelp(now, 0, 10);
    _ = policy.endHelp(now, 10);
    policy.beginHelp(now, 0, 10);
    try testing.expectEqual(Outcome.paid, policy.endHelp(now + long_help_ns, 10));
    try testing.expectEqual(@as(u32, 0), policy.unpaid);
    try testing.expectEqual(restraint_min_ns, policy.restraint_ns);
    try testing.expect(!policy.probation); // Off probation: restrain_after unpaid helps again.
    policy.beginHelp(now, 0, 10);
    try testing.expectEqual(Outcome.unpaid, policy.endHelp(now, 10));
}

test "the restraint doubles up to its bound" {
    var policy = HelpPolicy.init(.adaptive);
    for (0..20) |_| {
        for (0..restrain_after) |_| {
            policy.beginHelp(1, 0, 1);
            _ = policy.endHelp(1, 1);
        }
    }
    try testing.expectEqual(restraint_max_ns, policy.restraint_ns);
    try testing.expect(policy.restrainedAt(restraint_max_ns));
}

test "off never restrains and always always does; neither tracks helps" {
    var off = HelpPolicy.init(.off);
    off.beginHelp(1, 0, 1);
    try testing.expect(!off.helping());
    try testing.expect(!off.mayBeRestrained());
    var always = HelpPolicy.init(.always);
    always.beginHelp(1, 0, 1);
    try testing.expect(!always.helping());
    try testing.expect(always.mayBeRestrained() and always.restrainedAt(0));
}
