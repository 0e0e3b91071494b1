//! Small pieces shared by the channels: cache-line padding, bounded spinning, copying a value
//! through atomic words (for the seqlocks of Broadcast and Watch), the "yield now" helper, and
//! for tests only: a hook that injects an action between a failed check and the waiter
//! registration, and `pollWith` (poll a future once with a given waker).

const std = @import("std");
const builtin = @import("builtin");
const future = @import("../future.zig");
const budget = @import("../budget.zig");
const Waker = @import("../Waker.zig");

/// `V` alone on its own cache line(s): fields that producers and consumers write on
/// different threads are wrapped in this so they never share a line.
pub fn Padded(comptime V: type) type {
    return struct {
        value: V align(std.atomic.cache_line),
    };
}

/// Exponential spinning for waits on another thread's short critical section (a few
/// instructions between two atomic operations). `spin` only spins; `snooze` spins and then
/// yields the OS thread. `isCompleted` bounds waits that have a fallback.
pub const Backoff = struct {
    step: u32 = 0,

    const spin_limit = 6;
    const yield_limit = 10;

    pub fn spin(self: *Backoff) void {
        const shift: u5 = @intCast(@min(self.step, spin_limit));
        for (0..(@as(u32, 1) << shift)) |_| std.atomic.spinLoopHint();
        if (self.step <= spin_limit) self.step += 1;
    }

    pub fn snooze(self: *Backoff) void {
        if (self.step <= spin_limit) {
            self.spin();
            return;
        }
        std.Thread.yield() catch {};
        if (self.step <= yield_limit) self.step += 1;
    }

    pub fn isCompleted(self: *const Backoff) bool {
        return self.step > yield_limit;
    }
};

/// Returns pending after arranging an immediate re-poll: for async paths that found another
/// thread in the middle of an operation (between claiming a position and publishing it) and
/// may not sleep on it, because that thread's wake-up check could precede their registration.
pub fn yieldNow(cx: *future.Context, comptime Output: type) future.Poll(Output) {
    budget.refund();
    cx.waker().wakeByRef();
    return .pending;
}

/// A value of type `T` stored as machine words accessed atomically, so that a seqlock reader
/// may copy it while a writer overwrites it without a data race (the copy is then discarded
/// because the sequence number changed). Any `T` works; padding bytes are copied as they are.
pub fn AtomicWords(comptime T: type) type {
    const word_bytes = @sizeOf(usize);
    const word_count = (@sizeOf(T) + word_bytes - 1) / word_bytes;
    return struct {
        const Self = @This();
        words: [word_count]std.atomic.Value(usize),

        pub fn init(value: T) Self {
            var self: Self = undefined;
            self.store(value, .monotonic);
            return self;
        }

        pub fn store(self: *Self, value: T, comptime order: std.builtin.AtomicOrder) void {
            var buffer: [word_count]usize = undefined;
            @memcpy(std.mem.sliceAsBytes(&buffer)[0..@sizeOf(T)], std.mem.asBytes(&value));
            for (&self.words, buffer) |*word, bits| word.store(bits, order);
        }

        pub fn load(self: *const Self, comptime order: std.builtin.AtomicOrder) T {
            var buffer: [word_count]usize = undefined;
            for (&buffer, &self.words) |*bits, *word| bits.* = word.load(order);
            var value: T = undefined;
            @memcpy(std.mem.asBytes(&value), std.mem.sliceAsBytes(&buffer)[0..@sizeOf(T)]);
            return value;
        }
    };
}

/// Test hook: an action run once, on the thread that set it, right after an async path found
/// it must wait and before it registers its waiter. Tests use it to make the other side act
/// exactly inside the check-then-register window (the lost-wake-up interleaving). Compiled
/// out of non-test builds.
pub const hook = struct {
    pub const Action = struct {
        context: *anyopaque,
        run: *const fn (context: *anyopaque) void,
    };

    threadlocal var before_register: ?Action = null;

    pub fn set(action: Action) void {
        if (!builtin.is_test) @compileError("test hook used outside tests");
        before_register = action;
    }

    pub fn isSet() bool {
        return before_register != null;
    }

    pub inline fn beforeRegister() void {
        if (!builtin.is_test) return;
        if (before_register) |action| {
            before_register = null;
            action.run(action.context);
        }
    }
};

/// Test helper: polls the future `f` (a pointer) once with `waker`. Compiled out of non-test
/// builds.
pub fn pollWith(f: anytype, waker: *const Waker) future.Poll(@TypeOf(f.*).Output) {
    if (!builtin.is_test) @compileError("test helper used outside tests");
    var cx = future.Context.init(waker);
    return f.poll(&cx);
}

test "atomic words round-trip odd-sized values" {
    const Odd = struct { a: u8, b: u64, c: [5]u8 };
    var words = AtomicWords(Odd).init(.{ .a = 1, .b = 2, .c = .{ 3, 4, 5, 6, 7 } });
    const value = words.load(.acquire);
    try std.testing.expectEqual(@as(u8, 1), value.a);
    try std.testing.expectEqual(@as(u64, 2), value.b);
    try std.testing.expectEqualSlices(u8, &.{ 3, 4, 5, 6, 7 }, &value.c);
    words.store(.{ .a = 9, .b = 8, .c = .{ 7, 6, 5, 4, 3 } }, .release);
    try std.testing.expectEqual(@as(u64, 8), words.load(.acquire).b);
    var empty = AtomicWords(void).init({});
    empty.store({}, .release);
}

test "backoff completes after a bounded number of steps" {
    var backoff = Backoff{};
    var steps: u32 = 0;
    while (!backoff.isCompleted()) : (steps += 1) backoff.snooze();
    try std.testing.expect(steps <= Backoff.yield_limit + 1);
}

test "padded values own their cache line" {
    try std.testing.expect(@sizeOf(Padded(u64)) >= std.atomic.cache_line);
    try std.testing.expectEqual(@as(usize, std.atomic.cache_line), @alignOf(Padded(u8)));
}
