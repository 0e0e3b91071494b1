//! Stack-overflow detection for fibers: a fiber that runs off the end of its stack touches the
//! guard region below it (`Stack.zig`) and the kernel raises SIGSEGV. This module's handler
//! recognises that fault, writes a message that names a fiber stack overflow to stderr, and
//! aborts the process (SIGABRT). Any other fault goes to the handler that was installed before
//! (Zig's own segfault handler, which prints a stack trace, or the default action).
//!
//! ## How a fault is recognised
//!
//! The thread that runs a fiber publishes that fiber's stack in a thread-local (`running`, set
//! by `Fiber.resume` around the switch; a signal handler may read a thread-local). The fault
//! is a fiber stack overflow when the faulting address lies in that stack's guard region, or
//! when the faulting thread's stack pointer is below the usable part of that stack by less than
//! `reach_bytes` (a frame larger than the guard that jumped past it).
//!
//! ## Where the handler runs
//!
//! A stack overflow leaves no stack to run a handler on, so the handler is installed with
//! `SA_ONSTACK` and needs an alternate signal stack on every thread that runs fibers. Zig 0.16
//! gives every thread it starts one (`std.options.signal_stack_size`, 256 KiB by default); a
//! program that disabled it gets one per worker from `ensureAltStack`, mapped by this module
//! and unmapped by the runtime after its workers exited (`AltStacks`).
//!
//! Installation is process-wide and happens once, the first time a runtime creates a fiber
//! stack; the handler stays installed (it forwards everything that is not a fiber overflow).

const std = @import("std");
const builtin = @import("builtin");
const linux = std.os.linux;
const posix = std.posix;
const Stack = @import("Stack.zig");
const Lock = @import("../Lock.zig");

/// The message's fixed part; tests look for it.
pub const message = "fiber stack overflow";

/// How far below the usable stack a stack pointer still counts as this fiber's overflow.
pub const reach_bytes: usize = 1 << 20;

/// The stack of the fiber running on this thread (null outside fibers): the fiber's own
/// `stack` field, which lives while the fiber runs. A pointer, not a copy: a copy was a 24-byte
/// load right after `attachStack`'s narrower stores to the same bytes (a store-forwarding stall
/// per fiber start).
pub threadlocal var running: ?*const Stack = null;

var install_state: std.atomic.Value(u8) = .init(0); // 0 not installed, 1 installing, 2 done
var previous_segv: linux.Sigaction = undefined;
var previous_bus: linux.Sigaction = undefined;

/// Installs the handler for SIGSEGV and SIGBUS (once per process; later calls return at once).
pub fn install() void {
    if (install_state.load(.acquire) == 2) return;
    if (install_state.cmpxchgStrong(0, 1, .acquire, .acquire) != null) {
        while (install_state.load(.acquire) != 2) std.atomic.spinLoopHint();
        return;
    }
    var action: linux.Sigaction = .{
        .handler = .{ .sigaction = handle },
        .mask = linux.sigemptyset(),
        .flags = linux.SA.SIGINFO | linux.SA.ONSTACK,
    };
    sigaction(.SEGV, &action, &previous_segv);
    sigaction(.BUS, &action, &previous_bus);
    // Release: a thread that sees 2 also sees the saved previous actions.
    install_state.store(2, .release);
}

fn sigaction(sig: linux.SIG, action: *const linux.Sigaction, previous: *linux.Sigaction) void {
    switch (linux.errno(linux.sigaction(sig, action, previous))) {
        .SUCCESS => {},
        else => |err| std.debug.panic("fiber overflow handler: sigaction: unexpected errno {t}", .{err}),
    }
}

fn handle(sig: linux.SIG, info: *const linux.siginfo_t, context: ?*anyopaque) callconv(.c) void {
    const address = @intFromPtr(info.fields.sigfault.addr);
    if (running) |stack| {
        if (stack.inGuard(address) or pastEnd(stack.*, stackPointer(context))) report(stack.*, address);
    }
    forward(sig, info, context);
}

fn pastEnd(stack: Stack, sp: ?usize) bool {
    const value = sp orelse return false;
    return value < stack.usableLow() and value >= stack.usableLow() -| reach_bytes;
}

