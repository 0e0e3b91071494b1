//! A fiber stack: one anonymous mapping, the lowest `guard_bytes` of it inaccessible
//! (PROT_NONE), the rest readable and writable. Stacks grow down, so a fiber that runs off the
//! end of its stack touches the guard region and faults; `overflow.zig` recognises the fault
//! and ends the process with a message naming a fiber stack overflow.
//!
//!     base                    usable_low                                     top
//!     | guard (PROT_NONE)     | stack (read/write, pages committed on touch)  |
//!
//! The mapping is `MAP_NORESERVE`: reserving a stack costs address space only; a page costs
//! memory when the fiber first touches it (a fiber that only ever used 8 KiB holds 8 KiB).
//! Each stack is two kernel mappings (VMAs: the guard and the stack), and Linux limits a
//! process to `vm.max_map_count` of them (65,530 by default): about 32,000 stacks alive at once.
//! Beyond that `map` fails with `OutOfMemory`, which `concurrent` reports as
//! `ConcurrencyUnavailable`.
//!
//! `Pool` keeps released stacks for reuse (LIFO: the most recently used stack is the most
//! likely to be in cache). A reused stack keeps the pages its previous fibers touched, so a
//! reuse costs neither a system call nor a page fault; a fresh stack costs `mmap` + `mprotect`,
//! a fault per touched page and later a `munmap` (about 4 µs together on the 2-vCPU VM, 25x a
//! whole fiber spawn + await). How many it keeps follows demand:
//!
//! - The pool holds (in use and free together) up to `target = max(retain_min, demand,
//!   epoch_peak)` stacks, where `epoch_peak` is the most stacks in use at once in the current
//!   epoch and `demand` the decayed peak of earlier epochs. A burst of 10,000 fibers therefore
//!   finds its stacks again in the next burst instead of mapping 10,000 - retain_min afresh
//!   (the io suite's fan-in/fan-out/group rows spawn 1,000 fibers per iteration).
//! - An epoch lasts `epoch_ns` (1 s); at its end `demand = max(epoch_peak, demand / 2)` and the
//!   next epoch's peak starts at the stacks in use. Capacity beyond the target drains with a
//!   half-life of one epoch, not at once when one quiet epoch passes.
//! - Epochs are driven by releases: every `check_every` releases read the clock. A release
//!   over the target unmaps its stack and at most one cached stack more (bounded work per
//!   release, no system call under the lock). A runtime that goes idle after a burst keeps
//!   its cache until fibers run again; each cached stack holds the pages its fibers touched.
//!
//! **Reservations.** A fiber task reserves its stack when it is created (so the spawner learns
//! of a failure to map one: `concurrent` reports `ConcurrencyUnavailable`) but takes it only
//! when it first runs (`takeReserved`), from the top of the free list. The pool keeps
//! `free_count >= reserved` (a reservation maps a stack when the free ones are all promised),
//! so `takeReserved` never fails. Queued fibers hold no stack, and a burst of short fibers
//! (1,000 group members that each return at once) runs on the same one or two warm stacks
//! instead of touching 1,000 cold ones: a stack taken at creation cost a cache and TLB miss on
//! its free-list link and another on the first frame (io_spawn_group: 158 ns/op -> see the
//! commit). Demand counts reserved and held stacks alike.
//!
//! **Retiring a stack early.** A fiber that finishes still runs on its stack until it switches
//! away, so the stack can go back to the free list only after that switch. When the fiber's
//! completion is published first (a finished fiber that hands its thread straight to its
//! awaiter: fiber/task.zig, "Completing on the fiber's stack"), the stack is first *retired*
//! (`retire`: counted out of `inUse`, one atomic increment, before the completion) and given
//! back after the switch (`releaseRetired`). So a thread that sees the completion never counts
//! the stack in use; until it is given back, a reservation that finds no free stack maps one,
//! as it would had the completion come a moment earlier.
//!
//! **Worker caches.** The pool's lists and counters are guarded by one `Lock`. A fiber costs
//! three trips through it (reserve at the spawn, take at the first run, give back at the end):
//! three lock pairs, 8% of a 1-worker `Group.concurrent` (io_spawn_group: 139 -> 121 ns/op
//! with the pool's lock removed, measured single-threaded). So each worker of the runtime has
//! a `Local` share, touched only by its own thread:
//!
//! - `credits`: reservations the worker took from the pool in a batch (`credit_batch`, one
//!   lock pair) and has not yet promised to a task. A spawn on the worker spends one; the task's
//!   reservation is then an ordinary one of the pool's `reserved`, which any thread may take or
//!   give up — a stolen fiber is no special case.
//! - `free`: stacks given back on the worker (at most `local_max`), still counted in `held`.
//!   A worker that takes a reserved stack takes one of these when it has one; the reservation
//!   the task held is no longer needed and becomes one of the worker's credits (so the pool's
//!   `free_count >= reserved` stays true: a promise left the count, no free stack did).
//!   Short fibers therefore run on the worker's own one or two warm stacks without a lock.
//! - Beyond `credits_max` credits the worker returns the excess; beyond `local_max` cached
//!   stacks a release goes to the pool. Every `check_every`-th release goes to the pool
//!   anyway, so that epochs still end and an old burst's excess still drains.
//!
//! A batch maps the stacks the free list lacks for it, as a single reservation would. The
//! price: a worker keeps up to `credits_max` promises, each backed by a free stack of the
//! pool (never run on: mapped address space and the one page its free-list link is written
//! to), and up to `local_max` cached stacks beside them — at most about 48 stacks more than
//! the fibers need, per worker. `inUse` subtracts both; `deinit` (after the workers exited)
//! takes them back. Threads that are not workers (a `blockOn` thread, a blocking-pool thread)
//! use the pool directly.

