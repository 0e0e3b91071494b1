//! Runtime variants: named configurations of a runtime (`ampere`, `ampere.nospin`, `tokio`,
//! ...), defined in `runtime/bench/variants.json` (embedded with `include_str!`) and selected
//! with `--variant NAME`. Same rules and messages as the Zig side (runtime/bench/variants.zig):
//! - top-level keys: `variants` (required) and `_comment`; each variant is an object with
//!   exactly `runtime` (a known runtime), `settings` (an object) and `description` (a string);
//! - a name matches `[a-z][a-z0-9_]*(\.[a-z0-9_]+)?` and its part before the dot is its
//!   `runtime`;
//! - a setting must be one of `KNOWN_SETTINGS` for that runtime, with an integer value in the
//!   setting's range.
//!
//! The whole file is checked whichever variant is selected; object keys are visited in byte
//! order (serde_json's map order; the Zig side sorts them), so both programs report the same
//! first problem of a file. Selecting an unknown variant, or a
//! variant of the other runtime, is an error (exit 2). The selected variant builds the Tokio
//! runtimes of the program (`Variant::build_runtime`), so its settings reach every runtime:
//! Tiers 3–4 (one per worker count) and echo.

use serde_json::Value;
use tokio::runtime::Runtime;

/// The embedded variants file.
pub const VARIANTS_JSON: &str = include_str!("../../runtime/bench/variants.json");

/// A setting a variant may give a runtime, and its accepted range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub runtime: &'static str,
    pub name: &'static str,
    pub min: u64,
    pub max: u64,
}

/// Every setting a variant may carry, in canonical output order (the Zig side's
/// `known_settings`). ampere's map onto `Runtime.Options` fields, Tokio's onto `Builder`
/// methods of the same name.
pub const KNOWN_SETTINGS: [Setting; 6] = [
    Setting { runtime: "ampere", name: "spin_before_park_ns", min: 0, max: 1_000_000_000 },
    Setting { runtime: "ampere", name: "global_queue_interval", min: 1, max: u32::MAX as u64 },
    Setting { runtime: "ampere", name: "event_interval", min: 1, max: u32::MAX as u64 },
    Setting { runtime: "tokio", name: "global_queue_interval", min: 1, max: u32::MAX as u64 },
    Setting { runtime: "tokio", name: "event_interval", min: 1, max: u32::MAX as u64 },
    // How the io twins collect a group of tasks (io.rs `GroupKind`): 0 handles, 1 JoinSet, 2 TaskTracker.
    Setting { runtime: "tokio", name: "io_group", min: 0, max: 2 },
];

pub const KNOWN_RUNTIMES: [&str; 2] = ["ampere", "tokio"];

/// Most keys of one JSON object of the file (the Zig side's `keys_max`).
pub const KEYS_MAX: usize = 64;

type Object = serde_json::Map<String, Value>;

/// The object's keys (in byte order), or an error when it has more than `KEYS_MAX`.
fn keys<'a>(object: &'a Object, place: &str) -> Result<Vec<&'a str>, String> {
    if object.len() > KEYS_MAX {
        return Err(format!("variants.json: {place}: more than {KEYS_MAX} keys"));
    }
    Ok(object.keys().map(String::as_str).collect())
}

/// The selected variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The variant's name, e.g. `tokio`.
    pub name: String,
    /// Its base runtime, e.g. `tokio`.
    pub runtime: &'static str,
    /// Value per entry of `KNOWN_SETTINGS`; `None` where the variant does not set it.
    pub values: [Option<u64>; KNOWN_SETTINGS.len()],
}

impl Variant {
    /// The variant's settings in canonical order.
    pub fn settings(&self) -> Vec<(&'static str, u64)> {
        KNOWN_SETTINGS.iter().zip(self.values).filter_map(|(s, v)| v.map(|v| (s.name, v))).collect()
    }

    /// The value of setting `name`, None where the variant does not set it.
    pub fn setting(&self, name: &str) -> Option<u64> {
        self.settings().into_iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// A multi-thread Tokio runtime with `workers` workers and the variant's settings; every
    /// other option is Tokio's default (`enable_all`: the time driver and, with the `net`
    /// feature the net suite needs, the I/O driver — every runtime of both programs has an
    /// I/O driver, as ampere's always does).
    pub fn build_runtime(&self, workers: u64) -> Result<Runtime, String> {
        assert_eq!(self.runtime, "tokio");
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(workers as usize).enable_all();
        for (name, value) in self.settings() {
            // Range-checked at load: the casts cannot truncate.
            match name {
                "global_queue_interval" => builder.global_queue_interval(value as u32),
                "event_interval" => builder.event_interval(value as u32),
                "io_group" => &mut builder, // not a runtime option: the io twins read it (`io_group`)
                other => unreachable!("a tokio setting without a mapping: {other}"),
            };
        }
        builder.build().map_err(|e| format!("cannot build the Tokio runtime: {e}"))
    }
}

/// Whether `name` matches `[a-z][a-z0-9_]*(\.[a-z0-9_]+)?`.
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || !bytes[0].is_ascii_lowercase() {
        return false;
    }
    let mut dots = 0;
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'.' {
            dots += 1;
            if dots > 1 || i + 1 == bytes.len() {
                return false;
            }
        } else if !c.is_ascii_lowercase() && !c.is_ascii_digit() && c != b'_' {
            return false;
        }
    }
    true
}

