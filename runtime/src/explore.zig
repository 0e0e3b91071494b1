//! The seeded schedule explorer: a test-only way to drive the runtime through the interleavings
//! that a stress test rarely reaches, one seed at a time, and to replay the one that failed.
//!
//! ## The idea
//!
//! The bugs this finds live between two atomic steps of different threads: a cancel and a wake
//! of the same waiter, an abort and a completion, a shutdown and a fiber's next wait. Every such
//! handshake already has a hook point (`hook.zig`: the place where a deterministic test can
//! make the other thread's step happen). While a session is active, every hook point a thread
//! reaches also asks the explorer whether to *perturb* that thread there: run on, yield the CPU
//! a few times, spin a few microseconds, or sleep up to a millisecond and a half. A thread that
//! is held back at a point lets the others overtake it there, which is how a window a few
//! instructions wide becomes one that the other side's step lands in.
//!
//! ## Seeds
//!
//! A seed is a *profile* and a *decision stream*, in the spirit of PCT (probabilistic
//! concurrency testing: a few well-placed priority changes find most ordering bugs) and of
//! shuttle's and loom's seeded schedules:
//!
//! - The profile picks the points this seed focuses on (each point with probability 1/4) and
//!   the thread lanes it holds back there (a random subset); at a focused point a lane of the
//!   subset is perturbed with probability `focus_per_1024 / 1024`, anywhere else with
//!   `background_per_1024 / 1024`.
//! - The decision at a point is a pure function of (seed, lane, point, how many points this
//!   thread has reached in the session): `mix(seed, lane, point, count)` — never of the clock
//!   or of which thread came first. Lanes are thread roles, not thread ids: the test's own
//!   thread is lane 0, worker `i` of the runtime is lane `1 + i`, blocking-pool threads share
//!   lane 16 and any other thread lane 17 (`enterThread`).
//!
//! So one seed makes the same decisions every time it runs. The operating system still
//! schedules the threads, so a replay is the same interleaving only as far as the injected
//! delays dominate the natural jitter — which is what they are sized for (yields and spins of
//! microseconds against windows of nanoseconds). runtime/docs/fibers.md ("The schedule
//! explorer") gives the measured replay rate of the seeds that found the defects it was built
//! for.
//!
//! ## Sessions and scenarios
//!
//! `runScenario(name, scenario)` runs `scenario(seed)` for seed 1, 2, ... until a time budget
//! is spent (`AMPERE_EXPLORE_SECONDS` per scenario; by default 2 s at smoke intensity and 6 s
//! at full), each seed inside a session (`begin`/`end`). `AMPERE_EXPLORE_SEED=N` runs seed N
//! only (a replay), `AMPERE_EXPLORE_FIRST=N` starts the sweep at N, `AMPERE_EXPLORE_LOG=path`
//! appends each scenario's summary line to a file (`AMPERE_EXPLORE_VERBOSE=1`: to stderr, which
//! Zig's test runner counts as a failure), `AMPERE_EXPLORE_PERTURB=0`
//! runs the same seeds without perturbations (the natural schedule, for comparison). A failing
//! seed is reported
//! in one line, whatever the failure:
//!
//! - the scenario returns an error (a broken invariant): the line, then the error;
//! - the scenario hangs (a lost wake-up): a watchdog prints the line and panics;
//! - the process crashes (an assertion, a panic, a segmentation fault): a signal handler
//!   prints the line (with `write`, the one call that is safe there) before the crash report.
//!
//! Outside test builds every entry point is empty at compile time, like `hook.zig`'s: release
//! and benchmark builds carry no trace of the explorer. Imports nothing of the runtime but the
//! OS layer.

const std = @import("std");
const builtin = @import("builtin");
const linux = std.os.linux;
const os = @import("os.zig");

pub const enabled = builtin.is_test;

/// Lanes: thread roles (see "Seeds").
pub const lane_test: u8 = 0;
pub const lane_worker_first: u8 = 1;
pub const lane_blocking: u8 = 16;
pub const lane_other: u8 = 17;
const lane_count = 18;