const std = @import("std");
const assert = std.debug.assert;
const linux = std.os.linux;
const posix = std.posix;
const Lock = @import("../Lock.zig");

const Stack = @This();

pub const page_bytes = std.heap.page_size_min;

/// The whole mapping, guard included.
memory: []align(page_bytes) u8,
guard_bytes: usize,

pub const MapError = error{OutOfMemory};

/// Maps a stack of `usable_bytes` (rounded up to pages) below a guard of `guard_bytes`.
pub fn map(usable_bytes: usize, guard_bytes: usize) MapError!Stack {
    assert(guard_bytes % page_bytes == 0 and guard_bytes > 0);
    const usable = std.mem.alignForward(usize, usable_bytes, page_bytes);
    assert(usable >= page_bytes);
    const len = usable + guard_bytes;
    const rc = linux.mmap(null, len, .{ .READ = true, .WRITE = true }, .{
        .TYPE = .PRIVATE,
        .ANONYMOUS = true,
        .NORESERVE = true,
        .STACK = true,
    }, -1, 0);
    switch (linux.errno(rc)) {
        .SUCCESS => {},
        .NOMEM, .AGAIN => return error.OutOfMemory,
        else => |err| std.debug.panic("fiber stack mmap: unexpected errno {t}", .{err}),
    }
    const memory: [*]align(page_bytes) u8 = @ptrFromInt(rc);
    const stack = Stack{ .memory = memory[0..len], .guard_bytes = guard_bytes };
    switch (linux.errno(linux.mprotect(memory, guard_bytes, .{}))) {
        .SUCCESS => {},
        // The guard splits the mapping in two: at the map-count limit this fails.
        .NOMEM => {
            stack.unmap();
            return error.OutOfMemory;
        },
        else => |err| std.debug.panic("fiber stack guard mprotect: unexpected errno {t}", .{err}),
    }
    return stack;
}

pub fn unmap(self: Stack) void {
    switch (linux.errno(linux.munmap(self.memory.ptr, self.memory.len))) {
        .SUCCESS => {},
        else => |err| std.debug.panic("fiber stack munmap: unexpected errno {t}", .{err}),
    }
}

/// The highest address (exclusive): a fresh fiber's stack pointer starts here.
pub fn top(self: Stack) usize {
    return @intFromPtr(self.memory.ptr) + self.memory.len;
}

/// The lowest usable address; below it is the guard.
pub fn usableLow(self: Stack) usize {
    return @intFromPtr(self.memory.ptr) + self.guard_bytes;
}

pub fn usableBytes(self: Stack) usize {
    return self.memory.len - self.guard_bytes;
}

/// True if `address` is in the guard region.
pub fn inGuard(self: Stack, address: usize) bool {
    return address >= @intFromPtr(self.memory.ptr) and address < self.usableLow();
}

/// The bytes of the usable part that are resident in memory (`mincore`): the stack memory a
/// fiber actually holds. For tests and measurements.
pub fn residentBytes(self: Stack) usize {
    const pages = self.usableBytes() / page_bytes;
    var resident: usize = 0;
    var vector: [256]u8 = undefined;
    var page: usize = 0;
    while (page < pages) {
        const count = @min(vector.len, pages - page);
        const address: [*]u8 = @ptrFromInt(self.usableLow() + page * page_bytes);
        switch (linux.errno(linux.mincore(address, count * page_bytes, &vector))) {
            .SUCCESS => {},
            else => |err| std.debug.panic("fiber stack mincore: unexpected errno {t}", .{err}),
        }
        for (vector[0..count]) |v| resident += v & 1;
        page += count;
    }
    return resident * page_bytes;
}

