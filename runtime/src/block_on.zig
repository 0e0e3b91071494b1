//! The thread executor: polls one future on the calling thread, parking between polls.
//!
//! The future's waker unparks a reference-counted `SharedParker` owned for the duration of
//! the call: the runtime's pool for `Runtime.blockOn`, the process-wide one for
//! `blockOnThread`. Waker clones hold references of their own, so a clone woken after the call
//! returned (or after its thread exited) still finds a live parker; see `SharedParker` for
//! what is allocated, when, and through which allocator (in steady state: nothing).
//!
//! Each poll runs with a fresh cooperative budget, like a task poll, so a root future that
//! spins on ready primitives yields (its own wake makes the next park return at once).
//!
//! `Runtime.blockOn` waits for work it started (a reply, a joined task), so it spins before
//! each park — bounded, and backed off when spins stop paying (`SpinPolicy`, without the
//! workers' spinning slot) — and counts its parks and spins in the runtime's external metrics.

const std = @import("std");
const future = @import("future.zig");
const budget = @import("budget.zig");
const SharedParker = @import("SharedParker.zig");
const SpinPolicy = @import("scheduler/SpinPolicy.zig");
const Metrics = @import("scheduler/Metrics.zig");
const os = @import("os.zig");

/// Polls `f` (a pointer to a future) until it is ready and returns its output. Parks on a
/// parker of the process-wide pool.
pub fn blockOnThread(f: anytype) @typeInfo(@TypeOf(f)).pointer.child.Output {
    var counters = Metrics.Counters{}; // Nobody reads them: no runtime.
    return blockOnPool(SharedParker.Pool.global(), f, 0, .{ .counters = &counters, .owner = true });
}

/// `blockOnThread` with a parker of `pool`, spinning up to `spin_ns` before each park per a
/// `SpinPolicy` of its own; parks and spins are counted in `recorder`. Panics if the pool must
/// allocate a parker and cannot.
pub fn blockOnPool(pool: *SharedParker.Pool, f: anytype, spin_ns: u64, recorder: Metrics.Recorder) @typeInfo(@TypeOf(f)).pointer.child.Output {
    const F = @typeInfo(@TypeOf(f)).pointer.child;
    _ = future.OutputOf(F);
    const parker = pool.acquire() catch @panic("blockOn: out of memory for the thread's parker");
    defer parker.release();
    const waker = parker.waker(); // Borrowed by the context; the future clones it to keep it.
    var cx = future.Context.init(&waker);
    var policy = SpinPolicy.init(spin_ns);
    while (true) {
        const scope = budget.Scope.begin(budget.units_per_poll);
        const result = f.poll(&cx);
        scope.end();
        policy.confirm(); // Every wake-up of this thread leads to a poll.

        switch (result) {
            .ready => |value| return value,
            .pending => {
                recorder.count(.blockon_parks, 1);
                // This thread waits for work it started: no spinning slot needed.
                policy.expectWakeup();
                policy.park(parker.parkerForSpin(), policy.plan().spin_ns, recorder);
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
            os.sleepNs(1 * std.time.ns_per_ms);
            f.set.store(7, .release);
            f.registered.wake();
        }
    };
    const t = try std.Thread.spawn(.{}, Setter.run, .{&flag});
    defer t.join();
    try std.testing.expectEqual(@as(u32, 7), blockOnThread(&flag));
}

test "a waker clone woken after blockOnThread returned and its thread exited is safe" {
    const Waker = @import("Waker.zig");
    // Registers two clones of the blockOn waker: the completion is published and `early` woken
    // (another wake source), the thread returns and exits, then `late` is woken.
    const TwoWakers = struct {
        const Self = @This();
        pub const Output = void;
        done: std.atomic.Value(bool) = .init(false),
        registered: std.atomic.Value(bool) = .init(false),
        early: Waker = undefined,
        late: Waker = undefined,

        pub fn poll(self: *Self, cx: *future.Context) future.Poll(void) {
            if (!self.registered.load(.monotonic)) {
                self.early = cx.waker().clone();
                self.late = cx.waker().clone();
                self.registered.store(true, .release);
            }
            return if (self.done.load(.acquire)) .{ .ready = {} } else .pending;
        }

        fn run(self: *Self) void {
            blockOnThread(self);
        }
    };
    var f = TwoWakers{};
    const thread = try std.Thread.spawn(.{}, TwoWakers.run, .{&f});
    while (!f.registered.load(.acquire)) std.Thread.yield() catch {};
    f.done.store(true, .release);
    f.early.wake();
    thread.join(); // Its stack and thread-local storage are gone now.
    f.late.wake();
}