/// Hook points are numbered by `hook.Point`; the explorer keeps per-point counts up to this.
pub const points_max = 64;

const Profile = struct {
    focus_points: u64,
    focus_lanes: u32,
    focus_per_1024: u32,
    background_per_1024: u32,
};

const Session = struct {
    seed: u64,
    profile: Profile,
};

// -- global state (test builds only) ---------------------------------------------------------

/// Whether a session is running. Read at every hook point (monotonic: a thread that reaches a
/// point just after `begin` may miss the first decision, which changes nothing the seed
/// promises — the thread's count starts at its first perturbed point).
var active: if (enabled) std.atomic.Value(bool) else void = if (enabled) .init(false) else {};
/// Written by `begin` before `active` is set (release), read after it (acquire in `perturb`).
var session: Session = undefined;
/// Bumped by every `begin`: a thread whose `tl_generation` differs restarts its count.
var generation: if (enabled) std.atomic.Value(u32) else void = if (enabled) .init(0) else {};
/// Perturbations made at each point in the current scenario (for its summary line).
var perturbed: if (enabled) [points_max]std.atomic.Value(u32) else void = if (enabled) @splat(.init(0)) else {};

threadlocal var tl_generation: u32 = 0;
threadlocal var tl_count: u32 = 0;
threadlocal var tl_lane: u8 = lane_other;

// -- the hot side: a hook point -------------------------------------------------------------

/// Called by `hook.reached`/`hook.reachedBy` at every point (test builds only).
pub inline fn at(point: u8) void {
    if (!enabled) return;
    if (!active.load(.monotonic)) return;
    perturb(point);
}

/// Names the calling thread's lane (a worker at its start, a blocking-pool thread). Threads
/// that never call it are `lane_other`; the thread that calls `begin` is `lane_test`.
pub inline fn enterThread(lane: u8) void {
    if (!enabled) return;
    std.debug.assert(lane < lane_count);
    tl_lane = lane;
}

pub fn workerLane(index: usize) u8 {
    return lane_worker_first + @as(u8, @intCast(@min(index, lane_blocking - lane_worker_first - 1)));
}

/// SplitMix64's finaliser: the decision stream's hash.
pub fn mix(value: u64) u64 {
    var z = value +% 0x9e3779b97f4a7c15;
    z = (z ^ (z >> 30)) *% 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) *% 0x94d049bb133111eb;
    return z ^ (z >> 31);
}

pub const Action = union(enum) {
    none,
    yield: u8,
    spin_ns: u32,
    sleep_ns: u32,
};

/// The decision for a thread of `lane` at `point`, its `count`-th point of the session.
pub fn decide(s: Session, lane: u8, point: u8, count: u32) Action {
    const h = mix(s.seed ^ (@as(u64, lane) << 56) ^ (@as(u64, point) << 48) ^ count);
    const focused = (s.profile.focus_points >> @intCast(point % 64)) & 1 != 0 and
        (s.profile.focus_lanes >> @intCast(lane)) & 1 != 0;
    const threshold = if (focused) s.profile.focus_per_1024 else s.profile.background_per_1024;
    if (h % 1024 >= threshold) return .none;
    const kind = (h >> 10) % 100;
    const magnitude: u32 = @truncate(h >> 20);
    if (kind < 35) return .{ .yield = @intCast(1 + magnitude % 3) };
    if (kind < 65) return .{ .spin_ns = 1_000 + magnitude % 40_000 };
    return .{ .sleep_ns = 20_000 + magnitude % 1_500_000 };
}

fn profileOf(seed: u64) Profile {
    const a = mix(seed ^ 0x5eed_0f_9e07);
    const b = mix(a);
    const c = mix(b);
    return .{
        // Each point with probability 1/4 (two random words ANDed).
        .focus_points = a & b,
        // A random non-empty subset of the lanes.
        .focus_lanes = @as(u32, @truncate(c)) | (@as(u32, 1) << @intCast((c >> 32) % lane_count)),
        .focus_per_1024 = 128 + @as(u32, @truncate((c >> 40) % 384)),
        .background_per_1024 = 4 + @as(u32, @truncate((c >> 50) % 28)),
    };
}

