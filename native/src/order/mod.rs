//! Reading step orders: the "native" part of a step frame, which Python compiled
//! (`workbench/engine/native_order.py`). Every number arrives computed: nothing here
//! parses the spec's text forms or knows its defaults, and nothing names a cache system:
//! the target says its protocol (`target.rs`), op codes are read by name (`ops.rs`). An
//! order of another version is refused in one line.

mod load;
mod ops;
mod read;
mod request;
mod target;

pub use load::{Arrivals, ClientOrder, KeyDist, Keys, Phases, Prefill, SizeDist, Timing, TtlDist};
pub use ops::{Action, Ops};
pub use request::{Req, REQS};
pub use target::{Login, Protocol, TargetOrder, TlsOrder};

use read::{at, list_at, maybe_u64, u64_at, Read};
use serde_json::Value;

/// The version of the compiled order this binary reads (`native_build.ORDER_VERSION`).
pub const ORDER_VERSION: u64 = 7;

/// Everything of a compiled step order.
#[derive(Clone, Debug)]
pub struct StepOrder {
    pub target: TargetOrder,
    pub worker: usize,
    pub seed: i64,
    /// What each op code of the mix does, read by name.
    pub ops: Ops,
    /// The op kinds an interval keeps a histogram of, by name; a kind's histogram is its
    /// place here, and the frames name it.
    pub record: Vec<String>,
    pub keys: Keys,
    pub value_size: SizeDist,
    pub value_bytes: usize,
    pub value_spread: usize,
    pub ttl: TtlDist,
    pub prefill: Option<Prefill>,
    pub clients: Vec<ClientOrder>,
    pub phases: Phases,
    pub open_loop: bool,
    pub pipeline: usize,
    pub timeout_ns: Option<u64>,
    pub connect_timeout_ns: u64,
    /// Where this worker writes its part of the step's op trace (`trace/capture.rs`), if
    /// anywhere.
    pub trace_part: Option<String>,
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
        let ops = Ops::from_table(at(n, "operations")?)?;
        let record = list_at(n, "record")?
            .iter()
            .map(|k| k.as_str().unwrap_or("").to_string())
            .collect();
        let clients = list_at(n, "clients")?
            .iter()
            .map(|c| load::client(c, &ops))
            .collect::<Read<Vec<_>>>()?;
        let values = at(n, "values")?;
        let allow_remote = n["allow_remote"].as_bool().unwrap_or(false);
        Ok(StepOrder {
            target: TargetOrder::from_value(at(n, "target")?, allow_remote)?,
            worker: u64_at(n, "worker")? as usize,
            seed: at(n, "seed")?.as_i64().ok_or("step order: the seed")?,
            ops,
            record,
            keys: load::keys(at(n, "keys")?)?,
            value_size: load::size_dist(at(n, "value_size")?)?,
            value_bytes: u64_at(values, "bytes")? as usize,
            value_spread: u64_at(values, "spread")?.max(1) as usize,
            ttl: load::ttl_dist(at(n, "ttl")?)?,
            prefill: load::prefill(n)?,
            clients,
            phases: load::phases(at(n, "phases")?)?,
            open_loop: n["open_loop"].as_bool().unwrap_or(false),
            pipeline: u64_at(n, "pipeline")?.max(1) as usize,
            timeout_ns: maybe_u64(n, "timeout_ns")?,
            connect_timeout_ns: u64_at(n, "connect_timeout_ns")?,
            trace_part: n["trace_part"].as_str().map(str::to_string),
        })
    }

    /// The operation code of `action` in this order's table, if it has one.
    pub fn code_of(&self, action: Action) -> Option<u8> {
        self.ops.code_of(action)
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