/// Stacks of one size, mapped on demand and kept for reuse after release (see the module
/// comment for how many).
pub const Pool = struct {
    lock: Lock = .{},
    /// Released stacks (guarded by `lock`); the link lives in the stack's top bytes.
    free: ?*FreeNode = null,
    /// Guarded by `lock`: the length of `free`, the stacks handed out and not released, and
    /// the reservations not yet taken. Invariant: `free_count >= reserved` once every
    /// `reserve` call has returned (a reservation that maps pushes its stack before returning).
    free_count: usize = 0,
    held: usize = 0,
    reserved: usize = 0,
    /// The fewest stacks the pool keeps whatever the demand (`Options.fiber_stacks_cached`).
    retain_min: usize,
    /// Guarded by `lock`: the decayed peak of earlier epochs, the peak of the current one, when
    /// it started, and the releases since the clock was last read.
    demand: usize = 0,
    epoch_peak: usize = 0,
    epoch_start_ns: u64,
    releases_unchecked: u32 = 0,
    epoch_ns: u64 = std.time.ns_per_s,
    /// Releases between two reads of the clock.
    check_every: u32 = 64,
    /// The clock of the epochs (a field so that tests can step it).
    now_ns: *const fn () u64 = monotonicNs,
    usable_bytes: usize,
    guard_bytes: usize,
    /// Stacks ever mapped by this pool (statistics).
    mapped_total: std.atomic.Value(usize) = .init(0),
    /// Retired stacks ("Retiring a stack early"): how many were retired (`retire`, without the
    /// lock: release, so a thread that saw the completion that followed a retire (acquire)
    /// counts it), and how many of those were given back since (`releaseRetired`; guarded by
    /// `lock`). Both only grow; a retired stack is in `held` until it is given back.
    retired: std.atomic.Value(usize) = .init(0),
    retired_released: usize = 0,
    /// One per worker (`initLocals`), indexed by the worker's index; empty until then.
    locals: []Local = &.{},
    locals_allocator: ?std.mem.Allocator = null,

    /// Reservations a worker takes at once, and the most credits it keeps.
    pub const credit_batch: u32 = 16;
    pub const credits_max: u32 = 2 * credit_batch;
    /// The most stacks a worker caches.
    pub const local_max: u32 = 16;

    /// A worker's share ("Worker caches"). Only the worker's thread writes it; the counters are
    /// atomics (monotonic) only so that `inUse` can read them from any thread — an estimate
    /// while the worker runs, exact once it is quiescent. Aligned to a cache line of its own.
    pub const Local = struct {
        free: ?*FreeNode align(64) = null,
        /// Stacks on `free` (in the pool's `held`).
        count: std.atomic.Value(u32) = .init(0),
        /// Reservations in the pool's `reserved` that no task holds.
        credits: std.atomic.Value(u32) = .init(0),
        /// Retired stacks given back into `free` (the pool's `retired_released`, this share).
        retired_released: std.atomic.Value(usize) = .init(0),
        /// Releases since one last went to the pool (see `check_every`).
        releases_local: u32 = 0,

        pub fn get(counter: *const std.atomic.Value(u32)) u32 {
            return counter.load(.monotonic);
        }
        fn set(counter: *std.atomic.Value(u32), value: u32) void {
            counter.store(value, .monotonic);
        }
    };

    const FreeNode = struct {
        next: ?*FreeNode,
        stack: Stack,
    };

    fn monotonicNs() u64 {
        return @import("../os.zig").clockNs(.MONOTONIC);
    }

    pub fn init(usable_bytes: usize, guard_bytes: usize, retain_min: usize) Pool {
        assert(usable_bytes >= @sizeOf(FreeNode));
        return .{
            .usable_bytes = usable_bytes,
            .guard_bytes = guard_bytes,
            .retain_min = retain_min,
            .epoch_start_ns = monotonicNs(),
        };
    }

    /// Gives each of `workers` workers a `Local` share. Before any worker runs.
    pub fn initLocals(self: *Pool, allocator: std.mem.Allocator, workers: usize) error{OutOfMemory}!void {
        assert(self.locals.len == 0);
        const locals = try allocator.alloc(Local, workers);
        for (locals) |*share| share.* = .{};
        self.locals = locals;
        self.locals_allocator = allocator;
    }

    /// Worker `index`'s share, or null if the pool has none (a pool without workers).
    pub fn local(self: *Pool, index: usize) ?*Local {
        return if (index < self.locals.len) &self.locals[index] else null;
    }

    /// Takes the workers' shares back into the pool. After every worker exited.
    fn flushLocals(self: *Pool) void {
        for (self.locals) |*share| {
            while (share.free) |node| {
                share.free = node.next;
                assert(self.held > 0);
                self.held -= 1;
                self.push(node.stack);
            }
            assert(self.reserved >= Local.get(&share.credits));
            self.reserved -= Local.get(&share.credits);
            self.retired_released += share.retired_released.load(.monotonic);
            share.* = .{};
        }
        if (self.locals_allocator) |allocator| allocator.free(self.locals);
        self.locals = &.{};
        self.locals_allocator = null;
    }

    /// Unmaps every cached stack. Every stack must have been released.
    pub fn deinit(self: *Pool) void {
        self.flushLocals();
        assert(self.held == 0 and self.reserved == 0); // A fiber stack leaked.
        assert(self.retired_released == self.retired.load(.monotonic)); // Every retired one came back.
        while (self.free) |node| {
            self.free = node.next;
            node.stack.unmap();
        }
        self.free_count = 0;
    }

    /// A stack now: `reserve` then `takeReserved`.
    pub fn acquire(self: *Pool) MapError!Stack {
        try self.reserve();
        return self.takeReserved();
    }

    /// Promises the caller a stack for a later `takeReserved` (or `unreserve`), mapping one if
    /// every free stack is already promised.
    pub fn reserve(self: *Pool) MapError!void {
        const must_map = blk: {
            self.lock.lock();
            defer self.lock.unlock();
            self.reserved += 1;
            self.epoch_peak = @max(self.epoch_peak, self.held + self.reserved);
            break :blk self.free_count < self.reserved;
        };
        if (must_map) {
            const stack = map(self.usable_bytes, self.guard_bytes) catch |err| {
                self.lock.lock();
                self.reserved -= 1;
                self.lock.unlock();
                return err;
            };
            _ = self.mapped_total.fetchAdd(1, .monotonic);
            self.lock.lock();
            defer self.lock.unlock();
            self.push(stack);
        }
    }

    /// The stack of a reservation: the most recently released one (warmest in cache).
    pub fn takeReserved(self: *Pool) Stack {
        self.lock.lock();
        defer self.lock.unlock();
        assert(self.reserved > 0);
        const node = self.free.?; // free_count >= reserved > 0.
        self.free = node.next;
        self.free_count -= 1;
        self.reserved -= 1;
        self.held += 1;
        return node.stack;
    }

    /// Gives up a reservation that will not be taken (a fiber killed before it ran).
    pub fn unreserve(self: *Pool) void {
        self.lock.lock();
        defer self.lock.unlock();
        assert(self.reserved > 0);
        self.reserved -= 1;
    }

    // -- on a worker: its share first ("Worker caches") ----------------------------------

    /// `reserve` on the worker that owns `share` (null: not on a worker).
    pub fn reserveOn(self: *Pool, share: ?*Local) MapError!void {
        const l = share orelse return self.reserve();
        const credits = Local.get(&l.credits);
        if (credits > 0) return Local.set(&l.credits, credits - 1);
        const taken = try self.takeCredits();
        assert(taken > 0);
        Local.set(&l.credits, taken - 1);
    }

    /// `credit_batch` reservations at once (one lock pair), mapping the stacks the free list
    /// lacks for them outside the lock, as `reserve` does for one. Fewer if a map fails; an
    /// error only if not even one reservation is backed.
    fn takeCredits(self: *Pool) MapError!u32 {
        const deficit: u32 = blk: {
            self.lock.lock();
            defer self.lock.unlock();
            self.reserved += credit_batch;
            self.epoch_peak = @max(self.epoch_peak, self.held + self.reserved);
            break :blk @intCast(@min(credit_batch, self.reserved -| self.free_count));
        };
        var mapped: u32 = 0;
        while (mapped < deficit) : (mapped += 1) {
            const stack = map(self.usable_bytes, self.guard_bytes) catch break;
            _ = self.mapped_total.fetchAdd(1, .monotonic);
            self.lock.lock();
            defer self.lock.unlock();
            self.push(stack);
        }
        const unbacked = deficit - mapped;
        if (unbacked == 0) return credit_batch;
        self.lock.lock();
        defer self.lock.unlock();
        self.reserved -= unbacked;
        return if (unbacked < credit_batch) credit_batch - unbacked else error.OutOfMemory;
    }

    /// `takeReserved` on the worker that owns `share`: its newest cached stack if it has one
    /// (the task's reservation becomes one of its credits), else the pool's.
    pub fn takeReservedOn(self: *Pool, share: ?*Local) Stack {
        const l = share orelse return self.takeReserved();
        const node = l.free orelse return self.takeReserved();
        l.free = node.next;
        Local.set(&l.count, Local.get(&l.count) - 1);
        self.addCredit(l);
        return node.stack;
    }

    /// `unreserve` on the worker that owns `share`: the reservation becomes a credit.
    pub fn unreserveOn(self: *Pool, share: ?*Local) void {
        const l = share orelse return self.unreserve();
        self.addCredit(l);
    }

    fn addCredit(self: *Pool, l: *Local) void {
        const credits = Local.get(&l.credits) + 1;
        if (credits <= credits_max) return Local.set(&l.credits, credits);
        // Keep one batch; the rest goes back.
        self.lock.lock();
        defer self.lock.unlock();
        assert(self.reserved >= credits - credit_batch);
        self.reserved -= credits - credit_batch;
        Local.set(&l.credits, credit_batch);
    }

    /// `release` on the worker that owns `share`.
    pub fn releaseOn(self: *Pool, stack: Stack, share: ?*Local) void {
        if (!self.cacheLocally(stack, share, false)) self.giveBack(stack, false);
    }

    /// `releaseRetired` on the worker that owns `share`.
    pub fn releaseRetiredOn(self: *Pool, stack: Stack, share: ?*Local) void {
        if (!self.cacheLocally(stack, share, true)) self.giveBack(stack, true);
    }

    /// Pushes `stack` onto the worker's share unless it is full or it is the release that
    /// goes to the pool (one in `check_every`, so that epochs end).
    fn cacheLocally(self: *Pool, stack: Stack, share: ?*Local, was_retired: bool) bool {
        assert(stack.guard_bytes == self.guard_bytes);
        const l = share orelse return false;
        const count = Local.get(&l.count);
        if (count >= local_max) return false;
        l.releases_local += 1;
        if (l.releases_local >= self.check_every) {
            l.releases_local = 0;
            return false;
        }
        const node = freeNodeOf(stack);
        node.* = .{ .next = l.free, .stack = stack };
        l.free = node;
        Local.set(&l.count, count + 1);
        if (was_retired) l.retired_released.store(l.retired_released.load(.monotonic) + 1, .monotonic);
        return true;
    }

    fn freeNodeOf(stack: Stack) *FreeNode {
        return @ptrFromInt(std.mem.alignBackward(usize, stack.top() - @sizeOf(FreeNode), @alignOf(FreeNode)));
    }

    /// Links `stack` into the free list (guarded by `lock`).
    fn push(self: *Pool, stack: Stack) void {
        const node = freeNodeOf(stack);
        node.* = .{ .next = self.free, .stack = stack };
        self.free = node;
        self.free_count += 1;
    }

    /// The stacks the pool may hold, in use and free together (guarded by `lock`).
    fn target(self: *const Pool) usize {
        return @max(self.retain_min, @max(self.demand, self.epoch_peak));
    }

    /// Ends the epoch if `epoch_ns` passed (guarded by `lock`; reads the clock every
    /// `check_every` calls).
    fn maybeEndEpoch(self: *Pool) void {
        self.releases_unchecked += 1;
        if (self.releases_unchecked < self.check_every) return;
        self.releases_unchecked = 0;
        const now = self.now_ns();
        if (now -| self.epoch_start_ns < self.epoch_ns) return;
        self.epoch_start_ns = now;
        self.demand = @max(self.epoch_peak, self.demand / 2);
        self.epoch_peak = self.held + self.reserved;
    }

    /// Returns `stack` (no fiber runs on it any more) to the cache, or unmaps it (and at most
    /// one cached stack more) when the pool holds more than its target.
    pub fn release(self: *Pool, stack: Stack) void {
        self.giveBack(stack, false);
    }

    /// Counts a stack that a finished fiber still runs on as no longer in use, before its
    /// fiber's completion is published; `releaseRetired` gives it back once the fiber's thread
    /// is off it. Lock-free: one atomic increment (see `retired`).
    pub fn retire(self: *Pool) void {
        _ = self.retired.fetchAdd(1, .release);
    }

    /// `release` of a stack counted out by `retire`.
    pub fn releaseRetired(self: *Pool, stack: Stack) void {
        self.giveBack(stack, true);
    }

    fn giveBack(self: *Pool, stack: Stack, was_retired: bool) void {
        assert(stack.guard_bytes == self.guard_bytes);
        var unmap_now: [2]?Stack = .{ null, null };
        {
            self.lock.lock();
            defer self.lock.unlock();
            assert(self.held > 0);
            self.held -= 1;
            if (was_retired) {
                self.retired_released += 1;
                assert(self.retired_released <= self.retired.load(.monotonic));
            }
            self.maybeEndEpoch();
            const limit = self.target();
            // Never unmap a stack that a reservation counts on (free_count >= reserved).
            if (self.held + self.free_count + 1 > limit and self.free_count >= self.reserved) {
                unmap_now[0] = stack;
                // Drain one more while over the target: the excess of an old burst goes at the
                // pace of the releases, never all in one call.
                if (self.held + self.free_count > limit and self.free_count > self.reserved) {
                    const node = self.free.?;
                    self.free = node.next;
                    self.free_count -= 1;
                    unmap_now[1] = node.stack;
                }
            } else {
                self.push(stack);
            }
        }
        for (unmap_now) |maybe| if (maybe) |s| s.unmap();
    }

    /// Stacks handed out or promised and not given back (`held + reserved`), less those
    /// retired and not yet given back. Read under the lock (a separate atomic counter of every
    /// stack cost two more atomic operations per fiber).
    pub fn inUse(self: *Pool) usize {
        self.lock.lock();
        defer self.lock.unlock();
        const retired_held = self.retiredHeldLocked();
        var spare: usize = 0; // Cached in, or promised to, a worker's share, not a fiber.
        for (self.locals) |*share| spare += Local.get(&share.count) + Local.get(&share.credits);
        return (self.held + self.reserved) -| (retired_held + spare);
    }

    /// Stacks retired and not yet given back: counted out of `inUse`, still in `held`.
    pub fn retiredHeld(self: *Pool) usize {
        self.lock.lock();
        defer self.lock.unlock();
        return self.retiredHeldLocked();
    }

    /// `retiredHeld` with `lock` held. Acquire: pairs with `retire`. Every retire counted here
    /// is in `held` or in `retired_released` (a retired stack leaves `held` when
    /// `retired_released` grows, under the lock held here).
    fn retiredHeldLocked(self: *const Pool) usize {
        var released = self.retired_released;
        for (self.locals) |*share| released += share.retired_released.load(.monotonic);
        return self.retired.load(.acquire) -| released;
    }
};

