//! The op codes of an order, read by name: the order's table (`operations`, from the op
//! registry `workbench.sdk.ops`) gives each op kind's code, and the mix names ops by
//! those codes. This engine knows the ops it runs by their names only; a code it is not
//! told, or one of an op it does not run, is refused when a mix weighs it.

use super::read::Read;
use super::request::Req;
use serde_json::Value;

/// What an op of the mix does: the request it sends, and whether a miss is then set
/// (cache-aside, a get that sets the value on a miss).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    pub req: Req,
    pub aside: bool,
}

impl Action {
    /// An op that sends `req` and does nothing more.
    pub const fn plain(req: Req) -> Action {
        Action { req, aside: false }
    }

    /// The action of an op kind this engine runs, by the registry's name.
    pub fn named(name: &str) -> Option<Action> {
        Some(Action::plain(match name {
            "get" => Req::Get,
            "set" => Req::Set,
            "delete" => Req::Delete,
            "cache_aside" => {
                return Some(Action {
                    req: Req::Get,
                    aside: true,
                })
            }
            "publish" => Req::Publish,
            "gets" => Req::Gets,
            "add" => Req::Add,
            "replace" => Req::Replace,
            "cas" => Req::Cas,
            "append" => Req::Append,
            "prepend" => Req::Prepend,
            "incr" => Req::Incr,
            "decr" => Req::Decr,
            "touch" => Req::Touch,
            _ => return None,
        }))
    }
}

/// The order's op table: what each code does here (None: an op this engine does not run,
/// or no op), and each code's name.
#[derive(Clone, Debug, Default)]
pub struct Ops {
    /// Looked up for every op sent: a dense table of actions by code.
    actions: Vec<Option<Action>>,
    names: Vec<Option<String>>,
}

impl Ops {
    /// The table `{name: code}` of the order.
    pub fn from_table(v: &Value) -> Read<Ops> {
        let table = v
            .as_object()
            .ok_or("step order: \"operations\" is not a table of op names and codes")?;
        let mut ops = Ops::default();
        for (name, code) in table {
            let code = code
                .as_u64()
                .filter(|&c| c <= u8::MAX as u64)
                .ok_or_else(|| format!("step order: op {:?} has no code from 0 to 255", name))?
                as usize;
            if ops.names.len() <= code {
                ops.names.resize(code + 1, None);
                ops.actions.resize(code + 1, None);
            }
            if ops.names[code].is_some() {
                return Err(format!("step order: op code {} is given twice", code));
            }
            ops.names[code] = Some(name.clone());
            ops.actions[code] = Action::named(name);
        }
        Ok(ops)
    }

    /// What code `code` does (None: not an op this engine runs).
    #[inline]
    pub fn action(&self, code: u8) -> Option<Action> {
        *self.actions.get(code as usize)?
    }

    /// The code of an action, if the order's table has it.
    pub fn code_of(&self, action: Action) -> Option<u8> {
        self.actions
            .iter()
            .position(|&a| a == Some(action))
            .map(|c| c as u8)
    }

    /// A code a client's mix weighs: one the table names, of an op this engine runs.
    pub fn mixed(&self, code: u8) -> Read<u8> {
        let name = self.names.get(code as usize).and_then(|n| n.as_ref());
        match (name, self.action(code)) {
            (Some(_), Some(_)) => Ok(code),
            (Some(name), None) => Err(format!(
                "workload.mix: the native engine does not run {:?} operations",
                name
            )),
            _ => Err(format!(
                "step order: op code {} is not in the order's table",
                code
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_are_read_by_name_whatever_their_order() {
        let ops =
            Ops::from_table(&json!({"publish": 4, "get": 9, "frob": 12, "set": 0, "incr": 7}))
                .unwrap();
        assert_eq!(ops.action(7), Some(Action::plain(Req::Incr)));
        assert_eq!(ops.action(9), Some(Action::plain(Req::Get)));
        assert_eq!(ops.action(0), Some(Action::plain(Req::Set)));
        assert_eq!(ops.code_of(Action::plain(Req::Publish)), Some(4));
        assert_eq!(ops.code_of(Action::plain(Req::Delete)), None);
        assert_eq!(ops.mixed(9), Ok(9));
        assert!(ops.mixed(12).unwrap_err().contains("\"frob\""));
        assert!(ops
            .mixed(3)
            .unwrap_err()
            .contains("not in the order's table"));
        assert!(Ops::from_table(&json!(["get", "set"])).is_err());
    }
}
