//! The echo suite on `ampere.Runtime`, mirroring rust_bench/src/echo.rs.
//!
//! Topology: a runtime with 1 worker (`harness.Runtimes.echo`), driven from the main thread
//! with `rt.blockOn(driver)`. Per parameter (batch size n, payload size), created untimed: a
//! bounded channel of capacity 2·n carrying `Request{payload, reply sender}` and, on the
//! driver's first poll, one long-lived echo task that owns the receiver and answers every
//! request.
//!
//! One sample = one batch: the n callers' sender clones are made before `markStart` (Rust:
//! `tx.clone()` per caller, also untimed); `markStart`; spawn n caller tasks; each takes its
//! payload (`Kind.take`: a copy of a prebuilt value where stated), sends it with the sender
//! half of a fresh `OwnedOneshot` (one allocation of its shared state, freed by whichever half
//! lets go last: Tokio's `oneshot::channel()` semantics and cost, so the reply channel is like
//! for like; the caller-owned `Oneshot` would need none, Tier 2 `oneshot` measures it), awaits
//! the reply, checks length and checksum (first, middle, last byte), frees the reply, gives
//! the reply receiver up and gives its channel sender up (Rust: drops both); the driver awaits the n handles in spawn order; `mark.stop`. After the last batch
//! the driver gives its own sender up, the last one, so the channel closes (Rust: drops `tx`),
//! and awaits the echo task, which gives the receiver up; that frees the channel.
//!
//! Payload kinds (allocations through the counting allocator):
//! - f64: 42.0, copied both ways;
//! - string: a prebuilt 1 MiB ASCII (UTF-8) string, duplicated by the caller on send and
//!   duplicated again by the echo task on reply (which frees the received one);
//! - bytes: `echo_payload_buffers` prebuilt buffers, request (b·n + i) uses buffer
//!   (b·n + i) mod buffers; duplicated on send and on reply;
//! - shared: one `ampere.RcBuffer`; the caller sends `clone()`, the echo task replies with
//!   another `clone()` and releases the received reference.

const std = @import("std");
const ampere = @import("ampere");
const harness = @import("harness.zig");
const LibcCopy = @import("LibcCopy.zig");

const Ctx = harness.Ctx;
const Error = harness.Error;
const Mark = harness.Mark;
const Context = ampere.Context;
const Poll = ampere.Poll;
const JoinHandle = ampere.JoinHandle;
const Allocator = std.mem.Allocator;

/// First, middle and last byte: the checksum callers verify (same as the Rust side).
pub fn checksum(bytes: []const u8) u32 {
    if (bytes.len == 0) return 0;
    return @as(u32, bytes[0]) + (@as(u32, bytes[bytes.len / 2]) << 8) + (@as(u32, bytes[bytes.len - 1]) << 16);
}

/// Deterministic contents of prebuilt buffer `which`: byte j = 'a' + (j + 7·which) mod 26.
pub fn fill(buffer: []u8, which: usize) void {
    for (buffer, 0..) |*byte, j| byte.* = 'a' + @as(u8, @intCast((j + 7 * which) % 26));
}

pub const F64Kind = struct {
    pub const Value = f64;

    pub fn take(_: *const F64Kind, _: u64, _: Allocator) Allocator.Error!f64 {
        return 42.0;
    }

    pub fn reply(request: *const f64, _: Allocator) Allocator.Error!f64 {
        return request.*;
    }

    pub fn drop(_: f64, _: Allocator) void {}

    pub fn check(_: *const F64Kind, _: u64, value: *const f64) bool {
        return value.* == 42.0;
    }

    pub fn deinit(_: *F64Kind, _: Allocator) void {}
};