test "a stack is writable down to its guard, and the guard is where the mapping starts" {
    const stack = try map(64 * 1024, page_bytes);
    defer stack.unmap();
    try std.testing.expectEqual(@as(usize, 64 * 1024), stack.usableBytes());
    const low: [*]u8 = @ptrFromInt(stack.usableLow());
    low[0] = 1; // The lowest usable byte.
    const high: [*]u8 = @ptrFromInt(stack.top() - 1);
    high[0] = 2;
    try std.testing.expect(stack.inGuard(stack.usableLow() - 1));
    try std.testing.expect(!stack.inGuard(stack.usableLow()));
    try std.testing.expectEqual(2 * page_bytes, stack.residentBytes());
}

test "a retired stack leaves inUse at once and the free list only when given back" {
    var pool = Pool.init(16 * 1024, page_bytes, 2);
    defer pool.deinit();
    const a = try pool.acquire();
    const b = try pool.acquire();
    try std.testing.expectEqual(@as(usize, 2), pool.inUse());
    pool.retire();
    try std.testing.expectEqual(@as(usize, 1), pool.inUse());
    try std.testing.expectEqual(@as(usize, 0), pool.free_count); // Still run on: not reusable.
    pool.releaseRetired(a);
    try std.testing.expectEqual(@as(usize, 1), pool.inUse());
    try std.testing.expectEqual(@as(usize, 1), pool.free_count);
    pool.release(b);
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    // The given-back stack is reused first (LIFO): b, then a.
    const again = try pool.acquire();
    try std.testing.expectEqual(b.memory.ptr, again.memory.ptr);
    pool.release(again);
}

