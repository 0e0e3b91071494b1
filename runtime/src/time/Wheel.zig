//! A hierarchical timing wheel: 6 levels of 64 slots, 1 ms ticks.
//!
//! Level `l` slots are 64^l ms wide, so level 0 covers the next 64 ms with 1 ms slots, level 1
//! the next ~4 s with 64 ms slots, ..., level 5 ~2.2 years. An entry goes to the level of the
//! highest 6-bit digit in which its deadline differs from `elapsed` (the wheel's current
//! time); its slot is that digit of the deadline. Inserting and removing are O(1) (intrusive
//! doubly-linked lists, one occupancy bitmap per level).
//!
//! Advancing: the next expiration is the earliest occupied slot over all levels. When time
//! reaches a level-0 slot, its entries are due. When it reaches the start of a higher-level
//! slot, the entries there are re-inserted relative to the new `elapsed`, which puts each of
//! them at a lower level ("cascading"), until they reach level 0 and expire on their exact
//! millisecond.
//!
//! Invariant: every occupied slot of level `l` starts after `elapsed` within the current
//! level-(l+1) period, because an entry whose deadline lies in a later period differs from
//! `elapsed` in a higher digit and therefore sits at a higher level — except at the top level,
//! where deadlines clamped to the wheel's range can fall into the next top-level period, in a
//! slot at or before the current one. So the next occupied slot of a level is found by
//! rotating its bitmap to the current slot and counting trailing zeros, and a top-level slot
//! that does not start after `elapsed` expires one period later.
//!
//! Not thread-safe: the timer driver owns it under its mutex.

const std = @import("std");
const assert = std.debug.assert;

const Wheel = @This();

pub const levels: u6 = 6;
pub const slots_per_level: u7 = 64;
const slot_bits: u6 = 6;
/// Deadlines further than this from `elapsed` are clamped (about 2.2 years).
pub const range_max_ms: u64 = (@as(u64, 1) << (@as(u6, slot_bits) * levels)) - 1;

pub const Entry = struct {
    deadline_ms: u64 = 0,
    prev: ?*Entry = null,
    next: ?*Entry = null,
    level: u8 = 0,
    slot: u8 = 0,
    linked: bool = false,
};

const Level = struct {
    occupied: u64 = 0,
    heads: [slots_per_level]?*Entry = @splat(null),
};

elapsed_ms: u64 = 0,
level_table: [levels]Level = @splat(.{}),
count: usize = 0,

pub fn init(elapsed_ms: u64) Wheel {
    return .{ .elapsed_ms = elapsed_ms };
}

fn levelFor(elapsed_ms: u64, deadline_ms: u64) u6 {
    // Deadlines in the next top-level period (possible only near the end of the range) go
    // to the top level; `nextExpiration` rolls their slot into the next period.
    const masked: u64 = @min((elapsed_ms ^ deadline_ms) | (slots_per_level - 1), range_max_ms - 1);
    const significant: u6 = @intCast(63 - @clz(masked));
    const level = significant / slot_bits;
    assert(level < levels);
    return level;
}

fn slotFor(deadline_ms: u64, level: u6) u6 {
    return @truncate(deadline_ms >> (level * slot_bits));
}

/// Inserts `entry` with `deadline_ms`, which must be later than `elapsed_ms` (an entry due
/// now is the caller's to fire). Far deadlines are clamped to the wheel's range.
pub fn insert(self: *Wheel, entry: *Entry, deadline_ms: u64) void {
    assert(!entry.linked);
    assert(deadline_ms > self.elapsed_ms);
    entry.deadline_ms = @min(deadline_ms, self.elapsed_ms + range_max_ms);
    self.link(entry);
    self.count += 1;
}

fn link(self: *Wheel, entry: *Entry) void {
    const level = levelFor(self.elapsed_ms, entry.deadline_ms);
    const slot = slotFor(entry.deadline_ms, level);
    const table = &self.level_table[level];
    entry.level = level;
    entry.slot = slot;
    entry.prev = null;
    entry.next = table.heads[slot];
    if (table.heads[slot]) |head| head.prev = entry;
    table.heads[slot] = entry;
    table.occupied |= @as(u64, 1) << slot;
    entry.linked = true;
}

pub fn remove(self: *Wheel, entry: *Entry) void {
    assert(entry.linked);
    self.unlink(entry);
    self.count -= 1;
}

fn unlink(self: *Wheel, entry: *Entry) void {
    const table = &self.level_table[entry.level];
    if (entry.prev) |prev| prev.next = entry.next else {
        assert(table.heads[entry.slot] == entry);
        table.heads[entry.slot] = entry.next;
    }
    if (entry.next) |next| next.prev = entry.prev;
    if (table.heads[entry.slot] == null) table.occupied &= ~(@as(u64, 1) << @intCast(entry.slot));
    entry.prev = null;
    entry.next = null;
    entry.linked = false;
}

pub const Expiration = struct { level: u6, slot: u6, deadline_ms: u64 };

