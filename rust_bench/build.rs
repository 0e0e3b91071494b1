//! Records facts the metadata JSON needs at build time: the rustc version and the Tokio
//! version locked in Cargo.lock. Rebuilds when constants.json changes (it is include_str!'d).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../runtime/bench/constants.json");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|text| parse_rustc_version(&text))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TOKIO_BENCH_RUSTC_VERSION={version}");

    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let tokio = locked_version(&lock, "tokio").unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TOKIO_BENCH_TOKIO_VERSION={tokio}");
}

/// "rustc 1.95.0 (59807616e 2026-04-14)" -> "1.95.0".
fn parse_rustc_version(text: &str) -> String {
    text.split_whitespace().nth(1).unwrap_or("unknown").to_string()
}

/// The `version` of the `[[package]]` named `name` in a Cargo.lock.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == wanted {
            let next = lines.next()?.trim();
            let version = next.strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(version.to_string());
        }
    }
    None
}
