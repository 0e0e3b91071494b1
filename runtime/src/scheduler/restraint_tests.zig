//! Stress tests of steal restraint (`HelpPolicy`) on the runtime: the workloads that restrain a
//! worker (a pool of consumers on one channel, bursts of spawns that overflow into the inject
//! queue) run to the right result in every mode, at 2 and 4 workers, while workers go from
//! eager to restrained, doze, are kicked out of their dozes and go back. A lost task or a lost
//! wake-up hangs the test; a task run twice or not at all breaks its sum. Under
//! ThreadSanitizer (`zig build test-tsan`) this is also the race check of the restrained search.
//!
//! Sizes follow `testing.scaled` (full intensity: 40 rounds of 4,096 items through 256
//! consumers, then 2,000 spawned tasks, per mode and worker count).

const std = @import("std");
const testing = std.testing;

const test_support = @import("../testing.zig");
const future = @import("../future.zig");
const Context = future.Context;
const Poll = future.Poll;
const Runtime = @import("../Runtime.zig");
const JoinHandle = @import("../task/join_handle.zig").JoinHandle;
const Bounded = @import("../channel/bounded.zig").Bounded;
const ampere = @import("../ampere.zig");
const Options = @import("../Options.zig");

const Channel = Bounded(u64);

/// Sends 1 ..= `count` into the channel; returns how many it sent.
const Producer = struct {
    pub const Output = u64;
    tx: *const Channel.Sender,
    count: u64,
    next: u64 = 0,
    sending: ?Channel.SendFuture = null,

    pub fn poll(self: *Producer, cx: *Context) Poll(u64) {
        while (true) {
            if (future.isNull(&self.sending)) {
                if (self.next == self.count) return .{ .ready = self.count };
                self.sending = self.tx.send(self.next + 1);
            }
            switch (self.sending.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.sending = null;
                    result catch return .{ .ready = self.next };
                    self.next += 1;
                },
            }
        }
    }

    pub fn cancel(self: *Producer) void {
        if (self.sending) |*sending| sending.cancel();
    }
};

/// Receives exactly `count` values; returns their sum.
const Consumer = struct {
    pub const Output = u64;
    rx: *const Channel.Receiver,
    count: u64,
    received: u64 = 0,
    sum: u64 = 0,
    receiving: ?Channel.RecvFuture = null,

    pub fn poll(self: *Consumer, cx: *Context) Poll(u64) {
        while (true) {
            if (future.isNull(&self.receiving)) {
                if (self.received == self.count) return .{ .ready = self.sum };
                self.receiving = self.rx.recv();
            }
            switch (self.receiving.?.poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    self.receiving = null;
                    self.sum += result catch return .{ .ready = self.sum };
                    self.received += 1;
                },
            }
        }
    }

    pub fn cancel(self: *Consumer) void {
        if (self.receiving) |*receiving| receiving.cancel();
    }
};

/// One round of io_fan_out's shape, driven by a task on a worker (so the spawns are local and
/// overflow into the inject queue): `consumers` consumers of `items / consumers` values each,
/// then one producer of all `items`. Its output is the sum the consumers received.
const FanOut = struct {
    pub const Output = u64;
    tx: *const Channel.Sender,
    rx: *const Channel.Receiver,
    handles: []JoinHandle(u64),
    items: u64,
    spawned: usize = 0,
    joined: usize = 0,
    sum: u64 = 0,

    pub fn poll(self: *FanOut, cx: *Context) Poll(u64) {
        const consumers = self.handles.len - 1;
        if (self.spawned == 0) {
            for (self.handles[0..consumers]) |*handle| {
                handle.* = ampere.spawn(Consumer{ .rx = self.rx, .count = self.items / consumers }) catch @panic("spawn failed");
            }
            self.handles[consumers] = ampere.spawn(Producer{ .tx = self.tx, .count = self.items }) catch @panic("spawn failed");
            self.spawned = self.handles.len;
        }
        while (self.joined < self.handles.len) : (self.joined += 1) {
            switch (self.handles[self.joined].poll(cx)) {
                .pending => return .pending,
                .ready => |result| {
                    const value = result catch @panic("a task was cancelled");
                    if (self.joined < consumers) self.sum += value;
                },
            }
        }
        return .{ .ready = self.sum };
    }
};

