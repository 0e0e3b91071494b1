//! The machine layer of fibers: the saved registers of a suspended fiber, the switch between
//! two stacks, the entry trampoline of a fresh fiber, and ThreadSanitizer's fiber annotations.
//!
//! ## The switch
//!
//! `switchTo(from, to)` is `std.Io.fiber.contextSwitch` (Zig 0.16's own, for x86_64, aarch64
//! and riscv64): it stores the stack pointer, the frame pointer and the resume address of the
//! running code in `from`, loads those of `to` and jumps. Every other register is declared
//! clobbered by the inline assembly, so the compiler saves whatever it needs around the call
//! site — the switch itself costs three stores, three loads and an indirect jump. The
//! register that carries the switch message (rsi, x1) still holds it when the target resumes.
//!
//! ## A fresh fiber
//!
//! `initial(stack_top, main)` builds the context of a fiber that has never run: its stack
//! pointer at the 16-byte aligned top of its stack, a null frame pointer (stack walks stop
//! there), and `entry` as the resume address. The first switch to it jumps to `entry` with
//! the message register pointing at the `Switch` whose `new` is the fiber's context; `entry`
//! passes that pointer as the first argument of `main`, with the stack aligned as the C ABI
//! requires at a call (x86_64: rsp % 16 == 0 before `call`; aarch64: sp % 16 == 0 always).
//! `main` never returns: a finished fiber switches away for the last time.
//!
//! ## ThreadSanitizer
//!
//! TSan tracks one shadow stack and one vector clock per "fiber". Under `-fsanitize-thread`
//! each fiber gets a TSan fiber (`tsanCreate`, at its first resume: destroying one that never
//! ran crashes LLVM 21's TSan, which Zig 0.16 bundles), and every switch first tells TSan
//! which fiber runs next (`tsanSwitch`, with synchronisation: what the outgoing side did
//! happens-before what the incoming side does, as with a lock hand-over). Without TSan all of
//! it compiles to nothing.

const std = @import("std");
const builtin = @import("builtin");

/// Whether this target has fibers (the context switch and the trampoline below).
pub const supported = switch (builtin.cpu.arch) {
    .x86_64, .aarch64 => true,
    else => false,
};

pub const Context = std.Io.fiber.Context;
pub const Switch = std.Io.fiber.Switch;

/// The signature of a fiber's main function: it receives the switch that started it.
pub const Main = fn (message: *const Switch) callconv(.c) noreturn;

/// Saves the running context in `from` and resumes `to`. Returns when something switches
/// back to `from`.
pub inline fn switchTo(from: *Context, to: *Context) void {
    const message: Switch = .{ .old = from, .new = to };
    _ = std.Io.fiber.contextSwitch(&message);
}

/// The stack pointer saved in a suspended fiber's context: the lowest byte of its live frames.
pub fn stackPointer(context: *const Context) usize {
    return switch (builtin.cpu.arch) {
        .x86_64 => context.rsp,
        .aarch64 => context.sp,
        else => @compileError("ampere fibers: no context switch for " ++ @tagName(builtin.cpu.arch)),
    };
}

/// The context of a fiber that has not run yet: on its first resume it calls `main` on the
/// stack whose highest address is `stack_top`.
pub fn initial(stack_top: usize, comptime main: *const Main) Context {
    comptime if (!supported) @compileError("ampere fibers: no context switch for " ++ @tagName(builtin.cpu.arch));
    const top = std.mem.alignBackward(usize, stack_top, 16);
    const entry = &Trampoline(main).entry;
    return switch (builtin.cpu.arch) {
        .x86_64 => .{ .rsp = top, .rbp = 0, .rip = @intFromPtr(entry) },
        .aarch64 => .{ .sp = top, .fp = 0, .pc = @intFromPtr(entry) },
        else => unreachable,
    };
}

fn Trampoline(comptime main: *const Main) type {
    return struct {
        /// First code of every fiber: moves the switch message into the first argument
        /// register and calls `main` (which never returns; the trap after it never runs).
        /// Its unwind information says the return address is undefined: a stack walk that
        /// reaches it (a debug allocator collecting a trace, a panic) stops here instead of
        /// reading past the top of the fiber's stack, as glibc marks a thread's first frame.
        fn entry() callconv(.naked) noreturn {
            switch (builtin.cpu.arch) {
                .x86_64 => asm volatile (
                    \\ .cfi_undefined %%rip
                    \\ movq %%rsi, %%rdi
                    \\ callq %[main:P]
                    \\ ud2
                    :
                    : [main] "X" (main),
                ),
                .aarch64 => asm volatile (
                    \\ .cfi_undefined x30
                    \\ mov x0, x1
                    \\ bl %[main]
                    \\ brk #0
                    :
                    : [main] "X" (main),
                ),
                else => unreachable,
            }
        }
    };
}

