//! The net suite (TCP over loopback) on `tokio::net`, mirrored 1:1 by runtime/bench/net.zig.
//!
//! Topology: a multi-thread runtime with `num_workers` workers (built once per process),
//! driven from a driver task as in Tiers 3–4 (`rt.block_on(async { tokio::spawn(driver).await
//! })`). Per case, untimed: the driver binds a listener on 127.0.0.1 port 0 and spawns the
//! echo server task, which accepts exactly the connections the case will open and spawns one
//! `echo_connection` task per connection (a 64 KiB buffer; read, write back exactly what was
//! read, until end of stream); then it awaits them all and returns the bytes echoed. The
//! client connections of the case are opened before the first iteration (except in
//! tcp_connect) and closed after the last; Nagle is off on both ends. After the last
//! iteration the driver checks the server's byte count.
//!
//! One op (BENCHMARKS.md, "Net suite"), verified inside the timed region on both sides:
//! - tcp_pingpong(size): one connection; write `size` bytes, read `size` bytes back, compare.
//!   Byte 0 carries the round and the last byte the iteration, so a stale echo fails.
//! - tcp_echo_conns(conns): `conns` client tasks spawned per iteration, each on its own
//!   connection doing NET_ROUNDS round trips of 64 B; ops = conns × NET_ROUNDS. Each task
//!   takes its stream and hands it back (no allocation).
//! - tcp_connect: connect, (server accepts), set Nagle off, write 1 B, read it back, close.
//! - tcp_stream(size): a writer task writes NET_STREAM_BYTES in `size` chunks while a reader
//!   task reads the echo and checks every byte; ops = bytes. The stream is split into owned
//!   halves (an `Arc`) before the timed region and reunited after it.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use crate::alloc::{Mark, Sample};
use crate::constants::Constants;
use crate::harness::{Case, expect_eq};

type Samples = Result<Vec<Sample>, String>;

/// The echo server's read buffer (both sides).
pub const SERVER_BUFFER_BYTES: usize = 64 * 1024;
/// The tcp_stream reader's buffer (both sides).
pub const READER_BUFFER_BYTES: usize = 64 * 1024;
/// Payload of one tcp_echo_conns round trip.
pub const CONNS_PAYLOAD_BYTES: usize = 64;
/// The parameters of the suite (fixed by BENCHMARKS.md).
pub const PINGPONG_SIZES: [u64; 3] = [64, 4096, 65536];
pub const ECHO_CONNS: [u64; 3] = [1, 16, 128];
pub const STREAM_CHUNK_BYTES: u64 = 1 << 20;

/// Byte `index` of a payload pattern (both sides): no short period, so a misplaced chunk fails.
pub fn pattern_byte(index: u64) -> u8 {
    (index.wrapping_mul(0x9E37_79B1) >> 13) as u8
}

/// The net cases of benchmark `name` (canonical order; the same on the Zig side).
pub fn cases(name: &'static str, c: &Constants) -> Vec<Case> {
    let workers = c.num_workers;
    match name {
        "tcp_pingpong" => PINGPONG_SIZES.iter().map(|&size| Case::net(name, "size", size, c.net_rounds, workers)).collect(),
        "tcp_echo_conns" => ECHO_CONNS.iter().map(|&conns| Case::net(name, "conns", conns, conns * c.net_rounds, workers)).collect(),
        "tcp_connect" => vec![Case::net(name, "", 0, c.net_connect_ops, workers)],
        "tcp_stream" => vec![Case::net(name, "size", STREAM_CHUNK_BYTES, c.net_stream_bytes, workers)],
        other => panic!("not a net benchmark: {other}"),
    }
}

/// Runs the net case `case` as a driver task on `rt`.
pub fn run_case(rt: &Runtime, case: &Case, c: &Constants) -> Samples {
    let c = c.clone();
    let driver: std::pin::Pin<Box<dyn Future<Output = Samples> + Send>> = match case.name {
        "tcp_pingpong" => Box::pin(pingpong(c, case.size as usize)),
        "tcp_echo_conns" => Box::pin(echo_conns(c, case.n as usize)),
        "tcp_connect" => Box::pin(connect(c)),
        "tcp_stream" => Box::pin(stream(c, case.size as usize)),
        other => return Err(format!("unknown net benchmark {other}")),
    };
    rt.block_on(async move { tokio::spawn(driver).await }).map_err(|e| format!("driver task failed: {e}"))?
}

