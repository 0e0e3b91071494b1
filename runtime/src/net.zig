//! TCP over the runtime's I/O driver (Tokio's `net`): `TcpListener` and `TcpStream`, IPv4 and
//! IPv6. Sockets register with the I/O driver of the runtime they are created on, when they
//! are created; every operation is a cancel-safe future. See runtime/docs/io.md.

const std = @import("std");
const errors = @import("net/errors.zig");

pub const TcpListener = @import("net/TcpListener.zig");
pub const TcpStream = @import("net/TcpStream.zig");
pub const Address = @import("net/sys.zig").Address;
pub const ShutdownHow = @import("net/sys.zig").ShutdownHow;

pub const SocketError = errors.SocketError;
pub const RegisterError = errors.RegisterError;
pub const BindError = errors.BindError;
pub const ConnectError = errors.ConnectError;
pub const AcceptError = errors.AcceptError;
pub const ReadError = errors.ReadError;
pub const ReadExactError = errors.ReadExactError;
pub const WriteError = errors.WriteError;
pub const ShutdownError = errors.ShutdownError;
pub const NetworkError = errors.NetworkError;
pub const NoRuntimeError = errors.NoRuntimeError;

test {
    std.testing.refAllDecls(@This());
    _ = @import("net/sys.zig");
}