// -- ThreadSanitizer -------------------------------------------------------------------------

pub const tsan_enabled = builtin.sanitize_thread;

/// A TSan fiber handle (zero-sized without TSan).
pub const TsanFiber = if (tsan_enabled) ?*anyopaque else void;
pub const tsan_none: TsanFiber = if (tsan_enabled) null else {};

const tsan = if (tsan_enabled) struct {
    extern fn __tsan_get_current_fiber() ?*anyopaque;
    extern fn __tsan_create_fiber(flags: c_uint) ?*anyopaque;
    extern fn __tsan_destroy_fiber(fiber: ?*anyopaque) void;
    extern fn __tsan_switch_to_fiber(fiber: ?*anyopaque, flags: c_uint) void;
} else struct {};

/// The TSan fiber running on this thread (the thread's own one outside fibers).
pub inline fn tsanCurrent() TsanFiber {
    return if (tsan_enabled) tsan.__tsan_get_current_fiber() else {};
}

pub inline fn tsanCreate() TsanFiber {
    return if (tsan_enabled) tsan.__tsan_create_fiber(0) else {};
}

/// Destroys a TSan fiber that has run (see the module comment), from another fiber.
pub inline fn tsanDestroy(fiber: TsanFiber) void {
    if (tsan_enabled) {
        if (fiber) |f| tsan.__tsan_destroy_fiber(f);
    }
}

/// Tells TSan that `fiber` runs next on this thread (call right before `switchTo`).
pub inline fn tsanSwitch(fiber: TsanFiber) void {
    if (tsan_enabled) tsan.__tsan_switch_to_fiber(fiber, 0);
}

// -- tests -----------------------------------------------------------------------------------

const TestFiber = struct {
    context: Context = undefined,
    caller: Context = undefined,
    value: u64 = 0,
    steps: u32 = 0,

    fn main(message: *const Switch) callconv(.c) noreturn {
        const self: *TestFiber = @fieldParentPtr("context", message.new);
        // Ping-pong: add to the value and switch back, three times; the third switch is final.
        while (true) {
            self.value += 10;
            self.steps += 1;
            switchTo(&self.context, &self.caller);
        }
    }
};

test "switching into a fresh fiber and back preserves both sides' state" {
    if (!supported or tsan_enabled) return error.SkipZigTest;
    const stack = try std.testing.allocator.alignedAlloc(u8, .@"16", 64 * 1024);
    defer std.testing.allocator.free(stack);
    var fiber = TestFiber{};
    fiber.context = initial(@intFromPtr(stack.ptr) + stack.len, &TestFiber.main);
    var local: u64 = 5; // Lives in a callee-saved register or on this stack across switches.
    for (0..3) |round| {
        switchTo(&fiber.caller, &fiber.context);
        local += 1;
        try std.testing.expectEqual(@as(u32, @intCast(round + 1)), fiber.steps);
    }
    try std.testing.expectEqual(@as(u64, 30), fiber.value);
    try std.testing.expectEqual(@as(u64, 8), local);
    // The fiber's stack pointer is inside its stack.
    const sp = switch (builtin.cpu.arch) {
        .x86_64 => fiber.context.rsp,
        .aarch64 => fiber.context.sp,
        else => unreachable,
    };
    try std.testing.expect(sp > @intFromPtr(stack.ptr) and sp < @intFromPtr(stack.ptr) + stack.len);
}

test "floating-point and vector registers survive a switch" {
    if (!supported or tsan_enabled) return error.SkipZigTest;
    const Clobber = struct {
        context: Context = undefined,
        caller: Context = undefined,
        fn main(message: *const Switch) callconv(.c) noreturn {
            const self: *@This() = @fieldParentPtr("context", message.new);
            var v: @Vector(8, f64) = @splat(-1.5);
            while (true) {
                v = v * v + @as(@Vector(8, f64), @splat(0.25));
                std.mem.doNotOptimizeAway(v);
                switchTo(&self.context, &self.caller);
            }
        }
    };
    const stack = try std.testing.allocator.alignedAlloc(u8, .@"16", 64 * 1024);
    defer std.testing.allocator.free(stack);
    var fiber = Clobber{};
    fiber.context = initial(@intFromPtr(stack.ptr) + stack.len, &Clobber.main);
    var x: @Vector(8, f64) = .{ 1, 2, 3, 4, 5, 6, 7, 8 };
    var f: f64 = 3.25;
    for (0..4) |_| {
        switchTo(&fiber.caller, &fiber.context);
        x += @splat(1);
        f *= 2;
    }
    try std.testing.expectEqual(@as(@Vector(8, f64), .{ 5, 6, 7, 8, 9, 10, 11, 12 }), x);
    try std.testing.expectEqual(@as(f64, 52), f);
}
