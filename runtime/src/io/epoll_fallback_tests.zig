//! The driver's `epoll_pwait2` fallback under a seccomp profile that refuses the call with
//! `EPERM` (profiles written before Linux 5.11, as older container runtimes ship them): the
//! runtime must fall back to `epoll_wait`, not panic on an unexpected errno.
//!
//! The filter is installed on a thread of the test's own (without `TSYNC`, so it binds that
//! thread and the threads it creates — the runtime's workers — and nothing else of the test
//! process), and the process-wide fallback flag is reset afterwards.

const std = @import("std");
const linux = std.os.linux;
const testing = std.testing;

const Runtime = @import("../Runtime.zig");
const time = @import("../time.zig");
const os = @import("../os.zig");

const PR_SET_NO_NEW_PRIVS = 38;

/// A classic-BPF program: `epoll_pwait2` fails with EPERM, every other call is allowed.
fn refuseEpollPwait2() !void {
    const nr: u32 = @intCast(@intFromEnum(linux.SYS.epoll_pwait2));
    const Insn = extern struct { code: u16, jt: u8, jf: u8, k: u32 };
    const ld_w_abs = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const jeq_k = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const ret_k = 0x06; // BPF_RET | BPF_K
    var program = [_]Insn{
        .{ .code = ld_w_abs, .jt = 0, .jf = 0, .k = 0 }, // seccomp_data.nr
        .{ .code = jeq_k, .jt = 0, .jf = 1, .k = nr },
        .{ .code = ret_k, .jt = 0, .jf = 0, .k = linux.SECCOMP.RET.ERRNO | @as(u32, @intFromEnum(linux.E.PERM)) },
        .{ .code = ret_k, .jt = 0, .jf = 0, .k = linux.SECCOMP.RET.ALLOW },
    };
    const Prog = extern struct { len: u16, filter: [*]Insn };
    var prog = Prog{ .len = program.len, .filter = &program };
    if (linux.errno(linux.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) != .SUCCESS) return error.NoNewPrivs;
    const rc = linux.syscall3(.seccomp, linux.SECCOMP.SET_MODE_FILTER, 0, @intFromPtr(&prog));
    if (linux.errno(rc) != .SUCCESS) return error.SeccompUnavailable;
}

const Outcome = struct {
    refused_directly: bool = false,
    slept: bool = false,
    fell_back: bool = false,
    err: ?anyerror = null,
};

fn onFilteredThread(outcome: *Outcome) void {
    run(outcome) catch |err| {
        outcome.err = err;
    };
}

fn run(outcome: *Outcome) !void {
    try refuseEpollPwait2();
    var events: [1]linux.epoll_event = undefined;
    const epfd: i32 = @intCast(linux.epoll_create1(linux.EPOLL.CLOEXEC));
    defer _ = linux.close(epfd);
    var ts = linux.timespec{ .sec = 0, .nsec = 0 };
    const rc = linux.syscall6(.epoll_pwait2, @as(usize, @bitCast(@as(isize, epfd))), @intFromPtr(&events), 1, @intFromPtr(&ts), 0, @sizeOf(linux.sigset_t));
    outcome.refused_directly = linux.errno(rc) == .PERM;
    // Workers created by this thread inherit the filter: the driver owner's park waits with a
    // timer deadline, so it calls epoll_pwait2 and gets EPERM.
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    defer rt.deinit();
    rt.blockOn(time.sleep(2 * std.time.ns_per_ms));
    outcome.slept = true;
    outcome.fell_back = os.epollPwait2Missing();
}

test "a seccomp profile that refuses epoll_pwait2 with EPERM: the driver falls back to epoll_wait" {
    defer os.resetEpollPwait2Missing();
    var outcome = Outcome{};
    const thread = try std.Thread.spawn(.{}, onFilteredThread, .{&outcome});
    thread.join();
    if (outcome.err) |err| {
        if (err == error.SeccompUnavailable or err == error.NoNewPrivs) return error.SkipZigTest;
        return err;
    }
    try testing.expect(outcome.refused_directly);
    try testing.expect(outcome.slept);
    try testing.expect(outcome.fell_back);
}