/// string and bytes: prebuilt buffers, duplicated on send and on reply (a string is bytes
/// here; Rust's `String` clone is the same allocation and copy — glibc's malloc and memcpy on
/// both sides, see `LibcCopy`).
pub const BytesKind = struct {
    pub const Value = []u8;
    buffers: [][]u8,
    sums: []u32,

    pub fn init(allocator: Allocator, len: usize, count: usize) Allocator.Error!BytesKind {
        std.debug.assert(count > 0);
        _ = LibcCopy.memcpyFn(); // Resolved here, outside every timed region.
        const buffers = try allocator.alloc([]u8, count);
        const sums = try allocator.alloc(u32, count);
        for (buffers, sums, 0..) |*buffer, *sum, buffer_index| {
            buffer.* = try allocator.alloc(u8, len);
            fill(buffer.*, buffer_index);
            sum.* = checksum(buffer.*);
        }
        return .{ .buffers = buffers, .sums = sums };
    }

    pub fn deinit(self: *BytesKind, allocator: Allocator) void {
        for (self.buffers) |buffer| allocator.free(buffer);
        allocator.free(self.buffers);
        allocator.free(self.sums);
    }

    fn which(self: *const BytesKind, index: u64) usize {
        return @intCast(index % self.buffers.len);
    }

    pub fn take(self: *const BytesKind, index: u64, allocator: Allocator) Allocator.Error![]u8 {
        return LibcCopy.dupe(allocator, self.buffers[self.which(index)]);
    }

    pub fn reply(request: *const []u8, allocator: Allocator) Allocator.Error![]u8 {
        return LibcCopy.dupe(allocator, request.*);
    }

    pub fn drop(value: []u8, allocator: Allocator) void {
        allocator.free(value);
    }

    pub fn check(self: *const BytesKind, index: u64, value: *const []u8) bool {
        const w = self.which(index);
        return value.len == self.buffers[w].len and checksum(value.*) == self.sums[w];
    }
};

/// Exists once `ampere` exports its reference-counted buffer.
pub const has_shared = @hasDecl(ampere, "RcBuffer");

pub const SharedKind = if (has_shared) struct {
    const RcBuffer = ampere.RcBuffer;
    pub const Value = *RcBuffer;
    buffer: *RcBuffer,
    sum: u32,

    pub fn init(allocator: Allocator, len: usize) Allocator.Error!@This() {
        const buffer = try RcBuffer.create(allocator, len);
        fill(buffer.bytesMut(), 0);
        return .{ .buffer = buffer, .sum = checksum(buffer.bytes()) };
    }

    pub fn deinit(self: *@This(), _: Allocator) void {
        self.buffer.release();
    }

    pub fn take(self: *const @This(), _: u64, _: Allocator) Allocator.Error!*RcBuffer {
        return self.buffer.clone();
    }

    pub fn reply(request: *const *RcBuffer, _: Allocator) Allocator.Error!*RcBuffer {
        return request.*.clone();
    }

    pub fn drop(value: *RcBuffer, _: Allocator) void {
        value.release();
    }

    pub fn check(self: *const @This(), _: u64, value: *const *RcBuffer) bool {
        return value.* == self.buffer and checksum(value.*.bytes()) == self.sum;
    }
} else void;

fn Request(comptime V: type) type {
    return struct { payload: V, reply: ampere.channel.OwnedOneshot(V).Sender };
}