/// Returns its argument.
const Identity = struct {
    pub const Output = u64;
    value: u64,
    pub fn poll(self: *Identity, cx: *Context) Poll(u64) {
        _ = cx;
        return .{ .ready = self.value };
    }
};

/// Spawns `handles.len` `Identity` tasks at once from its worker, then joins them: the sum.
const SpawnBurst = struct {
    pub const Output = u64;
    handles: []JoinHandle(u64),
    spawned: bool = false,
    joined: usize = 0,
    sum: u64 = 0,

    pub fn poll(self: *SpawnBurst, cx: *Context) Poll(u64) {
        if (!self.spawned) {
            for (self.handles, 0..) |*handle, i| handle.* = ampere.spawn(Identity{ .value = i + 1 }) catch @panic("spawn failed");
            self.spawned = true;
        }
        while (self.joined < self.handles.len) : (self.joined += 1) {
            switch (self.handles[self.joined].poll(cx)) {
                .pending => return .pending,
                .ready => |result| self.sum += result catch @panic("a task was cancelled"),
            }
        }
        return .{ .ready = self.sum };
    }
};

fn runFanOut(rt: *Runtime, rounds: usize, consumers: usize, items: u64) !void {
    const tx, const rx = try Channel.init(testing.allocator, 256);
    var sender = tx;
    var receiver = rx;
    defer sender.deinit();
    defer receiver.deinit();
    const handles = try testing.allocator.alloc(JoinHandle(u64), consumers + 1);
    defer testing.allocator.free(handles);
    for (0..rounds) |_| {
        const driver = try rt.spawn(FanOut{ .tx = &sender, .rx = &receiver, .handles = handles, .items = items });
        const sum = try rt.blockOn(driver);
        try testing.expectEqual(items * (items + 1) / 2, sum);
    }
}

fn runBursts(rt: *Runtime, rounds: usize, tasks: usize) !void {
    const handles = try testing.allocator.alloc(JoinHandle(u64), tasks);
    defer testing.allocator.free(handles);
    for (0..rounds) |_| {
        const driver = try rt.spawn(SpawnBurst{ .handles = handles });
        try testing.expectEqual(@as(u64, tasks * (tasks + 1) / 2), try rt.blockOn(driver));
    }
}

test "fan-outs and spawn bursts complete with the right sums, restrained or not" {
    const rounds = test_support.scaled(40, 10);
    for ([_]Options.StealRestraint{ .adaptive, .always, .off }) |mode| {
        for ([_]u32{ 2, 4 }) |workers| {
            const rt = try Runtime.init(testing.allocator, .{ .workers = workers, .steal_restraint = mode });
            defer rt.deinit();
            try runFanOut(rt, rounds, 256, 4096);
            try runBursts(rt, rounds, 2000);
        }
    }
}

test "a single worker never judges a take, restrains or dozes: nobody runs beside it" {
    // A take is a help only while another worker runs (`Worker.noteTaken`): one worker's takes
    // from the inject queue (its own overflow here) move nothing away from anybody.
    const rt = try Runtime.init(testing.allocator, .{ .workers = 1 });
    defer rt.deinit();
    try runFanOut(rt, test_support.scaled(20, 10), 256, 4096);
    try runBursts(rt, test_support.scaled(20, 10), 2000);
    const counts = rt.metrics().worker(0);
    try testing.expect(counts.get(.inject_pops) > 0); // The overflow went through the inject queue.
    try testing.expectEqual(@as(u64, 0), counts.get(.restraints));
    try testing.expectEqual(@as(u64, 0), counts.get(.dozes));
    try testing.expectEqual(@as(u64, 0), counts.get(.steals));
}
