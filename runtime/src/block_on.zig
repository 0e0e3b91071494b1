//! The thread executor: polls one future on the calling thread, parking between polls.
//!
//! The future's waker unparks this thread's `Parker`. Each poll runs with a fresh cooperative
//! budget, like a task poll, so a root future that spins on ready primitives yields (its own
//! wake makes the next park return at once).
//!
//! `Runtime.blockOn` waits for work it started (a reply, a joined task), so it spins before
//! each park — bounded, and backed off when spins stop paying (`SpinPolicy`, without the
//! workers' spinning slot) — and counts its parks and spins in the runtime's external metrics.

const std = @import("std");
const future = @import("future.zig");
const budget = @import("budget.zig");
const Parker = @import("Parker.zig");
const SpinPolicy = @import("scheduler/SpinPolicy.zig");
const Metrics = @import("scheduler/Metrics.zig");

/// Polls `f` (a pointer to a future) until it is ready and returns its output.
pub fn blockOnThread(f: anytype) @typeInfo(@TypeOf(f)).pointer.child.Output {
    var counters = Metrics.Counters{}; // Nobody reads them: no runtime.
    return blockOnThreadSpin(f, 0, .{ .counters = &counters, .owner = true });
}

/// `blockOnThread`, spinning up to `spin_ns` before each park per a `SpinPolicy` of its own;
/// parks and spins are counted in `recorder`.
pub fn blockOnThreadSpin(f: anytype, spin_ns: u64, recorder: Metrics.Recorder) @typeInfo(@TypeOf(f)).pointer.child.Output {
    const F = @typeInfo(@TypeOf(f)).pointer.child;
    _ = future.OutputOf(F);
    const parker = Parker.forCurrentThread();
    const waker = parker.waker();
    var cx = future.Context.init(&waker);
    var policy = SpinPolicy.init(spin_ns);
    while (true) {
        const scope = budget.Scope.begin(budget.units_per_poll);
        const result = f.poll(&cx);
        scope.end();
        switch (result) {
            .ready => |value| return value,
            .pending => {
                recorder.count(.blockon_parks, 1);
                // This thread waits for work it started: no spinning slot needed.
                policy.expectWakeup();
                policy.park(parker, policy.plan().spin_ns, recorder);
            },
        }
    }
}

test "blockOnThread returns the output of a ready future" {
    var f = future.ready(@as(u64, 99));
    try std.testing.expectEqual(@as(u64, 99), blockOnThread(&f));
}

test "blockOnThread parks until another thread wakes the future" {
    const Flag = struct {
        const Self = @This();
        pub const Output = u32;
        set: std.atomic.Value(u32) = .init(0),
        waker: std.atomic.Value(?*const anyopaque) = .init(null),
        registered: @import("Waker.zig") = undefined,
        registered_flag: std.atomic.Value(bool) = .init(false),

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(u32) {
            if (!self.registered_flag.load(.acquire)) {
                self.registered = cx.waker().clone();
                self.registered_flag.store(true, .release);
            }
            const value = self.set.load(.acquire);
            return if (value != 0) .{ .ready = value } else .pending;
        }
    };
    var flag = Flag{};
    const Setter = struct {
        fn run(f: *Flag) void {
            while (!f.registered_flag.load(.acquire)) std.Thread.yield() catch {};
            std.Thread.sleep(1 * std.time.ns_per_ms);
            f.set.store(7, .release);
            f.registered.wake();
        }
    };
    const t = try std.Thread.spawn(.{}, Setter.run, .{&flag});
    defer t.join();
    try std.testing.expectEqual(@as(u32, 7), blockOnThread(&flag));
}
