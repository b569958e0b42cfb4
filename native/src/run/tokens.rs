//! The cas tokens of a worker's gets (`engine.conditional.Tokens` of the Python engine):
//! a gets hit keeps its key's token until the key's next cas sends it; a gets miss drops
//! it. Every key's requests are one worker's (the key space and a trace's keys are split
//! by key), so a worker's tokens are all its cas could have seen. And how a conditional
//! write's outcome and a gets are counted.

use super::Run;
use crate::net::conn::Pending;
use crate::protocols::wire::Outcome;
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

impl<'a> Run<'a> {
    /// A gets answered (before a replayed op's key is freed): its token kept for the key's
    /// next cas (`token`: a hit's), or the key's old one dropped on a miss.
    pub(super) fn gets_answered(&mut self, p: &Pending, token: Option<Vec<u8>>) {
        let key = self.key_bytes(p.index, p.trace);
        match token {
            Some(t) => self.tokens.keep(key, t),
            None => {
                self.tokens.take(&key);
            }
        }
    }

    /// A conditional write answered: its latency, the value it sent and its outcome,
    /// counted under its kind when in the phase.
    pub(super) fn outcome_answered(&mut self, p: &Pending, outcome: Outcome, now: u64) {
        let kind = self.kinds.by_req[p.req as usize];
        let r = &mut self.rec;
        r.latency(kind, p.t0, now);
        if p.req.carries_value() {
            r.bytes_out += p.size as u64;
        }
        r.outcome(kind, outcome);
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