test "the pool reuses released stacks (LIFO) and keeps retain_min with no demand recorded" {
    var pool = Pool.init(16 * 1024, page_bytes, 2);
    defer pool.deinit();
    const a = try pool.acquire();
    try std.testing.expectEqual(@as(usize, 1), pool.inUse());
    pool.release(a);
    const b = try pool.acquire();
    try std.testing.expectEqual(a.memory.ptr, b.memory.ptr);
    const c = try pool.acquire();
    pool.release(c);
    pool.release(b);
    try std.testing.expectEqual(@as(usize, 2), pool.free_count);
    const d = try pool.acquire();
    try std.testing.expectEqual(b.memory.ptr, d.memory.ptr); // LIFO.
    pool.release(d);
    try std.testing.expectEqual(@as(usize, 2), pool.mapped_total.load(.monotonic));
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
}

var fake_clock_ns: u64 = 0;
fn fakeClockNs() u64 {
    return fake_clock_ns;
}

fn acquireMany(pool: *Pool, stacks: []Stack) !void {
    for (stacks) |*s| s.* = try pool.acquire();
}

/// Epochs of 100 fake nanoseconds, the clock read at every release, starting at 0.
fn useFakeEpochs(pool: *Pool) void {
    fake_clock_ns = 0;
    pool.now_ns = fakeClockNs;
    pool.epoch_start_ns = 0;
    pool.check_every = 1;
    pool.epoch_ns = 100;
}

