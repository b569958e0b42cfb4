//! One slice of the meter's time (50 ms by default): every CPU's wake-ups taken and
//! written as one frame, in wall-clock time so that the coordinator, which may run on
//! another machine, can lay slices and hiccups on its steps' intervals.

use super::settings::Settings;
use super::tick::{sleep_ns, Cpu, Taken};
use super::watch::Watched;
use crate::pacing::now_ns;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// HdrHistogram keeps 2048 sub-buckets (3 significant digits): 11 bits of each value.
const KEEP_BITS: u32 = 11;
/// Synthetic wake-ups added for one long hiccup at most (a suspended machine's hour would
/// otherwise add millions).
const MAX_FILLED: u64 = 1_000_000;

/// CLOCK_REALTIME in ns.
pub fn wall_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleep to the next multiple of `slice_ns` of the wall clock.
pub fn sleep_to_next(slice_ns: u64) {
    let now = wall_ns();
    sleep_ns(slice_ns - now % slice_ns);
}

/// `value` rounded down to its histogram bucket (as `workbench.metrics.quantise`).
pub fn quantise(value: u64) -> u64 {
    let bits = 64 - value.leading_zeros();
    if bits > KEEP_BITS {
        let s = bits - KEEP_BITS;
        (value >> s) << s
    } else {
        value
    }
}

/// Add one wake-up `late` ns late to `counts` (bucket -> count), corrected for coordinated
/// omission as jHiccup does: a thread that woke `late` late missed the wake-ups due
/// meanwhile, which would have been `late - tick`, `late - 2 tick`, ... late. So the
/// histogram holds what an event arriving at any moment would have waited for the CPU.
pub fn add_corrected(counts: &mut BTreeMap<u64, u64>, late: u64, tick: u64) {
    *counts.entry(quantise(late)).or_insert(0) += 1;
    let mut missed = late;
    let mut filled = 0;
    while missed > tick && filled < MAX_FILLED {
        missed -= tick;
        filled += 1;
        *counts.entry(quantise(missed)).or_insert(0) += 1;
    }
}

/// One CPU's figures for a slice: [wake-ups, longest ns, hiccups, ns lost to hiccups].
fn cpu_figures(taken: &Taken, threshold: u64) -> Value {
    let max = taken.late.iter().copied().max().unwrap_or(0);
    let over: Vec<u64> = taken
        .late
        .iter()
        .copied()
        .filter(|&l| l >= threshold)
        .collect();
    json!([taken.late.len(), max, over.len(), over.iter().sum::<u64>()])
}

/// The slice's frame: the wake-ups of every CPU since the last, from `span.0` to `span.1`
/// (wall ns).
pub fn frame(meters: &[Arc<Cpu>], watched: &Watched, s: Settings, span: (u64, u64)) -> Value {
    let offset = wall_ns() as i128 - now_ns() as i128; // monotonic -> wall
    let mut counts = BTreeMap::new();
    let mut cpus = Map::new();
    let mut events = Vec::new();
    for meter in meters {
        let taken = meter.take();
        for &late in &taken.late {
            add_corrected(&mut counts, late, s.tick_ns);
        }
        cpus.insert(meter.cpu.to_string(), cpu_figures(&taken, s.threshold_ns));
        for e in taken.events {
            let at = (e.start as i128 + offset).max(0) as u64;
            events.push(json!([e.cpu, at, e.len, e.on, e.own]));
        }
    }
    let mut seen = Map::new();
    let mut waited = Map::new();
    for (name, cpu, wait) in watched.waits() {
        seen.insert(name.clone(), json!(cpu));
        waited.insert(name, json!(wait));
    }
    let hist: Vec<Value> = counts.into_iter().map(|(v, n)| json!([v, n])).collect();
    json!({
        "type": "slice",
        "start": span.0,
        "end": span.1,
        "hist": hist,
        "cpus": cpus,
        "events": events,
        "seen": seen,
        "waited": waited,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_down_to_their_bucket_as_the_python_side_does() {
        assert_eq!(quantise(2047), 2047);
        assert_eq!(quantise(2048), 2048);
        assert_eq!(quantise(4097), 4096);
        assert_eq!(quantise(1_000_123), 999_936);
    }

    #[test]
    fn a_long_hiccup_also_counts_the_wake_ups_it_swallowed() {
        let mut counts = BTreeMap::new();
        add_corrected(&mut counts, 3_500_000, 1_000_000);
        let values: Vec<u64> = counts.keys().copied().collect();
        assert_eq!(
            values,
            vec![
                quantise(500_000),
                quantise(1_500_000),
                quantise(2_500_000),
                quantise(3_500_000)
            ]
        );
        let mut short = BTreeMap::new();
        add_corrected(&mut short, 60_000, 1_000_000);
        assert_eq!(short.values().sum::<u64>(), 1);
    }

    #[test]
    fn a_slice_says_each_cpu_and_its_hiccups_in_wall_time() {
        let cpu = Arc::new(Cpu::new(1));
        let s = Settings::default();
        let due = now_ns();
        cpu.record(due, 70_000, s, &Watched::default());
        cpu.record(due, 4_000_000, s, &Watched::default());
        let before = wall_ns();
        let f = frame(std::slice::from_ref(&cpu), &Watched::default(), s, (1, 2));
        assert_eq!(f["type"], "slice");
        assert_eq!(f["cpus"]["1"], json!([2, 4_000_000, 1, 4_000_000]));
        let event = &f["events"][0];
        assert_eq!(event[0], 1);
        let at = event[1].as_u64().unwrap();
        assert!(at <= before && before - at < 1_000_000_000);
        assert_eq!(event[2], 4_000_000);
        let total: u64 = f["hist"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_u64().unwrap())
            .sum();
        assert_eq!(total, 2 + 3); // 4 ms late swallowed three more 1 ms ticks
        assert_eq!(
            frame(&[cpu], &Watched::default(), s, (2, 3))["cpus"]["1"],
            json!([0, 0, 0, 0])
        );
    }
}
