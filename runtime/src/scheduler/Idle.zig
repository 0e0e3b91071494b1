//! Which workers are asleep, and how many are looking for work.
//!
//! ## Words
//!
//!     state     u32, seq_cst   bits 0..15   searching: workers stealing / checking queues
//!                              bits 16..31  unparked:  workers not asleep
//!     sleepers  u64, seq_cst   bit i set = worker i is asleep (or about to be); changed only
//!                              under `mutex`, read without it
//!     spinning  u64, monotonic bit i set = worker i is spinning before it sleeps (it is also
//!                              in `sleepers`); set and cleared by worker i only. A hint: the
//!                              notifier prefers a spinning sleeper (its wake-up is a memory
//!                              write, not a futex wake), and a worker may spin only if no
//!                              other worker does (`SpinPolicy`). A stale read costs at most a
//!                              slower wake-up or a second spinner, never a lost one: the
//!                              unpark itself goes through the sleeper's `Parker`.
//!
//! ## Rules (Tokio's idle protocol)
//!
//! - Whoever makes work available that another worker could take calls `workerToNotify`: it
//!   wakes a sleeper only if nobody is searching (a searcher will find the work) and not all
//!   workers are awake. The woken worker starts out searching.
//! - At most half the workers search at once (`transitionWorkerToSearching`): stealing is
//!   contention, and a few searchers suffice.
//! - A searcher that finds work stops searching; if it was the last searcher
//!   (`transitionWorkerFromSearching` returns true) it checks every queue and wakes another
//!   worker if one holds work, so that remaining work keeps being looked for while it runs its
//!   task. (Tokio wakes one without checking; with a single task in flight that woke a worker
//!   per task only for it to find nothing and park again.)
//! - A searcher that goes to sleep as the last searcher must check every queue once more
//!   after registering as asleep (`transitionWorkerToParked` returns true).
//!
//! The last two are store-then-load on both sides (a pusher publishes work, then reads
//! `state`; the last searcher updates `state`, then reads the queues), so every access to
//! `state` is seq_cst and the read in `shouldNotify` is a read-modify-write (fetchAdd 0), which
//! orders it after the pusher's earlier store.
//!
//! One exception (`workerToNotifyForLocalPush`): a running worker that queued a task in its
//! *own* queue reads `state` with a plain load. If that load is stale and the last searcher's
//! re-check misses the task, nothing is lost: the task is in the queue of a worker that is
//! running and will pop it itself — only a chance to run it in parallel is. That path is taken
//! for every task queued behind another on a worker (every spawn after the first of a batch,
//! every wake of a task whose worker's LIFO slot is full), and a read-modify-write there takes
//! the line of `state` exclusive on every spawn, invalidating it in every other worker; a load
//! leaves it shared. Tokio uses the read-modify-write on this path too.

const std = @import("std");
const Lock = @import("../Lock.zig");
const assert = std.debug.assert;

const Idle = @This();

pub const workers_max: u32 = 64;
const searching_one: u32 = 1;
const unparked_one: u32 = 1 << 16;

/// Cache-line aligned: `state` takes a read-modify-write on every notification check (each task
/// queued behind another) and every searching transition; nothing else may share its line.
state: std.atomic.Value(u32) align(std.atomic.cache_line),
sleepers: std.atomic.Value(u64) = .init(0),
spinning: std.atomic.Value(u64) = .init(0),
mutex: Lock = .{},
worker_count: u32,

pub fn init(worker_count: u32) Idle {
    assert(worker_count > 0 and worker_count <= workers_max);
    return .{ .state = .init(worker_count * unparked_one), .worker_count = worker_count };
}

fn searching(state: u32) u32 {
    return state & 0xffff;
}

fn unparked(state: u32) u32 {
    return state >> 16;
}

fn bit(worker: u32) u64 {
    assert(worker < workers_max);
    return @as(u64, 1) << @intCast(worker);
}

fn shouldNotify(self: *Idle) bool {
    const state = self.state.fetchAdd(0, .seq_cst);
    return notifyNeeded(self, state);
}

fn notifyNeeded(self: *const Idle, state: u32) bool {
    assert(unparked(state) <= self.worker_count);
    return searching(state) == 0 and unparked(state) < self.worker_count;
}

/// `workerToNotify` for a running worker that just queued a task in its own queue: the first
/// check is a plain load (see the module comment for why that is safe there, and only there).
pub fn workerToNotifyForLocalPush(self: *Idle) ?u32 {
    if (!self.notifyNeeded(self.state.load(.seq_cst))) return null;
    return self.workerToNotify();
}

