//! A hierarchical timing wheel: 6 levels of 64 slots, counting ticks of `tick_ns` (65.536 µs).
//!
//! Level `l` slots are 64^l ticks wide, so level 0 covers the next 64 ticks (4.19 ms) with
//! one-tick slots, level 1 the next 4096 ticks (268 ms) with 4.19 ms slots, level 2 17.2 s,
//! level 3 18.3 min, level 4 19.5 h and level 5 64^6 ticks, about 52 days (`range_max_ticks`).
//! An entry goes to the level of the highest 6-bit digit in which its wheel time differs from
//! `elapsed` (the wheel's current time); its slot is that digit of its wheel time. Inserting
//! and removing are O(1) (intrusive doubly-linked lists, one occupancy bitmap per level).
//!
//! The tick: 2^16 ns, so that converting between nanoseconds and ticks is a shift, exact in
//! the direction that matters (a tick's start in nanoseconds: the driver owner's timed wait
//! ends on it to the nanosecond). Deadlines are rounded up to a tick, by less than 65.5 µs —
//! below a parked thread's wake-up latency and 1/150 of a 10 ms sleep (the 1 ms tick this
//! replaced added up to a whole millisecond to every sleep). The cost of a finer tick is a
//! shorter range and more levels per duration: a 10 ms sleep sits at level 1 and cascades to
//! level 0 once (one more O(1) relink, and one more wake-up of the driver owner at the level-1
//! slot start); a deadline beyond the ~52-day range is re-inserted at the top level each time
//! its slot comes round (every 19.5 h), below. A finer tick (2^10 ns) would cut the range to
//! 19 h and add a cascade to every sleep of more than 4 ms, for rounding already smaller than
//! the wake-up latency.
//!
//! Wheel time: an entry's `deadline_tick` is kept exactly; the slot it sits in is chosen from
//! `min(deadline_tick, elapsed_ticks + range_max_ticks)`, because the wheel spans only ~52 days.
//!
//! Advancing: the next expiration is the earliest occupied slot over all levels. When time
//! reaches a slot (its start, for levels above 0), the whole slot is taken out at once: entries
//! whose deadline has come go to the `pending` list, the others are re-inserted relative to the
//! new `elapsed` — at a lower level ("cascading"), or, for a deadline beyond the range, again at
//! the top level. So an entry is handed out only once `elapsed_ticks >= deadline_tick`: never early,
//! however far its deadline. `advance` hands out pending entries in batches of at most
//! `DueList.capacity_max` (the driver wakes them outside its lock); while any are pending, the
//! next deadline is "now". (Before the pending list, a slot holding more than one batch of due
//! entries kept the rest in place, and they looked due one whole period later: a level-1
//! period.)
//!
//! Invariant: every occupied slot of level `l` starts after `elapsed` within the current
//! level-(l+1) period, because an entry whose wheel time lies in a later period differs from
//! `elapsed` in a higher digit and therefore sits at a higher level — except at the top level,
//! where a wheel time clamped to `elapsed + range_max_ticks` falls into the next top-level period,
//! in a slot at or before the current one. So the next occupied slot of a level is the first
//! occupied slot after the current one (mask the bitmap, count trailing zeros); only at the top
//! level, when there is none, is it the first occupied slot of the next period. (Rotating the
//! bitmap to the current slot instead found a next-period slot equal to the current one before
//! the later slots of the current period, and held their entries back a whole period.)
//!
//! Not thread-safe: the timer driver owns it under its mutex.

const std = @import("std");
const assert = std.debug.assert;

const Wheel = @This();

pub const levels: u6 = 6;
pub const slots_per_level: u7 = 64;
const slot_bits: u6 = 6;
/// log2 of `tick_ns` (see the module comment for the choice).
pub const tick_ns_log2: u6 = 16;
/// The wheel's unit: 2^16 ns = 65.536 µs. Deadlines are whole ticks, rounded up.
pub const tick_ns: u64 = @as(u64, 1) << tick_ns_log2;
/// The furthest wheel time from `elapsed`: 64^6 - 1 ticks, about 52 days; later deadlines are
/// re-inserted until they come within range.
pub const range_max_ticks: u64 = (@as(u64, 1) << (@as(u6, slot_bits) * levels)) - 1;
/// `Entry.level` of an entry on the pending list (due, not handed out yet).
const pending_level: u8 = levels;

