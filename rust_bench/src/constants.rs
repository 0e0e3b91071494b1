//! Benchmark constants: `runtime/bench/constants.json` is the only place sizes are written.
//!
//! The file is embedded at build time (`include_str!`), a profile (`full` or `quick`) is
//! selected, then `--set key=value` overrides are applied in command-line order. The Zig side
//! (runtime/bench/constants.zig) does the same with the same rules:
//! - every key of `KEYS` must be present in the profile and no other key may be;
//! - scalar keys are non-negative integers, list keys (`echo_batch_sizes`) non-empty lists of
//!   integers; overrides use `key=INT` or `key=INT,INT,...` for list keys;
//! - an unknown key, a malformed value or a value that would make a benchmark do no work is
//!   an error (exit 2).

/// Bound of list constants (the Zig side stores lists in fixed arrays of this size).
pub const LIST_CAPACITY: usize = 16;

/// The embedded constants file.
pub const CONSTANTS_JSON: &str = include_str!("../../runtime/bench/constants.json");

macro_rules! define_constants {
    (scalars: [$($scalar:ident),* $(,)?], lists: [$($list:ident),* $(,)?] $(,)?) => {
        /// Effective constants of one run (a profile plus overrides).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Constants {
            $(pub $scalar: u64,)*
            $(pub $list: Vec<u64>,)*
        }

        /// Every key in the canonical output order: scalars in constants.json order, then list keys.
        pub const KEYS: &[&str] = &[$(stringify!($scalar),)* $(stringify!($list),)*];

        fn is_list_key(key: &str) -> bool {
            matches!(key, $(stringify!($list))|*)
        }

        impl Constants {
            fn empty() -> Constants {
                Constants { $($scalar: 0,)* $($list: Vec::new(),)* }
            }

            fn set_scalar(&mut self, key: &str, value: u64) -> bool {
                match key {
                    $(stringify!($scalar) => { self.$scalar = value; true })*
                    _ => false,
                }
            }

            fn set_list(&mut self, key: &str, values: Vec<u64>) -> bool {
                match key {
                    $(stringify!($list) => { self.$list = values; true })*
                    _ => false,
                }
            }

            /// Scalar constants in canonical order.
            pub fn scalars(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($scalar), self.$scalar),)*]
            }

            /// List constants in canonical order.
            pub fn lists(&self) -> Vec<(&'static str, &[u64])> {
                vec![$((stringify!($list), self.$list.as_slice()),)*]
            }
        }
    };
}

define_constants! {
    scalars: [
        warmup, iterations, sync_ops, channel_ops, async_ops, task_ops, num_workers,
        mpmc_buffer, mpmc_producers, mpmc_consumers, mpsc_producers, contended_mutex_tasks,
        contended_sem_tasks, contended_sem_permits, rwlock_readers, rwlock_writers,
        rwlock_ops_per_task, semaphore_permits, broadcast_capacity, broadcast_receivers,
        spawn_batch_size, yield_tasks, yield_per_task, ping_pong_rounds, chain_length,
        echo_batches, echo_warmup_n1, echo_warmup, echo_payload_bytes, echo_payload_buffers,
        echo_sweep_n, echo_sweep_min_bytes, echo_sweep_max_bytes, echo_shared_max_bytes,
        net_rounds, net_stream_bytes, net_connect_ops, io_mutex_tasks, io_fan_tasks, io_fan_items, io_queue_capacity,
        io_group_tasks, io_sleep_tasks, io_net_rounds, io_connect_ops,
    ],
    lists: [echo_batch_sizes],
}

impl Constants {
    /// Loads `profile` from the embedded constants file.
    pub fn load(profile: &str) -> Result<Constants, String> {
        Constants::load_from(CONSTANTS_JSON, profile)
    }