noinline fn perturb(point: u8) void {
    const gen = generation.load(.acquire); // Pairs with `begin`'s release: `session` is written.
    if (tl_generation != gen) {
        tl_generation = gen;
        tl_count = 0;
    }
    const count = tl_count;
    tl_count +%= 1;
    const action = decide(session, tl_lane, point, count);
    if (action == .none) return;
    if (point < points_max) _ = perturbed[point].fetchAdd(1, .monotonic);
    switch (action) {
        .none => unreachable,
        .yield => |times| for (0..times) |_| std.Thread.yield() catch {},
        .spin_ns => |ns| {
            const until = os.clockNs(.MONOTONIC) + ns;
            while (os.clockNs(.MONOTONIC) < until) std.atomic.spinLoopHint();
        },
        .sleep_ns => |ns| os.sleepNs(ns),
    }
}

/// False (`AMPERE_EXPLORE_PERTURB=0`): sessions make no perturbation — the scenarios run on
/// the natural schedule alone, to measure what the perturbations add.
var perturb_enabled: bool = true;

/// Starts a session for `seed` on the calling thread (lane 0).
pub fn begin(seed: u64) void {
    comptime assertTestBuild();
    std.debug.assert(!active.load(.monotonic));
    var profile = profileOf(seed);
    if (!perturb_enabled) {
        profile.focus_per_1024 = 0;
        profile.background_per_1024 = 0;
    }
    session = .{ .seed = seed, .profile = profile };
    tl_lane = lane_test;
    _ = generation.fetchAdd(1, .release);
    active.store(true, .release);
}

pub fn end() void {
    comptime assertTestBuild();
    active.store(false, .release);
}

/// A scenario's own seeded choice in `[0, bound)` (a sleep length, a worker count): the same
/// for the same seed and `salt`, independent of the decision stream.
pub fn choose(seed: u64, salt: u64, bound: u64) u64 {
    std.debug.assert(bound > 0);
    return mix(seed ^ mix(salt)) % bound;
}

fn assertTestBuild() void {
    if (!enabled) @compileError("the schedule explorer runs in test builds only");
}

// -- scenarios: the sweep, the budget, the failure line ---------------------------------------

fn envInt(name: []const u8) ?u64 {
    const text = std.testing.environ.getPosix(name) orelse return null;
    return std.fmt.parseInt(u64, text, 0) catch std.debug.panic("{s} is not an integer: '{s}'", .{ name, text });
}

/// The time budget of one scenario's sweep.
pub fn budgetNs() u64 {
    if (envInt("AMPERE_EXPLORE_SECONDS")) |s| return s * std.time.ns_per_s;
    const testing = @import("testing.zig");
    return switch (testing.intensity()) {
        .smoke => 2 * std.time.ns_per_s,
        .full => 6 * std.time.ns_per_s,
    };
}

/// How long one seed may run before the watchdog calls it a hang.
pub const hang_limit_ns: u64 = if (builtin.sanitize_thread) 60 * std.time.ns_per_s else 6 * std.time.ns_per_s;

/// The line that names the failing seed, formatted when the seed starts so that a signal
/// handler can write it without formatting anything.
var failure_line: [256]u8 = undefined;
var failure_line_len: std.atomic.Value(usize) = .init(0);
var seed_started_ns: std.atomic.Value(u64) = .init(0);
var sweep_running: std.atomic.Value(bool) = .init(false);

fn setFailureLine(name: []const u8, seed: u64) void {
    const line = std.fmt.bufPrint(&failure_line, "\nexplore: scenario '{s}' failed at seed {d} (replay: AMPERE_EXPLORE_SEED={d} zig build test-runtime -Dtest-filter=\"explore: {s}\")\n", .{ name, seed, seed, name }) catch failure_line[0..0];
    failure_line_len.store(line.len, .release);
}

fn writeFailureLine() void {
    const len = failure_line_len.load(.acquire);
    _ = linux.write(2, &failure_line, len);
}