// -- the echo server ------------------------------------------------------------------------

/// One accepted connection: writes back exactly what it reads, until end of stream. Returns
/// the bytes echoed.
///
/// The buffer is not zeroed (as on the Zig side): `read_buf` reads into the `Vec`'s spare
/// capacity, and only what it read is written back.
async fn echo_connection(mut stream: TcpStream) -> Result<u64, String> {
    let mut buffer: Vec<u8> = Vec::with_capacity(SERVER_BUFFER_BYTES);
    let mut total = 0u64;
    loop {
        buffer.clear();
        let count = stream.read_buf(&mut buffer).await.map_err(|e| format!("server read failed: {e}"))?;
        if count == 0 {
            return Ok(total);
        }
        total += count as u64;
        stream.write_all(&buffer[..count]).await.map_err(|e| format!("server write failed: {e}"))?;
    }
}

/// Accepts `expected` connections (Nagle off), one `echo_connection` task each; closes the
/// listener; awaits the connections in accept order and returns the bytes they echoed.
async fn echo_server(listener: TcpListener, expected: u64) -> Result<u64, String> {
    let mut handles = Vec::with_capacity(expected as usize);
    for _ in 0..expected {
        let (stream, _) = listener.accept().await.map_err(|e| format!("accept failed: {e}"))?;
        stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        handles.push(tokio::spawn(echo_connection(stream)));
    }
    drop(listener);
    let mut total = 0;
    for handle in handles {
        total += handle.await.map_err(|e| format!("echo connection task failed: {e}"))??;
    }
    Ok(total)
}

struct Server {
    handle: JoinHandle<Result<u64, String>>,
    address: SocketAddr,
}

/// Binds the listener and spawns the server for `expected` connections.
async fn start_server(expected: u64) -> Result<Server, String> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.map_err(|e| format!("bind failed: {e}"))?;
    let address = listener.local_addr().map_err(|e| format!("local address: {e}"))?;
    Ok(Server { handle: tokio::spawn(echo_server(listener, expected)), address })
}

/// Opens `count` connections one after the other (Nagle off).
async fn connect_all(address: SocketAddr, count: usize) -> Result<Vec<TcpStream>, String> {
    let mut streams = Vec::with_capacity(count);
    for _ in 0..count {
        let stream = TcpStream::connect(address).await.map_err(|e| format!("connect failed: {e}"))?;
        stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        streams.push(stream);
    }
    Ok(streams)
}

/// Closes the setup connections and awaits the server: it must have echoed `bytes`.
async fn finish(server: Server, streams: Vec<TcpStream>, bytes: u64) -> Result<(), String> {
    drop(streams);
    let echoed = server.handle.await.map_err(|e| format!("echo server failed: {e}"))??;
    expect_eq("bytes echoed by the server", echoed, bytes)
}

// -- tcp_pingpong -----------------------------------------------------------------------------

async fn pingpong(c: Constants, size: usize) -> Samples {
    let iterations_total = c.warmup + c.iterations;
    let mut out: Vec<u8> = (0..size as u64).map(pattern_byte).collect();
    let mut back = vec![0u8; size];
    let server = start_server(1).await?;
    let mut streams = connect_all(server.address, 1).await?;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    let stream = &mut streams[0];
    for k in 0..iterations_total {
        let mark = Mark::start();
        for round in 0..c.net_rounds {
            out[0] = round as u8;
            out[size - 1] = k as u8;
            stream.write_all(&out).await.map_err(|e| format!("write failed: {e}"))?;
            stream.read_exact(&mut back).await.map_err(|e| format!("read failed: {e}"))?;
            if back != out {
                return Err(format!("round {round}: the echo differs from what was sent"));
            }
        }
        let sample = mark.stop();
        if k >= c.warmup {
            samples.push(sample);
        }
    }
    finish(server, streams, size as u64 * c.net_rounds * iterations_total).await?;
    Ok(samples)
}

// -- tcp_echo_conns ---------------------------------------------------------------------------

