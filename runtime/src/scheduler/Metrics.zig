//! Runtime metrics (after Tokio's `RuntimeMetrics`): event counts of the scheduler, per worker,
//! for diagnosing ampere — where its time goes, how many unparks a spawn costs, how often
//! workers steal. They are not a comparison with Tokio: Tokio exposes most of these counts
//! only when built with `--cfg tokio_unstable`, and the benchmarks build it without.
//!
//! ## Counter sets
//!
//! - One `Counters` per worker, written **only by that worker's thread**: an event is a relaxed
//!   load of the counter followed by a relaxed store of the incremented value (`bump`). No
//!   read-modify-write, no shared cache line: each worker's set is aligned to a cache line of
//!   its own. Other threads read them with relaxed loads (`snapshot`), so there is no data
//!   race (ThreadSanitizer sees atomics) and no ordering either: a snapshot taken while
//!   workers run is a consistent count per counter, not across counters.
//! - One `Counters` for events on **every other thread** (`external`): a `blockOn` thread, a
//!   blocking-pool thread, a worker of another runtime, a timer kick from anywhere. Several
//!   threads may write it, so it uses `fetchAdd` (relaxed) — the only shared atomic, and only
//!   on paths that already cross threads (a remote spawn or wake pays for a lock and an unpark
//!   anyway). Which events land here: `inject_pushes` and `unparks_issued` of remote spawns
//!   and wakes, `blocking_spawns` from non-worker threads, and the parks and spins of
//!   `blockOn` threads (`blockon_parks`, `spin_*`).
//!
//! ## Events
//!
//! See `Event`: each tag's comment says exactly when it is counted. Counts, not times, except
//! `spin_ns`. They depend on the workload's shape (how many tasks, who wakes whom) and on the
//! interleaving of threads, not on the speed of the machine — so counts taken on two cores
//! explain costs seen on sixteen.

const std = @import("std");
const assert = std.debug.assert;

/// What is counted. The order is the order of the JSON keys.
pub const Event = enum(u8) {
    /// A task was polled (or cancelled) by this worker.
    polls,
    /// Of `polls`: the task came from the LIFO slot (next-task slot or a LIFO chain).
    lifo_hits,
    /// A suspending or finishing fiber switched straight to the next fiber task — the one in
    /// the LIFO slot (then also a `lifo_hits`) or the head of the local queue (then also a
    /// `queue_handoffs`) — instead of through the worker's stack (`Worker.takeHandoff`, "Direct
    /// hand-off" in fiber/Fiber.zig). Counted as a poll of the task switched to.
    handoffs,
    /// Of `handoffs`: the fiber task switched to was the head of the local queue (the LIFO slot
    /// was empty), not a LIFO poll (`Worker.handoffSuccessor`).
    queue_handoffs,
    /// A fiber polled by this worker finished with nothing queued to hand off to, and was
    /// completed on its own stack, so that the awaiter it woke could be handed off to
    /// (`Worker.takeHandoff`; "Completing on the fiber's stack" in fiber/task.zig).
    early_completions,
    /// A fiber polled by this worker finished with a task it woke in the LIFO slot while other
    /// tasks were queued: that task went to the back of the local queue instead
    /// (`Worker.settleLifoOnFinish`).
    lifo_requeues,
    /// A task woken on this worker was queued locally (LIFO slot or back of the local queue).
    local_schedules,
    /// A task's poll ended because its cooperative budget ran out (it was re-queued).
    budget_yields,
    /// The worker registered itself as parked (it had found no work anywhere).
    parks,
    /// Times the worker came back from its futex or spin (a notification, its timer, or a
    /// spurious wake-up); with `parks` this shows wake-ups that found nothing to do.
    park_wakeups,
    /// The worker left the parked state because another thread notified it.
    unparks_received,
    /// This thread asked `Idle` for a sleeper and unparked one.
    unparks_issued,
    /// The worker became a searcher (started looking in other workers' queues).
    searches,
    /// A steal that took at least one task.
    steals,
    /// Tasks taken by those steals (including the one run at once).
    tasks_stolen,
    /// Steal restraint began: the worker's last `HelpPolicy.restrain_after` helps did not pay.
    restraints,
    /// A restrained searcher slept between two looks at the queues (`HelpPolicy.doze_ns`).
    dozes,
    /// Tasks put into the inject queue (remote spawns and wakes, local-queue overflow).
    inject_pushes,
    /// Tasks taken from the inject queue.
    inject_pops,
    /// Times the local queue was full and half of it moved to the inject queue.
    overflows,
    /// Spinning before parking: spins that ended with a notification.
    spins_woken,
    /// Spins that reached their limit (the thread then slept on its futex).
    spins_timed_out,
    /// Parks that slept at once because another worker held the spinning slot.
    spins_denied,
    /// Parks that slept at once because of the back-off after fruitless spins.
    spins_backed_off,
    /// Nanoseconds from the start to the end of spins before parking (both outcomes): wall
    /// time, so it includes the time other threads ran after the spinner yielded the CPU (it
    /// yields every 32 checks) — on a loaded machine more than the spinner's own CPU time.
    spin_ns,
    /// `blockOn` threads: times they parked waiting for their future (external set only).
    blockon_parks,
    /// `spawnBlocking` calls (hand-offs to the blocking pool).
    blocking_spawns,
};

