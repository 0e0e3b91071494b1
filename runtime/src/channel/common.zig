//! Small pieces shared by the channels: cache-line padding, bounded spinning (and, past the
//! bound, sleeping), copying a value through atomic words (for the seqlocks of Broadcast and
//! Watch), the ownership rules of a value type (`Ownership`), the handle counts of a channel
//! whose shared state is freed by its last handle (`Handles`), the "yield now" helper, and for
//! tests only `pollWith` (poll a future once with a given waker). The lost-wake-up tests use
//! the runtime's one hook mechanism, `hook.zig` (point `channel_before_register`).

const std = @import("std");
const builtin = @import("builtin");
const assert = std.debug.assert;
const future = @import("../future.zig");
const budget = @import("../budget.zig");
const Waker = @import("../Waker.zig");
const os = @import("../os.zig");

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
///
/// `pause` is for the few synchronous waits that have no fallback (a synchronous send that
/// must wait for another sender's write to finish): it snoozes until `isCompleted`, and then
/// sleeps, 1 µs at first and twice as long each time up to `sleep_max_ns`, so that a peer that
/// was preempted inside its critical section gets the CPU instead of a thread that loops on
/// `Thread.yield`. Nobody wakes a sleeper (that would cost every send a sequentially
/// consistent store to find out whether someone sleeps); it re-checks when its sleep ends.
/// These waits need a peer preempted inside a window of a few instructions, so they are rare.
pub const Backoff = struct {
    step: u32 = 0,

    const spin_limit = 6;
    const yield_limit = 10;
    /// Longest single sleep of `pause`.
    pub const sleep_max_ns: u64 = 1_000_000;
    const sleep_first_ns: u64 = 1_000;

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

    /// Snoozes, and once the bound is reached sleeps (see the type comment). Returns the
    /// nanoseconds slept by this call (0 while still spinning or yielding).
    pub fn pause(self: *Backoff) u64 {
        if (!self.isCompleted()) {
            self.snooze();
            return 0;
        }
        const doublings: u6 = @intCast(@min(self.step - yield_limit - 1, 10));
        const sleep_ns = @min(sleep_first_ns << doublings, sleep_max_ns);
        os.sleepNs(sleep_ns);
        if (self.step < std.math.maxInt(u32)) self.step += 1;
        return sleep_ns;
    }
};

/// How a channel treats values of type `T`, decided at compile time.
///
/// - **Plain** data is copied bit for bit; every copy is independent (a pointer inside plain
///   data is shared, not owned).
/// - An **owned** value holds a resource that must be released exactly once: a single-item
///   pointer to a type with `clone` and `release` (or `deinit`) declarations, such as
///   `*RcBuffer`, or a struct, union or enum with `clone` and `deinit` declarations. `clone`
///   takes only the value and returns a new `T` (another reference, or a deep copy); `release`
///   / `deinit` takes only the value. Watch and Broadcast hand every receiver its own clone
///   and release the copy the channel keeps when it is replaced, evicted or left at the end;
///   every channel releases the values still buffered when its shared state is freed.
pub fn Ownership(comptime T: type) type {
    const kind = ownershipKind(T);
    return struct {
        pub const owned = kind != .plain;

        /// A new value the caller owns (for plain data: a copy).
        pub inline fn clone(value: *const T) T {
            return switch (kind) {
                .plain => value.*,
                .pointer => value.*.clone(),
                .value => value.clone(),
            };
        }

        /// Gives up `value` (for plain data: nothing).
        pub inline fn release(value: T) void {
            switch (kind) {
                .plain => {},
                .pointer => {
                    const Child = @typeInfo(T).pointer.child;
                    if (@hasDecl(Child, "release")) value.release() else value.deinit();
                },
                .value => {
                    var copy = value;
                    copy.deinit();
                },
            }
        }
    };
}

const OwnershipKind = enum { plain, pointer, value };

fn isContainer(comptime T: type) bool {
    return switch (@typeInfo(T)) {
        .@"struct", .@"union", .@"enum", .@"opaque" => true,
        else => false,
    };
}

fn ownershipKind(comptime T: type) OwnershipKind {
    switch (@typeInfo(T)) {
        .pointer => |info| {
            const Child = info.child;
            if (info.size != .one or !isContainer(Child)) return .plain;
            if (!@hasDecl(Child, "clone")) return .plain;
            if (!@hasDecl(Child, "release") and !@hasDecl(Child, "deinit")) return .plain;
            checkOneArgument(Child, "clone");
            checkOneArgument(Child, if (@hasDecl(Child, "release")) "release" else "deinit");
            return .pointer;
        },
        .@"struct", .@"union", .@"enum" => {
            if (!@hasDecl(T, "clone") or !@hasDecl(T, "deinit")) return .plain;
            checkOneArgument(T, "clone");
            checkOneArgument(T, "deinit");
            return .value;
        },
        else => return .plain,
    }
}

fn checkOneArgument(comptime Container: type, comptime name: []const u8) void {
    const Fn = @TypeOf(@field(Container, name));
    const info = @typeInfo(Fn);
    if (info != .@"fn" or info.@"fn".params.len != 1) {
        @compileError("channel value " ++ @typeName(Container) ++ "." ++ name ++
            " must take only the value (channels clone and release values without extra arguments)");
    }
}

