//! The cas tokens of a worker's gets (`engine.conditional.Tokens` of the Python engine):
//! a gets hit keeps its key's token until the key's next cas sends it; a gets miss drops
//! it. Every key's requests are one worker's (the key space and a trace's keys are split
//! by key), so a worker's tokens are all its cas could have seen. And how a conditional
//! write's outcome and a gets are counted.

use super::Run;
use crate::net::conn::Pending;
use crate::protocols::wire::Outcome;

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