/// The earliest occupied slot, or null when the wheel is empty.
pub fn nextExpiration(self: *const Wheel) ?Expiration {
    var best: ?Expiration = null;
    for (0..levels) |index| {
        const level: u6 = @intCast(index);
        const occupied = self.level_table[level].occupied;
        if (occupied == 0) continue;
        const shift: u6 = level * slot_bits;
        const slot_width = @as(u64, 1) << shift;
        const period: u64 = slot_width * slots_per_level;
        const current: u6 = slotFor(self.elapsed_ms, level);
        const distance: u6 = @intCast(@ctz(std.math.rotr(u64, occupied, current)));
        const slot: u6 = current +% distance;
        const period_start = self.elapsed_ms & ~(period - 1);
        var deadline = period_start + @as(u64, slot) * slot_width;
        // A slot at or before the current one can only hold entries of the next period
        // (clamped far deadlines, see the module comment): it expires one period later.
        if (deadline <= self.elapsed_ms and level > 0) deadline += period;
        const candidate = Expiration{ .level = level, .slot = slot, .deadline_ms = @max(deadline, self.elapsed_ms) };
        if (best == null or candidate.deadline_ms < best.?.deadline_ms) best = candidate;
    }
    return best;
}

/// The earliest deadline of any entry, in ms (exact for level 0, a lower bound otherwise —
/// good enough to decide how long to sleep: waking at a slot start cascades and re-arms).
pub fn nextDeadline(self: *const Wheel) ?u64 {
    const expiration = self.nextExpiration() orelse return null;
    return expiration.deadline_ms;
}

/// Advances to `now_ms`, appending every entry due at or before it to `due` (unlinked, in no
/// particular order). Stops early, returning false, if `due` is full; call again to continue.
pub fn advance(self: *Wheel, now_ms: u64, due: *DueList) bool {
    while (self.nextExpiration()) |expiration| {
        if (expiration.deadline_ms > now_ms) break;
        self.elapsed_ms = expiration.deadline_ms;
        const table = &self.level_table[expiration.level];
        while (table.heads[expiration.slot]) |entry| {
            if (entry.deadline_ms <= self.elapsed_ms) {
                if (due.isFull()) return false;
                self.unlink(entry);
                self.count -= 1;
                due.append(entry);
            } else {
                self.unlink(entry);
                self.link(entry); // Cascades to a lower level.
                assert(entry.level < expiration.level);
            }
        }
    }
    if (now_ms > self.elapsed_ms) self.elapsed_ms = now_ms;
    return true;
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

fn drain(wheel: *Wheel, now_ms: u64, out: *std.ArrayList(u64)) !void {
    while (true) {
        var due = DueList{};
        const finished = wheel.advance(now_ms, &due);
        for (due.slice()) |entry| try out.append(std.testing.allocator, entry.deadline_ms);
        if (finished) break;
    }
}

test "entries expire on their millisecond, across levels" {
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

test "a clamped far deadline neither spins the wheel nor fires early, and fires in the end" {
    var wheel = Wheel.init(1000);
    var far = Entry{};
    var near = Entry{};
    wheel.insert(&far, std.math.maxInt(u64) / 2); // e.g. sleep(maxInt): clamped
    const far_deadline = far.deadline_ms;
    try std.testing.expectEqual(@as(u64, 1000 + range_max_ms), far_deadline);
    try std.testing.expect(wheel.nextDeadline().? > 1000);
    wheel.insert(&near, 1005);
    var fired: std.ArrayList(u64) = .empty;
    defer fired.deinit(std.testing.allocator);
    try drain(&wheel, 1005, &fired); // Another timer firing must not touch the far one.
    try std.testing.expectEqualSlices(u64, &.{1005}, fired.items);
    var now: u64 = 1005;
    while (now < far_deadline - 1) {
        now = @min(far_deadline - 1, now + (@as(u64, 1) << 33));
        try drain(&wheel, now, &fired);
        try std.testing.expectEqual(@as(usize, 1), fired.items.len);
        try std.testing.expect(wheel.nextDeadline().? > now);
    }
    try drain(&wheel, far_deadline, &fired);
    try std.testing.expectEqualSlices(u64, &.{ 1005, far_deadline }, fired.items);
}

test "random deadlines fire in time and never early" {
    const ampere_testing = @import("../testing.zig");
    const seed = ampere_testing.seed();
    errdefer ampere_testing.reportSeed("wheel random deadlines", seed);
    var prng = std.Random.DefaultPrng.init(seed);
    const random = prng.random();
    var wheel = Wheel.init(random.int(u32));
    var entries: [500]Entry = @splat(.{});
    const start = wheel.elapsed_ms;
    for (&entries) |*e| wheel.insert(e, start + 1 + random.uintLessThan(u64, 10_000_000));
    var now = start;
    var fired_total: usize = 0;
    while (wheel.count > 0) {
        now += 1 + random.uintLessThan(u64, 50_000);
        var due = DueList{};
        while (true) {
            due.len = 0;
            const finished = wheel.advance(now, &due);
            for (due.slice()) |entry| try std.testing.expect(entry.deadline_ms <= now);
            fired_total += due.len;
            if (finished) break;
        }
        if (wheel.nextDeadline()) |next| try std.testing.expect(next > now);
    }
    try std.testing.expectEqual(entries.len, fired_total);
}
