//! Combinators over futures: `join` (all of a tuple), `select` (the first of a tuple; the
//! others are cancelled; random start, or `selectBiased` in order) and `joinAll` (all of a
//! slice). Children live inline in the
//! combinator (no allocation) and are polled with the combinator's context, so whichever
//! child is woken wakes the task that awaits the combinator. A child is never polled after
//! it was ready; cancelling a combinator cancels its unfinished children.

const std = @import("std");
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;

fn outputTypes(comptime Futures: type) []const type {
    const fields = @typeInfo(Futures).@"struct".fields;
    var types: [fields.len]type = undefined;
    for (fields, 0..) |field, index| types[index] = future.OutputOf(field.type);
    const final = types;
    return &final;
}

/// All futures of a tuple; Output is the tuple of their outputs.
pub fn Join(comptime Futures: type) type {
    const count = @typeInfo(Futures).@"struct".fields.len;
    const Outputs = std.meta.Tuple(outputTypes(Futures));
    return struct {
        const Self = @This();
        pub const Output = Outputs;
        futures: Futures,
        outputs: Outputs = undefined,
        done: [count]bool = @splat(false),

        pub fn poll(self: *Self, cx: *Context) Poll(Outputs) {
            var all_done = true;
            inline for (0..count) |index| {
                if (!self.done[index]) {
                    switch (self.futures[index].poll(cx)) {
                        .ready => |value| {
                            self.outputs[index] = value;
                            self.done[index] = true;
                        },
                        .pending => all_done = false,
                    }
                }
            }
            if (all_done) std.debug.assert(std.mem.allEqual(bool, &self.done, true));
            return if (all_done) .{ .ready = self.outputs } else .pending;
        }

        pub fn cancel(self: *Self) void {
            inline for (0..count) |index| {
                if (!self.done[index]) future.cancel(&self.futures[index]);
                self.done[index] = true;
            }
        }
    };
}

pub fn join(futures: anytype) Join(@TypeOf(futures)) {
    return .{ .futures = futures };
}

/// The output of `select`: a union tagged by the index of the future that finished.
pub fn SelectOutput(comptime Futures: type) type {
    const types = outputTypes(Futures);
    const TagInt = std.math.IntFittingRange(0, types.len);
    var names: [types.len][]const u8 = undefined;
    var field_types: [types.len]type = undefined;
    for (types, 0..) |T, index| {
        names[index] = std.fmt.comptimePrint("{d}", .{index});
        field_types[index] = T;
    }
    const Tag = @Enum(TagInt, .exhaustive, &names, &std.simd.iota(TagInt, types.len));
    return @Union(.auto, Tag, &names, &field_types, &@splat(.{}));
}

/// The first future of a tuple to finish; the others are cancelled. Output: `SelectOutput`,
/// e.g. `.@"0"` carries the first's output.
///
/// Like Tokio's `select!`, every poll starts at a randomly chosen branch and goes round from
/// there, so when several branches are ready each is picked about equally often and a branch
/// that is always ready cannot starve the others. `selectBiased` (Tokio's `biased;`) polls in
/// tuple order instead: the earliest ready branch wins — for priorities (a shutdown signal
/// first) or when the order of polls matters. The random start comes from a per-thread
/// xorshift generator (`seedSelect` fixes it for a test).
pub fn Select(comptime Futures: type) type {
    return SelectFrom(Futures, .random);
}

/// `Select` that always polls in tuple order (see `Select`).
pub fn SelectBiased(comptime Futures: type) type {
    return SelectFrom(Futures, .first);
}

const SelectStart = enum { random, first };

fn SelectFrom(comptime Futures: type, comptime start_at: SelectStart) type {
    const count = @typeInfo(Futures).@"struct".fields.len;
    comptime std.debug.assert(count > 0);
    const Output_ = SelectOutput(Futures);
    return struct {
        const Self = @This();
        pub const Output = Output_;
        futures: Futures,
        finished: bool = false,

        pub fn poll(self: *Self, cx: *Context) Poll(Output_) {
            std.debug.assert(!self.finished);
            const start: usize = switch (start_at) {
                .random => randomBelow(count),
                .first => 0,
            };
            for (0..count) |offset| {
                const index = (start + offset) % count;
                const output = switch (index) {
                    inline 0...count - 1 => |branch| self.pollBranch(branch, cx),
                    else => unreachable,
                };
                if (output) |value| return .{ .ready = value };
            }
            return .pending;
        }

        /// Polls one branch; when it is ready, finishes the select (cancels the others).
        fn pollBranch(self: *Self, comptime index: usize, cx: *Context) ?Output_ {
            comptime std.debug.assert(index < count);
            std.debug.assert(!self.finished); // A finished select polls no branch again.
            switch (self.futures[index].poll(cx)) {
                .ready => |value| {
                    self.finished = true;
                    inline for (0..count) |other| {
                        if (other != index) future.cancel(&self.futures[other]);
                    }
                    return @unionInit(Output_, std.fmt.comptimePrint("{d}", .{index}), value);
                },
                .pending => return null,
            }
        }

        pub fn cancel(self: *Self) void {
            if (self.finished) return;
            self.finished = true;
            inline for (0..count) |index| future.cancel(&self.futures[index]);
        }
    };
}