fn releaseAll(pool: *Pool, stacks: []const Stack) void {
    for (stacks) |s| pool.release(s);
}

test "a burst finds its stacks again; the excess drains with a half-life of one epoch" {
    var pool = Pool.init(16 * 1024, page_bytes, 2);
    defer pool.deinit();
    useFakeEpochs(&pool);
    var stacks: [16]Stack = undefined;
    // Two bursts in one epoch: the second maps nothing (the old cap of retain_min stacks
    // mapped 14 afresh).
    try acquireMany(&pool, &stacks);
    releaseAll(&pool, &stacks);
    try std.testing.expectEqual(@as(usize, 16), pool.free_count);
    try acquireMany(&pool, &stacks);
    releaseAll(&pool, &stacks);
    try std.testing.expectEqual(@as(usize, 16), pool.mapped_total.load(.monotonic));
    // Epoch 1 ends: demand = 16, the whole burst stays.
    fake_clock_ns = 100;
    pool.release(try pool.acquire());
    try std.testing.expectEqual(@as(usize, 16), pool.demand);
    try std.testing.expectEqual(@as(usize, 16), pool.free_count);
    // A quiet epoch ends: demand halves to 8, and each release drains one stack more.
    fake_clock_ns = 200;
    pool.release(try pool.acquire());
    try std.testing.expectEqual(@as(usize, 8), pool.demand);
    for (0..8) |_| pool.release(try pool.acquire());
    try std.testing.expectEqual(@as(usize, 8), pool.free_count);
    // Quiet epochs go on: 4, 2, then retain_min holds.
    for ([_]u64{ 300, 400, 500, 600 }) |now| {
        fake_clock_ns = now;
        for (0..8) |_| pool.release(try pool.acquire());
    }
    try std.testing.expectEqual(@as(usize, 2), pool.free_count);
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
}