/// The long-lived echo task: answers until every sender is gone; returns the number of
/// requests answered.
fn EchoTask(comptime K: type) type {
    const Channel = ampere.channel.Bounded(Request(K.Value));
    return struct {
        const Self = @This();
        pub const Output = u64;
        rx: Channel.Receiver,
        allocator: Allocator,
        answered: u64 = 0,
        receiving: ?Channel.RecvFuture = null,

        pub fn poll(self: *Self, cx: *Context) Poll(u64) {
            while (true) {
                if (ampere.future.isNull(&self.receiving)) self.receiving = self.rx.recv();
                switch (self.receiving.?.poll(cx)) {
                    .pending => return .pending,
                    .ready => |result| {
                        self.receiving = null;
                        var request = result catch {
                            self.rx.deinit(); // Closed: the last handle, frees the channel.
                            return .{ .ready = self.answered };
                        };
                        const answer = K.reply(&request.payload, self.allocator) catch {
                            K.drop(request.payload, self.allocator);
                            request.reply.deinit(); // The caller gets error.Closed.
                            continue;
                        };
                        K.drop(request.payload, self.allocator);
                        if (request.reply.send(answer)) |_| {
                            self.answered += 1;
                        } else |_| {
                            K.drop(answer, self.allocator);
                        }
                    },
                }
            }
        }

        pub fn cancel(self: *Self) void {
            if (self.receiving) |*receiving| receiving.cancel();
            self.receiving = null;
            self.rx.deinit();
        }
    };
}

/// One caller: take the payload, send it with the sender half of a fresh owned oneshot, await
/// the reply, check it, free it, give both handles up. Output: whether the reply was right.
fn Caller(comptime K: type) type {
    const V = K.Value;
    const Channel = ampere.channel.Bounded(Request(V));
    const Reply = ampere.channel.OwnedOneshot(V);
    return struct {
        const Self = @This();
        pub const Output = bool;
        kind: *const K,
        tx: Channel.Sender,
        allocator: Allocator,
        index: u64,
        /// The reply's receiver (Rust: `reply_rx`); its state is allocated in `.start` (Rust:
        /// `oneshot::channel()`, also inside the timed region) and freed by whichever half,
        /// this one or the echo task's sender, lets go last.
        reply_rx: Reply.Receiver = .{ .shared = null, .inner = .{ .channel = null } },
        phase: enum { start, send, receive, done } = .start,
        sending: Channel.SendFuture = undefined,
        receiving: Reply.RecvFuture = undefined,

        pub fn poll(self: *Self, cx: *Context) Poll(bool) {
            while (true) {
                switch (self.phase) {
                    .start => {
                        const payload = self.kind.take(self.index, self.allocator) catch return self.finish(false);
                        const reply_tx, self.reply_rx = Reply.init(self.allocator) catch {
                            K.drop(payload, self.allocator);
                            return self.finish(false);
                        };
                        self.sending = self.tx.send(.{ .payload = payload, .reply = reply_tx });
                        self.phase = .send;
                    },
                    .send => switch (self.sending.poll(cx)) {
                        .pending => return .pending,
                        .ready => |result| {
                            result catch {
                                if (self.sending.takeBack()) |request| {
                                    K.drop(request.payload, self.allocator);
                                    var reply_tx = request.reply;
                                    reply_tx.deinit();
                                }
                                return self.finish(false);
                            };
                            self.receiving = self.reply_rx.recv();
                            self.phase = .receive;
                        },
                    },
                    .receive => switch (self.receiving.poll(cx)) {
                        .pending => return .pending,
                        .ready => |result| {
                            const answer = result catch return self.finish(false);
                            const ok = self.kind.check(self.index, &answer);
                            K.drop(answer, self.allocator);
                            return self.finish(ok);
                        },
                    },
                    .done => unreachable, // Polled after completion.
                }
            }
        }

        /// Gives both handles up (Rust: the caller's `tx` clone and `reply_rx` are dropped
        /// when its future completes).
        fn finish(self: *Self, ok: bool) Poll(bool) {
            self.phase = .done;
            self.reply_rx.deinit();
            self.tx.deinit();
            return .{ .ready = ok };
        }

        /// Unlinks whatever the caller waits on. While sending, the request is taken back and
        /// its payload freed. While receiving, the echo task may still hold the reply's sender:
        /// giving the receiver up is safe (the state is owned; a late reply comes back to the
        /// echo task as error.Closed, which frees it).
        pub fn cancel(self: *Self) void {
            switch (self.phase) {
                .done => return,
                .start => {},
                .send => {
                    self.sending.cancel();
                    if (self.sending.takeBack()) |request| {
                        K.drop(request.payload, self.allocator);
                        var reply_tx = request.reply;
                        reply_tx.deinit();
                    }
                },
                .receive => self.receiving.cancel(),
            }
            _ = self.finish(false);
        }
    };
}