/// Picks a sleeping worker to wake (and counts it as awake and searching), or null when
/// waking one is not needed. The caller unparks the returned worker.
pub fn workerToNotify(self: *Idle) ?u32 {
    if (!self.shouldNotify()) return null;
    self.mutex.lock();
    defer self.mutex.unlock();
    if (!self.shouldNotify()) return null;
    const bits = self.sleepers.load(.seq_cst);
    if (bits == 0) return null;
    // A spinning sleeper first: waking it costs a store, not a futex wake-up.
    const spinners = bits & self.spinning.load(.monotonic);
    const worker: u32 = @ctz(if (spinners != 0) spinners else bits);
    assert(worker < self.worker_count);
    self.sleepers.store(bits & ~bit(worker), .seq_cst);
    const previous = self.state.fetchAdd(searching_one + unparked_one, .seq_cst);
    assert(unparked(previous) < self.worker_count);
    return worker;
}

/// Worker `worker`, registered asleep, wants to spin before it sleeps. With `exclusive`, only
/// if no other worker spins (the single spinning slot); otherwise in any case (a wake-up it
/// expects). True if it may spin; it must then call `stopSpinning` before sleeping.
pub fn tryStartSpinning(self: *Idle, worker: u32, exclusive: bool) bool {
    assert(worker < self.worker_count);
    assert(self.spinning.load(.monotonic) & bit(worker) == 0);
    // Monotonic: a hint (see `spinning` above); the parker's own word orders the wake-up.
    if (exclusive) return self.spinning.cmpxchgStrong(0, bit(worker), .monotonic, .monotonic) == null;
    _ = self.spinning.fetchOr(bit(worker), .monotonic);
    return true;
}

/// The spin of `worker` ended (woken, or about to sleep on its futex).
pub fn stopSpinning(self: *Idle, worker: u32) void {
    const previous = self.spinning.fetchAnd(~bit(worker), .monotonic);
    assert(previous & bit(worker) != 0);
}

/// `stopSpinning` if `worker` spins (it gives the slot back before blocking, whether it took
/// one or not). Only `worker` sets or clears its own bit, so the check cannot race.
pub fn stopSpinningIfHeld(self: *Idle, worker: u32) void {
    if (self.spinning.load(.monotonic) & bit(worker) == 0) return;
    self.stopSpinning(worker);
}

/// Workers spinning now (a hint; for tests and metrics).
pub fn spinningWorkers(self: *const Idle) u32 {
    return @popCount(self.spinning.load(.monotonic));
}

/// Whether a worker other than the caller is awake and not searching (running tasks: it takes
/// from the inject queue itself, at least every `global_queue_interval` ticks). `caller_working`:
/// the caller is awake and not searching itself (it is not counted).
pub fn othersWorking(self: *const Idle, caller_working: bool) bool {
    const state = self.state.load(.seq_cst);
    assert(searching(state) <= unparked(state));
    return unparked(state) - searching(state) > @intFromBool(caller_working);
}

/// A worker without local work wants to steal. False when half the workers already search.
pub fn transitionWorkerToSearching(self: *Idle) bool {
    const state = self.state.load(.seq_cst);
    assert(unparked(state) > 0); // The caller is awake.
    if (2 * searching(state) >= self.worker_count) return false;
    // May let slightly more than half search under a race; the limit is an optimisation.
    _ = self.state.fetchAdd(searching_one, .seq_cst);
    return true;
}

/// A searching worker found work. True if it was the last searcher: it must then wake
/// another worker if any queue still holds work (`Shared.notifyIfWorkPending`).
pub fn transitionWorkerFromSearching(self: *Idle) bool {
    const previous = self.state.fetchSub(searching_one, .seq_cst);
    assert(searching(previous) > 0);
    assert(searching(previous) <= unparked(previous));
    return searching(previous) == 1;
}

/// Registers `worker` as asleep. True if it was the last searcher: it must then re-check all
/// queues (and wake a worker if it finds work) before it really sleeps.
pub fn transitionWorkerToParked(self: *Idle, worker: u32, is_searching: bool) bool {
    self.mutex.lock();
    defer self.mutex.unlock();
    const decrement = unparked_one + (if (is_searching) searching_one else 0);
    const previous = self.state.fetchSub(decrement, .seq_cst);
    assert(unparked(previous) > 0);
    assert(searching(previous) >= @intFromBool(is_searching));
    const previous_sleepers = self.sleepers.load(.seq_cst);
    assert(previous_sleepers & bit(worker) == 0);
    assert(@popCount(previous_sleepers) < self.worker_count);
    self.sleepers.store(previous_sleepers | bit(worker), .seq_cst);
    return is_searching and searching(previous) == 1;
}

/// True while `worker` is still registered asleep (a wake-up without a notification).
pub fn isParked(self: *Idle, worker: u32) bool {
    return self.sleepers.load(.seq_cst) & bit(worker) != 0;
}

