//! The scheduler's liveness rule, explored over seeds (`explore.zig`): a due timer never waits
//! for an unrelated long poll while another worker could attend it. One worker is held in a
//! long poll (a blocking call inside `poll`); a timer registered before or during it must fire
//! while the poll still runs. The explorer holds threads back at the driver hand-off's points —
//! a worker about to sleep, about to claim the drivers, a watcher about to give the watch up, the
//! owner about to block, the timer driver about to wake — which is where a watcher could go
//! missing while an owner sits in the long poll (issue 41's 354 ms late timer).
//!
//! The long poll ends early as soon as the timer has fired; a broken rule shows as a poll that
//! ran its whole `hog_max_ns` (2 s, far beyond any delay the explorer injects or a loaded
//! machine's scheduling latency), so the scenario asserts an order of events, not a time.

const std = @import("std");
const testing = std.testing;

const ampere = @import("../ampere.zig");
const Runtime = ampere.Runtime;
const Context = ampere.Context;
const Poll = ampere.Poll;
const time = ampere.time;
const explore = @import("../explore.zig");
const hook = @import("../hook.zig");
const os = @import("../os.zig");

const hog_max_ns: u64 = 2 * std.time.ns_per_s;

/// Blocks its worker (sleeps in `poll`) until the timer fired, at most `hog_max_ns`.
const Hog = struct {
    pub const Output = bool;
    fired: *const std.atomic.Value(bool),
    started: *std.atomic.Value(bool),

    pub fn poll(self: *Hog, cx: *Context) Poll(bool) {
        _ = cx;
        self.started.store(true, .release);
        const start_ns = os.clockNs(.MONOTONIC);
        while (!self.fired.load(.acquire)) {
            if (os.clockNs(.MONOTONIC) -| start_ns > hog_max_ns) return .{ .ready = false };
            os.sleepNs(100 * std.time.ns_per_us);
        }
        return .{ .ready = true };
    }
};

/// A timer task: sleeps `duration_ns` on the runtime's wheel, then sets `fired`.
const Timer = struct {
    pub const Output = void;
    sleep: time.Sleep,
    fired: *std.atomic.Value(bool),

    pub fn poll(self: *Timer, cx: *Context) Poll(void) {
        switch (self.sleep.poll(cx)) {
            .pending => return .pending,
            .ready => {
                self.fired.store(true, .release);
                return .{ .ready = {} };
            },
        }
    }

    pub fn cancel(self: *Timer) void {
        self.sleep.cancel();
    }
};

fn timerBesideLongPoll(seed: u64) !void {
    // Workers may outnumber the two CPUs of the machine this runs on.
    const workers: u32 = 2 + @as(u32, @intCast(explore.choose(seed, 1, 3)));
    const rt = try Runtime.init(testing.allocator, .{ .workers = workers });
    defer rt.deinit();
    var fired = std.atomic.Value(bool).init(false);
    var started = std.atomic.Value(bool).init(false);
    const duration_ns = (1 + explore.choose(seed, 2, 8)) * std.time.ns_per_ms;
    const timer_first = explore.choose(seed, 3, 2) == 0;
    var timer: ?ampere.JoinHandle(void) = null;
    if (timer_first) timer = try rt.spawn(Timer{ .sleep = time.sleep(duration_ns), .fired = &fired });
    // Idle for a while first: the watcher may be in any phase of its watch, or have given it up.
    os.sleepNs(explore.choose(seed, 4, 12) * std.time.ns_per_ms);
    const hog = try rt.spawn(Hog{ .fired = &fired, .started = &started });
    while (!started.load(.acquire)) os.sleepNs(50 * std.time.ns_per_us);
    if (!timer_first) timer = try rt.spawn(Timer{ .sleep = time.sleep(duration_ns), .fired = &fired });
    // The timer fired while the long poll still ran.
    try testing.expect(try rt.blockOn(hog));
    try rt.blockOn(timer.?);
}

test "explore: timer_beside_long_poll" {
    _ = try explore.runScenario(hook.Point, "timer_beside_long_poll", timerBesideLongPoll);
}