/// The handle counts of a channel whose shared state lives on the heap and is freed by its
/// last handle (`Sender`s and `Receiver`s, like the two halves of Tokio's channels around
/// their `Arc`).
///
/// `senders` and `receivers` decide when a side is gone (the caller then closes the channel
/// while it still holds its own reference); `refs` counts every handle and decides when the
/// state is freed. Dropping a handle is therefore two steps: `dropSender`/`dropReceiver`
/// (close if it was the last of its side), then `release` (free if it was the last handle).
///
/// Orderings, as `Arc`: a new handle is made from an existing one, which keeps the state
/// alive, so increments are monotonic. Decrements are acq_rel: release orders this handle's
/// uses of the state before the decrement; the thread whose decrement reaches zero acquires
/// every earlier decrement (they form a release sequence), so all uses by other handles
/// happen before the close or the free it then performs.
pub const Handles = struct {
    senders: std.atomic.Value(usize),
    receivers: std.atomic.Value(usize),
    refs: std.atomic.Value(usize),

    /// Like `Arc`'s limit: far beyond any real use, catches leaks in loops.
    pub const count_max: usize = std.math.maxInt(isize);

    pub fn init(senders: usize, receivers: usize) Handles {
        return .{ .senders = .init(senders), .receivers = .init(receivers), .refs = .init(senders + receivers) };
    }

    pub fn addSender(self: *Handles) void {
        add(&self.senders);
        add(&self.refs);
    }

    /// A new receiver. Unlike a sender, a receiver may be added when none is left (Watch and
    /// Broadcast senders `subscribe`); the caller holds a handle, so `refs` is not zero.
    pub fn addReceiver(self: *Handles) void {
        // Monotonic: only counts; `send` reads the receiver count as a hint, like Tokio.
        const previous = self.receivers.fetchAdd(1, .monotonic);
        if (previous >= count_max) @panic("channel: receiver count overflow");
        add(&self.refs);
    }

    fn add(counter: *std.atomic.Value(usize)) void {
        // Monotonic: see the type comment.
        const previous = counter.fetchAdd(1, .monotonic);
        if (previous >= count_max) @panic("channel: handle count overflow");
        assert(previous > 0); // Cloned from a handle that was already gone.
    }

    /// True when this was the last sender: the caller closes the channel, then `release`s.
    pub fn dropSender(self: *Handles) bool {
        const previous = self.senders.fetchSub(1, .acq_rel);
        assert(previous > 0); // Sender deinitialised twice.
        return previous == 1;
    }

    /// True when this was the last receiver: the caller closes the channel, then `release`s.
    pub fn dropReceiver(self: *Handles) bool {
        const previous = self.receivers.fetchSub(1, .acq_rel);
        assert(previous > 0); // Receiver deinitialised twice.
        return previous == 1;
    }

    /// True when this was the last handle: the caller frees the shared state.
    pub fn release(self: *Handles) bool {
        const previous = self.refs.fetchSub(1, .acq_rel);
        assert(previous > 0);
        return previous == 1;
    }

    pub fn senderCount(self: *const Handles) usize {
        return self.senders.load(.monotonic);
    }

    pub fn receiverCount(self: *const Handles) usize {
        return self.receivers.load(.monotonic);
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

test "backoff pause sleeps only after the bound, and at most sleep_max_ns at a time" {
    var backoff = Backoff{};
    var slept_ns: u64 = 0;
    while (!backoff.isCompleted()) slept_ns += backoff.pause();
    try std.testing.expectEqual(@as(u64, 0), slept_ns);
    try std.testing.expect(backoff.pause() > 0);
    backoff.step = std.math.maxInt(u32) - 1;
    try std.testing.expectEqual(Backoff.sleep_max_ns, backoff.pause());
}

test "ownership is decided by the type" {
    const RcBuffer = @import("../RcBuffer.zig");
    const Counted = struct {
        count: *u32,
        pub fn clone(self: @This()) @This() {
            self.count.* += 1;
            return self;
        }
        pub fn deinit(self: *@This()) void {
            self.count.* -= 1;
        }
    };
    try std.testing.expect(!Ownership(u64).owned);
    try std.testing.expect(!Ownership([4]u64).owned);
    try std.testing.expect(!Ownership(*u64).owned);
    try std.testing.expect(!Ownership(struct { a: u32 }).owned);
    try std.testing.expect(Ownership(*RcBuffer).owned);
    try std.testing.expect(Ownership(Counted).owned);

    const buffer = try RcBuffer.init(std.testing.allocator, "x");
    const copy = Ownership(*RcBuffer).clone(&buffer);
    try std.testing.expectEqual(@as(usize, 2), buffer.refCount());
    Ownership(*RcBuffer).release(copy);
    Ownership(*RcBuffer).release(buffer); // The testing allocator reports a leak otherwise.

    var live: u32 = 1;
    const value = Counted{ .count = &live };
    const second = Ownership(Counted).clone(&value);
    try std.testing.expectEqual(@as(u32, 2), live);
    Ownership(Counted).release(second);
    Ownership(Counted).release(value);
    try std.testing.expectEqual(@as(u32, 0), live);
}

test "handles: the last of a side and the last handle are reported once" {
    var handles = Handles.init(1, 1);
    handles.addSender();
    handles.addReceiver();
    try std.testing.expectEqual(@as(usize, 2), handles.senderCount());
    try std.testing.expect(!handles.dropSender());
    try std.testing.expect(!handles.release());
    try std.testing.expect(handles.dropSender());
    try std.testing.expect(!handles.release());
    try std.testing.expect(!handles.dropReceiver());
    try std.testing.expect(!handles.release());
    try std.testing.expect(handles.dropReceiver());
    try std.testing.expect(handles.release());
}

test "padded values own their cache line" {
    try std.testing.expect(@sizeOf(Padded(u64)) >= std.atomic.cache_line);
    try std.testing.expectEqual(@as(usize, std.atomic.cache_line), @alignOf(Padded(u8)));
}
