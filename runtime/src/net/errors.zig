//! The errors of `ampere.net`. System errors surface as these Zig errors (never as errno
//! values); the ones callers handle most: `ConnectionRefused` (nobody listens), `ConnectionReset`
//! (the peer reset the connection), `BrokenPipe` (a write after the peer closed),
//! `RuntimeShutdown` (the runtime whose I/O driver the socket belongs to shut down), and
//! `SocketClosed` (this side closed the socket while the operation was pending). End of
//! stream is not an error: a read returns 0 bytes (`readExact` fails with `EndOfStream`).

/// Creating a socket or changing its options (`RuntimeShutdown`: on a socket the runtime's
/// `deinit` closed).
pub const SocketError = error{
    RuntimeShutdown,
    AddressFamilyNotSupported,
    PermissionDenied,
    ProcessFdQuotaExceeded,
    SystemFdQuotaExceeded,
    SystemResources,
    NotConnected,
    Unexpected,
};

/// Registering a new socket with the runtime's I/O driver.
pub const RegisterError = error{ OutOfMemory, RuntimeShutdown, SystemResources, Unexpected };

pub const BindError = SocketError || RegisterError || error{ AddressInUse, AddressNotAvailable };

pub const ConnectError = SocketError || RegisterError || error{
    ConnectionRefused,
    ConnectionReset,
    TimedOut,
    NetworkUnreachable,
    AddressInUse,
    AddressNotAvailable,
};

pub const AcceptError = RegisterError || error{
    SocketClosed,
    ConnectionAborted,
    PermissionDenied,
    ProcessFdQuotaExceeded,
    SystemFdQuotaExceeded,
};

pub const ReadError = error{ ConnectionReset, TimedOut, NotConnected, SystemResources, RuntimeShutdown, SocketClosed, Unexpected };

pub const ReadExactError = ReadError || error{EndOfStream};

pub const WriteError = error{ ConnectionReset, BrokenPipe, TimedOut, NotConnected, SystemResources, RuntimeShutdown, SocketClosed, Unexpected };

pub const ShutdownError = error{ NotConnected, SystemResources, RuntimeShutdown, Unexpected };
