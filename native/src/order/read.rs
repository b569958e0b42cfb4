//! Reading the order's JSON: a field that must be there, as the type it must have; one
//! line naming the field when it is not.

use serde_json::Value;

pub type Read<T> = Result<T, String>;

pub fn at<'a>(v: &'a Value, name: &str) -> Read<&'a Value> {
    match v.get(name) {
        Some(x) if !x.is_null() => Ok(x),
        _ => Err(format!("step order: {:?} is missing", name)),
    }
}

pub fn u64_at(v: &Value, name: &str) -> Read<u64> {
    at(v, name)?
        .as_u64()
        .ok_or_else(|| format!("step order: {:?} is not a whole number", name))
}

pub fn f64_at(v: &Value, name: &str) -> Read<f64> {
    at(v, name)?
        .as_f64()
        .ok_or_else(|| format!("step order: {:?} is not a number", name))
}

pub fn str_at(v: &Value, name: &str) -> Read<String> {
    at(v, name)?
        .as_str()
        .map(|s| s.to_string())
        .ok_or_else(|| format!("step order: {:?} is not text", name))
}

pub fn list_at<'a>(v: &'a Value, name: &str) -> Read<&'a Vec<Value>> {
    at(v, name)?
        .as_array()
        .ok_or_else(|| format!("step order: {:?} is not a list", name))
}

/// A whole number that may be null (no budget, no limit).
pub fn maybe_u64(v: &Value, name: &str) -> Read<Option<u64>> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => u64_at(v, name).map(Some),
    }
}