/// What the batch driver reports: whether every check passed, and whether the echo task was
/// joined (only then may the channel be freed; after a failed spawn it is left alone).
const DriverResult = struct { passed: bool, echo_joined: bool };

/// The batch driver, polled by `blockOn` on the main thread (see the module comment).
fn EchoDriver(comptime K: type) type {
    const Channel = ampere.channel.Bounded(Request(K.Value));
    return struct {
        const Self = @This();
        pub const Output = DriverResult;
        ctx: *Ctx,
        kind: *const K,
        /// The driver's own sender (Rust: `tx`); its `deinit` after the batches closes the
        /// channel. `rx` moves into the echo task on the first poll.
        tx: Channel.Sender,
        rx: ?Channel.Receiver,
        /// The callers' sender clones of the next batch, made before `markStart`.
        senders: []Channel.Sender,
        handles: []JoinHandle(bool),
        n: u64,
        warmup: u64,
        batches: u64,
        echo: JoinHandle(u64) = undefined,
        batch: u64 = 0,
        phase: enum { start, spawn, join, finish } = .start,
        joined: usize = 0,
        failures: u64 = 0,
        passed: bool = true,
        mark: Mark = undefined,

        pub fn poll(self: *Self, cx: *Context) Poll(Output) {
            const allocator = self.ctx.allocator();
            while (true) {
                switch (self.phase) {
                    .start => {
                        self.echo = ampere.spawn(EchoTask(K){ .rx = self.rx.?, .allocator = allocator }) catch
                            return self.abandon("cannot spawn the echo task", .{});
                        self.rx = null; // Moved into the echo task.
                        self.phase = .spawn;
                    },
                    .spawn => {
                        if (self.batch == self.warmup + self.batches) {
                            self.finishBatches();
                            continue;
                        }
                        self.failures = 0;
                        self.joined = 0;
                        for (self.senders) |*sender| sender.* = self.tx.clone();
                        self.ctx.metricsBegin();
                        self.mark = self.ctx.markStart();
                        for (self.handles, self.senders, 0..) |*handle, sender, i| {
                            handle.* = ampere.spawn(Caller(K){
                                .kind = self.kind,
                                .tx = sender,
                                .allocator = allocator,
                                .index = self.batch * self.n + i,
                            }) catch return self.abandon("cannot spawn a caller task", .{});
                        }
                        self.phase = .join;
                    },
                    .join => {
                        while (self.joined < self.handles.len) {
                            switch (self.handles[self.joined].poll(cx)) {
                                .pending => return .pending,
                                .ready => |output| {
                                    const ok = output catch false;
                                    if (!ok) self.failures += 1;
                                    self.joined += 1;
                                },
                            }
                        }
                        const sample = self.mark.stop();
                        self.ctx.metricsEnd(self.batch, self.warmup);
                        self.ctx.expectEq("callers with a wrong or missing reply", self.failures, 0) catch {
                            // Every caller is joined: stop here, but still shut the echo task down.
                            self.passed = false;
                            self.finishBatches();
                            continue;
                        };
                        self.ctx.record(self.batch, self.warmup, sample);
                        self.batch += 1;
                        self.phase = .spawn;
                    },
                    .finish => switch (self.echo.poll(cx)) {
                        .pending => return .pending,
                        .ready => |output| {
                            const answered = output catch {
                                self.ctx.fail("the echo task failed", .{}) catch {};
                                return .{ .ready = .{ .passed = false, .echo_joined = true } };
                            };
                            if (self.passed) {
                                self.ctx.expectEq("requests answered", answered, (self.warmup + self.batches) * self.n) catch {
                                    self.passed = false;
                                };
                            }
                            return .{ .ready = .{ .passed = self.passed, .echo_joined = true } };
                        },
                    },
                }
            }
        }

        /// The driver's sender is the last one (every caller gave its clone up): the channel
        /// closes and the echo task ends (Rust: `drop(tx)`).
        fn finishBatches(self: *Self) void {
            self.tx.deinit();
            self.phase = .finish;
        }

        fn abandon(self: *Self, comptime format: []const u8, args: anytype) Poll(Output) {
            self.ctx.fail(format, args) catch {};
            return .{ .ready = .{ .passed = false, .echo_joined = false } };
        }
    };
}

