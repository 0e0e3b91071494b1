//! `Cell(F)`: the one allocation behind a spawned task — the type-erased `Header` followed by
//! the stage: the future while it runs, then its output (or `error.Cancelled`), then nothing
//! once the JoinHandle took the output.
//!
//! A cell that fits a task block (`scheduler/TaskBlocks.zig`, 512 bytes) and is spawned on a
//! worker lives in a block of that worker's cache, and goes back to it (or to its return list)
//! when the last reference goes; a larger one (a future with big buffers inside), or one
//! created on any other thread, is allocated at its exact size.
//!
//! The stage is only touched by the thread that holds `running` (poll, cancel), by the
//! JoinHandle after it observed `complete` (take the output), or by the last reference holder
//! (free). The state word's acq_rel transitions order these accesses.

const std = @import("std");
const assert = std.debug.assert;
const Allocator = std.mem.Allocator;
const future = @import("../future.zig");
const Header = @import("Header.zig");
const TaskBlocks = @import("../scheduler/TaskBlocks.zig");
const Worker = @import("../scheduler/Worker.zig");

pub const JoinError = error{Cancelled};

/// What awaiting a task of output `T` yields: `JoinError!T`, or, when `T` is itself an error
/// union `E!U`, the flattened `(JoinError || E)!U` (Zig cannot nest an error union as the
/// payload of another).
pub fn JoinOutput(comptime T: type) type {
    return switch (@typeInfo(T)) {
        .error_union => |eu| (JoinError || eu.error_set)!eu.payload,
        else => JoinError!T,
    };
}

pub fn Cell(comptime F: type) type {
    const T = future.OutputOf(F);
    return struct {
        const Self = @This();

        header: Header,
        allocator: Allocator,
        stage: Stage,

        const Stage = union(enum) {
            running: F,
            finished: JoinOutput(T),
            consumed,
        };

        /// Known at compile time: whether this cell type fits a task block (it lives in one
        /// when a worker creates it: `Header.block_home` says).
        const fits_block = TaskBlocks.fits(@sizeOf(Self), .of(Self));

        pub const vtable = Header.VTable{
            .poll = poll,
            .cancel = cancel,
            .take_output = takeOutput,
            .dealloc = dealloc,
        };

        /// Allocates the task; its state is `initial_state` (scheduled, three references).
        pub fn create(allocator: Allocator, f: F, scheduler: *const Header.Scheduler, id: u64) Allocator.Error!*Self {
            var home = TaskBlocks.home_none;
            const taken: ?TaskBlocks.Taken = if (fits_block) try Worker.allocTaskBlock(scheduler, allocator) else null;
            const self: *Self = if (taken) |t| blk: {
                home = t.home;
                break :blk @ptrCast(t.block);
            } else try allocator.create(Self);
            self.* = .{
                .header = Header.init(&vtable, scheduler, id),
                .allocator = allocator,
                .stage = .{ .running = f },
            };
            self.header.block_home = home;
            assert(from(&self.header) == self);
            return self;
        }

        /// Frees a cell that was created but never submitted (its future is dropped unpolled).
        pub fn destroyUnsubmitted(self: *Self) void {
            assert(self.stage == .running);
            self.freeMemory();
        }

        fn freeMemory(self: *Self) void {
            if (self.header.block_home != TaskBlocks.home_none) {
                Worker.freeTaskBlock(self.header.scheduler, self.allocator, @ptrCast(@alignCast(self)), self.header.block_home);
            } else {
                self.allocator.destroy(self);
            }
        }

        fn from(header: *Header) *Self {
            // The cell may be more aligned than the header (a future with cache-line fields).
            return @alignCast(@fieldParentPtr("header", header));
        }

        /// The running future, reached without reading the stage's tag. Zig 0.16's Debug code
        /// reads a tagged union whole to compare or check its tag, and a running future holds
        /// waiter nodes and timer entries that other threads write under their locks: a read
        /// of those bytes races with the writes (ThreadSanitizer reports it). What guarantees
        /// the stage is the state word instead: the caller holds `running` (poll), or cancels
        /// a task that never completed (cancel); the stage leaves `running` only when the
        /// future is done, inside `poll` or `cancel`.
        fn runningFuture(self: *Self) *F {
            @setRuntimeSafety(false);
            return &self.stage.running;
        }

        fn poll(header: *Header) bool {
            const self = from(header);
            assert(header.state.load(.monotonic) & Header.running != 0); // The caller holds it.
            const waker = header.borrowedWaker();
            var cx = future.Context.init(&waker);
            switch (self.runningFuture().poll(&cx)) {
                .pending => return false,
                .ready => |output| {
                    self.stage = .{ .finished = output };
                    assert(self.stage == .finished);
                    return true;
                },
            }
        }

        fn cancel(header: *Header) bool {
            const self = from(header);
            assert(header.state.load(.monotonic) & Header.running != 0); // The caller holds it.
            future.cancel(self.runningFuture());
            self.stage = .{ .finished = error.Cancelled };
            return true;
        }

        fn takeOutput(header: *Header, out: *anyopaque) void {
            const self = from(header);
            assert(self.stage == .finished);
            assert(header.state.load(.acquire) & Header.complete != 0);
            const destination: *JoinOutput(T) = @ptrCast(@alignCast(out));
            destination.* = self.stage.finished;
            self.stage = .consumed;
        }

        fn dealloc(header: *Header) void {
            const self = from(header);
            assert(self.stage != .running);
            assert(Header.refCount(header.state.load(.monotonic)) == 0);
            self.freeMemory();
        }
    };
}