/// The first of `futures` (a tuple) to finish, polled from a random branch (see `Select`).
pub fn select(futures: anytype) Select(@TypeOf(futures)) {
    return .{ .futures = futures };
}

/// The first of `futures` (a tuple) to finish, polled in order (see `Select`).
pub fn selectBiased(futures: anytype) SelectBiased(@TypeOf(futures)) {
    return .{ .futures = futures };
}

/// State of this thread's xorshift64* generator for `select`; 0 until first use.
threadlocal var select_random_state: u64 = 0;
/// Distinct seeds for threads that never called `seedSelect`.
var select_seed_counter = std.atomic.Value(u64).init(0);

/// Fixes this thread's `select` start sequence (for deterministic tests).
pub fn seedSelect(seed: u64) void {
    select_random_state = splitMix64(seed) | 1; // Never 0: xorshift's fixed point.
}

/// A number in `0..n`, from this thread's generator (a multiply-shift reduction: no division).
fn randomBelow(comptime n: usize) usize {
    comptime std.debug.assert(n > 0);
    if (n == 1) return 0;
    if (select_random_state == 0) {
        // Monotonic: only distinctness matters, not ordering.
        seedSelect(select_seed_counter.fetchAdd(1, .monotonic) ^ @as(u64, std.Thread.getCurrentId()));
    }
    var x = select_random_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    select_random_state = x;
    const r: u32 = @truncate((x *% 0x2545F4914F6CDD1D) >> 32);
    const result: usize = @intCast((@as(u64, r) * n) >> 32);
    std.debug.assert(result < n);
    return result;
}

fn splitMix64(seed: u64) u64 {
    var z = seed +% 0x9E3779B97F4A7C15;
    z = (z ^ (z >> 30)) *% 0xBF58476D1CE4E5B9;
    z = (z ^ (z >> 27)) *% 0x94D049BB133111EB;
    return z ^ (z >> 31);
}

/// All futures of a slice (of one type). `results[i]` receives future i's output; it also
/// records which are done, so it must start all-null and be as long as `futures`. Output:
/// void — read the results slice afterwards. Both slices must outlive the combinator.
pub fn JoinAll(comptime F: type) type {
    const T = future.OutputOf(F);
    return struct {
        const Self = @This();
        pub const Output = void;
        futures: []F,
        results: []?T,
        remaining: usize,
        /// Futures before this index are all done (skip them quickly).
        first_pending: usize = 0,

        pub fn poll(self: *Self, cx: *Context) Poll(void) {
            std.debug.assert(self.futures.len == self.results.len);
            std.debug.assert(self.remaining <= self.futures.len);
            var index = self.first_pending;
            while (index < self.futures.len) : (index += 1) {
                if (self.results[index] != null) continue;
                switch (self.futures[index].poll(cx)) {
                    .ready => |value| {
                        self.results[index] = value;
                        std.debug.assert(self.remaining > 0);
                        self.remaining -= 1;
                        if (index == self.first_pending) self.first_pending += 1;
                    },
                    .pending => {},
                }
            }
            return if (self.remaining == 0) .{ .ready = {} } else .pending;
        }

        pub fn cancel(self: *Self) void {
            for (self.futures, self.results) |*f, *result| {
                if (result.* == null) future.cancel(f);
            }
            self.remaining = 0;
        }
    };
}

/// The element type of a slice or of a pointer to an array.
fn ElementOf(comptime Pointer: type) type {
    const child = @typeInfo(Pointer).pointer;
    return switch (@typeInfo(child.child)) {
        .array => |array| array.child,
        else => if (child.size == .slice) child.child else @compileError("joinAll needs a slice or a pointer to an array"),
    };
}

pub fn joinAll(futures: anytype, results: []?future.OutputOf(ElementOf(@TypeOf(futures)))) JoinAll(ElementOf(@TypeOf(futures))) {
    const slice: []ElementOf(@TypeOf(futures)) = futures;
    std.debug.assert(slice.len == results.len);
    for (results) |result| std.debug.assert(result == null);
    return .{ .futures = slice, .results = results, .remaining = slice.len };
}

// -- tests -------------------------------------------------------------------------------

