//! The errors of `ampere.net`. System errors surface as these Zig errors (never as errno
//! values); the ones callers handle most: `ConnectionRefused` (nobody listens), `ConnectionReset`
//! (the peer reset the connection), `BrokenPipe` (a write after the peer closed), the
//! `NetworkError`s (unreachable network or host, protocol errors), `RuntimeShutdown` (the
//! runtime whose I/O driver the socket belongs to shut down), `SocketClosed` (this side closed
//! the socket while the operation was pending) and `NoRuntime` (a socket made outside any
//! runtime). `Unexpected` is left for errno values that should not happen. End of stream is not
//! an error: a read returns 0 bytes (`readExact` fails with `EndOfStream`).

/// The network or the peer's host cannot be reached, or the peer's stack broke the protocol:
/// errors the kernel reports for a socket after an ICMP message or a failed exchange
/// (`NetworkUnreachable`: ENETUNREACH, ENONET; `NetworkDown`: ENETDOWN; `HostUnreachable`:
/// EHOSTUNREACH, EHOSTDOWN; `ProtocolError`: EPROTO, ENOPROTOOPT, EOPNOTSUPP). They end the
/// operation like any other error, never as `Unexpected` (which dumps a trace in Debug builds).
pub const NetworkError = error{ NetworkUnreachable, NetworkDown, HostUnreachable, ProtocolError };

/// No runtime: `TcpListener.bind` called, or `TcpStream.connect` polled, on a thread that is
/// neither a task, a `blockOn` thread nor a blocking-pool thread of a runtime.
pub const NoRuntimeError = error{NoRuntime};

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

pub const BindError = SocketError || RegisterError || NoRuntimeError || error{ AddressInUse, AddressNotAvailable };

pub const ConnectError = SocketError || RegisterError || NetworkError || NoRuntimeError || error{
    ConnectionRefused,
    ConnectionReset,
    TimedOut,
    AddressInUse,
    AddressNotAvailable,
};

/// `ConnectionAborted` and the `NetworkError`s are failures of one pending connection, which
/// accept(2) on Linux reports in place of the next one: `accept` retries them (up to a bound)
/// and returns one only when they keep coming; accepting again is then the thing to do.
pub const AcceptError = RegisterError || NetworkError || error{
    SocketClosed,
    ConnectionAborted,
    PermissionDenied,
    ProcessFdQuotaExceeded,
    SystemFdQuotaExceeded,
};

pub const ReadError = NetworkError || error{ ConnectionReset, TimedOut, NotConnected, SystemResources, RuntimeShutdown, SocketClosed, Unexpected };

pub const ReadExactError = ReadError || error{EndOfStream};

pub const WriteError = NetworkError || error{ ConnectionReset, BrokenPipe, TimedOut, NotConnected, SystemResources, RuntimeShutdown, SocketClosed, Unexpected };

pub const ShutdownError = error{ NotConnected, SystemResources, RuntimeShutdown, Unexpected };
