//! Combinators over futures: `join` (all of a tuple), `select` (the first of a tuple; the
//! others are cancelled) and `joinAll` (all of a slice). Children live inline in the
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
    var enum_fields: [types.len]std.builtin.Type.EnumField = undefined;
    var union_fields: [types.len]std.builtin.Type.UnionField = undefined;
    for (types, 0..) |T, index| {
        const name = std.fmt.comptimePrint("{d}", .{index});
        enum_fields[index] = .{ .name = name, .value = index };
        union_fields[index] = .{ .name = name, .type = T, .alignment = @alignOf(T) };
    }
    const Tag = @Type(.{ .@"enum" = .{
        .tag_type = std.math.IntFittingRange(0, types.len),
        .fields = &enum_fields,
        .decls = &.{},
        .is_exhaustive = true,
    } });
    return @Type(.{ .@"union" = .{
        .layout = .auto,
        .tag_type = Tag,
        .fields = &union_fields,
        .decls = &.{},
    } });
}

/// The first future of a tuple to finish (polled in order: biased towards earlier ones);
/// the others are cancelled. Output: `SelectOutput`, e.g. `.@"0"` carries the first's output.
pub fn Select(comptime Futures: type) type {
    const count = @typeInfo(Futures).@"struct".fields.len;
    const Output_ = SelectOutput(Futures);
    return struct {
        const Self = @This();
        pub const Output = Output_;
        futures: Futures,
        finished: bool = false,

        pub fn poll(self: *Self, cx: *Context) Poll(Output_) {
            std.debug.assert(!self.finished);
            inline for (0..count) |index| {
                switch (self.futures[index].poll(cx)) {
                    .ready => |value| {
                        self.finished = true;
                        inline for (0..count) |other| {
                            if (other != index) future.cancel(&self.futures[other]);
                        }
                        return .{ .ready = @unionInit(Output_, std.fmt.comptimePrint("{d}", .{index}), value) };
                    },
                    .pending => {},
                }
            }
            return .pending;
        }

        pub fn cancel(self: *Self) void {
            if (self.finished) return;
            self.finished = true;
            inline for (0..count) |index| future.cancel(&self.futures[index]);
        }
    };
}

pub fn select(futures: anytype) Select(@TypeOf(futures)) {
    return .{ .futures = futures };
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
            var index = self.first_pending;
            while (index < self.futures.len) : (index += 1) {
                if (self.results[index] != null) continue;
                switch (self.futures[index].poll(cx)) {
                    .ready => |value| {
                        self.results[index] = value;
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