/// One client of tcp_echo_conns: `rounds` round trips of 64 B on its connection. Byte 0
/// carries the round, byte 1 the client id. Hands the stream back with the round trips done.
async fn conns_client(mut stream: TcpStream, id: u64, rounds: u64) -> Result<(TcpStream, u64), String> {
    let mut out = [0u8; CONNS_PAYLOAD_BYTES];
    for (i, b) in out.iter_mut().enumerate() {
        *b = pattern_byte(i as u64);
    }
    let mut back = [0u8; CONNS_PAYLOAD_BYTES];
    out[1] = id as u8;
    for round in 0..rounds {
        out[0] = round as u8;
        stream.write_all(&out).await.map_err(|e| format!("client {id} write failed: {e}"))?;
        stream.read_exact(&mut back).await.map_err(|e| format!("client {id} read failed: {e}"))?;
        if back != out {
            return Err(format!("client {id} failed: EchoMismatch"));
        }
    }
    Ok((stream, rounds))
}

async fn echo_conns(c: Constants, conns: usize) -> Samples {
    let iterations_total = c.warmup + c.iterations;
    let server = start_server(conns as u64).await?;
    let mut streams = connect_all(server.address, conns).await?;
    let mut handles = Vec::with_capacity(conns);
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..iterations_total {
        let mark = Mark::start();
        for (id, stream) in streams.drain(..).enumerate() {
            handles.push(tokio::spawn(conns_client(stream, id as u64, c.net_rounds)));
        }
        for handle in handles.drain(..) {
            let (stream, rounds) = handle.await.map_err(|e| format!("client task failed: {e}"))??;
            expect_eq("round trips of a client", rounds, c.net_rounds)?;
            streams.push(stream);
        }
        let sample = mark.stop();
        if k >= c.warmup {
            samples.push(sample);
        }
    }
    let bytes = (CONNS_PAYLOAD_BYTES * conns) as u64 * c.net_rounds * iterations_total;
    finish(server, streams, bytes).await?;
    Ok(samples)
}

// -- tcp_connect ------------------------------------------------------------------------------

async fn connect(c: Constants) -> Samples {
    let iterations_total = c.warmup + c.iterations;
    let server = start_server(c.net_connect_ops * iterations_total).await?;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..iterations_total {
        let mark = Mark::start();
        for op in 0..c.net_connect_ops {
            let mut stream = TcpStream::connect(server.address).await.map_err(|e| format!("connect failed: {e}"))?;
            stream.set_nodelay(true).map_err(|e| format!("TCP_NODELAY failed: {e}"))?;
            let out = [op as u8];
            let mut back = [!out[0]];
            stream.write_all(&out).await.map_err(|e| format!("write failed: {e}"))?;
            stream.read_exact(&mut back).await.map_err(|e| format!("read failed: {e}"))?;
            if back != out {
                return Err(format!("op {op}: the echoed byte differs"));
            }
            drop(stream);
        }
        let sample = mark.stop();
        if k >= c.warmup {
            samples.push(sample);
        }
    }
    finish(server, Vec::new(), c.net_connect_ops * iterations_total).await?;
    Ok(samples)
}

// -- tcp_stream -------------------------------------------------------------------------------

/// Writes `total` bytes of `chunk` in chunk-sized pieces (the last one shorter); hands the
/// half back (dropping it would shut down the writing side).
async fn write_stream(mut half: OwnedWriteHalf, chunk: Arc<Vec<u8>>, total: u64) -> Result<(OwnedWriteHalf, u64), String> {
    let mut written = 0u64;
    while written < total {
        let piece = (total - written).min(chunk.len() as u64) as usize;
        half.write_all(&chunk[..piece]).await.map_err(|e| format!("the writer failed: {e}"))?;
        written += piece as u64;
    }
    Ok((half, written))
}

/// Reads `total` bytes of the echo, checking each against `chunk` at its stream offset.
async fn read_stream(
    mut half: OwnedReadHalf,
    chunk: Arc<Vec<u8>>,
    mut buffer: Vec<u8>,
    total: u64,
) -> Result<(OwnedReadHalf, Vec<u8>, u64), String> {
    let mut received = 0u64;
    while received < total {
        let count = half.read(&mut buffer).await.map_err(|e| format!("the reader failed: {e}"))?;
        if count == 0 {
            return Err("the reader failed: ShortEcho".to_string());
        }
        if !matches_chunk(&chunk, received, &buffer[..count]) {
            return Err("the reader failed: EchoMismatch".to_string());
        }
        received += count as u64;
    }
    Ok((half, buffer, received))
}

/// Whether `bytes`, found at stream offset `offset`, are the stream of repeated `chunk`s.
pub fn matches_chunk(chunk: &[u8], offset: u64, bytes: &[u8]) -> bool {
    let mut done = 0usize;
    while done < bytes.len() {
        let position = ((offset + done as u64) % chunk.len() as u64) as usize;
        let piece = (bytes.len() - done).min(chunk.len() - position);
        if bytes[done..done + piece] != chunk[position..position + piece] {
            return false;
        }
        done += piece;
    }
    true
}

