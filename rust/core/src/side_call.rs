//! One model call outside the turn loop — a judge, a planning list, an aside, a summary —
//! through a request the caller built, under the spend ceiling, and settled in one place: the
//! session's cost and usage, and the sub-agent ledger, whose reservation is always given back.

use crate::session::Session;
use tokio_util::sync::CancellationToken;
use yuyao_model::{ChatRequest, Completion, ModelError};

/// Why a side call gave no reply.
#[derive(Debug)]
pub enum SideCallError {
    /// Not made: no model client, or the spend ceiling leaves no room.
    NotMade(String),
    Cancelled,
    /// The model call failed.
    Model(String),
}

impl std::fmt::Display for SideCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SideCallError::NotMade(why) | SideCallError::Model(why) => f.write_str(why),
            SideCallError::Cancelled => f.write_str("interrupted"),
        }
    }
}

impl Session {
    /// Makes `req` (its `max_tokens` capped by the ceiling, at most `max_out`) and pays for
    /// it. `counts_step`: the call is one of the tree's steps (the step limit applies to it).
    /// Returns the reply and its cost; the caller records it.
    pub fn side_call(
        &self,
        req: &mut ChatRequest,
        max_out: Option<u64>,
        token: &CancellationToken,
        counts_step: bool,
    ) -> Result<(Completion, f64), SideCallError> {
        let client = self.client().map_err(SideCallError::NotMade)?;
        req.max_tokens = self
            .spend_cap(crate::context::request_tokens(req), max_out)
            .map_err(|stop| {
                SideCallError::NotMade(stop.error.unwrap_or_else(|| "spend ceiling reached".into()))
            })?;
        let reply = self.block_on(client.complete(req, &mut |_| {}, token));
        // Answered or not, the call's reservation is given back.
        self.agents.release();
        let reply = match reply {
            Err(e) => return Err(SideCallError::NotMade(e.to_string())),
            Ok(Err(ModelError::Cancelled)) => return Err(SideCallError::Cancelled),
            Ok(Err(e)) => return Err(SideCallError::Model(e.to_string())),
            Ok(Ok(r)) => r,
        };
        let cost = self.price().cost(&reply.usage);
        let mut st = self.lock();
        st.cost_usd += cost;
        st.usage.add(&reply.usage);
        if counts_step {
            st.steps += 1;
            self.agents.after_call(cost, st.cost_usd);
        }
        Ok((reply, cost))
    }
}
