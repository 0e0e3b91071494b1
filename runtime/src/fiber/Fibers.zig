//! What a runtime keeps for its fibers: the stack pool and the alternate signal stacks it
//! mapped for its workers (`overflow.zig`). `Runtime.init` creates it (and installs the
//! process-wide stack-overflow handler); `Runtime.deinit` destroys it after every task is
//! complete, when every stack must be back in the pool (a stack still out is a leak, and an
//! assertion fails).

const std = @import("std");
const Allocator = std.mem.Allocator;
const Stack = @import("Stack.zig");
const overflow = @import("overflow.zig");

const Fibers = @This();

stacks: Stack.Pool,
alt_stacks: overflow.AltStacks,
/// Set by `Runtime.deinit` when it asks every fiber to cancel (release; every fiber's
/// `Fiber.shutdown_flag` points here and is read with acquire at its cancellation points).
shutting_down: std.atomic.Value(bool) = .init(false),

pub const Config = struct {
    stack_bytes: usize,
    guard_bytes: usize,
    stacks_cached: usize,
};

pub fn init(allocator: Allocator, config: Config) Fibers {
    overflow.install();
    const guard = std.mem.alignForward(usize, @max(config.guard_bytes, Stack.page_bytes), Stack.page_bytes);
    return .{
        .stacks = Stack.Pool.init(config.stack_bytes, guard, config.stacks_cached),
        .alt_stacks = overflow.AltStacks.init(allocator),
    };
}

/// After every fiber finished or was killed and every thread that ran one exited.
pub fn deinit(self: *Fibers) void {
    self.stacks.deinit();
    self.alt_stacks.deinit();
    self.* = undefined;
}