/// The part of a variant name before the dot (the whole name when it has none).
pub fn base_name(name: &str) -> &str {
    name.split_once('.').map(|(base, _)| base).unwrap_or(name)
}

/// Selects variant `name` for the program running `runtime` from the embedded file.
pub fn select(runtime: &str, name: &str) -> Result<Variant, String> {
    select_from(VARIANTS_JSON, runtime, name)
}

/// Checks the whole variants file `text`, then selects `name`.
pub fn select_from(text: &str, runtime: &str, name: &str) -> Result<Variant, String> {
    let root: Value =
        serde_json::from_str(text).map_err(|e| format!("variants.json: line {}: {}", e.line(), error_kind(&e)))?;
    let root = root.as_object().ok_or("variants.json: no \"variants\" object")?;
    if let Some(key) = keys(root, "the top level")?.into_iter().find(|k| *k != "variants" && *k != "_comment") {
        return Err(format!("variants.json: unknown top-level key '{key}'"));
    }
    let table = root.get("variants").and_then(Value::as_object).ok_or("variants.json: no \"variants\" object")?;
    let names = keys(table, "\"variants\"")?;
    let mut selected = None;
    for key in &names {
        let variant = check(key, &table[*key])?;
        if variant.name == name {
            selected = Some(variant);
        }
    }
    let Some(found) = selected else {
        return Err(format!("--variant: unknown variant '{name}' (variants.json has: {})", names.join(", ")));
    };
    if found.runtime != runtime {
        return Err(format!("--variant {name}: a variant of {}; this program runs {runtime} variants only", found.runtime));
    }
    Ok(found)
}

/// The Zig side names JSON errors by Zig's error names; serde's categories are the closest
/// stable equivalent.
fn error_kind(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "Io",
        serde_json::error::Category::Syntax => "SyntaxError",
        serde_json::error::Category::Data => "DataError",
        serde_json::error::Category::Eof => "UnexpectedEndOfInput",
    }
}

