//! The request kinds: what an op of the order is sent as, and what a reply is read as.
//! Here, beside the op table that maps an order's codes to them, so that the protocols
//! read requests from the order and the order names nothing of the protocols.

/// A request in flight, as its reply is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    Get,
    Set,
    Delete,
    /// PUBLISH to a channel (Redis); the reply is how many subscribers got it.
    Publish,
    /// A reply to the connection's opening commands (AUTH, SELECT), not an operation.
    Hello,
    /// A get that also brings the value's cas token (`Codec::token`).
    Gets,
    // The conditional writes: each reply is an `Outcome`.
    Add,
    Replace,
    Cas,
    Append,
    Prepend,
    Incr,
    Decr,
    Touch,
}

/// The request kinds, indexed by `Req as usize` (`run::Kinds::by_req`).
pub const REQS: usize = 14;

impl Req {
    /// A conditional write, whose reply is an outcome.
    #[inline]
    pub fn conditional(self) -> bool {
        matches!(
            self,
            Req::Add
                | Req::Replace
                | Req::Cas
                | Req::Append
                | Req::Prepend
                | Req::Incr
                | Req::Decr
                | Req::Touch
        )
    }

    /// The request sends a value (a set, publish, add, replace, cas, append, prepend).
    #[inline]
    pub fn carries_value(self) -> bool {
        matches!(
            self,
            Req::Set
                | Req::Publish
                | Req::Add
                | Req::Replace
                | Req::Cas
                | Req::Append
                | Req::Prepend
        )
    }
}
