//! The batch spend ledger at the model-call gate (docs/parallel.md): when this process is one
//! task of a `yuyao batch` run (`YUYAO_SPEND_LEDGER` set), the batch's one ceiling is
//! checked before every model call, next to the session's own ceiling, and the spend is
//! recorded after each call. The ledger file and its locking are `yuyao_store::spend_ledger`.

use crate::session::Session;
use crate::session::TurnSummary;
use std::sync::OnceLock;
use yuyao_protocol::NoticeLevel;
use yuyao_store::spend_ledger::SpendLedger;

/// The ledger named by the environment, read once per process.
fn ledger() -> Option<&'static SpendLedger> {
    static LEDGER: OnceLock<Option<SpendLedger>> = OnceLock::new();
    LEDGER.get_or_init(SpendLedger::from_env).as_ref()
}

impl Session {
    /// What this session's tree (it and its sub-agents) has spent so far.
    fn tree_spent(&self) -> f64 {
        let own = self.lock().cost_usd;
        self.agents.tree_spent(own)
    }

    /// Before a model call: records the spend so far and refuses the call (LimitsExceeded)
    /// when the batch total has reached the batch ceiling. A ledger that cannot be read
    /// refuses too: the ceiling is never silently off.
    pub(crate) fn batch_ledger_gate(&self) -> Result<(), TurnSummary> {
        let Some(ledger) = ledger() else {
            return Ok(());
        };
        match ledger.check(self.tree_spent()) {
            Ok(state) if !state.exhausted() => Ok(()),
            Ok(state) => Err(self.limit(format!(
                "batch spend ceiling reached: ${:.4} spent by the batch's tasks of ${:.4}",
                state.spent_usd,
                state.ceiling_usd.unwrap_or_default()
            ))),
            Err(e) => Err(self.limit(format!(
                "the batch spend ledger {} cannot be used: {e}",
                ledger.path().display()
            ))),
        }
    }

    /// After a model call (and at the end of a run): the spend so far, for the other tasks.
    pub(crate) fn batch_ledger_record(&self) {
        let Some(ledger) = ledger() else {
            return;
        };
        if let Err(e) = ledger.record(self.tree_spent()) {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "cannot record spend in the batch ledger {}: {e}",
                    ledger.path().display()
                ),
            );
        }
    }
}
