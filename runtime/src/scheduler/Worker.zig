//! One worker thread of the multi-threaded scheduler (Tokio's `multi_thread::worker`).
//!
//! A worker owns a 256-slot `LocalQueue` and a LIFO slot. Its loop:
//!
//! 1. Every `global_queue_interval` ticks take from the inject queue first, so tasks woken
//!    from outside cannot starve behind a busy local queue; otherwise take the LIFO slot, then
//!    the local queue, then a batch from the inject queue.
//! 2. Nothing local: become a searcher (at most half the workers) and steal half of a random
//!    victim's queue, then try the inject queue.
//! 3. Nothing anywhere: park (futex) until notified, or until the next timer deadline if it
//!    is the timer owner.
//!
//! Tasks woken on this worker's thread go to the LIFO slot (the most recently woken task
//! runs next: message-passing pairs stay hot in cache), the previous occupant to the back of
//! the local queue. At most `lifo_polls_max` LIFO polls run in a row and they share one
//! cooperative budget, after which the LIFO task goes to the back of the queue — so a pair
//! of tasks waking each other cannot monopolise the worker. A task woken while it was
//! running (including by itself, e.g. `yieldNow`) always goes to the back of the queue.
//!
//! The LIFO slot, `tick` and `is_searching` are touched only by the owning thread.

const std = @import("std");
const builtin = @import("builtin");
const assert = std.debug.assert;
const Header = @import("../task/Header.zig");
const LocalQueue = @import("LocalQueue.zig");
const Parker = @import("../Parker.zig");
const Driver = @import("../time/Driver.zig");
const budget = @import("../budget.zig");
const context = @import("../context.zig");
const Runtime = @import("../Runtime.zig");

const Worker = @This();

pub const lifo_polls_max: u32 = 3;

/// Tests only (compiled out otherwise): runs between reading the next timer deadline and
/// claiming timer ownership in `parkOnce`, so a test can put a registration in that window.
pub var test_hook_before_owner_claim: if (builtin.is_test) std.atomic.Value(?*const fn (*Worker) void) else void =
    if (builtin.is_test) .init(null) else {};
/// Tests only: runs in `park` after the worker's last look at the queues found nothing and
/// before it registers as asleep — the window where a spawn must not be lost.
pub var test_hook_before_sleep: if (builtin.is_test) std.atomic.Value(?*const fn (*Worker) void) else void =
    if (builtin.is_test) .init(null) else {};

local: LocalQueue = .{},
runtime: *Runtime,
index: u32,
lifo: ?*Header = null,
lifo_enabled: bool = true,
parker: Parker = .{},
tick: u32 = 0,
is_searching: bool = false,
rng_state: u64,

pub fn init(runtime: *Runtime, index: u32) Worker {
    return .{ .runtime = runtime, .index = index, .rng_state = 0x9e3779b97f4a7c15 ^ (@as(u64, index) + 1) *% 0xbf58476d1ce4e5b9 };
}

/// The thread body: runs until the runtime shuts down.
pub fn run(self: *Worker) void {
    const saved = context.enter(self.runtime, self);
    defer saved.restore();
    const rt = self.runtime;
    while (!rt.isShuttingDown()) {
        self.tick +%= 1;
        if (self.tick % rt.options.event_interval == 0) _ = rt.driver.processIfDue();
        if (self.nextTask()) |task| {
            self.runTask(task);
            continue;
        }
        if (self.stealWork()) |task| {
            self.runTask(task);
            continue;
        }
        self.park();
    }
}

fn nextTask(self: *Worker) ?*Header {
    if (self.tick % self.runtime.options.global_queue_interval == 0) {
        if (self.runtime.inject.pop()) |task| return task;
        return self.nextLocalTask();
    }
    if (self.nextLocalTask()) |task| return task;
    return self.takeFromInject();
}

fn nextLocalTask(self: *Worker) ?*Header {
    if (self.lifo) |task| {
        self.lifo = null;
        return task;
    }
    return self.local.pop();
}

/// Moves a fair share of the inject queue into the local queue; returns one task to run.
fn takeFromInject(self: *Worker) ?*Header {
    const rt = self.runtime;
    if (rt.inject.isEmpty()) return null;
    const room: usize = @min(self.local.remainingSlots(), LocalQueue.capacity / 2);
    const share = rt.inject.len() / rt.workers.len + 1;
    const first = rt.inject.popBatch(@max(1, @min(share, room))) orelse return null;
    var next = first.queue_next;
    first.queue_next = null;
    while (next) |task| {
        next = task.queue_next;
        task.queue_next = null;
        self.local.pushBackOrOverflow(task, &rt.inject);
    }
    return first;
}

