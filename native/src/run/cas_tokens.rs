//! The cas tokens of a worker's gets, by key (`engine.conditional.Tokens` of the Python
//! engine): a leaf the run holds, apart from the run's handling of replies (`tokens`).

use std::collections::HashMap;

/// Tokens kept at most; past it they are dropped whole (a cas then finds none and is
/// refused). A gets and its cas are usually close together, so few are ever kept.
const TOKEN_LIMIT: usize = 1 << 20;

#[derive(Default)]
pub struct Tokens {
    by_key: HashMap<Vec<u8>, Vec<u8>>,
}

impl Tokens {
    pub fn keep(&mut self, key: Vec<u8>, token: Vec<u8>) {
        if self.by_key.len() >= TOKEN_LIMIT {
            self.by_key.clear();
        }
        self.by_key.insert(key, token);
    }

    pub fn take(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        if self.by_key.is_empty() {
            return None; // no gets yet: no hash of the key
        }
        self.by_key.remove(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_taken_once() {
        let mut t = Tokens::default();
        assert_eq!(t.take(b"k"), None);
        t.keep(b"k".to_vec(), b"7".to_vec());
        assert_eq!(t.take(b"k"), Some(b"7".to_vec()));
        assert_eq!(t.take(b"k"), None);
    }
}
