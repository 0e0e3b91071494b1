//! Settings of a `Runtime` (`Runtime.Options`): the scheduler's and the blocking pool's.
//! Every field has Tokio's default unless its comment says otherwise.

const std = @import("std");

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