    /// Loads `profile` from the text of a constants file (tests pass their own).
    pub fn load_from(text: &str, profile: &str) -> Result<Constants, String> {
        let root: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("constants.json: line {}: {}", e.line(), e))?;
        let profiles = root
            .get("profiles")
            .and_then(|p| p.as_object())
            .ok_or("constants.json: no \"profiles\" object")?;
        let table = profiles
            .get(profile)
            .and_then(|p| p.as_object())
            .ok_or_else(|| format!("unknown profile '{profile}' (constants.json has: {})", names(profiles)))?;
        let mut constants = Constants::empty();
        for (key, value) in table {
            if !KEYS.contains(&key.as_str()) {
                return Err(format!("constants.json: profile {profile}: unknown key '{key}'"));
            }
            let ok = if is_list_key(key) {
                let items = value.as_array().ok_or_else(|| format!("constants.json: {key}: expected a list"))?;
                let values: Option<Vec<u64>> = items.iter().map(|v| v.as_u64()).collect();
                let values = values.ok_or_else(|| format!("constants.json: {key}: expected integers"))?;
                if values.len() > LIST_CAPACITY {
                    return Err(format!("constants.json: {key}: more than {LIST_CAPACITY} values"));
                }
                constants.set_list(key, values)
            } else {
                let v = value.as_u64().ok_or_else(|| format!("constants.json: {key}: expected an integer"))?;
                constants.set_scalar(key, v)
            };
            debug_assert!(ok);
        }
        for key in KEYS {
            if !table.contains_key(*key) {
                return Err(format!("constants.json: profile {profile}: missing key '{key}'"));
            }
        }
        constants.validate()?;
        Ok(constants)
    }

    /// Applies one `key=value` override (value: integer, or comma-separated integers for a
    /// list key), then re-validates.
    pub fn apply_override(&mut self, assignment: &str) -> Result<(), String> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("--set expects KEY=VALUE, got '{assignment}'"))?;
        if !KEYS.contains(&key) {
            return Err(format!("--set: unknown key '{key}'"));
        }
        if is_list_key(key) {
            let values: Vec<u64> = value.split(',').map(|v| parse_int(key, v)).collect::<Result<_, _>>()?;
            if values.len() > LIST_CAPACITY {
                return Err(format!("--set {key}: more than {LIST_CAPACITY} values"));
            }
            self.set_list(key, values);
        } else {
            self.set_scalar(key, parse_int(key, value)?);
        }
        self.validate()
    }

    /// Rejects values that would make a benchmark do no work or be ill-formed.
    pub fn validate(&self) -> Result<(), String> {
        let c = self;
        let at_least_one = [
            ("iterations", c.iterations), ("sync_ops", c.sync_ops), ("channel_ops", c.channel_ops),
            ("async_ops", c.async_ops), ("task_ops", c.task_ops), ("num_workers", c.num_workers),
            ("mpmc_buffer", c.mpmc_buffer), ("mpmc_producers", c.mpmc_producers),
            ("mpmc_consumers", c.mpmc_consumers), ("mpsc_producers", c.mpsc_producers),
            ("contended_mutex_tasks", c.contended_mutex_tasks),
            ("contended_sem_tasks", c.contended_sem_tasks),
            ("contended_sem_permits", c.contended_sem_permits),
            ("rwlock_readers", c.rwlock_readers), ("rwlock_writers", c.rwlock_writers),
            ("rwlock_ops_per_task", c.rwlock_ops_per_task), ("semaphore_permits", c.semaphore_permits),
            ("broadcast_capacity", c.broadcast_capacity), ("broadcast_receivers", c.broadcast_receivers),
            ("spawn_batch_size", c.spawn_batch_size), ("yield_tasks", c.yield_tasks),
            ("yield_per_task", c.yield_per_task), ("ping_pong_rounds", c.ping_pong_rounds),
            ("chain_length", c.chain_length), ("echo_batches", c.echo_batches),
            ("echo_payload_bytes", c.echo_payload_bytes), ("echo_payload_buffers", c.echo_payload_buffers),
            ("echo_sweep_n", c.echo_sweep_n), ("echo_sweep_min_bytes", c.echo_sweep_min_bytes),
            ("echo_sweep_max_bytes", c.echo_sweep_max_bytes), ("echo_shared_max_bytes", c.echo_shared_max_bytes),
            ("net_rounds", c.net_rounds), ("net_stream_bytes", c.net_stream_bytes), ("net_connect_ops", c.net_connect_ops),
            ("io_mutex_tasks", c.io_mutex_tasks), ("io_fan_tasks", c.io_fan_tasks), ("io_fan_items", c.io_fan_items),
            ("io_queue_capacity", c.io_queue_capacity), ("io_group_tasks", c.io_group_tasks),
            ("io_sleep_tasks", c.io_sleep_tasks), ("io_net_rounds", c.io_net_rounds),
            ("io_connect_ops", c.io_connect_ops),
        ];
        for (key, value) in at_least_one {
            if value == 0 {
                return Err(format!("{key} must be at least 1"));
            }
        }
        let divides = [
            ("async_ops", c.async_ops, "mpmc_producers", c.mpmc_producers),
            ("async_ops", c.async_ops, "mpmc_consumers", c.mpmc_consumers),
            ("async_ops", c.async_ops, "mpsc_producers", c.mpsc_producers),
            ("async_ops", c.async_ops, "contended_mutex_tasks", c.contended_mutex_tasks),
            ("async_ops", c.async_ops, "contended_sem_tasks", c.contended_sem_tasks),
            ("task_ops", c.task_ops, "spawn_batch_size", c.spawn_batch_size),
            ("async_ops", c.async_ops, "io_mutex_tasks", c.io_mutex_tasks),
            ("io_fan_items", c.io_fan_items, "io_fan_tasks", c.io_fan_tasks),
        ];
        for (total_key, total, part_key, part) in divides {
            if total < part {
                return Err(format!("{total_key} ({total}) must be at least {part_key} ({part})"));
            }
        }
        let sent = c.mpmc_producers * (c.async_ops / c.mpmc_producers);
        let received = c.mpmc_consumers * (c.async_ops / c.mpmc_consumers);
        if sent != received {
            return Err(format!(
                "channel_mpmc would send {sent} but receive {received} values: choose async_ops divisible by mpmc_producers and mpmc_consumers"
            ));
        }
        if c.echo_batch_sizes.is_empty() || c.echo_batch_sizes.contains(&0) {
            return Err("echo_batch_sizes must be a non-empty list of positive integers".to_string());
        }
        if c.echo_sweep_max_bytes < c.echo_sweep_min_bytes || c.echo_shared_max_bytes < c.echo_sweep_min_bytes {
            return Err("echo_sweep_max_bytes and echo_shared_max_bytes must be at least echo_sweep_min_bytes".to_string());
        }
        Ok(())
    }
}