fn runTask(self: *Worker, task: *Header) void {
    const rt = self.runtime;
    if (self.is_searching) {
        self.is_searching = false;
        if (rt.idle.transitionWorkerFromSearching()) rt.notifyParked();
    }
    // One budget for the task and the LIFO chain it starts (Tokio does the same).
    const scope = budget.Scope.begin(budget.units_per_poll);
    defer scope.end();
    self.pollTask(task);
    var lifo_polls: u32 = 0;
    while (self.lifo) |next| {
        self.lifo = null;
        if (budget.exhausted()) {
            self.local.pushBackOrOverflow(next, &rt.inject);
            break;
        }
        lifo_polls += 1;
        if (lifo_polls >= lifo_polls_max) self.lifo_enabled = false;
        self.pollTask(next);
    }
    self.lifo_enabled = true;
}

fn pollTask(self: *Worker, task: *Header) void {
    switch (task.transitionToRunning()) {
        .cancel => {
            task.vtable.cancel(task);
            self.runtime.finishTask(task);
        },
        .poll => {
            if (task.vtable.poll(task)) {
                self.runtime.finishTask(task);
            } else switch (task.transitionToIdle()) {
                .idle => {},
                .reschedule => self.scheduleLocal(task, true),
            }
        },
    }
}

/// Queues a task woken on this worker's thread (see the module comment for where it goes).
pub fn scheduleLocal(self: *Worker, task: *Header, yielded: bool) void {
    const rt = self.runtime;
    if (yielded or !self.lifo_enabled) {
        self.local.pushBackOrOverflow(task, &rt.inject);
    } else {
        const previous = self.lifo;
        self.lifo = task;
        const displaced = previous orelse return; // Runs next; nothing for others to take.
        self.local.pushBackOrOverflow(displaced, &rt.inject);
    }
    rt.notifyParked();
}

fn stealWork(self: *Worker) ?*Header {
    const rt = self.runtime;
    if (!self.is_searching) {
        if (!rt.idle.transitionWorkerToSearching()) return null;
        self.is_searching = true;
    }
    const count: u32 = @intCast(rt.workers.len);
    const start: u32 = @intCast(self.nextRandom() % count);
    var offset: u32 = 0;
    while (offset < count) : (offset += 1) {
        const victim = &rt.workers[(start + offset) % count];
        if (victim == self) continue;
        if (victim.local.stealInto(&self.local)) |task| return task;
    }
    return self.takeFromInject();
}

fn park(self: *Worker) void {
    const rt = self.runtime;
    assert(self.lifo == null);
    if (!self.local.isEmpty()) return;
    if (builtin.is_test) if (test_hook_before_sleep.load(.acquire)) |hook| hook(self);
    const last_searcher = rt.idle.transitionWorkerToParked(self.index, self.is_searching);
    self.is_searching = false;
    if (last_searcher) rt.notifyIfWorkPending();
    while (!rt.isShuttingDown()) {
        self.parkOnce();
        _ = rt.driver.processIfDue();
        if (self.transitionFromParked()) return;
    }
}

/// Sleeps until unparked (after spinning up to `spin_before_park_ns`); the first sleeper to
/// find a pending timer sleeps only until it.
fn parkOnce(self: *Worker) void {
    const driver = &self.runtime.driver;
    const spin_ns = self.runtime.options.spin_before_park_ns;
    if (driver.parkTimeoutNs() != null) {
        if (builtin.is_test) if (test_hook_before_owner_claim.load(.acquire)) |hook| hook(self);
        if (driver.owner.cmpxchgStrong(Driver.no_owner, self.index, .seq_cst, .seq_cst) == null) {
            // Read the deadline again *after* becoming the owner: a registration that stored
            // an earlier deadline before our compare-and-swap saw no owner and kicked nobody
            // (or another sleeper), so we must see its deadline here. Store-then-load on both
            // sides (owner vs next_deadline_ms), all seq_cst.
            const timeout_ns = driver.parkTimeoutNs() orelse 0;
            if (timeout_ns > 0) _ = self.parker.parkTimeoutSpin(timeout_ns, spin_ns);
            driver.owner.store(Driver.no_owner, .seq_cst);
            return;
        }
    }
    self.parker.parkSpin(spin_ns);
}

/// After a wake-up: true if the worker should run again, false to go back to sleep.
fn transitionFromParked(self: *Worker) bool {
    const rt = self.runtime;
    if (self.lifo != null or !self.local.isEmpty()) {
        // Woken by its own timer with work: unpark itself (not as a searcher), unless a
        // notifier already did — then it was counted as searching.
        self.is_searching = !rt.idle.unparkWorkerById(self.index);
        return true;
    }
    if (rt.idle.isParked(self.index)) return false;
    self.is_searching = true; // Notified workers start out searching.
    return true;
}

fn nextRandom(self: *Worker) u64 {
    // xorshift64*: victim selection only needs to spread stealers out.
    var x = self.rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    self.rng_state = x;
    return x *% 0x2545f4914f6cdd1d;
}