/// Runs one echo parameter on `rt`: `warmup` discarded batches, then `batches` measured ones.
pub fn runEcho(ctx: *Ctx, rt: *ampere.Runtime, comptime K: type, kind: *const K, n: u64, warmup: u64, batches: u64) Error!void {
    const allocator = ctx.allocator();
    const Channel = ampere.channel.Bounded(Request(K.Value));
    const tx, const rx = Channel.init(allocator, @intCast(2 * n)) catch
        return ctx.fail("out of memory creating the channel", .{});
    const handles = allocator.alloc(JoinHandle(bool), @intCast(n)) catch return ctx.fail("out of memory", .{});
    const senders = allocator.alloc(Channel.Sender, @intCast(n)) catch return ctx.fail("out of memory", .{});
    const result = rt.blockOn(EchoDriver(K){
        .ctx = ctx,
        .kind = kind,
        .tx = tx,
        .rx = rx,
        .senders = senders,
        .handles = handles,
        .n = n,
        .warmup = warmup,
        .batches = batches,
    });
    // Tasks may still refer to the handle arrays unless the echo task was joined. The channel
    // is freed by its last handle (the echo task's receiver).
    if (!result.echo_joined) return error.BenchmarkFailed;
    allocator.free(handles);
    allocator.free(senders);
    if (!result.passed) return error.BenchmarkFailed;
}

/// Runs the echo case `ctx.case` (benchmark name plus its n and size).
pub fn run(ctx: *Ctx) Error!void {
    const c = ctx.constants;
    const case = ctx.case;
    const rt = try ctx.echoRuntime();
    const n = case.n;
    const warmup = if (n == 1) c.echo_warmup_n1 else c.echo_warmup;
    const allocator = ctx.allocator();
    const size: usize = @intCast(case.size);
    const eql = std.mem.eql;
    if (eql(u8, case.name, "echo_f64")) {
        const kind = F64Kind{};
        return runEcho(ctx, rt, F64Kind, &kind, n, warmup, c.echo_batches);
    }
    if (eql(u8, case.name, "echo_string_1mib") or eql(u8, case.name, "echo_bytes_1mib") or eql(u8, case.name, "echo_bytes_sweep")) {
        // The string payload is one prebuilt string; the bytes payloads rotate buffers.
        const count: usize = if (eql(u8, case.name, "echo_string_1mib")) 1 else @intCast(c.echo_payload_buffers);
        var kind = BytesKind.init(allocator, size, count) catch return ctx.fail("out of memory building payloads", .{});
        defer kind.deinit(allocator);
        return runEcho(ctx, rt, BytesKind, &kind, n, warmup, c.echo_batches);
    }
    if (has_shared and eql(u8, case.name, "echo_shared_sweep")) {
        var kind = SharedKind.init(allocator, size) catch return ctx.fail("out of memory building the payload", .{});
        defer kind.deinit(allocator);
        return runEcho(ctx, rt, SharedKind, &kind, n, warmup, c.echo_batches);
    }
    return ctx.fail("unknown echo benchmark {s}", .{case.name});
}

// -- tests ----------------------------------------------------------------------------------

const testing = std.testing;
const constants = @import("constants.zig");

