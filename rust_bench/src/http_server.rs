//! `tokio_bench http-server`: the http suite's Tokio side, hyper 1.x on Tokio's multi-thread
//! runtime — the twin of runtime/bench/http_server.zig (same routes, same bytes, same protocol).
//!
//! | request | response |
//! |---|---|
//! | `GET /plaintext` | 200, `content-type: text/plain`, body `Hello, World!` (keep-alive) |
//! | `GET /bytes/16384` | 200, `content-type: application/octet-stream`, 16,384 bytes `a`..`z` repeating |
//! | anything else | 404, body `not found` |
//!
//!     tokio_bench http-server [--port P] [--workers W] [--meta PATH]
//!
//! Binds 127.0.0.1:P (0 = any free port), prints `listening <port>` once bound, serves until
//! stdin reaches end of file, then prints `requests <N>` (responses handed to hyper) and exits 0.
//! One spawned task per connection (`hyper::server::conn::http1`, TCP_NODELAY as on the Zig
//! side). hyper's automatic `date` header is off, so both sides send the same header set bar
//! the field order. Allocation counting (the bench's global allocator) is switched off: its
//! process-wide atomic counters would tax every allocation of the server's worker threads.

use std::convert::Infallible;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::output::{self, Json};
use crate::variants::Variant;

pub const PLAINTEXT_BODY: &[u8] = b"Hello, World!";
pub const BYTES_LEN: usize = 16384;
const NOT_FOUND_BODY: &[u8] = b"not found";

/// The body of `/bytes/16384`: `a`..`z` repeating.
pub fn bytes_body() -> Bytes {
    Bytes::from((0..BYTES_LEN).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Plaintext,
    Bytes,
    NotFound,
}

pub fn route(method: &Method, path: &str) -> Route {
    match (method == Method::GET, path) {
        (true, "/plaintext") => Route::Plaintext,
        (true, "/bytes/16384") => Route::Bytes,
        _ => Route::NotFound,
    }
}

#[derive(Debug, PartialEq)]
pub struct Options {
    pub port: u16,
    pub workers: usize,
    pub meta: Option<String>,
}

pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options { port: 0, workers: 1, meta: None };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = match arg.as_str() {
            "--port" | "--workers" | "--meta" => it.next().ok_or_else(|| format!("{arg} needs a value"))?,
            _ => return Err(format!("unknown argument '{arg}'")),
        };
        match arg.as_str() {
            "--port" => options.port = value.parse().map_err(|_| format!("--port {value}: expected 0-65535"))?,
            "--workers" => {
                options.workers = value.parse().ok().filter(|w| (1..=255).contains(w))
                    .ok_or_else(|| format!("--workers {value}: expected 1-255"))?
            }
            _ => options.meta = Some(value.clone()),
        }
    }
    Ok(options)
}

fn respond(req: &Request<Incoming>, bytes: &Bytes) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match route(req.method(), req.uri().path()) {
        Route::Plaintext => (StatusCode::OK, Some("text/plain"), Bytes::from_static(PLAINTEXT_BODY)),
        Route::Bytes => (StatusCode::OK, Some("application/octet-stream"), bytes.clone()),
        Route::NotFound => (StatusCode::NOT_FOUND, None, Bytes::from_static(NOT_FOUND_BODY)),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    if let Some(value) = content_type {
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(value));
    }
    response
}

/// The metadata JSON: tokio_bench's, with hyper's version and the server named.
fn meta() -> Json {
    let variant = Variant { name: "tokio".to_string(), runtime: "tokio", values: Default::default() };
    let Json::Obj(mut fields) = output::meta(&variant) else { unreachable!("meta is an object") };
    let at = fields.iter().position(|(k, _)| k == "machine").unwrap_or(fields.len());
    fields.insert(at, ("hyper_version".into(), Json::str(env!("TOKIO_BENCH_HYPER_VERSION"))));
    fields.insert(at + 1, ("http_server".into(), Json::str("hyper 1.x http1 on tokio rt-multi-thread")));
    if let Some(entry) = fields.iter_mut().find(|(k, _)| k == "allocator") {
        entry.1 = Json::str("glibc malloc (counting off)");
    }
    Json::Obj(fields)
}

async fn serve(listener: TcpListener, served: Arc<AtomicU64>) {
    let bytes = bytes_body();
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let served = served.clone();
        let bytes = bytes.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                served.fetch_add(1, Ordering::Relaxed);
                let response = respond(&req, &bytes);
                async move { Ok::<_, Infallible>(response) }
            });
            // A connection ends when wrk closes (or resets) it; that is not an error here.
            let _ = http1::Builder::new().auto_date_header(false).serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// Runs the subcommand; Err(message, exit code).
pub fn main(args: &[String]) -> Result<(), (String, u8)> {
    let options = parse(args).map_err(|m| (m, 2))?;
    if let Some(path) = &options.meta {
        output::write_atomic(std::path::Path::new(path), &meta().render()).map_err(|m| (m, 1))?;
    }
    crate::alloc::set_counting(false);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.workers)
        .enable_all()
        .build()
        .map_err(|e| (format!("tokio runtime: {e}"), 1))?;
    let served = Arc::new(AtomicU64::new(0));
    let listener = runtime
        .block_on(TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], options.port))))
        .map_err(|e| (format!("listen: {e}"), 1))?;
    let port = listener.local_addr().map_err(|e| (format!("listen: {e}"), 1))?.port();
    let server = runtime.spawn(serve(listener, served.clone()));
    println!("listening {port}");
    // Serve until stdin ends (the orchestrator closes it).
    let _ = std::io::stdin().lock().read_to_end(&mut Vec::new());
    server.abort();
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    println!("requests {}", served.load(Ordering::Relaxed));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_bodies() {
        assert_eq!(route(&Method::GET, "/plaintext"), Route::Plaintext);
        assert_eq!(route(&Method::GET, "/bytes/16384"), Route::Bytes);
        assert_eq!(route(&Method::POST, "/plaintext"), Route::NotFound);
        assert_eq!(route(&Method::GET, "/bytes/16"), Route::NotFound);
        let body = bytes_body();
        assert_eq!(body.len(), BYTES_LEN);
        assert_eq!(&body[..3], b"abc");
        assert_eq!(body[26], b'a');
    }

    #[test]
    fn command_line() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(parse(&args("--port 80 --workers 3")).unwrap(), Options { port: 80, workers: 3, meta: None });
        assert!(parse(&args("--workers 0")).unwrap_err().contains("1-255"));
        assert!(parse(&args("--bogus")).unwrap_err().contains("unknown argument"));
        assert!(parse(&args("--port")).unwrap_err().contains("needs a value"));
    }

    #[test]
    fn meta_names_hyper() {
        let text = meta().render();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["runtime"], "tokio");
        assert!(v["hyper_version"].as_str().unwrap().starts_with("1."));
    }
}
