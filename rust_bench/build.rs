//! Records facts the metadata JSON needs at build time: the rustc version, the Tokio version
//! locked in Cargo.lock, and the rustflags this build really got (so a build that missed the
//! repository's `.cargo/config.toml` says so in its metadata instead of claiming native).
//! Rebuilds when constants.json or variants.json changes (both are include_str!'d).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=../runtime/bench/constants.json");
    println!("cargo:rerun-if-changed=../runtime/bench/variants.json");
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

    // CARGO_ENCODED_RUSTFLAGS separates flags with 0x1f.
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default().replace('\x1f', " ");
    println!("cargo:rustc-env=TOKIO_BENCH_RUSTFLAGS={}", flags.trim());
    println!("cargo:rustc-env=TOKIO_BENCH_TARGET_CPU={}", target_cpu(&flags));

    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let tokio = locked_version(&lock, "tokio").unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TOKIO_BENCH_TOKIO_VERSION={tokio}");
    let hyper = locked_version(&lock, "hyper").unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TOKIO_BENCH_HYPER_VERSION={hyper}");
}

/// The value of `-C target-cpu=X` among the flags, or "generic" when none was given.
fn target_cpu(flags: &str) -> String {
    let words: Vec<&str> = flags.split_whitespace().collect();
    for (i, word) in words.iter().enumerate() {
        let option = if *word == "-C" { words.get(i + 1).copied() } else { word.strip_prefix("-C") };
        if let Some(value) = option.and_then(|o| o.strip_prefix("target-cpu=")) {
            return value.to_string();
        }
    }
    "generic".to_string()
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