fn stackPointer(context: ?*anyopaque) ?usize {
    const native = std.debug.cpu_context.fromPosixSignalContext(context) orelse return null;
    return switch (builtin.cpu.arch) {
        .x86_64 => native.gprs.get(.rsp),
        .aarch64 => native.sp,
        else => null,
    };
}

fn report(stack: Stack, address: usize) noreturn {
    var buffer: [256]u8 = undefined;
    const text = std.fmt.bufPrint(&buffer, "ampere: " ++ message ++
        ": fault at 0x{x}, below a fiber stack of {d} bytes at 0x{x}-0x{x} " ++
        "(raise Runtime.Options.fiber_stack_bytes)\n", .{
        address,
        stack.usableBytes(),
        stack.usableLow(),
        stack.top(),
    }) catch buffer[0..];
    writeStderr(text);
    std.process.abort();
}

fn writeStderr(text: []const u8) void {
    var rest = text;
    while (rest.len > 0) {
        const rc = linux.write(2, rest.ptr, rest.len);
        switch (linux.errno(rc)) {
            .SUCCESS => rest = rest[rc..],
            .INTR => {},
            else => return,
        }
    }
}

/// Hands a fault that is not a fiber overflow to the previous handler; with none (the default
/// action), restores the default and returns, so the faulting instruction faults again and
/// the process dies of the signal as it would have without this module.
fn forward(sig: linux.SIG, info: *const linux.siginfo_t, context: ?*anyopaque) void {
    const previous = if (sig == .BUS) &previous_bus else &previous_segv;
    if (previous.flags & linux.SA.SIGINFO != 0) {
        if (previous.handler.sigaction) |function| return function(sig, info, context);
    } else if (previous.handler.handler) |function| {
        const raw = @intFromPtr(function);
        if (raw != @intFromPtr(linux.SIG.DFL) and raw != @intFromPtr(linux.SIG.IGN)) return function(sig);
    }
    var default: linux.Sigaction = .{
        .handler = .{ .handler = linux.SIG.DFL },
        .mask = linux.sigemptyset(),
        .flags = 0,
    };
    _ = linux.sigaction(sig, &default, null);
}

/// Alternate signal stacks this module mapped for the threads of one runtime (only for threads
/// without one: see the module comment). Unmapped by `deinit`, after those threads exited.
pub const AltStacks = struct {
    lock: Lock = .{},
    list: std.ArrayList([]align(Stack.page_bytes) u8) = .empty,
    allocator: std.mem.Allocator,

    pub const bytes: usize = 256 * 1024;

    pub fn init(allocator: std.mem.Allocator) AltStacks {
        return .{ .allocator = allocator };
    }

    pub fn deinit(self: *AltStacks) void {
        for (self.list.items) |memory| _ = linux.munmap(memory.ptr, memory.len);
        self.list.deinit(self.allocator);
        self.* = undefined;
    }

    /// Gives the calling thread an alternate signal stack if it has none. Best effort: without
    /// one an overflow still kills the process (SIGSEGV), only without the message.
    pub fn ensure(self: *AltStacks) void {
        var current: linux.stack_t = undefined;
        if (linux.errno(linux.sigaltstack(null, &current)) != .SUCCESS) return;
        if (current.flags & linux.SS.DISABLE == 0) return; // Zig's own, or the program's.
        const rc = linux.mmap(null, bytes, .{ .READ = true, .WRITE = true }, .{ .TYPE = .PRIVATE, .ANONYMOUS = true, .NORESERVE = true }, -1, 0);
        if (linux.errno(rc) != .SUCCESS) return;
        const memory: []align(Stack.page_bytes) u8 = @as([*]align(Stack.page_bytes) u8, @ptrFromInt(rc))[0..bytes];
        {
            self.lock.lock();
            defer self.lock.unlock();
            self.list.append(self.allocator, memory) catch {
                _ = linux.munmap(memory.ptr, memory.len);
                return;
            };
        }
        const stack: linux.stack_t = .{ .sp = memory.ptr, .flags = 0, .size = bytes };
        _ = linux.sigaltstack(&stack, null);
    }
};

/// Per thread: whether `ensureAltStack` already ran here.
threadlocal var alt_stack_checked: bool = false;

/// Called before a thread first runs a fiber.
pub fn ensureAltStack(stacks: *AltStacks) void {
    if (alt_stack_checked) return;
    alt_stack_checked = true;
    stacks.ensure();
}