test "a reservation maps only when every free stack is promised; take is LIFO; unreserve returns the promise" {
    var pool = Pool.init(16 * 1024, page_bytes, 4);
    defer pool.deinit();
    try pool.reserve(); // Nothing free: maps.
    try pool.reserve(); // Maps again: the one free stack is promised.
    try std.testing.expectEqual(@as(usize, 2), pool.mapped_total.load(.monotonic));
    try std.testing.expectEqual(@as(usize, 2), pool.inUse());
    const a = pool.takeReserved();
    pool.release(a);
    // `a` is on top: the next reservation is met by the free stacks and takes `a`.
    try pool.reserve();
    const b = pool.takeReserved();
    try std.testing.expectEqual(a.memory.ptr, b.memory.ptr);
    try std.testing.expectEqual(@as(usize, 2), pool.mapped_total.load(.monotonic));
    pool.unreserve(); // The second reservation is given up (its fiber was killed unstarted).
    pool.release(b);
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    try std.testing.expectEqual(@as(usize, 2), pool.free_count);
}

test "trimming never unmaps a stack a reservation counts on" {
    var pool = Pool.init(16 * 1024, page_bytes, 0);
    defer pool.deinit();
    useFakeEpochs(&pool);
    var stacks: [8]Stack = undefined;
    try acquireMany(&pool, &stacks);
    for (0..4) |_| try pool.reserve(); // Four promised: four more mapped.
    releaseAll(&pool, &stacks);
    // Quiet epochs push the target down to 0, but the four promises keep four stacks.
    for ([_]u64{ 100, 200, 300, 400, 500, 600 }) |now| {
        fake_clock_ns = now;
        const s = pool.takeReserved();
        pool.release(s);
        try pool.reserve();
    }
    try std.testing.expect(pool.free_count >= pool.reserved);
    try std.testing.expectEqual(@as(usize, 4), pool.reserved);
    for (0..4) |_| pool.release(pool.takeReserved());
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
}