pub const Entry = struct {
    /// The exact deadline, in ticks: the entry is never handed out before `elapsed_ticks` reaches it.
    deadline_tick: u64 = 0,
    prev: ?*Entry = null,
    next: ?*Entry = null,
    /// 0..levels-1, or `pending_level`.
    level: u8 = 0,
    slot: u8 = 0,
    linked: bool = false,
};

const Level = struct {
    occupied: u64 = 0,
    heads: [slots_per_level]?*Entry = @splat(null),
};

elapsed_ticks: u64 = 0,
level_table: [levels]Level = @splat(.{}),
/// Entries due at or before `elapsed_ticks`, taken out of their slot, not handed out yet.
pending: ?*Entry = null,
/// Entries linked (in a slot or pending).
count: usize = 0,

pub fn init(elapsed_ticks: u64) Wheel {
    return .{ .elapsed_ticks = elapsed_ticks };
}

fn levelFor(elapsed_ticks: u64, when_tick: u64) u6 {
    // Wheel times in the next top-level period (possible only near the end of the range) go
    // to the top level; `nextExpiration` rolls their slot into the next period.
    const masked: u64 = @min((elapsed_ticks ^ when_tick) | (slots_per_level - 1), range_max_ticks - 1);
    const significant: u6 = @intCast(63 - @clz(masked));
    const level = significant / slot_bits;
    assert(level < levels);
    return level;
}

fn slotFor(when_tick: u64, level: u6) u6 {
    return @truncate(when_tick >> (level * slot_bits));
}

/// Inserts `entry` with `deadline_tick`, which must be later than `elapsed_ticks` (an entry due
/// now is the caller's to fire). Any deadline is allowed: beyond the range, the entry is
/// re-inserted as time approaches it.
pub fn insert(self: *Wheel, entry: *Entry, deadline_tick: u64) void {
    assert(!entry.linked);
    assert(deadline_tick > self.elapsed_ticks);
    entry.deadline_tick = deadline_tick;
    self.link(entry);
    self.count += 1;
}

/// Puts `entry` (deadline after `elapsed`) into the slot of its wheel time.
fn link(self: *Wheel, entry: *Entry) void {
    assert(entry.deadline_tick > self.elapsed_ticks);
    const when_tick = @min(entry.deadline_tick, self.elapsed_ticks +| range_max_ticks);
    const level = levelFor(self.elapsed_ticks, when_tick);
    const slot = slotFor(when_tick, level);
    const table = &self.level_table[level];
    entry.level = level;
    entry.slot = slot;
    pushFront(&table.heads[slot], entry);
    table.occupied |= @as(u64, 1) << slot;
}

fn pushFront(head: *?*Entry, entry: *Entry) void {
    entry.prev = null;
    entry.next = head.*;
    if (head.*) |first| first.prev = entry;
    head.* = entry;
    entry.linked = true;
}

pub fn remove(self: *Wheel, entry: *Entry) void {
    assert(entry.linked);
    self.unlink(entry);
    self.count -= 1;
}

fn unlink(self: *Wheel, entry: *Entry) void {
    const head: *?*Entry = if (entry.level == pending_level)
        &self.pending
    else
        &self.level_table[entry.level].heads[entry.slot];
    if (entry.prev) |prev| prev.next = entry.next else {
        assert(head.* == entry);
        head.* = entry.next;
    }
    if (entry.next) |next| next.prev = entry.prev;
    if (entry.level != pending_level and head.* == null) {
        self.level_table[entry.level].occupied &= ~(@as(u64, 1) << @intCast(entry.slot));
    }
    entry.prev = null;
    entry.next = null;
    entry.linked = false;
}

pub const Expiration = struct { level: u6, slot: u6, deadline_tick: u64 };

