//! An op sent again as it was first sent, on the connection named: a cluster's redirection
//! (`cluster.rs`) and a script the server did not hold (NOSCRIPT: sent again by `EVAL`).
//! Its key, its value and a cas's token are the ones it went with.

use super::issue::op_key;
use super::Run;
use crate::net::conn::Pending;
use crate::protocols::wire::Req;

impl<'a> Run<'a> {
    /// Queue `p` again on connection `si` of client `ci`: after ASKING when `ask`, by the
    /// script's own text when `eval`. The op keeps its place in the budget and its start.
    pub(super) fn resend(
        &mut self,
        ci: usize,
        si: usize,
        p: Pending,
        (ask, eval): (bool, bool),
        now: u64,
    ) {
        let k = &self.order.keys;
        let buf = &mut self.keys.buf;
        let key = op_key(&mut self.replay, &self.keys.table, buf, k, p.index, p.trace);
        let value = if p.req.carries_value() && p.req != Req::Publish {
            self.keys.values.value(p.index, p.size as usize)
        } else {
            &[][..]
        };
        let conn = &mut self.net.clients[ci].conns[si];
        let idle = conn.pending.is_empty();
        conn.load_scripts_for(&self.codec, p.req);
        if ask {
            crate::protocols::resp::command(&mut conn.out, &[b"ASKING"]);
            conn.pending.push_back(Pending::hello());
        }
        let token = p.token.as_deref().unwrap_or(&[]);
        if eval {
            self.codec
                .by_eval(&mut conn.out, p.req, key, value, p.ttl, token);
        } else {
            self.codec
                .encode(&mut conn.out, p.req, key, value, p.ttl, token);
        }
        if idle {
            conn.progress = now.max(conn.progress);
        }
        conn.pending.push_back(p);
    }
}
