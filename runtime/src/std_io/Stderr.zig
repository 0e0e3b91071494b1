//! The state of `lockStderr` (one per `ampere.Io`; `std_io/files.zig` has the functions).

const std = @import("std");
const Io = std.Io;
const File = Io.File;

mutex: Io.Mutex = .init,
/// Who holds the lock: a fiber's address, or a thread id off fibers; 0 when free. Written
/// by the holder under the mutex, read racily by others (only to compare with themselves).
owner: std.atomic.Value(usize) = .init(0),
/// Re-entrant depth; only the owner touches it.
depth: usize = 0,
writer: File.Writer = .{
    .io = undefined,
    .interface = File.Writer.initInterface(&.{}),
    .file = .stderr(),
    .mode = .streaming,
},
initialized: bool = false,
mode: Io.Terminal.Mode = .no_color,
