//! Timers: `sleep`, `sleepUntil`, `timeout`, driven by the runtime's hierarchical timing wheel
//! (ticks of `Driver.tick_ns`, 65.536 µs).

const std = @import("std");
const sleep_mod = @import("time/sleep.zig");

pub const Sleep = sleep_mod.Sleep;
pub const sleep = sleep_mod.sleep;
pub const sleepUntil = sleep_mod.sleepUntil;
pub const Timeout = sleep_mod.Timeout;
pub const TimeoutError = sleep_mod.TimeoutError;
pub const TimeoutOutput = sleep_mod.TimeoutOutput;
pub const timeout = sleep_mod.timeout;
pub const nowNs = @import("time/clock.zig").nowNs;
pub const Wheel = @import("time/Wheel.zig");
pub const Driver = @import("time/Driver.zig");

test {
    std.testing.refAllDecls(@This());
}