fn parse_int(key: &str, text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("--set {key}: '{text}' is not a non-negative integer"))
}

fn names(map: &serde_json::Map<String, serde_json::Value>) -> String {
    map.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// Sizes of a doubling sweep `min, 2·min, 4·min, ... <= max`.
pub fn sweep_sizes(min: u64, max: u64) -> Vec<u64> {
    assert!(min >= 1 && max >= min);
    let mut sizes = Vec::new();
    let mut size = min;
    while size <= max {
        sizes.push(size);
        size = match size.checked_mul(2) {
            Some(next) => next,
            None => break,
        };
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_both_profiles() {
        let full = Constants::load("full").unwrap();
        assert_eq!(full.sync_ops, 1_000_000);
        assert_eq!(full.echo_batch_sizes, vec![1, 10, 100]);
        let quick = Constants::load("quick").unwrap();
        assert!(quick.sync_ops < full.sync_ops);
        assert!(Constants::load("nope").unwrap_err().contains("unknown profile"));
    }

    #[test]
    fn overrides_apply_and_validate() {
        let mut c = Constants::load("quick").unwrap();
        c.apply_override("sync_ops=123").unwrap();
        assert_eq!(c.sync_ops, 123);
        c.apply_override("echo_batch_sizes=1,10,7").unwrap();
        assert_eq!(c.echo_batch_sizes, vec![1, 10, 7]);
        assert!(c.apply_override("no_such_key=1").unwrap_err().contains("unknown key"));
        assert!(c.apply_override("sync_ops=abc").unwrap_err().contains("not a non-negative integer"));
        assert!(c.apply_override("sync_ops=1,2").is_err());
        assert!(c.apply_override("sync_ops").unwrap_err().contains("KEY=VALUE"));
        assert!(c.apply_override("iterations=0").unwrap_err().contains("at least 1"));
        let too_long = format!("echo_batch_sizes={}", (1..=17).map(|v| v.to_string()).collect::<Vec<_>>().join(","));
        assert!(c.apply_override(&too_long).unwrap_err().contains("more than 16"));
    }

    #[test]
    fn rejects_bad_files() {
        let missing = r#"{"profiles": {"p": {"warmup": 1}}}"#;
        assert!(Constants::load_from(missing, "p").unwrap_err().contains("missing key"));
        let unknown = r#"{"profiles": {"p": {"bogus": 1}}}"#;
        assert!(Constants::load_from(unknown, "p").unwrap_err().contains("unknown key"));
        assert!(Constants::load_from("{", "p").unwrap_err().contains("line"));
    }

    #[test]
    fn keys_keep_canonical_order() {
        let c = Constants::load("quick").unwrap();
        let scalars = c.scalars();
        assert_eq!(scalars[0], ("warmup", 1));
        assert_eq!(scalars.len() + c.lists().len(), KEYS.len());
        assert_eq!(c.lists()[0], ("echo_batch_sizes", &[1u64, 10][..]));
    }

    #[test]
    fn sweep_doubles() {
        assert_eq!(sweep_sizes(8, 64), vec![8, 16, 32, 64]);
        assert_eq!(sweep_sizes(8, 100), vec![8, 16, 32, 64]);
        assert_eq!(sweep_sizes(5, 5), vec![5]);
    }
}
