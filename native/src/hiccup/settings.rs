//! The meter's settings, from its arguments.

/// How often each CPU's thread wakes, from how late a wake-up is a hiccup, and how
/// often a slice is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub tick_ns: u64,
    pub threshold_ns: u64,
    pub slice_ns: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            tick_ns: 1_000_000,
            threshold_ns: 1_000_000,
            slice_ns: 50_000_000,
        }
    }
}

/// `--tick-us N`, `--threshold-us N`, `--slice-ms N` (after `--hiccup`).
pub fn settings(args: &[String]) -> Result<Settings, String> {
    let mut s = Settings::default();
    let mut it = args.iter();
    while let Some(name) = it.next() {
        let value = it.next().ok_or_else(|| format!("{} needs a value", name))?;
        let n: u64 = value
            .parse()
            .map_err(|_| format!("{} expects a whole number; got {:?}", name, value))?;
        if n == 0 {
            return Err(format!("{} expects a number above 0", name));
        }
        match name.as_str() {
            "--tick-us" => s.tick_ns = n * 1_000,
            "--threshold-us" => s.threshold_ns = n * 1_000,
            "--slice-ms" => s.slice_ns = n * 1_000_000,
            other => return Err(format!("unknown option {:?}", other)),
        }
    }
    Ok(s)
}
