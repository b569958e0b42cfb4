//! Reading step orders: the "native" part of a step frame, which Python compiled
//! (`workbench/engine/native_order.py`). Every number arrives computed: nothing here
//! parses the spec's text forms or knows its defaults. An order of another version is
//! refused in one line.

use serde_json::Value;

/// The version of the compiled order this binary reads (`native_build.ORDER_VERSION`).
pub const ORDER_VERSION: u64 = 5;

/// What an op of the mix does; a mix names operations by their index in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Get,
    Set,
    Delete,
    /// A get that sets the value on a miss.
    CacheAside,
    Publish,
}

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

/// Everything of a compiled step order.
#[derive(Clone, Debug)]
pub struct StepOrder {
    pub system: String,
    pub target: Value,
    pub allow_remote: bool,
    pub worker: usize,
    pub seed: i64,
    pub actions: Vec<Action>,
    pub record: Vec<String>,
    pub keys: Keys,
    pub value_size: SizeDist,
    pub value_bytes: usize,
    pub value_spread: usize,
    pub ttl: TtlDist,
    pub placement: Option<Vec<u32>>,
    pub prefill: Option<Prefill>,
    pub clients: Vec<ClientOrder>,
    pub phases: Phases,
    pub open_loop: bool,
    pub pipeline: usize,
    pub timeout_ns: Option<u64>,
    pub connect_timeout_ns: u64,
    /// Where this worker writes its part of the step's op trace (`trace/capture.rs`), if anywhere.
    pub trace_part: Option<String>,
}

type Read<T> = Result<T, String>;

fn at<'a>(v: &'a Value, name: &str) -> Read<&'a Value> {
    match v.get(name) {
        Some(x) if !x.is_null() => Ok(x),
        _ => Err(format!("step order: {:?} is missing", name)),
    }
}

fn u64_at(v: &Value, name: &str) -> Read<u64> {
    at(v, name)?
        .as_u64()
        .ok_or_else(|| format!("step order: {:?} is not a whole number", name))
}

fn f64_at(v: &Value, name: &str) -> Read<f64> {
    at(v, name)?
        .as_f64()
        .ok_or_else(|| format!("step order: {:?} is not a number", name))
}

fn str_at(v: &Value, name: &str) -> Read<String> {
    at(v, name)?
        .as_str()
        .map(|s| s.to_string())
        .ok_or_else(|| format!("step order: {:?} is not text", name))
}

fn list_at<'a>(v: &'a Value, name: &str) -> Read<&'a Vec<Value>> {
    at(v, name)?
        .as_array()
        .ok_or_else(|| format!("step order: {:?} is not a list", name))
}

/// A whole number that may be null (no budget, no limit).
fn maybe_u64(v: &Value, name: &str) -> Read<Option<u64>> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => u64_at(v, name).map(Some),
    }
}