test "a worker's share: credits in batches, its own cached stacks first, the excess back to the pool" {
    var pool = Pool.init(16 * 1024, page_bytes, 64);
    try pool.initLocals(std.testing.allocator, 2);
    defer pool.deinit();
    const share = pool.local(0).?;
    const other = pool.local(1).?;
    try std.testing.expect(pool.local(2) == null);
    // An empty pool: a batch of reservations (one lock pair) maps a stack for each; one of
    // them is spent. A second batch on the other worker finds them promised and maps its own.
    try pool.reserveOn(share);
    try std.testing.expectEqual(Pool.credit_batch - 1, Pool.Local.get(&share.credits));
    try std.testing.expectEqual(@as(usize, Pool.credit_batch), pool.mapped_total.load(.monotonic));
    try std.testing.expectEqual(@as(usize, 1), pool.inUse());
    try pool.reserveOn(other);
    pool.unreserveOn(other);
    try std.testing.expectEqual(@as(usize, 2 * Pool.credit_batch), pool.mapped_total.load(.monotonic));
    try std.testing.expectEqual(@as(usize, 1), pool.inUse());
    // The share has no stack yet: the pool's; given back, the share keeps it.
    const first = pool.takeReservedOn(share);
    pool.releaseOn(first, share);
    try std.testing.expectEqual(@as(u32, 1), Pool.Local.get(&share.count));
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    // The next fiber runs on it, and its reservation becomes a credit again.
    try pool.reserveOn(share);
    const again = pool.takeReservedOn(share);
    try std.testing.expectEqual(first.memory.ptr, again.memory.ptr);
    try std.testing.expectEqual(Pool.credit_batch - 1, Pool.Local.get(&share.credits));
    // A retired stack given back into the share leaves `retiredHeld` (and `inUse` stays 0).
    pool.retire();
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    pool.releaseRetiredOn(again, share);
    try std.testing.expectEqual(@as(usize, 0), pool.retiredHeld());
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    // A reservation made on one worker and given up on another is a credit of the other.
    try pool.reserveOn(share);
    pool.unreserveOn(other);
    try std.testing.expectEqual(Pool.credit_batch + 1, Pool.Local.get(&other.credits));
    // Beyond credits_max the excess goes back to the pool, one batch kept.
    for (0..Pool.credits_max - Pool.credit_batch) |_| {
        try pool.reserve();
        pool.unreserveOn(other);
    }
    try std.testing.expectEqual(Pool.credit_batch, Pool.Local.get(&other.credits));
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    // A share caches at most local_max stacks; the rest goes to the pool's free list.
    var many: [Pool.local_max + 4]Stack = undefined;
    for (&many) |*s| {
        try pool.reserveOn(share);
        s.* = pool.takeReservedOn(null);
    }
    for (many) |s| pool.releaseOn(s, share);
    try std.testing.expectEqual(Pool.local_max, Pool.Local.get(&share.count));
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
    try std.testing.expect(pool.free_count >= pool.reserved);
}

test "one release in check_every goes to the pool even with room in the share (epochs end)" {
    var pool = Pool.init(16 * 1024, page_bytes, 8);
    try pool.initLocals(std.testing.allocator, 1);
    defer pool.deinit();
    pool.check_every = 4;
    const share = pool.local(0).?;
    for (0..4) |_| {
        try pool.reserveOn(share);
        pool.releaseOn(pool.takeReservedOn(share), share);
    }
    // The 4th release went to the pool: the share's one stack with it.
    try std.testing.expectEqual(@as(u32, 0), Pool.Local.get(&share.count));
    try std.testing.expect(pool.free_count >= 1);
    try pool.reserveOn(share);
    pool.releaseOn(pool.takeReservedOn(share), share);
    try std.testing.expectEqual(@as(u32, 1), Pool.Local.get(&share.count));
    try std.testing.expectEqual(@as(usize, 0), pool.inUse());
}