/// Prints the failing seed's line on a crash, then lets the crash go on (the default
/// disposition, re-raised).
fn onFatalSignal(signal: linux.SIG, info: *const linux.siginfo_t, context: ?*anyopaque) callconv(.c) void {
    _ = info;
    _ = context;
    if (sweep_running.load(.acquire)) writeFailureLine();
    var default: linux.Sigaction = .{ .handler = .{ .handler = linux.SIG.DFL }, .mask = linux.sigemptyset(), .flags = 0 };
    _ = linux.sigaction(signal, &default, null);
    _ = linux.kill(linux.getpid(), signal);
}

/// A panic or a failed assertion ends in `abort` (SIGABRT), after Zig's report of a fault too;
/// SIGSEGV and SIGBUS are left to the fiber-overflow handler (`fiber/overflow.zig`).
const fatal_signals = [_]linux.SIG{ .ABRT, .ILL, .FPE, .TRAP };

/// Installs `onFatalSignal` for the crash signals; returns the handlers it replaced.
fn installCrashLine() [fatal_signals.len]linux.Sigaction {
    var previous: [fatal_signals.len]linux.Sigaction = undefined;
    var action: linux.Sigaction = .{
        .handler = .{ .sigaction = onFatalSignal },
        .mask = linux.sigemptyset(),
        .flags = linux.SA.SIGINFO | linux.SA.ONSTACK,
    };
    for (fatal_signals, &previous) |signal, *old| {
        // Kept, to put back when the sweep is done.
        _ = linux.sigaction(signal, &action, old);
    }
    return previous;
}

fn restoreCrashLine(previous: *const [fatal_signals.len]linux.Sigaction) void {
    for (fatal_signals, previous) |signal, *old| _ = linux.sigaction(signal, old, null);
}

/// Panics with the failure line when one seed runs longer than `hang_limit_ns`.
const Watchdog = struct {
    stop: std.atomic.Value(bool) = .init(false),

    fn run(self: *Watchdog) void {
        while (!self.stop.load(.acquire)) {
            os.sleepNs(20 * std.time.ns_per_ms);
            const started = seed_started_ns.load(.acquire);
            if (started != 0 and os.clockNs(.MONOTONIC) -| started > hang_limit_ns) {
                writeFailureLine();
                std.debug.panic("explore: the seed above hung for {d} s (a lost wake-up or a blocked shutdown)", .{hang_limit_ns / std.time.ns_per_s});
            }
        }
    }
};

pub const Summary = struct {
    seeds: u64,
    elapsed_ns: u64,
};

/// Runs `scenario(seed)` over seeds within the budget (or the one seed of
/// `AMPERE_EXPLORE_SEED`); on a failure prints its seed and returns the error. Prints one
/// summary line: seeds run, and how often each point was perturbed.
/// `Points` is the enum that numbers the hook points (`hook.Point`), for the summary's names.
pub fn runScenario(comptime Points: type, comptime name: []const u8, comptime scenario: fn (seed: u64) anyerror!void) !Summary {
    comptime assertTestBuild();
    const replay = envInt("AMPERE_EXPLORE_SEED");
    const first = replay orelse (envInt("AMPERE_EXPLORE_FIRST") orelse 1);
    const budget_ns = budgetNs();
    perturb_enabled = (envInt("AMPERE_EXPLORE_PERTURB") orelse 1) != 0;
    for (&perturbed) |*count| count.store(0, .monotonic);

    const previous = installCrashLine();
    defer restoreCrashLine(&previous);
    sweep_running.store(true, .release);
    defer sweep_running.store(false, .release);
    var watchdog = Watchdog{};
    const watchdog_thread = try std.Thread.spawn(.{}, Watchdog.run, .{&watchdog});
    defer {
        watchdog.stop.store(true, .release);
        watchdog_thread.join();
    }

    const start_ns = os.clockNs(.MONOTONIC);
    var seed = first;
    var seeds: u64 = 0;
    while (true) : (seed += 1) {
        setFailureLine(name, seed);
        seed_started_ns.store(os.clockNs(.MONOTONIC), .release);
        begin(seed);
        const result = scenario(seed);
        end();
        seed_started_ns.store(0, .release);
        seeds += 1;
        result catch |err| {
            writeFailureLine();
            return err;
        };
        if (replay != null) break;
        if (os.clockNs(.MONOTONIC) -| start_ns >= budget_ns) break;
    }
    const elapsed_ns = os.clockNs(.MONOTONIC) -| start_ns;
    printSummary(Points, name, first, seeds, elapsed_ns);
    return .{ .seeds = seeds, .elapsed_ns = elapsed_ns };
}