/// A sleeping worker woke on its own (timer) and has work: it removes itself from the
/// sleepers. False if a notifier already did so (and counted it as searching).
pub fn unparkWorkerById(self: *Idle, worker: u32) bool {
    self.mutex.lock();
    defer self.mutex.unlock();
    const bits = self.sleepers.load(.seq_cst);
    if (bits & bit(worker) == 0) return false;
    self.sleepers.store(bits & ~bit(worker), .seq_cst);
    const previous = self.state.fetchAdd(unparked_one, .seq_cst);
    assert(unparked(previous) < self.worker_count);
    return true;
}

/// Any sleeping worker (for timer kicks), without changing its registration.
pub fn anySleeper(self: *Idle) ?u32 {
    const bits = self.sleepers.load(.seq_cst);
    return if (bits == 0) null else @ctz(bits);
}

test "notify wakes a sleeper only when nobody searches" {
    var idle = Idle.init(4);
    try std.testing.expect(idle.workerToNotify() == null); // everyone awake
    try std.testing.expect(idle.transitionWorkerToSearching());
    try std.testing.expect(!idle.transitionWorkerToParked(2, false));
    try std.testing.expect(idle.workerToNotify() == null); // someone searches
    try std.testing.expect(idle.transitionWorkerFromSearching()); // last searcher
    try std.testing.expectEqual(@as(?u32, 2), idle.workerToNotify());
    try std.testing.expect(!idle.isParked(2));
    // The woken worker counts as searching: a second notify does nothing.
    try std.testing.expect(idle.workerToNotify() == null);
}

test "the notifier prefers a spinning sleeper, and one worker holds the spinning slot" {
    var idle = Idle.init(4);
    try std.testing.expect(!idle.transitionWorkerToParked(0, false));
    try std.testing.expect(!idle.transitionWorkerToParked(2, false));
    try std.testing.expect(!idle.transitionWorkerToParked(3, false));
    try std.testing.expect(idle.tryStartSpinning(2, true));
    try std.testing.expect(!idle.tryStartSpinning(3, true)); // The slot is taken.
    try std.testing.expect(idle.tryStartSpinning(3, false)); // An expected wake-up spins anyway.
    try std.testing.expectEqual(@as(u32, 2), idle.spinningWorkers());
    try std.testing.expectEqual(@as(?u32, 2), idle.workerToNotify()); // Not 0, the lowest.
    idle.stopSpinning(2);
    idle.stopSpinning(3);
    try std.testing.expect(idle.transitionWorkerFromSearching());
    try std.testing.expectEqual(@as(?u32, 0), idle.workerToNotify()); // No spinner: lowest.
}

test "the local-push check wakes exactly when the full check would" {
    var idle = Idle.init(2);
    try std.testing.expect(idle.workerToNotifyForLocalPush() == null); // Both awake.
    try std.testing.expect(!idle.transitionWorkerToParked(1, false));
    try std.testing.expect(idle.transitionWorkerToSearching());
    try std.testing.expect(idle.workerToNotifyForLocalPush() == null); // Worker 0 searches.
    try std.testing.expect(idle.transitionWorkerFromSearching());
    try std.testing.expectEqual(@as(?u32, 1), idle.workerToNotifyForLocalPush());
    try std.testing.expect(idle.workerToNotifyForLocalPush() == null); // 1 counts as searching.
}

test "at most half the workers search" {
    var idle = Idle.init(4);
    try std.testing.expect(idle.transitionWorkerToSearching());
    try std.testing.expect(idle.transitionWorkerToSearching());
    try std.testing.expect(!idle.transitionWorkerToSearching());
    try std.testing.expect(!idle.transitionWorkerToParked(0, true));
    try std.testing.expect(idle.transitionWorkerToParked(1, true)); // last searcher
    try std.testing.expect(idle.unparkWorkerById(1));
    try std.testing.expect(!idle.unparkWorkerById(1));
    try std.testing.expectEqual(@as(?u32, 0), idle.anySleeper());
}

test "others working: awake and not searching, the caller not counted" {
    var idle = Idle.init(3);
    try std.testing.expect(idle.othersWorking(true)); // Three awake workers, none searching.
    try std.testing.expect(!idle.transitionWorkerToParked(1, false));
    try std.testing.expect(!idle.transitionWorkerToParked(2, false));
    try std.testing.expect(!idle.othersWorking(true)); // The caller is the only one awake.
    try std.testing.expect(idle.transitionWorkerToSearching());
    try std.testing.expect(!idle.othersWorking(false)); // ...and now it searches.
    try std.testing.expect(idle.transitionWorkerFromSearching()); // It found work.
    try std.testing.expectEqual(@as(?u32, 1), idle.workerToNotify()); // Woken: searching.
    try std.testing.expect(!idle.othersWorking(true)); // A searcher does not count.
    try std.testing.expect(idle.transitionWorkerFromSearching()); // Worker 1 found work.
    try std.testing.expect(idle.othersWorking(true));
}