/// The earliest occupied slot, or null when no slot is occupied (pending entries aside).
pub fn nextExpiration(self: *const Wheel) ?Expiration {
    var best: ?Expiration = null;
    for (0..levels) |index| {
        const level: u6 = @intCast(index);
        const occupied = self.level_table[level].occupied;
        if (occupied == 0) continue;
        const shift: u6 = level * slot_bits;
        const slot_width = @as(u64, 1) << shift;
        const period: u64 = slot_width * slots_per_level;
        const current: u6 = slotFor(self.elapsed_ticks, level);
        const period_start = self.elapsed_ticks & ~(period - 1);
        // Slots after the current one belong to the current period. Slots at or before it can
        // only hold wheel times of the next period (clamped far deadlines at the top level,
        // see the module comment): they expire one period later, after every later slot.
        const later = occupied & std.math.shl(u64, ~@as(u64, 0), @as(u7, current) + 1);
        const candidate: Expiration = if (later != 0) blk: {
            const slot: u6 = @intCast(@ctz(later));
            break :blk .{ .level = level, .slot = slot, .deadline_tick = period_start + @as(u64, slot) * slot_width };
        } else blk: {
            assert(level == levels - 1);
            const slot: u6 = @intCast(@ctz(occupied));
            break :blk .{ .level = level, .slot = slot, .deadline_tick = period_start +| period +| @as(u64, slot) * slot_width };
        };
        assert(candidate.deadline_tick > self.elapsed_ticks);
        if (best == null or candidate.deadline_tick < best.?.deadline_tick) best = candidate;
    }
    return best;
}

/// When `advance` must next be called: `elapsed_ticks` while entries are pending, otherwise the
/// earliest occupied slot (exact for level 0, a lower bound otherwise — good enough to decide
/// how long to sleep: waking at a slot start cascades and re-arms), or null when empty.
pub fn nextDeadline(self: *const Wheel) ?u64 {
    if (self.pending != null) return self.elapsed_ticks;
    const expiration = self.nextExpiration() orelse return null;
    return expiration.deadline_tick;
}

/// Advances to `now_tick`, appending every entry due at or before it to `due` (unlinked, in no
/// particular order). Stops early, returning false, if `due` is full; call again to continue.
pub fn advance(self: *Wheel, now_tick: u64, due: *DueList) bool {
    while (true) {
        while (self.pending) |entry| {
            if (due.isFull()) return false;
            self.remove(entry);
            due.append(entry);
        }
        const expiration = self.nextExpiration() orelse break;
        if (expiration.deadline_tick > now_tick) break;
        self.elapsed_ticks = expiration.deadline_tick;
        self.expireSlot(expiration);
    }
    if (now_tick > self.elapsed_ticks) self.elapsed_ticks = now_tick;
    return true;
}

/// Time has reached `expiration`'s slot: empties it, moving due entries to `pending` and
/// re-inserting the others relative to the new `elapsed_ticks`.
fn expireSlot(self: *Wheel, expiration: Expiration) void {
    const table = &self.level_table[expiration.level];
    var list = table.heads[expiration.slot];
    table.heads[expiration.slot] = null;
    table.occupied &= ~(@as(u64, 1) << expiration.slot);
    var moved: usize = 0;
    while (list) |entry| : (moved += 1) {
        assert(moved < self.count); // Bounded by the entries in the wheel.
        list = entry.next;
        if (entry.deadline_tick <= self.elapsed_ticks) {
            entry.level = pending_level;
            pushFront(&self.pending, entry);
        } else {
            self.link(entry);
            // Down a level, or (a deadline beyond the range) again at the top in a later slot.
            assert(entry.level < expiration.level or entry.level == levels - 1);
            assert(entry.level != expiration.level or entry.slot != expiration.slot);
        }
    }
}

/// A bounded batch of due entries (fired outside the driver's lock).
pub const DueList = struct {
    pub const capacity_max = 64;
    entries: [capacity_max]*Entry = undefined,
    len: usize = 0,

    pub fn isFull(self: *const DueList) bool {
        return self.len == capacity_max;
    }

    fn append(self: *DueList, entry: *Entry) void {
        assert(!self.isFull());
        self.entries[self.len] = entry;
        self.len += 1;
    }

    pub fn slice(self: *DueList) []*Entry {
        return self.entries[0..self.len];
    }
};

/// Unlinks and returns any one entry, or null when the wheel is empty (shutdown drains it).
pub fn popAny(self: *Wheel) ?*Entry {
    if (self.pending) |entry| {
        self.remove(entry);
        return entry;
    }
    for (&self.level_table) |*table| {
        if (table.occupied == 0) continue;
        const slot: u6 = @intCast(@ctz(table.occupied));
        const entry = table.heads[slot].?;
        self.remove(entry);
        return entry;
    }
    assert(self.count == 0);
    return null;
}

// -- tests -------------------------------------------------------------------------------

fn drain(wheel: *Wheel, now_tick: u64, out: *std.ArrayList(u64)) !void {
    while (true) {
        var due = DueList{};
        const finished = wheel.advance(now_tick, &due);
        for (due.slice()) |entry| try out.append(std.testing.allocator, entry.deadline_tick);
        if (finished) break;
    }
}