fn printSummary(comptime Points: type, name: []const u8, first: u64, seeds: u64, elapsed_ns: u64) void {
    var buffer: [1024]u8 = undefined;
    var writer = std.Io.Writer.fixed(&buffer);
    writer.print("explore: '{s}' seeds {d}..{d} ({d} in {d} ms); perturbed:", .{ name, first, first + seeds - 1, seeds, elapsed_ns / std.time.ns_per_ms }) catch {};
    inline for (@typeInfo(Points).@"enum".fields) |field| {
        const count = perturbed[field.value].load(.monotonic);
        if (count > 0) writer.print(" {s} {d}", .{ field.name, count }) catch {};
    }
    writer.writeByte('\n') catch {};
    const line = writer.buffered();
    // Zig's test runner fails a test that writes to stderr: the line goes to stderr only when
    // asked, and to the file `AMPERE_EXPLORE_LOG` names (scripts/test_all.py prints it).
    if (envInt("AMPERE_EXPLORE_VERBOSE") orelse 0 != 0) std.debug.print("{s}", .{line});
    const path = std.testing.environ.getPosix("AMPERE_EXPLORE_LOG") orelse return;
    appendLine(path, line);
}

fn appendLine(path: []const u8, line: []const u8) void {
    var path_z: [std.fs.max_path_bytes:0]u8 = undefined;
    if (path.len >= path_z.len) return;
    @memcpy(path_z[0..path.len], path);
    path_z[path.len] = 0;
    const rc = linux.open(&path_z, .{ .ACCMODE = .WRONLY, .CREAT = true, .APPEND = true, .CLOEXEC = true }, 0o644);
    if (linux.errno(rc) != .SUCCESS) return;
    const fd: i32 = @intCast(rc);
    defer _ = linux.close(fd);
    _ = linux.write(fd, line.ptr, line.len);
}

// -- tests -------------------------------------------------------------------------------------

test "a seed's decisions are a pure function of (seed, lane, point, count)" {
    const s = Session{ .seed = 42, .profile = profileOf(42) };
    for (0..200) |count| {
        const a = decide(s, 3, 7, @intCast(count));
        const b = decide(s, 3, 7, @intCast(count));
        try std.testing.expectEqual(a, b);
    }
    try std.testing.expectEqual(profileOf(42), profileOf(42));
}

test "seeds differ: focus, and how often they perturb" {
    var focused_total: u64 = 0;
    var perturbing: u32 = 0;
    for (1..65) |seed| {
        const p = profileOf(seed);
        focused_total += @popCount(p.focus_points);
        const s = Session{ .seed = seed, .profile = p };
        var n: u32 = 0;
        for (0..1000) |count| {
            if (decide(s, lane_test, 0, @intCast(count)) != .none) n += 1;
        }
        if (n > 0) perturbing += 1;
    }
    // About a quarter of the 64 points per seed, on average.
    try std.testing.expect(focused_total > 64 * 8 and focused_total < 64 * 24);
    // Every seed perturbs something within 1,000 points (background rate >= 4/1024).
    try std.testing.expectEqual(@as(u32, 64), perturbing);
}

test "choose is stable per seed and salt and covers its range" {
    var seen = [_]bool{false} ** 5;
    for (0..200) |seed| {
        const v = choose(seed, 1, 5);
        try std.testing.expectEqual(v, choose(seed, 1, 5));
        seen[v] = true;
    }
    for (seen) |s| try std.testing.expect(s);
}