/// Ready after `polls_needed` polls; counts cancels.
const Countdown = struct {
    pub const Output = u32;
    polls_needed: u32,
    value: u32,
    cancelled: *u32,

    pub fn poll(self: *Countdown, cx: *Context) Poll(u32) {
        _ = cx;
        if (self.polls_needed == 0) return .{ .ready = self.value };
        self.polls_needed -= 1;
        return .pending;
    }

    pub fn cancel(self: *Countdown) void {
        self.cancelled.* += 1;
    }
};

test "join waits for all and never re-polls a finished child" {
    var cancels: u32 = 0;
    var j = join(.{
        Countdown{ .polls_needed = 0, .value = 1, .cancelled = &cancels },
        Countdown{ .polls_needed = 2, .value = 2, .cancelled = &cancels },
    });
    try std.testing.expect(future.pollOnce(&j) == .pending);
    try std.testing.expect(future.pollOnce(&j) == .pending);
    const out = future.pollOnce(&j).ready;
    try std.testing.expectEqual(@as(u32, 1), out[0]);
    try std.testing.expectEqual(@as(u32, 2), out[1]);
    j.cancel();
    try std.testing.expectEqual(@as(u32, 0), cancels);
}

test "select returns the first ready and cancels the rest" {
    var cancels: u32 = 0;
    var s = select(.{
        Countdown{ .polls_needed = 3, .value = 1, .cancelled = &cancels },
        Countdown{ .polls_needed = 1, .value = 2, .cancelled = &cancels },
    });
    try std.testing.expect(future.pollOnce(&s) == .pending);
    const out = future.pollOnce(&s).ready;
    try std.testing.expectEqual(@as(u32, 2), out.@"1");
    try std.testing.expectEqual(@as(u32, 1), cancels);
}

test "joinAll fills every result" {
    var cancels: u32 = 0;
    var futures = [_]Countdown{
        .{ .polls_needed = 2, .value = 10, .cancelled = &cancels },
        .{ .polls_needed = 0, .value = 11, .cancelled = &cancels },
        .{ .polls_needed = 1, .value = 12, .cancelled = &cancels },
    };
    var results: [3]?u32 = @splat(null);
    var all = joinAll(&futures, &results);
    try std.testing.expect(future.pollOnce(&all) == .pending);
    try std.testing.expect(future.pollOnce(&all) == .pending);
    try std.testing.expect(future.pollOnce(&all) == .ready);
    try std.testing.expectEqual([3]?u32{ 10, 11, 12 }, results);
}

/// Always ready with `value`.
const Ready = struct {
    pub const Output = u32;
    value: u32,

    pub fn poll(self: *Ready, cx: *Context) Poll(u32) {
        _ = cx;
        return .{ .ready = self.value };
    }
};

test "select with every branch ready picks each about equally often; selectBiased the first" {
    seedSelect(0x5e1ec7);
    const rounds = 1000;
    var picks: [3]u32 = .{ 0, 0, 0 };
    var values: [3]u32 = .{ 0, 1, 2 }; // Runtime values: a comptime-known tuple has comptime fields.
    _ = &values;
    for (0..rounds) |_| {
        var s = select(.{ Ready{ .value = values[0] }, Ready{ .value = values[1] }, Ready{ .value = values[2] } });
        switch (future.pollOnce(&s).ready) {
            .@"0" => |v| picks[v] += 1,
            .@"1" => |v| picks[v] += 1,
            .@"2" => |v| picks[v] += 1,
        }
    }
    // Binomial(1000, 1/3): standard deviation ~15; 250..420 is more than 5 of them.
    for (picks) |count| try std.testing.expect(count >= 250 and count <= 420);

    for (0..100) |_| {
        var b = selectBiased(.{ Ready{ .value = values[0] }, Ready{ .value = values[1] }, Ready{ .value = values[2] } });
        try std.testing.expect(future.pollOnce(&b).ready == .@"0");
    }
}

test "select: a branch that becomes ready later still wins, and the rest are cancelled" {
    var cancels: u32 = 0;
    for (0..20) |_| {
        cancels = 0;
        var s = select(.{
            Countdown{ .polls_needed = 5, .value = 1, .cancelled = &cancels },
            Countdown{ .polls_needed = 2, .value = 2, .cancelled = &cancels },
            Countdown{ .polls_needed = 9, .value = 3, .cancelled = &cancels },
        });
        try std.testing.expect(future.pollOnce(&s) == .pending);
        try std.testing.expect(future.pollOnce(&s) == .pending);
        try std.testing.expectEqual(@as(u32, 2), future.pollOnce(&s).ready.@"1");
        try std.testing.expectEqual(@as(u32, 2), cancels);
        s.cancel(); // Finished: nothing more to cancel.
        try std.testing.expectEqual(@as(u32, 2), cancels);
    }
}