/// Checks one entry of `variants`.
fn check(name: &str, value: &Value) -> Result<Variant, String> {
    let fail = |what: String| Err(format!("variants.json: variant '{name}': {what}"));
    if !valid_name(name) {
        return fail("a name must match [a-z][a-z0-9_]*(.[a-z0-9_]+)?".to_string());
    }
    let Some(object) = value.as_object() else { return fail("expected an object".to_string()) };
    if let Some(key) = keys(object, name)?.into_iter().find(|k| !matches!(*k, "runtime" | "settings" | "description")) {
        return fail(format!("unknown key '{key}' (runtime, settings, description)"));
    }
    let Some(runtime_text) = object.get("runtime").and_then(Value::as_str) else {
        return fail("\"runtime\" must be a string".to_string());
    };
    let Some(runtime) = KNOWN_RUNTIMES.iter().copied().find(|r| *r == runtime_text) else {
        return fail(format!("unknown runtime '{runtime_text}' (ampere, tokio)"));
    };
    if base_name(name) != runtime {
        return fail(format!("runtime is '{runtime}', but the name's base is '{}'", base_name(name)));
    }
    match object.get("description").and_then(Value::as_str) {
        None => return fail("\"description\" must be a string".to_string()),
        Some("") => return fail("\"description\" is empty".to_string()),
        Some(_) => {}
    }
    let Some(settings) = object.get("settings").and_then(Value::as_object) else {
        return fail("\"settings\" must be an object".to_string());
    };
    let mut variant = Variant { name: name.to_string(), runtime, values: [None; KNOWN_SETTINGS.len()] };
    for key in keys(settings, name)? {
        let value = &settings[key];
        let Some(index) = KNOWN_SETTINGS.iter().position(|s| s.runtime == runtime && s.name == key) else {
            return fail(format!("unknown setting '{key}' for {runtime}"));
        };
        let setting = KNOWN_SETTINGS[index];
        let Some(v) = value.as_u64() else { return fail(format!("{key} must be a non-negative integer")) };
        if v < setting.min || v > setting.max {
            return fail(format!("{key} = {v} is outside {}..{}", setting.min, setting.max));
        }
        variant.values[index] = Some(v);
    }
    Ok(variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_defines_ampere_nospin_and_tokio() {
        let tokio = select("tokio", "tokio").unwrap();
        assert_eq!(tokio.runtime, "tokio");
        assert!(tokio.settings().is_empty());
        let nospin = select("ampere", "ampere.nospin").unwrap();
        assert_eq!(nospin.settings(), vec![("spin_before_park_ns", 0)]);
        assert_eq!(select("ampere", "ampere").unwrap().settings(), vec![]);
        assert_eq!(
            select("tokio", "ampere.nospin").unwrap_err(),
            "--variant ampere.nospin: a variant of ampere; this program runs tokio variants only"
        );
    }

    #[test]
    fn unknown_variant_names_the_known_ones() {
        assert_eq!(
            select("tokio", "tokio.fast").unwrap_err(),
            "--variant: unknown variant 'tokio.fast' (variants.json has: ampere, ampere.ab, ampere.nospin, tokio, tokio.joinset, tokio.tracker)"
        );
    }

    #[test]
    fn settings_reach_the_builder_in_canonical_order() {
        let text = r#"{"variants": {"tokio.x": {"runtime": "tokio", "description": "d",
            "settings": {"event_interval": 7, "global_queue_interval": 9}}}}"#;
        let v = select_from(text, "tokio", "tokio.x").unwrap();
        assert_eq!(v.settings(), vec![("global_queue_interval", 9), ("event_interval", 7)]);
        let rt = v.build_runtime(2).unwrap();
        assert_eq!(rt.metrics().num_workers(), 2);
        assert_eq!(rt.block_on(async { 40 + 2 }), 42);
    }

    #[test]
    fn bad_files_and_selections_are_one_line_errors() {
        let ok_tail = r#""description": "d"}}}"#;
        let cases = [
            (format!(r#"{{"variants": {{"ampere": {{"runtime": "ampere", "settings": {{"spin": 1}}, {ok_tail}"#), "ampere", "variant 'ampere': unknown setting 'spin' for ampere"),
            (format!(r#"{{"variants": {{"ampere": {{"runtime": "ampere", "settings": {{"spin_before_park_ns": -1}}, {ok_tail}"#), "ampere", "must be a non-negative integer"),
            (format!(r#"{{"variants": {{"ampere": {{"runtime": "ampere", "settings": {{"event_interval": 0}}, {ok_tail}"#), "ampere", "event_interval = 0 is outside 1..4294967295"),
            (format!(r#"{{"variants": {{"tokio.x": {{"runtime": "tokio", "settings": {{"spin_before_park_ns": 0}}, {ok_tail}"#), "tokio.x", "unknown setting 'spin_before_park_ns' for tokio"),
            (format!(r#"{{"variants": {{"ampere.x": {{"runtime": "tokio", "settings": {{}}, {ok_tail}"#), "ampere.x", "runtime is 'tokio', but the name's base is 'ampere'"),
            (format!(r#"{{"variants": {{"Ampere": {{"runtime": "ampere", "settings": {{}}, {ok_tail}"#), "Ampere", "a name must match"),
            (format!(r#"{{"variants": {{"go": {{"runtime": "go", "settings": {{}}, {ok_tail}"#), "go", "unknown runtime 'go'"),
            (format!(r#"{{"variants": {{"ampere": {{"runtime": "ampere", "settings": {{}}, "extra": 1, {ok_tail}"#), "ampere", "unknown key 'extra'"),
            (r#"{"variants": {"ampere": {"runtime": "ampere", "settings": {}}}}"#.to_string(), "ampere", "\"description\" must be a string"),
            (format!(r#"{{"variants": {{"ampere": {{"runtime": "ampere", "settings": [], {ok_tail}"#), "ampere", "\"settings\" must be an object"),
            (r#"{"variant": {}}"#.to_string(), "ampere", "unknown top-level key 'variant'"),
            ("{\n\"variants\": [".to_string(), "ampere", "variants.json: line 2"),
            // A bad entry fails even when another variant is selected.
            (format!(r#"{{"variants": {{"ampere": {{"runtime": "ampere", "settings": {{}}, "description": "d"}}, "tokio": {{"runtime": "tokio", "settings": {{"x": 1}}, {ok_tail}"#), "ampere", "unknown setting 'x' for tokio"),
        ];
        for (text, name, needle) in cases {
            let err = select_from(&text, "ampere", name).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn names() {
        for name in ["ampere", "ampere.nospin", "tokio.gqi_31", "a1"] {
            assert!(valid_name(name), "{name}");
        }
        for name in ["", "1a", "Ampere", "ampere.", "a.b.c", ".x", "a-b", "a.B"] {
            assert!(!valid_name(name), "{name}");
        }
        assert_eq!(base_name("ampere.nospin"), "ampere");
        assert_eq!(base_name("tokio"), "tokio");
    }
}