fn action(name: &str) -> Read<Action> {
    Ok(match name {
        "get" => Action::Get,
        "set" => Action::Set,
        "delete" => Action::Delete,
        "cache_aside" => Action::CacheAside,
        "publish" => Action::Publish,
        other => return Err(format!("step order: unknown operation {:?}", other)),
    })
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

fn size_dist(v: &Value) -> Read<SizeDist> {
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

fn ttl_dist(v: &Value) -> Read<TtlDist> {
    Ok(match str_at(v, "kind")?.as_str() {
        "none" => TtlDist::None,
        "fixed" => TtlDist::Fixed(f64_at(v, "seconds")?),
        "range" => TtlDist::Range(f64_at(v, "min")?, f64_at(v, "max")?),
        other => return Err(format!("step order: unknown TTL {:?}", other)),
    })
}

fn client(v: &Value, operations: usize) -> Read<ClientOrder> {
    let mut mix = Vec::new();
    for pair in list_at(v, "mix")? {
        let code = pair[0].as_u64().filter(|&c| (c as usize) < operations);
        match (code, pair[1].as_f64()) {
            (Some(c), Some(w)) => mix.push((c as u8, w)),
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

fn keys(v: &Value) -> Read<Keys> {
    Ok(Keys {
        offset: u64_at(v, "offset")?,
        count: u64_at(v, "count")?.max(1),
        prefix: str_at(v, "prefix")?,
        length: u64_at(v, "length")? as usize,
        hot_end: u64_at(v, "hot_end")?,
        dist: key_dist(at(v, "distribution")?)?,
    })
}

fn phases(v: &Value) -> Read<Phases> {
    Ok(Phases {
        warmup_ns: u64_at(v, "warmup_ns")?,
        warmup_ops: maybe_u64(v, "warmup_ops")?,
        duration_ns: maybe_u64(v, "duration_ns")?,
        ops: maybe_u64(v, "ops")?,
        interval_ns: u64_at(v, "interval_ns")?.max(1),
    })
}

fn placement(v: &Value) -> Read<Option<Vec<u32>>> {
    match v.get("placement") {
        None | Some(Value::Null) => Ok(None),
        Some(p) => list_at(p, "seeds")?
            .iter()
            .map(|s| s.as_u64().map(|s| s as u32))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| "step order: placement seeds are not numbers".into()),
    }
}

fn prefill(v: &Value) -> Read<Option<Prefill>> {
    match v.get("prefill") {
        None | Some(Value::Null) => Ok(None),
        Some(p) => Ok(Some(Prefill {
            offset: u64_at(p, "offset")?,
            count: u64_at(p, "count")?,
            client: at(p, "client")?.as_i64().unwrap_or(-1),
        })),
    }
}

/// The compiled part of a step frame, its version checked first.
fn compiled(frame: &Value) -> Read<&Value> {
    let n = frame
        .get("native")
        .filter(|n| n.is_object())
        .ok_or_else(|| {
            format!(
                "the step order has no compiled part: this workbench-native reads step orders of \
             version {} (workbench/engine/native_order.py)",
                ORDER_VERSION
            )
        })?;
    let version = n.get("version").and_then(|v| v.as_u64());
    if version != Some(ORDER_VERSION) {
        let said = version.map_or("unknown".to_string(), |v| v.to_string());
        return Err(format!(
            "the step order is version {}; this workbench-native reads version {}: rebuild \
             it with ./dev setup",
            said, ORDER_VERSION
        ));
    }
    Ok(n)
}

impl StepOrder {
    pub fn from_frame(frame: &Value) -> Read<StepOrder> {
        let n = compiled(frame)?;
        let actions = list_at(n, "operations")?
            .iter()
            .map(|a| action(a.as_str().unwrap_or("")))
            .collect::<Read<Vec<_>>>()?;
        let record = list_at(n, "record")?
            .iter()
            .map(|k| k.as_str().unwrap_or("").to_string())
            .collect();
        let clients = list_at(n, "clients")?
            .iter()
            .map(|c| client(c, actions.len()))
            .collect::<Read<Vec<_>>>()?;
        let values = at(n, "values")?;
        Ok(StepOrder {
            system: str_at(n, "system")?,
            target: at(n, "target")?.clone(),
            allow_remote: n["allow_remote"].as_bool().unwrap_or(false),
            worker: u64_at(n, "worker")? as usize,
            seed: at(n, "seed")?.as_i64().ok_or("step order: the seed")?,
            actions,
            record,
            keys: keys(at(n, "keys")?)?,
            value_size: size_dist(at(n, "value_size")?)?,
            value_bytes: u64_at(values, "bytes")? as usize,
            value_spread: u64_at(values, "spread")?.max(1) as usize,
            ttl: ttl_dist(at(n, "ttl")?)?,
            placement: placement(n)?,
            prefill: prefill(n)?,
            clients,
            phases: phases(at(n, "phases")?)?,
            open_loop: n["open_loop"].as_bool().unwrap_or(false),
            pipeline: u64_at(n, "pipeline")?.max(1) as usize,
            timeout_ns: maybe_u64(n, "timeout_ns")?,
            connect_timeout_ns: u64_at(n, "connect_timeout_ns")?,
            trace_part: n["trace_part"].as_str().map(str::to_string),
        })
    }

    /// The operation code of `action` in this order's mix, if it has one.
    pub fn code_of(&self, action: Action) -> Option<u8> {
        self.actions
            .iter()
            .position(|&a| a == action)
            .map(|i| i as u8)
    }

    /// The histogram index of a recorded op kind.
    pub fn kind_index(&self, name: &str) -> Read<usize> {
        self.record
            .iter()
            .position(|k| k == name)
            .ok_or_else(|| format!("step order: no {:?} among the recorded op kinds", name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_order_of_another_version_is_one_line() {
        let e = StepOrder::from_frame(&json!({"native": {"version": 99}})).unwrap_err();
        assert!(
            e.contains("version 99") && e.contains(&format!("reads version {}", ORDER_VERSION)),
            "{}",
            e
        );
        let e = StepOrder::from_frame(&json!({"spec": {}})).unwrap_err();
        assert!(e.contains("no compiled part"), "{}", e);
    }
}