test "entries expire on their tick, across levels" {
    var wheel = Wheel.init(0);
    const deadlines = [_]u64{ 1, 2, 63, 64, 65, 100, 4095, 4096, 4097, 300_000, 5_000_000 };
    var entries: [deadlines.len]Entry = @splat(.{});
    for (&entries, deadlines) |*e, d| wheel.insert(e, d);
    try std.testing.expectEqual(deadlines.len, wheel.count);

    var fired: std.ArrayList(u64) = .empty;
    defer fired.deinit(std.testing.allocator);
    for (deadlines) |d| {
        try drain(&wheel, d - 1, &fired);
        try std.testing.expectEqual(@as(usize, std.mem.indexOfScalar(u64, &deadlines, d).?), fired.items.len);
        try drain(&wheel, d, &fired);
        try std.testing.expectEqual(d, fired.items[fired.items.len - 1]);
    }
    try std.testing.expectEqual(@as(usize, 0), wheel.count);
    try std.testing.expect(wheel.nextExpiration() == null);
}

test "a big jump fires everything due, in batches, and keeps the rest" {
    var wheel = Wheel.init(1000);
    var entries: [200]Entry = @splat(.{});
    for (&entries, 0..) |*e, i| wheel.insert(e, 1001 + i * 37);
    var fired: std.ArrayList(u64) = .empty;
    defer fired.deinit(std.testing.allocator);
    try drain(&wheel, 1001 + 150 * 37, &fired);
    try std.testing.expectEqual(@as(usize, 151), fired.items.len);
    for (fired.items) |d| try std.testing.expect(d <= 1001 + 150 * 37);
    try std.testing.expectEqual(@as(usize, 49), wheel.count);
    wheel.remove(&entries[199]);
    try std.testing.expectEqual(@as(usize, 48), wheel.count);
}

test "a deadline of sleep(maxInt) neither spins the wheel nor delays near ones, and never fires" {
    var wheel = Wheel.init(1000);
    var far = Entry{};
    var near = Entry{};
    wheel.insert(&far, std.math.maxInt(u64) / 2); // e.g. sleep(maxInt): kept exactly
    try std.testing.expectEqual(@as(u64, std.math.maxInt(u64) / 2), far.deadline_tick);
    try std.testing.expect(wheel.nextDeadline().? > 1000);
    wheel.insert(&near, 1005);
    var fired: std.ArrayList(u64) = .empty;
    defer fired.deinit(std.testing.allocator);
    try drain(&wheel, 1005, &fired); // Another timer firing must not touch the far one.
    try std.testing.expectEqualSlices(u64, &.{1005}, fired.items);
    // Ten wheel ranges (~1.4 years) in steps of 2^33 ticks (~6.5 days): re-inserted, never
    // handed out.
    var now: u64 = 1005;
    while (now < 10 * range_max_ticks) {
        now += @as(u64, 1) << 33;
        try drain(&wheel, now, &fired);
        try std.testing.expectEqual(@as(usize, 1), fired.items.len);
        try std.testing.expect(wheel.nextDeadline().? > now);
        try std.testing.expect(far.linked and far.level == levels - 1);
    }
    wheel.remove(&far);
    try std.testing.expectEqual(@as(usize, 0), wheel.count);
}

