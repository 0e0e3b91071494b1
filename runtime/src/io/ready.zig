//! Readiness of a file descriptor (Tokio's `Ready` and `Interest`): which operations may make
//! progress without blocking, as last reported by the kernel.
//!
//! `Ready` is a set of five bits:
//!
//!     readable      bit 0  data (or a connection to accept) is waiting       EPOLLIN, EPOLLPRI
//!     writable      bit 1  send buffer space (or a finished connect)         EPOLLOUT
//!     read_closed   bit 2  the peer shut down its writing side: reads see EOF EPOLLRDHUP, EPOLLHUP
//!     write_closed  bit 3  writing can no longer succeed                     EPOLLHUP, EPOLLOUT+EPOLLERR
//!     err           bit 4  an error is pending on the socket (SO_ERROR)      EPOLLERR
//!
//! An operation waits for its *interest*: a read or an accept for `read_interest` (readable,
//! read-closed, error), a write or a connect for `write_interest` (writable, write-closed,
//! error). The closed and error bits are part of both so that a reader or writer whose peer
//! went away is woken and learns why from the system call itself (EOF, ECONNRESET, EPIPE).

const std = @import("std");
const linux = std.os.linux;

pub const Ready = packed struct(u8) {
    readable: bool = false,
    writable: bool = false,
    read_closed: bool = false,
    write_closed: bool = false,
    err: bool = false,
    _padding: u3 = 0,

    pub const empty: Ready = .{};
    pub const all: Ready = .{ .readable = true, .writable = true, .read_closed = true, .write_closed = true, .err = true };
    /// What a read or an accept waits for.
    pub const read_interest: Ready = .{ .readable = true, .read_closed = true, .err = true };
    /// What a write or a connect waits for.
    pub const write_interest: Ready = .{ .writable = true, .write_closed = true, .err = true };
    /// The final states: never cleared by a `WouldBlock` (a closed direction stays closed).
    pub const closed: Ready = .{ .read_closed = true, .write_closed = true };

    pub fn bits(self: Ready) u8 {
        return @bitCast(self);
    }

    pub fn fromBits(value: u8) Ready {
        var ready: Ready = @bitCast(value);
        ready._padding = 0;
        return ready;
    }

    pub fn isEmpty(self: Ready) bool {
        return self.bits() == 0;
    }

    pub fn unite(self: Ready, other: Ready) Ready {
        return fromBits(self.bits() | other.bits());
    }

    pub fn intersect(self: Ready, other: Ready) Ready {
        return fromBits(self.bits() & other.bits());
    }

    pub fn without(self: Ready, other: Ready) Ready {
        return fromBits(self.bits() & ~other.bits());
    }

    pub fn intersects(self: Ready, other: Ready) bool {
        return !self.intersect(other).isEmpty();
    }

    /// The readiness an epoll event reports (mio's mapping for Linux).
    pub fn fromEpoll(events: u32) Ready {
        const E = linux.EPOLL;
        const has = struct {
            fn any(value: u32, mask: u32) bool {
                return value & mask != 0;
            }
        }.any;
        return .{
            .readable = has(events, E.IN | E.PRI),
            .writable = has(events, E.OUT),
            .read_closed = has(events, E.HUP | E.RDHUP),
            .write_closed = has(events, E.HUP) or (has(events, E.OUT) and has(events, E.ERR)) or events == E.ERR,
            .err = has(events, E.ERR),
        };
    }
};

test "epoll events map onto readiness" {
    const E = linux.EPOLL;
    const t = std.testing;
    try t.expectEqual(Ready{ .readable = true }, Ready.fromEpoll(E.IN));
    try t.expectEqual(Ready{ .writable = true }, Ready.fromEpoll(E.OUT));
    try t.expectEqual(Ready{ .readable = true, .read_closed = true }, Ready.fromEpoll(E.IN | E.RDHUP));
    // A reset connection: everything is over, and the error is pending.
    const reset = Ready.fromEpoll(E.IN | E.OUT | E.RDHUP | E.HUP | E.ERR);
    try t.expect(reset.read_closed and reset.write_closed and reset.err);
    try t.expect(Ready.fromEpoll(E.ERR).write_closed);
    try t.expect(Ready.read_interest.intersects(reset) and Ready.write_interest.intersects(reset));
    try t.expect(!Ready.read_interest.intersects(.{ .writable = true }));
    try t.expectEqual(Ready{ .readable = true }, Ready.all.without(Ready.closed).without(.{ .writable = true, .err = true }));
}