pub const event_count = @typeInfo(Event).@"enum".fields.len;

/// Plain counts, indexed by `Event`: a snapshot of one counter set, or a sum or difference.
pub const Counts = struct {
    values: [event_count]u64 = @splat(0),

    pub fn get(self: Counts, event: Event) u64 {
        return self.values[@intFromEnum(event)];
    }

    pub fn add(self: Counts, other: Counts) Counts {
        var result = self;
        for (&result.values, other.values) |*value, addend| value.* += addend;
        return result;
    }

    /// `self - earlier`, per counter. `earlier` must be an older snapshot of the same set.
    pub fn minus(self: Counts, earlier: Counts) Counts {
        var result = self;
        for (&result.values, earlier.values) |*value, before| {
            assert(value.* >= before); // Counters only grow.
            value.* -= before;
        }
        return result;
    }

    /// One JSON object, keys in `Event` order: `{"polls":12,...}`.
    pub fn writeJson(self: Counts, out: *std.Io.Writer) std.Io.Writer.Error!void {
        try out.writeByte('{');
        inline for (@typeInfo(Event).@"enum".fields, 0..) |field, index| {
            if (index > 0) try out.writeByte(',');
            try out.print("\"{s}\":{d}", .{ field.name, self.values[field.value] });
        }
        try out.writeByte('}');
    }
};

/// One counter set (see the module comment for who may write it and how).
pub const Counters = struct {
    values: [event_count]std.atomic.Value(u64) align(std.atomic.cache_line) = @splat(.init(0)),

    /// Owner thread only: +1 without a read-modify-write.
    pub inline fn bump(self: *Counters, event: Event) void {
        self.bumpBy(event, 1);
    }

    /// Owner thread only: +`amount` without a read-modify-write.
    pub inline fn bumpBy(self: *Counters, event: Event, amount: u64) void {
        const counter = &self.values[@intFromEnum(event)];
        // Relaxed: a count, read by others only for reporting; the owner is the only writer,
        // so load + store loses nothing.
        counter.store(counter.load(.monotonic) +% amount, .monotonic);
    }

    /// One counter's value (relaxed; exact on the owner's thread).
    pub inline fn get(self: *const Counters, event: Event) u64 {
        return self.values[@intFromEnum(event)].load(.monotonic);
    }

    /// Any thread (the external set): +`amount` with a relaxed read-modify-write.
    pub inline fn addShared(self: *Counters, event: Event, amount: u64) void {
        _ = self.values[@intFromEnum(event)].fetchAdd(amount, .monotonic);
    }

    pub fn snapshot(self: *const Counters) Counts {
        var counts = Counts{};
        for (&counts.values, &self.values) |*value, *counter| value.* = counter.load(.monotonic);
        return counts;
    }
};

/// Where a thread counts its events: its own worker's set (`bump`, owner only) or the external
/// set (`addShared`, any thread).
pub const Recorder = struct {
    counters: *Counters,
    owner: bool,

    pub fn count(self: Recorder, event: Event, amount: u64) void {
        if (self.owner) self.counters.bumpBy(event, amount) else self.counters.addShared(event, amount);
    }
};

