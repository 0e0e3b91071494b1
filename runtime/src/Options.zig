//! Settings of a `Runtime` (`Runtime.Options`): the scheduler's and the blocking pool's.
//! Every field has Tokio's default unless its comment says otherwise.

const std = @import("std");

pub const StealRestraint = enum { off, adaptive, always };

/// Worker threads running tasks (1..64).
workers: u32 = 4,
/// Upper bound of blocking-pool threads.
max_blocking_threads: u32 = 512,
/// An idle blocking thread exits after this long without work.
blocking_keep_alive_ns: u64 = 10 * std.time.ns_per_s,
/// A worker checks the inject queue first every this many ticks (Tokio's current-thread
/// scheduler: 31; its multi-thread scheduler self-tunes between 2 and 127, seeded at 61).
global_queue_interval: u32 = 31,
/// A busy worker checks for due timers every this many ticks (Tokio: 61).
event_interval: u32 = 61,
/// The longest an idle worker (and a `blockOn` thread waiting for its future) polls for a
/// wake-up before sleeping on its futex. Waking a sleeping thread costs 2–80 µs (far more
/// on a VM whose vCPU halted); a wake-up within this window costs a memory write. Whether a
/// park spins at all is decided per park (`scheduler/SpinPolicy.zig`: one spinning worker at a
/// time, expected wake-ups, back-off). Tokio sleeps at once. 0 disables spinning; an idle
/// runtime stops using CPU after at most this long.
spin_before_park_ns: u64 = 20 * std.time.ns_per_us,
/// Steal restraint (`scheduler/HelpPolicy.zig`): `.adaptive`, a worker whose recent steals did
/// not pay stops taking work that is moving, for a while; `.off`, Tokio's eager stealing
/// always; `.always`, restrained from the start (a worker takes only from a stuck queue, or
/// when nobody else runs: for tests and comparisons).
steal_restraint: StealRestraint = .adaptive,
/// Usable bytes of each fiber stack (`Runtime.spawnFiber`, `Runtime.io()`). Address space is
/// reserved for all of it, but a page costs memory only once a fiber touches it. The default
/// leaves room for std's deepest call chains in Debug builds (std.http, formatted printing);
/// an overflow ends the process with a message naming a fiber stack overflow
/// (runtime/docs/fibers.md, "Stacks").
fiber_stack_bytes: usize = 256 * 1024,
/// Inaccessible bytes below each fiber stack, rounded up to pages: a frame that runs off the
/// stack faults here. Costs address space only.
fiber_guard_bytes: usize = 64 * 1024,
/// Released fiber stacks always kept for reuse (each keeps the pages its fibers touched). The
/// pool keeps more while demand is recent: up to the recent peak of fibers alive at once,
/// halving every quiet second (`fiber/Stack.zig`, `Pool`).
fiber_stacks_cached: usize = 256,
/// How long `Runtime.deinit` lets fibers unwind after it asked each for std.Io cancellation
/// (`error.Canceled` at its next cancellation point, so its `defer`s run) before it kills the
/// ones left (runtime/docs/fibers.md, "Cancellation and shutdown"). `deinit` goes on as soon
/// as every fiber has finished; the full period passes only when a fiber waits where
/// cancellation cannot reach it (an uncancelable wait, `ampere.fiber.await` of a native future,
/// a blocking call, a fiber that keeps going after `error.Canceled`).
shutdown_grace_ns: u64 = 500 * std.time.ns_per_ms,
/// The process environment, for `io()`'s process spawning (PATH) and terminal detection
/// (from `std.process.Init`'s `minimal.environ`). Empty by default.
environ: std.process.Environ = .empty,
