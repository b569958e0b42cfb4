//! What a worker's clients draw and when: key, size and TTL distributions, each client's
//! mix and open-loop schedule, the phases and the prefill, as the order gives them.

use super::ops::Ops;
use super::read::{at, f64_at, list_at, maybe_u64, str_at, u64_at, Read};
use serde_json::Value;

/// How an open-loop client's gaps are drawn (`load.arrivals`, compiled into the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrivals {
    /// A constant gap of one period (wrk2).
    Uniform,
    /// Exponential gaps of mean one period, from the client's splitmix64 stream.
    Poisson,
}

/// What a client's schedule is made from (all from the order).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub period: u64,
    pub offset: u64,
    pub arrivals: Arrivals,
    pub seed: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum KeyDist {
    Uniform,
    Sequential,
    Zipf(f64),
    /// Mean and deviation as key indexes.
    Gaussian(f64, f64),
    /// The share of accesses to the hot keys, how many are hot, how many cold.
    HotCold(f64, u64, u64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    Fixed(usize),
    Uniform(usize, usize),
    /// Sizes and their cumulative weights.
    Weighted(Vec<usize>, Vec<f64>),
}

/// TTLs in seconds, as the protocols take them.
#[derive(Clone, Debug, PartialEq)]
pub enum TtlDist {
    None,
    Fixed(f64),
    Range(f64, f64),
}

/// One virtual client of this worker: its global id, its mix and its schedule.
#[derive(Clone, Debug)]
pub struct ClientOrder {
    pub id: i64,
    pub mix: Vec<(u8, f64)>,
    /// Open loop: its period, offset, arrival process and seed; None in closed loop.
    pub timing: Option<Timing>,
    pub sequence_start: u64,
}

#[derive(Clone, Debug)]
pub struct Keys {
    pub offset: u64,
    pub count: u64,
    pub prefix: String,
    pub length: usize,
    pub hot_end: u64,
    pub dist: KeyDist,
}

#[derive(Clone, Debug)]
pub struct Phases {
    pub warmup_ns: u64,
    pub warmup_ops: Option<u64>,
    pub duration_ns: Option<u64>,
    pub ops: Option<u64>,
    pub interval_ns: u64,
}

/// The keys this worker prefills and the stream id its sizes come from.
#[derive(Clone, Debug)]
pub struct Prefill {
    pub offset: u64,
    pub count: u64,
    pub client: i64,
}

fn key_dist(v: &Value) -> Read<KeyDist> {
    Ok(match str_at(v, "kind")?.as_str() {
        "uniform" => KeyDist::Uniform,
        "sequential" => KeyDist::Sequential,
        "zipf" => KeyDist::Zipf(f64_at(v, "s")?),
        "gaussian" => KeyDist::Gaussian(f64_at(v, "mean")?, f64_at(v, "sd")?),
        "hotcold" => KeyDist::HotCold(f64_at(v, "access")?, u64_at(v, "hot")?, u64_at(v, "cold")?),
        other => return Err(format!("step order: unknown key distribution {:?}", other)),
    })
}

pub fn size_dist(v: &Value) -> Read<SizeDist> {
    Ok(match str_at(v, "kind")?.as_str() {
        "fixed" => SizeDist::Fixed(u64_at(v, "bytes")? as usize),
        "uniform" => SizeDist::Uniform(u64_at(v, "min")? as usize, u64_at(v, "max")? as usize),
        "weighted" => {
            let sizes = list_at(v, "sizes")?
                .iter()
                .map(|s| s.as_u64().map(|s| s as usize))
                .collect::<Option<Vec<_>>>();
            let cum = list_at(v, "cum_weights")?
                .iter()
                .map(|w| w.as_f64())
                .collect::<Option<Vec<_>>>();
            match (sizes, cum) {
                (Some(s), Some(c)) if !s.is_empty() && s.len() == c.len() => {
                    SizeDist::Weighted(s, c)
                }
                _ => return Err("step order: weighted sizes do not match their weights".into()),
            }
        }
        other => return Err(format!("step order: unknown value size {:?}", other)),
    })
}

pub fn ttl_dist(v: &Value) -> Read<TtlDist> {
    Ok(match str_at(v, "kind")?.as_str() {
        "none" => TtlDist::None,
        "fixed" => TtlDist::Fixed(f64_at(v, "seconds")?),
        "range" => TtlDist::Range(f64_at(v, "min")?, f64_at(v, "max")?),
        other => return Err(format!("step order: unknown TTL {:?}", other)),
    })
}

pub fn client(v: &Value, ops: &Ops) -> Read<ClientOrder> {
    let mut mix = Vec::new();
    for pair in list_at(v, "mix")? {
        let code = pair[0].as_u64().filter(|&c| c <= u8::MAX as u64);
        match (code, pair[1].as_f64()) {
            (Some(c), Some(w)) => mix.push((ops.mixed(c as u8)?, w)),
            _ => return Err(format!("step order: bad mix entry {}", pair)),
        }
    }
    if mix.is_empty() {
        return Err("step order: a client without operations".into());
    }
    Ok(ClientOrder {
        id: at(v, "id")?.as_i64().ok_or("step order: a client id")?,
        mix,
        timing: timing(v)?,
        sequence_start: u64_at(v, "sequence_start")?,
    })
}

fn timing(v: &Value) -> Read<Option<Timing>> {
    let period = match maybe_u64(v, "period_ns")? {
        Some(p) => p.max(1),
        None => return Ok(None),
    };
    let arrivals = match str_at(v, "arrivals")?.as_str() {
        "uniform" => Arrivals::Uniform,
        "poisson" => Arrivals::Poisson,
        other => return Err(format!("step order: unknown arrivals {:?}", other)),
    };
    Ok(Some(Timing {
        period,
        offset: u64_at(v, "offset_ns")?,
        arrivals,
        seed: u64_at(v, "arrival_seed")?,
    }))
}

pub fn keys(v: &Value) -> Read<Keys> {
    Ok(Keys {
        offset: u64_at(v, "offset")?,
        count: u64_at(v, "count")?.max(1),
        prefix: str_at(v, "prefix")?,
        length: u64_at(v, "length")? as usize,
        hot_end: u64_at(v, "hot_end")?,
        dist: key_dist(at(v, "distribution")?)?,
    })
}

pub fn phases(v: &Value) -> Read<Phases> {
    Ok(Phases {
        warmup_ns: u64_at(v, "warmup_ns")?,
        warmup_ops: maybe_u64(v, "warmup_ops")?,
        duration_ns: maybe_u64(v, "duration_ns")?,
        ops: maybe_u64(v, "ops")?,
        interval_ns: u64_at(v, "interval_ns")?.max(1),
    })
}

pub fn prefill(v: &Value) -> Read<Option<Prefill>> {
    match v.get("prefill") {
        None | Some(Value::Null) => Ok(None),
        Some(p) => Ok(Some(Prefill {
            offset: u64_at(p, "offset")?,
            count: u64_at(p, "count")?,
            client: at(p, "client")?.as_i64().unwrap_or(-1),
        })),
    }
}
