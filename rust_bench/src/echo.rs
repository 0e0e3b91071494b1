//! The echo suite (after the knitting-vs-Tokio batch echo benchmark).
//!
//! Topology: a multi-thread runtime with 1 worker, driven from the main thread with
//! `block_on`. Per parameter (batch size n, payload size), created untimed: a tokio mpsc
//! bounded channel of capacity 2·n carrying `(payload, oneshot::Sender<payload>)`, and one
//! long-lived echo task that answers every request with its reply payload.
//!
//! One sample = one batch: `Mark::start`; spawn n caller tasks; each takes its payload
//! (`Payload::take`: clone of a prebuilt value where stated), sends it with a fresh oneshot,
//! awaits the reply, checks length and a checksum (first, middle and last byte), drops the
//! reply; the driver (the `block_on` future) awaits the n handles in spawn order;
//! `Mark::stop`. The per-caller handles (`Arc` of the payload source, channel sender clone)
//! are made before `Mark::start`; the join-handle vector has its capacity before timing.
//!
//! Payloads (mirrored by runtime/bench/echo.zig):
//! - f64: the number 42.0, copied both ways;
//! - string: a prebuilt 1 MiB UTF-8 string, cloned by the caller on send and cloned again by
//!   the echo task on reply (the received one is dropped there);
//! - bytes: `echo_payload_buffers` prebuilt buffers, caller i of batch b uses buffer
//!   (b·n + i) mod buffers; cloned on send and on reply;
//! - shared: one `Arc<Vec<u8>>`; the caller sends `Arc::clone`, the echo task replies with
//!   another `Arc::clone` and drops the received reference (only references travel; the
//!   same take / reply / drop steps as the cloned payloads).

use std::sync::Arc;

use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot};

use crate::alloc::{Mark, Sample};
use crate::harness::{Case, expect_eq};

type Samples = Result<Vec<Sample>, String>;

/// A payload kind: how a caller takes its payload, how the echo task answers, how the caller
/// checks the reply.
pub trait Payload: Send + Sync + 'static {
    type Value: Send + 'static;
    /// The caller's payload for global request number `index` (timed).
    fn take(&self, index: u64) -> Self::Value;
    /// The echo task's reply to `request` (timed; `request` is dropped by the echo task).
    fn reply(request: &Self::Value) -> Self::Value;
    /// Whether `reply` is the right answer to request `index`.
    fn check(&self, index: u64, reply: &Self::Value) -> bool;
}

/// First, middle and last byte: the checksum callers verify (also on the Zig side).
pub fn checksum(bytes: &[u8]) -> u32 {
    if bytes.is_empty() {
        return 0;
    }
    bytes[0] as u32 + ((bytes[bytes.len() / 2] as u32) << 8) + ((bytes[bytes.len() - 1] as u32) << 16)
}

/// Deterministic contents of prebuilt buffer `which` of `len` bytes (printable ASCII, so
/// valid UTF-8 for the string payload): byte j = 'a' + (j + 7·which) mod 26.
pub fn fill(len: usize, which: usize) -> Vec<u8> {
    (0..len).map(|j| b'a' + ((j + 7 * which) % 26) as u8).collect()
}

pub struct F64Payload;

impl Payload for F64Payload {
    type Value = f64;
    fn take(&self, _index: u64) -> f64 {
        42.0
    }
    fn reply(request: &f64) -> f64 {
        *request
    }
    fn check(&self, _index: u64, reply: &f64) -> bool {
        *reply == 42.0
    }
}

pub struct StringPayload {
    text: String,
    sum: u32,
}

impl StringPayload {
    pub fn new(len: usize) -> StringPayload {
        let text = String::from_utf8(fill(len, 0)).expect("ASCII is UTF-8");
        let sum = checksum(text.as_bytes());
        StringPayload { text, sum }
    }
}

impl Payload for StringPayload {
    type Value = String;
    fn take(&self, _index: u64) -> String {
        self.text.clone()
    }
    fn reply(request: &String) -> String {
        request.clone()
    }
    fn check(&self, _index: u64, reply: &String) -> bool {
        reply.len() == self.text.len() && checksum(reply.as_bytes()) == self.sum
    }
}

pub struct BytesPayload {
    buffers: Vec<Vec<u8>>,
    sums: Vec<u32>,
}

impl BytesPayload {
    pub fn new(len: usize, count: usize) -> BytesPayload {
        let buffers: Vec<Vec<u8>> = (0..count).map(|which| fill(len, which)).collect();
        let sums = buffers.iter().map(|b| checksum(b)).collect();
        BytesPayload { buffers, sums }
    }
}

impl Payload for BytesPayload {
    type Value = Vec<u8>;
    fn take(&self, index: u64) -> Vec<u8> {
        self.buffers[(index % self.buffers.len() as u64) as usize].clone()
    }
    fn reply(request: &Vec<u8>) -> Vec<u8> {
        request.clone()
    }
    fn check(&self, index: u64, reply: &Vec<u8>) -> bool {
        let which = (index % self.buffers.len() as u64) as usize;
        reply.len() == self.buffers[which].len() && checksum(reply) == self.sums[which]
    }
}

pub struct SharedPayload {
    buffer: Arc<Vec<u8>>,
    sum: u32,
}

impl SharedPayload {
    pub fn new(len: usize) -> SharedPayload {
        let buffer = Arc::new(fill(len, 0));
        let sum = checksum(&buffer);
        SharedPayload { buffer, sum }
    }
}