async fn stream(c: Constants, size: usize) -> Samples {
    let iterations_total = c.warmup + c.iterations;
    let total = c.net_stream_bytes;
    let chunk: Arc<Vec<u8>> = Arc::new((0..size as u64).map(pattern_byte).collect());
    let mut buffer = vec![0u8; READER_BUFFER_BYTES];
    let server = start_server(1).await?;
    let mut streams = connect_all(server.address, 1).await?;
    let mut samples = Vec::with_capacity(c.iterations as usize);
    for k in 0..iterations_total {
        // Untimed: the split (an Arc), the chunk's reference counts, the buffer hand-over.
        let (read_half, write_half) = streams.pop().expect("one stream").into_split();
        let (writer_chunk, reader_chunk) = (Arc::clone(&chunk), Arc::clone(&chunk));
        let reader_buffer = std::mem::take(&mut buffer);
        let mark = Mark::start();
        let writer = tokio::spawn(write_stream(write_half, writer_chunk, total));
        let reader = tokio::spawn(read_stream(read_half, reader_chunk, reader_buffer, total));
        let (write_half, written) = writer.await.map_err(|e| format!("the writer failed: {e}"))??;
        expect_eq("bytes written", written, total)?;
        let (read_half, reader_buffer, received) = reader.await.map_err(|e| format!("the reader failed: {e}"))??;
        expect_eq("bytes received", received, total)?;
        let sample = mark.stop();
        buffer = reader_buffer;
        streams.push(read_half.reunite(write_half).map_err(|e| format!("reunite: {e}"))?);
        if k >= c.warmup {
            samples.push(sample);
        }
    }
    finish(server, streams, total * iterations_total).await?;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> Constants {
        let mut c = Constants::load("quick").unwrap();
        c.net_rounds = 5;
        c.net_connect_ops = 5;
        c.net_stream_bytes = 3 * 65536 + 17;
        c
    }

    #[test]
    fn every_net_benchmark_runs_and_verifies_itself() {
        let c = quick();
        let rt = crate::variants::select("tokio", "tokio").unwrap().build_runtime(c.num_workers).unwrap();
        let cases = [
            Case::net("tcp_pingpong", "size", 4096, c.net_rounds, c.num_workers),
            Case::net("tcp_echo_conns", "conns", 3, 3 * c.net_rounds, c.num_workers),
            Case::net("tcp_connect", "", 0, c.net_connect_ops, c.num_workers),
            Case::net("tcp_stream", "size", 65536, c.net_stream_bytes, c.num_workers),
        ];
        for case in &cases {
            let samples = run_case(&rt, case, &c).unwrap_or_else(|e| panic!("{}: {e}", case.name));
            assert_eq!(samples.len() as u64, c.iterations);
        }
    }

    #[test]
    fn the_stream_check_finds_a_misplaced_byte_across_chunk_boundaries() {
        let chunk: Vec<u8> = (0..10).map(pattern_byte).collect();
        let mut stream: Vec<u8> = (0..25).map(|i| chunk[i % chunk.len()]).collect();
        assert!(matches_chunk(&chunk, 0, &stream));
        assert!(matches_chunk(&chunk, 7, &stream[7..]));
        assert!(!matches_chunk(&chunk, 6, &stream[7..]));
        stream[13] ^= 1;
        assert!(!matches_chunk(&chunk, 0, &stream));
    }

    #[test]
    fn cases_match_the_spec() {
        let c = quick();
        let params: Vec<String> = ["tcp_pingpong", "tcp_echo_conns", "tcp_connect", "tcp_stream"]
            .iter()
            .flat_map(|name| cases(name, &c))
            .map(|case| format!("{} {} {} {}", case.name, case.param, case.ops, case.workers))
            .collect();
        assert_eq!(
            params,
            [
                "tcp_pingpong size=64 5 4",
                "tcp_pingpong size=4096 5 4",
                "tcp_pingpong size=65536 5 4",
                "tcp_echo_conns conns=1 5 4",
                "tcp_echo_conns conns=16 80 4",
                "tcp_echo_conns conns=128 640 4",
                "tcp_connect  5 4",
                "tcp_stream size=1048576 196625 4",
            ]
        );
    }
}
