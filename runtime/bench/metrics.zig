//! `--metrics PATH`: the runtime's event counts (`ampere.Runtime.metrics()`) per benchmark,
//! summed over the measured iterations only, as JSON lines.
//!
//! A driver takes a snapshot right before `markStart` and another right after `mark.stop`
//! (both outside the timed region) and adds their difference when the iteration is measured.
//! Between iterations every task of the previous one has been joined, so the counts of one
//! iteration are its own — up to the few events of workers going to sleep after the last
//! join, which land in the next iteration or in none.
//!
//! One line per benchmark that ran on a runtime (Tiers 3–4 and echo; Tiers 0–2 have none):
//!
//!     {"runtime":"ampere","invocation":0,"benchmark":"task_spawn","param":"","suite":"micro","tier":4,"workers":4,
//!      "iterations":10,"ops":1000,"per_worker":[{...}],"external":{...},"total":{...}}
//!
//! Each `{...}` holds every counter of `ampere.Runtime.Metrics.Event`. These counts diagnose
//! ampere; Tokio has no counterpart in a stable build (its runtime metrics beyond a few
//! totals need `--cfg tokio_unstable`), so nothing here is compared across runtimes.

const std = @import("std");
const ampere = @import("ampere");
const harness = @import("harness.zig");

const Snapshot = ampere.Runtime.Metrics.Snapshot;

pub const Recorder = struct {
    /// The sum over measured iterations (null until the first one ends).
    sum: ?Snapshot = null,
    before: Snapshot = undefined,
    began: bool = false,
    iterations: u64 = 0,

    /// Right before `markStart`, on a thread of the runtime being measured.
    pub fn begin(self: *Recorder) void {
        std.debug.assert(!self.began);
        const rt = ampere.Runtime.current() orelse @panic("metrics: not on a runtime thread");
        self.before = rt.metrics();
        self.began = true;
    }

    /// Right after `mark.stop`; iteration `index` counts when it is past the warm-ups.
    pub fn end(self: *Recorder, index: u64, warmup: u64) void {
        std.debug.assert(self.began);
        self.began = false;
        if (index < warmup) return;
        const rt = ampere.Runtime.current() orelse @panic("metrics: not on a runtime thread");
        const after = rt.metrics();
        const delta = after.minus(&self.before);
        self.sum = if (self.sum) |sum| sumOf(&sum, &delta) else delta;
        self.iterations += 1;
    }

    /// The JSON line of `case` run by variant `runtime` in invocation `invocation` (nothing if
    /// no iteration was recorded).
    pub fn writeLine(self: *const Recorder, out: *std.Io.Writer, runtime: []const u8, invocation: u64, case: *const harness.Case) std.Io.Writer.Error!void {
        const sum = self.sum orelse return;
        std.debug.assert(case.workers == sum.worker_count);
        try out.writeAll("{\"runtime\":");
        try out.print("{f}", .{std.json.fmt(runtime, .{})});
        try out.print(",\"invocation\":{d},\"benchmark\":", .{invocation});
        try out.print("{f}", .{std.json.fmt(case.name, .{})});
        try out.writeAll(",\"param\":");
        try out.print("{f}", .{std.json.fmt(case.param(), .{})});
        try out.print(",\"suite\":\"{s}\",\"tier\":{d},\"workers\":{d},\"iterations\":{d},\"ops\":{d},", .{
            case.suite, case.tier, sum.worker_count, self.iterations, case.ops,
        });
        try sum.writeJsonFields(out);
        try out.writeAll("}\n");
    }
};

fn sumOf(a: *const Snapshot, b: *const Snapshot) Snapshot {
    std.debug.assert(a.worker_count == b.worker_count);
    var result = a.*;
    for (result.per_worker[0..a.worker_count], b.workers()) |*counts, other| counts.* = counts.add(other);
    result.external = a.external.add(b.external);
    return result;
}