test "random deadlines fire in time and never early" {
    const ampere_testing = @import("../testing.zig");
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("wheel random deadlines", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const random = prng.random();
    var wheel = Wheel.init(random.int(u32));
    var entries: [500]Entry = @splat(.{});
    const start = wheel.elapsed_ticks;
    for (&entries) |*e| wheel.insert(e, start + 1 + random.uintLessThan(u64, 10_000_000));
    var now = start;
    var fired_total: usize = 0;
    while (wheel.count > 0) {
        now += 1 + random.uintLessThan(u64, 50_000);
        var due = DueList{};
        while (true) {
            due.len = 0;
            const finished = wheel.advance(now, &due);
            for (due.slice()) |entry| try std.testing.expect(entry.deadline_tick <= now);
            fired_total += due.len;
            if (finished) break;
        }
        if (wheel.nextDeadline()) |next| try std.testing.expect(next > now);
    }
    try std.testing.expectEqual(entries.len, fired_total);
}

/// Ticks in a day (exact: 86_400 s is a multiple of 2^16 ns).
const day_ticks: u64 = std.time.ns_per_day / tick_ns;
comptime {
    assert(std.time.ns_per_day % tick_ns == 0);
}

test "a deadline beyond the wheel's range (3 years) never fires early and fires on its tick" {
    const year_ticks: u64 = 365 * day_ticks;
    const start: u64 = 1000;
    const deadline = start + 3 * year_ticks;
    try std.testing.expect(deadline - start > range_max_ticks);
    var fired: std.ArrayList(u64) = .empty;
    defer fired.deinit(std.testing.allocator);

    // Coarse steps (2^30 ticks, 19.5 h), as a long-running process would advance.
    var coarse = Wheel.init(start);
    var far = Entry{};
    coarse.insert(&far, deadline);
    var now = start;
    while (now < deadline - 1) {
        now = @min(deadline - 1, now + (@as(u64, 1) << 30));
        try drain(&coarse, now, &fired);
        try std.testing.expectEqual(@as(usize, 0), fired.items.len);
        try std.testing.expect(coarse.nextDeadline().? > now);
    }
    try drain(&coarse, deadline, &fired);
    try std.testing.expectEqualSlices(u64, &.{deadline}, fired.items);

    // Jumping from one expiration to the next, as a driver sleeping until `nextDeadline` does:
    // about one jump per wheel range (3 years is 21 ranges; each re-inserts at the top level),
    // then one per level on the way down.
    fired.clearRetainingCapacity();
    var jumping = Wheel.init(start);
    var far_again = Entry{};
    jumping.insert(&far_again, deadline);
    const ranges = (deadline - start) / range_max_ticks;
    try std.testing.expectEqual(@as(u64, 21), ranges);
    var jumps: u32 = 0;
    while (fired.items.len == 0) : (jumps += 1) {
        try std.testing.expect(jumps < ranges + 2 * levels);
        const next = jumping.nextDeadline().?;
        try std.testing.expect(next > jumping.elapsed_ticks and next <= deadline);
        try drain(&jumping, next, &fired);
    }
    try std.testing.expectEqualSlices(u64, &.{deadline}, fired.items);
    try std.testing.expectEqual(@as(usize, 0), jumping.count);
}

test "more than a batch due at one higher-level slot start: all fire on time" {
    var wheel = Wheel.init(0);
    var entries: [100]Entry = @splat(.{});
    for (&entries) |*e| wheel.insert(e, 64); // Level 1, slot 1.
    var due = DueList{};
    try std.testing.expect(!wheel.advance(64, &due));
    try std.testing.expectEqual(@as(usize, DueList.capacity_max), due.len);
    for (due.slice()) |entry| try std.testing.expectEqual(@as(u64, 64), entry.deadline_tick);
    // The rest is due now, not a level-1 period (64 × 64 ticks) later.
    try std.testing.expectEqual(@as(?u64, 64), wheel.nextDeadline());
    var later = Entry{};
    wheel.insert(&later, 70);
    // One of the rest is cancelled while it waits for the next batch.
    const cancelled = for (&entries) |*e| {
        if (e.linked) break e;
    } else unreachable;
    wheel.remove(cancelled);
    due.len = 0;
    try std.testing.expect(wheel.advance(64, &due));
    try std.testing.expectEqual(@as(usize, 100 - DueList.capacity_max - 1), due.len);
    for (&entries) |*e| try std.testing.expect(!e.linked);
    try std.testing.expectEqual(@as(usize, 1), wheel.count);
    try std.testing.expectEqual(@as(?u64, 70), wheel.nextDeadline());
}

test "random clustered and far deadlines: after each advance exactly the due entries were handed out" {
    const ampere_testing = @import("../testing.zig");
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("wheel clustered and far deadlines", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const random = prng.random();
    var wheel = Wheel.init(random.int(u32));
    const start = wheel.elapsed_ticks;
    var entries: [600]Entry = @splat(.{});
    var deadlines: [entries.len]u64 = undefined;
    for (&entries, &deadlines, 0..) |*e, *d, i| {
        d.* = start + 1 + switch (i % 3) {
            0 => random.uintLessThan(u64, 64) * 4096, // Clusters far above one batch.
            1 => random.uintLessThan(u64, 3 * range_max_ticks), // Beyond the range.
            else => random.uintLessThan(u64, 1 << 20),
        };
        wheel.insert(e, d.*);
    }
    var now = start;
    var handed_out: usize = 0;
    var steps: u32 = 0;
    while (wheel.count > 0) : (steps += 1) {
        try std.testing.expect(steps < 100_000);
        // Small steps, jumps to the next deadline, and big jumps.
        now = switch (random.uintLessThan(u8, 3)) {
            0 => now + 1 + random.uintLessThan(u64, 5_000),
            1 => @max(now, wheel.nextDeadline().?),
            else => now + random.uintLessThan(u64, 1 << 34),
        };
        while (true) {
            var due = DueList{};
            const finished = wheel.advance(now, &due);
            for (due.slice()) |entry| try std.testing.expect(entry.deadline_tick <= now);
            handed_out += due.len;
            if (finished) break;
        }
        var due_total: usize = 0;
        for (deadlines) |d| due_total += @intFromBool(d <= now);
        try std.testing.expectEqual(due_total, handed_out);
        if (wheel.nextDeadline()) |next| try std.testing.expect(next > now);
    }
    try std.testing.expectEqual(entries.len, handed_out);
}

test "a far timer in the top level's wrap slot does not hold back later top-level slots" {
    // sleep(maxInt) at tick 1000 sits in the top level's current slot (next period); a 25-day
    // timer sits in a later top-level slot of the current period and must fire on its day.
    var wheel = Wheel.init(1000);
    var far = Entry{};
    wheel.insert(&far, std.math.maxInt(u64) / 2);
    var month = Entry{};
    const month_deadline: u64 = 1000 + 25 * day_ticks;
    wheel.insert(&month, month_deadline);
    try std.testing.expect(month.level == levels - 1 and far.level == levels - 1 and month.slot > far.slot);
    try std.testing.expect(wheel.nextDeadline().? <= month_deadline);
    var fired: std.ArrayList(u64) = .empty;
    defer fired.deinit(std.testing.allocator);
    try drain(&wheel, month_deadline, &fired);
    try std.testing.expectEqualSlices(u64, &.{month_deadline}, fired.items);
}

test "popAny drains entries waiting in slots and on the pending list" {
    var wheel = Wheel.init(0);
    var entries: [100]Entry = @splat(.{});
    for (&entries) |*e| wheel.insert(e, 64);
    var far = Entry{};
    wheel.insert(&far, 1 << 40);
    var due = DueList{};
    try std.testing.expect(!wheel.advance(64, &due)); // 36 left pending.
    var popped: usize = 0;
    while (wheel.popAny()) |entry| : (popped += 1) try std.testing.expect(!entry.linked);
    try std.testing.expectEqual(@as(usize, 100 - DueList.capacity_max + 1), popped);
    try std.testing.expectEqual(@as(usize, 0), wheel.count);
    try std.testing.expect(wheel.nextDeadline() == null);
}

test "the tick and the range in real time are what the module comment says" {
    try std.testing.expectEqual(@as(u64, 65_536), tick_ns);
    // Level 0 spans 64 ticks (4.19 ms), level 1 4096 ticks (268 ms).
    try std.testing.expectEqual(@as(u64, 4_194_304), slots_per_level * tick_ns);
    try std.testing.expectEqual(@as(u64, 268_435_456), @as(u64, slots_per_level) * slots_per_level * tick_ns);
    // The top level: 64^6 ticks, about 52 days (52.12); its slots 64^5 ticks, about 19.5 h.
    const range_ns = (range_max_ticks + 1) * tick_ns;
    try std.testing.expect(range_ns > 52 * std.time.ns_per_day and range_ns < 53 * std.time.ns_per_day);
    const top_slot_ns = (range_max_ticks + 1) / slots_per_level * tick_ns;
    try std.testing.expect(top_slot_ns > 19 * std.time.ns_per_hour and top_slot_ns < 20 * std.time.ns_per_hour);
    // A 10 ms deadline sits at level 1 and cascades to level 0 once before it fires.
    var wheel = Wheel.init(0);
    var entry = Entry{};
    const deadline = std.math.divCeil(u64, 10 * std.time.ns_per_ms, tick_ns) catch unreachable;
    wheel.insert(&entry, deadline);
    try std.testing.expectEqual(@as(u8, 1), entry.level);
    var due = DueList{};
    try std.testing.expect(wheel.advance(wheel.nextDeadline().?, &due));
    try std.testing.expect(entry.linked and entry.level == 0 and due.len == 0);
    try std.testing.expectEqual(@as(?u64, deadline), wheel.nextDeadline());
    try std.testing.expect(wheel.advance(deadline, &due));
    try std.testing.expectEqual(@as(usize, 1), due.len);
}
