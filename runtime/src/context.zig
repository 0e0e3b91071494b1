//! Thread-local runtime context: which runtime (and which of its workers) the current thread
//! belongs to. Set by worker threads for their lifetime, by `Runtime.blockOn` for its
//! duration, and by blocking-pool threads; read by `ampere.spawn`, `ampere.time.sleep` and
//! the scheduler's "is this wake local?" check.

const Runtime = @import("Runtime.zig");
const Worker = @import("scheduler/Worker.zig");

threadlocal var current_runtime: ?*Runtime = null;
threadlocal var current_worker: ?*Worker = null;

pub fn runtime() ?*Runtime {
    return current_runtime;
}

pub fn worker() ?*Worker {
    return current_worker;
}

pub const Saved = struct {
    runtime: ?*Runtime,
    worker: ?*Worker,

    pub fn restore(self: Saved) void {
        current_runtime = self.runtime;
        current_worker = self.worker;
    }
};

/// Enters `rt` (and `w`, for worker threads); returns what to restore on exit.
pub fn enter(rt: ?*Runtime, w: ?*Worker) Saved {
    const saved = Saved{ .runtime = current_runtime, .worker = current_worker };
    current_runtime = rt;
    current_worker = w;
    return saved;
}