/// What `Runtime.metrics()` returns: every worker's counts and the external set.
pub const Snapshot = struct {
    pub const workers_max = 64;

    worker_count: u32,
    per_worker: [workers_max]Counts = @splat(.{}),
    external: Counts = .{},

    pub fn worker(self: *const Snapshot, index: u32) Counts {
        assert(index < self.worker_count);
        return self.per_worker[index];
    }

    pub fn workers(self: *const Snapshot) []const Counts {
        return self.per_worker[0..self.worker_count];
    }

    /// Sum over the workers plus the external set.
    pub fn total(self: *const Snapshot) Counts {
        var sum = self.external;
        for (self.workers()) |counts| sum = sum.add(counts);
        return sum;
    }

    /// What happened between `earlier` and `self` (snapshots of the same runtime).
    pub fn minus(self: *const Snapshot, earlier: *const Snapshot) Snapshot {
        assert(self.worker_count == earlier.worker_count);
        var result = Snapshot{ .worker_count = self.worker_count, .external = self.external.minus(earlier.external) };
        for (result.per_worker[0..self.worker_count], self.workers(), earlier.workers()) |*out, now, before| {
            out.* = now.minus(before);
        }
        return result;
    }

    /// `{"per_worker":[{...},...],"external":{...},"total":{...}}`.
    pub fn writeJson(self: *const Snapshot, out: *std.Io.Writer) std.Io.Writer.Error!void {
        try out.writeByte('{');
        try self.writeJsonFields(out);
        try out.writeByte('}');
    }

    /// The members of `writeJson`'s object without its braces (to embed them in another).
    pub fn writeJsonFields(self: *const Snapshot, out: *std.Io.Writer) std.Io.Writer.Error!void {
        try out.writeAll("\"per_worker\":[");
        for (self.workers(), 0..) |counts, index| {
            if (index > 0) try out.writeByte(',');
            try counts.writeJson(out);
        }
        try out.writeAll("],\"external\":");
        try self.external.writeJson(out);
        try out.writeAll(",\"total\":");
        try self.total().writeJson(out);
    }
};

test "owner bumps and a snapshot difference" {
    var counters = Counters{};
    counters.bump(.polls);
    counters.bumpBy(.tasks_stolen, 5);
    const before = counters.snapshot();
    counters.bump(.polls);
    counters.addShared(.inject_pushes, 2);
    const after = counters.snapshot();
    const delta = after.minus(before);
    try std.testing.expectEqual(@as(u64, 1), delta.get(.polls));
    try std.testing.expectEqual(@as(u64, 0), delta.get(.tasks_stolen));
    try std.testing.expectEqual(@as(u64, 2), delta.get(.inject_pushes));
    try std.testing.expectEqual(@as(u64, 2), after.get(.polls));
}

test "snapshot totals and JSON" {
    var snapshot = Snapshot{ .worker_count = 2 };
    snapshot.per_worker[0].values[@intFromEnum(Event.polls)] = 3;
    snapshot.per_worker[1].values[@intFromEnum(Event.polls)] = 4;
    snapshot.external.values[@intFromEnum(Event.inject_pushes)] = 1;
    const total = snapshot.total();
    try std.testing.expectEqual(@as(u64, 7), total.get(.polls));
    try std.testing.expectEqual(@as(u64, 1), total.get(.inject_pushes));
    var buffer: [4096]u8 = undefined;
    var writer = std.Io.Writer.fixed(&buffer);
    try snapshot.writeJson(&writer);
    const text = writer.buffered();
    try std.testing.expect(std.mem.startsWith(u8, text, "{\"per_worker\":[{\"polls\":3,"));
    try std.testing.expect(std.mem.indexOf(u8, text, "\"total\":{\"polls\":7,") != null);
    // Valid JSON with every event in every object.
    const parsed = try std.json.parseFromSlice(std.json.Value, std.testing.allocator, text, .{});
    defer parsed.deinit();
    try std.testing.expectEqual(@as(usize, event_count), parsed.value.object.get("total").?.object.count());
}
