//! Forwarding of std.Io vtable functions to the `std.Io.Threaded` instance an `ampere.Io`
//! keeps for the operations that are blocking system calls (files, directories, processes).
//!
//! `direct(name)` is a function with the signature of `std.Io.VTable.<name>` that calls
//! Threaded's implementation of `name` on the calling thread — for calls that never block
//! (closing a descriptor, seeking). `offload(name)` calls it on a thread of the runtime's
//! blocking pool while the calling fiber waits (`AmpereIo.offload`); the calling *thread* is
//! free to run other tasks. Threaded's functions work on any thread: on a thread that is not
//! one of its own (`Thread.current == null`) they skip only its cancellation machinery.

const std = @import("std");
const AmpereIo = @import("State.zig");

pub const Mode = enum { direct, offload };

fn FnOf(comptime name: []const u8) type {
    return @typeInfo(@FieldType(std.Io.VTable, name)).pointer.child;
}

fn ReturnOf(comptime name: []const u8) type {
    return @typeInfo(FnOf(name)).@"fn".return_type.?;
}

/// Calls Threaded's `name` with `args` (the arguments after the userdata), on this thread.
pub fn callThreaded(self: *AmpereIo, comptime name: []const u8, args: anytype) ReturnOf(name) {
    return self.callThreaded(name, args);
}

fn forward(comptime name: []const u8, comptime mode: Mode, userdata: ?*anyopaque, args: anytype) ReturnOf(name) {
    const self = AmpereIo.fromUserdata(userdata);
    return switch (mode) {
        .direct => callThreaded(self, name, args),
        .offload => self.offload(name, args),
    };
}

/// A function of the type of `std.Io.VTable.<name>` that forwards to Threaded (see `Mode`).
pub fn forwarder(comptime name: []const u8, comptime mode: Mode) *const FnOf(name) {
    const params = @typeInfo(FnOf(name)).@"fn".params;
    const R = ReturnOf(name);
    const P = struct {
        fn at(comptime i: usize) type {
            return params[i].type.?;
        }
    };
    return switch (params.len) {
        1 => &struct {
            fn f(u: ?*anyopaque) R {
                return forward(name, mode, u, .{});
            }
        }.f,
        2 => &struct {
            fn f(u: ?*anyopaque, a: P.at(1)) R {
                return forward(name, mode, u, .{a});
            }
        }.f,
        3 => &struct {
            fn f(u: ?*anyopaque, a: P.at(1), b: P.at(2)) R {
                return forward(name, mode, u, .{ a, b });
            }
        }.f,
        4 => &struct {
            fn f(u: ?*anyopaque, a: P.at(1), b: P.at(2), c: P.at(3)) R {
                return forward(name, mode, u, .{ a, b, c });
            }
        }.f,
        5 => &struct {
            fn f(u: ?*anyopaque, a: P.at(1), b: P.at(2), c: P.at(3), d: P.at(4)) R {
                return forward(name, mode, u, .{ a, b, c, d });
            }
        }.f,
        6 => &struct {
            fn f(u: ?*anyopaque, a: P.at(1), b: P.at(2), c: P.at(3), d: P.at(4), e: P.at(5)) R {
                return forward(name, mode, u, .{ a, b, c, d, e });
            }
        }.f,
        7 => &struct {
            fn f(u: ?*anyopaque, a: P.at(1), b: P.at(2), c: P.at(3), d: P.at(4), e: P.at(5), g: P.at(6)) R {
                return forward(name, mode, u, .{ a, b, c, d, e, g });
            }
        }.f,
        else => @compileError("std.Io.VTable." ++ name ++ ": unexpected arity"),
    };
}