impl Payload for SharedPayload {
    type Value = Arc<Vec<u8>>;
    fn take(&self, _index: u64) -> Arc<Vec<u8>> {
        Arc::clone(&self.buffer)
    }
    fn reply(request: &Arc<Vec<u8>>) -> Arc<Vec<u8>> {
        Arc::clone(request)
    }
    fn check(&self, _index: u64, reply: &Arc<Vec<u8>>) -> bool {
        Arc::ptr_eq(reply, &self.buffer) && checksum(reply) == self.sum
    }
}

type Request<V> = (V, oneshot::Sender<V>);

/// Runs one echo parameter: `warmup` discarded batches, then `batches` measured ones.
pub fn run_echo<P: Payload>(rt: &Runtime, payload: P, n: u64, warmup: u64, batches: u64) -> Samples {
    let payload = Arc::new(payload);
    rt.block_on(async move {
        let (tx, mut rx) = mpsc::channel::<Request<P::Value>>(2 * n as usize);
        // The echo task: answers until every sender is gone.
        let echo = tokio::spawn(async move {
            let mut answered: u64 = 0;
            while let Some((request, reply_tx)) = rx.recv().await {
                let reply = P::reply(&request);
                drop(request);
                if reply_tx.send(reply).is_ok() {
                    answered += 1;
                }
            }
            answered
        });
        let mut handles = Vec::with_capacity(n as usize);
        let mut samples = Vec::with_capacity(batches as usize);
        for batch in 0..warmup + batches {
            let mut callers: Vec<_> = (0..n).map(|_| (Arc::clone(&payload), tx.clone())).collect();
            let mut failures: u64 = 0;
            let mark = Mark::start();
            for (i, (payload, tx)) in callers.drain(..).enumerate() {
                let index = batch * n + i as u64;
                handles.push(tokio::spawn(async move {
                    let value = payload.take(index);
                    let (reply_tx, reply_rx) = oneshot::channel();
                    if tx.send((value, reply_tx)).await.is_err() {
                        return false;
                    }
                    match reply_rx.await {
                        Ok(reply) => payload.check(index, &reply),
                        Err(_) => false,
                    }
                }));
            }
            for handle in handles.drain(..) {
                match handle.await {
                    Ok(true) => {}
                    Ok(false) => failures += 1,
                    Err(e) => return Err(format!("caller task failed: {e}")),
                }
            }
            let sample = mark.stop();
            expect_eq("callers with a wrong or missing reply", failures, 0)?;
            if batch >= warmup {
                samples.push(sample);
            }
        }
        drop(tx);
        let answered = echo.await.map_err(|e| format!("echo task failed: {e}"))?;
        expect_eq("requests answered", answered, (warmup + batches) * n)?;
        Ok(samples)
    })
}

/// Runs the echo case `case` (benchmark name plus its n and size).
pub fn run_case(rt: &Runtime, case: &Case, c: &crate::constants::Constants) -> Samples {
    let n = case.n;
    let warmup = if n == 1 { c.echo_warmup_n1 } else { c.echo_warmup };
    let batches = c.echo_batches;
    let size = case.size as usize;
    let buffers = c.echo_payload_buffers as usize;
    match case.name {
        "echo_f64" => run_echo(rt, F64Payload, n, warmup, batches),
        "echo_string_1mib" => run_echo(rt, StringPayload::new(size), n, warmup, batches),
        "echo_bytes_1mib" | "echo_bytes_sweep" => run_echo(rt, BytesPayload::new(size, buffers), n, warmup, batches),
        "echo_shared_sweep" => run_echo(rt, SharedPayload::new(size), n, warmup, batches),
        other => Err(format!("unknown echo benchmark {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_payload_round_trips() {
        let rt = crate::variants::select("tokio", "tokio").unwrap().build_runtime(1).unwrap();
        for n in [1, 3] {
            assert_eq!(run_echo(&rt, F64Payload, n, 1, 2).unwrap().len(), 2);
            assert_eq!(run_echo(&rt, StringPayload::new(100), n, 1, 2).unwrap().len(), 2);
            assert_eq!(run_echo(&rt, BytesPayload::new(64, 4), n, 1, 3).unwrap().len(), 3);
            assert_eq!(run_echo(&rt, SharedPayload::new(8), n, 0, 2).unwrap().len(), 2);
        }
    }

    /// A payload whose replies never check out: the batch must fail, not report a time.
    struct Corrupting;
    impl Payload for Corrupting {
        type Value = Vec<u8>;
        fn take(&self, _index: u64) -> Vec<u8> {
            vec![1, 2, 3]
        }
        fn reply(request: &Vec<u8>) -> Vec<u8> {
            request[..2].to_vec()
        }
        fn check(&self, _index: u64, reply: &Vec<u8>) -> bool {
            reply.len() == 3
        }
    }

    #[test]
    fn a_wrong_reply_fails_the_benchmark() {
        let rt = crate::variants::select("tokio", "tokio").unwrap().build_runtime(1).unwrap();
        let err = run_echo(&rt, Corrupting, 2, 0, 1).unwrap_err();
        assert!(err.contains("wrong or missing reply"), "{err}");
    }

    #[test]
    fn checksum_sees_first_middle_last() {
        let a = fill(10, 0);
        let mut b = a.clone();
        b[5] ^= 1;
        assert_ne!(checksum(&a), checksum(&b));
        assert_eq!(checksum(&[]), 0);
        let bytes = BytesPayload::new(16, 4);
        assert!(bytes.check(5, &bytes.take(5)));
        assert!(!bytes.check(6, &bytes.take(5)));
    }
}