test "every payload round-trips" {
    var diag = constants.Diagnostic{};
    const c = try constants.Constants.load(testing.allocator, "quick", &diag);
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    const cases = [_]harness.Case{
        harness.Case.echo("echo_f64", "n={d}", 1, 1, 8),
        harness.Case.echo("echo_string_1mib", "n={d}", 3, 3, 100),
        harness.Case.echo("echo_bytes_1mib", "n={d}", 3, 3, 64),
        harness.Case.echo("echo_bytes_sweep", "size={d}", 16, 3, 16),
    } ++ (if (has_shared) [_]harness.Case{harness.Case.echo("echo_shared_sweep", "size={d}", 8, 3, 8)} else [_]harness.Case{});
    for (&cases) |*case| {
        var samples: [5]harness.Sample = undefined;
        var ctx = Ctx{ .constants = &c, .counting = &counting, .case = case, .samples = &samples, .runtimes = &runtimes };
        run(&ctx) catch |err| {
            std.debug.print("{s}: {s}\n", .{ case.name, ctx.message() });
            return err;
        };
        try testing.expectEqual(@as(usize, c.echo_batches), ctx.recorded().len);
    }
}

test "each echo caller allocates its reply oneshot inside the batch, and it is freed" {
    var diag = constants.Diagnostic{};
    const c = try constants.Constants.load(testing.allocator, "quick", &diag);
    // testing.allocator under the counter: a reply state left unfreed fails as a leak.
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    var samples: [5]harness.Sample = undefined;
    const n = 4;
    const case = harness.Case.echo("echo_f64", "n={d}", n, n, 8);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples, .runtimes = &runtimes };
    const kind = F64Kind{};
    try runEcho(&ctx, try ctx.echoRuntime(), F64Kind, &kind, n, 1, samples.len);
    // f64 payloads allocate nothing: per caller its reply oneshot's state, always counted,
    // and its task, counted only when the task block was not recycled
    // (runtime/src/scheduler/TaskBlocks.zig).
    for (ctx.recorded()) |s| {
        try testing.expect(s.alloc_count >= n);
        try testing.expect(s.alloc_count <= 2 * n);
    }
}

/// A payload whose replies never check out: the batch must fail, not report a time.
const Corrupting = struct {
    pub const Value = f64;
    pub fn take(_: *const Corrupting, _: u64, _: Allocator) Allocator.Error!f64 {
        return 1.0;
    }
    pub fn reply(request: *const f64, _: Allocator) Allocator.Error!f64 {
        return request.* + 1.0;
    }
    pub fn drop(_: f64, _: Allocator) void {}
    pub fn check(_: *const Corrupting, _: u64, value: *const f64) bool {
        return value.* == 1.0;
    }
};

test "a wrong reply fails the benchmark" {
    var diag = constants.Diagnostic{};
    const c = try constants.Constants.load(testing.allocator, "quick", &diag);
    var counting = harness.CountingAllocator.init(testing.allocator);
    var runtimes = harness.Runtimes{ .allocator = counting.allocator() };
    defer runtimes.deinit();
    var samples: [1]harness.Sample = undefined;
    const case = harness.Case.echo("echo_f64", "n={d}", 2, 2, 8);
    var ctx = Ctx{ .constants = &c, .counting = &counting, .case = &case, .samples = &samples, .runtimes = &runtimes };
    const kind = Corrupting{};
    try testing.expectError(error.BenchmarkFailed, runEcho(&ctx, try ctx.echoRuntime(), Corrupting, &kind, 2, 0, 1));
    try testing.expectEqualStrings("callers with a wrong or missing reply = 2, expected 0", ctx.message());
}

test "checksum sees first, middle and last byte" {
    var a: [10]u8 = undefined;
    fill(&a, 0);
    var b = a;
    b[5] ^= 1;
    try testing.expect(checksum(&a) != checksum(&b));
    try testing.expectEqual(@as(u32, 0), checksum(&.{}));
}
