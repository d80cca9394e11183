//! A session's place in its tree of agents (DESIGN §8): the main session and every
//! sub-agent under it share one [`Ledger`], so spend and steps of the whole tree are checked
//! before every model call of any of them, and a call reserves what it may cost until it is
//! settled — concurrent sub-agents can never pass the ceiling together. The sub-agents
//! feature opens children with [`PENDING`]; the turn loop asks [`Session::tree_gate`].

use crate::session::{Session, TurnSummary};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// Spend and steps of a session tree (the main session and all its sub-agents).
#[derive(Default)]
pub struct Ledger {
    state: Mutex<LedgerState>,
}

#[derive(Default)]
struct LedgerState {
    /// The main session's ceiling and step limit, as it last published them.
    max_cost: Option<f64>,
    max_steps: Option<u32>,
    /// The main session's own cost (including sub-agents already merged into it).
    root_cost: f64,
    /// Cost of sub-agent calls not merged into the main session yet.
    children_cost: f64,
    /// What calls in flight may still cost (their input plus their `max_tokens`).
    reserved: f64,
    /// Model calls of the whole tree since the main session's turn began.
    steps: u32,
    /// Sub-agents running now (the budget left is shared between them).
    active: u32,
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, LedgerState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One more (or one fewer) sub-agent running in the tree.
    pub fn running(&self, delta: i32) {
        let mut l = self.lock();
        l.active = (l.active as i32 + delta).max(0) as u32;
    }
}

/// A session's place in its tree: the main session has depth 0.
pub struct AgentLink {
    pub depth: u32,
    pub ledger: Arc<Ledger>,
    /// Set when the sub-agent is stopped (checked before every model call).
    pub stop: CancellationToken,
    /// This session's reservation for its call in flight.
    reserved: Mutex<f64>,
}

/// What a sub-agent's `Session::open` is given (the open runs on the spawning thread).
pub struct Pending {
    pub depth: u32,
    pub ledger: Arc<Ledger>,
    pub stop: CancellationToken,
}

thread_local! {
    pub static PENDING: RefCell<Option<Pending>> = const { RefCell::new(None) };
}

impl AgentLink {
    /// The link of a session being opened: a sub-agent's when one is being spawned on this
    /// thread, else a new tree's root.
    pub fn at_open() -> AgentLink {
        let pending = PENDING.with(|p| p.borrow_mut().take());
        let (depth, ledger, stop) = match pending {
            Some(p) => (p.depth, p.ledger, p.stop),
            None => (0, Arc::default(), CancellationToken::new()),
        };
        AgentLink {
            depth,
            ledger,
            stop,
            reserved: Mutex::new(0.0),
        }
    }

    pub fn is_child(&self) -> bool {
        self.depth > 0
    }

    /// The main session begins a turn: the tree's step count starts again.
    pub fn turn_start(&self) {
        if !self.is_child() {
            self.ledger.lock().steps = 0;
        }
    }

    /// Spend ceiling and spent so far as this session must see them (the whole tree). The
    /// main session publishes its own values; a sub-agent reads them.
    pub fn budget(
        &self,
        own_max: Option<f64>,
        own_cost: f64,
        own_max_steps: Option<u32>,
    ) -> (Option<f64>, f64, u32) {
        self.release();
        let mut l = self.ledger.lock();
        if self.is_child() {
            let spent = l.root_cost + l.children_cost + l.reserved;
            (l.max_cost, spent, l.active.max(1))
        } else {
            l.max_cost = own_max;
            l.max_steps = own_max_steps;
            l.root_cost = own_cost;
            (own_max, own_cost + l.children_cost + l.reserved, 1)
        }
    }

    /// `budget` and a reservation as one step under the ledger's lock: `decide` sees the
    /// tree's ceiling, spend and share and returns its answer with the amount to hold, so
    /// two sessions deciding at once can never both take the last of the budget.
    pub fn reserve_within<T>(
        &self,
        own: (Option<f64>, f64, Option<u32>),
        decide: impl FnOnce(Option<f64>, f64, u32) -> (T, f64),
    ) -> T {
        self.release();
        let mut l = self.ledger.lock();
        let (max, spent, share) = if self.is_child() {
            let spent = l.root_cost + l.children_cost + l.reserved;
            (l.max_cost, spent, l.active.max(1))
        } else {
            l.max_cost = own.0;
            l.root_cost = own.1;
            l.max_steps = own.2;
            (own.0, own.1 + l.children_cost + l.reserved, 1)
        };
        let (answer, amount) = decide(max, spent, share);
        if amount > 0.0 {
            l.reserved += amount;
            *self.reserved.lock().unwrap_or_else(|e| e.into_inner()) += amount;
        }
        answer
    }

    /// The main session's ceiling, step limit and cost, for sub-agents about to start.
    pub fn publish(&self, max: Option<f64>, cost: f64, max_steps: Option<u32>) {
        if !self.is_child() {
            let mut l = self.ledger.lock();
            l.max_cost = max;
            l.root_cost = cost;
            l.max_steps = max_steps;
        }
    }

    /// Gives back this session's reservation (its call ended, or never happened).
    pub fn release(&self) {
        let mut mine = self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        if *mine > 0.0 {
            let mut l = self.ledger.lock();
            l.reserved = (l.reserved - *mine).max(0.0);
            *mine = 0.0;
        }
    }

    /// A model call of this session was paid: `cost`, the session's total now `total`.
    pub fn after_call(&self, cost: f64, total: f64) {
        self.release();
        let mut l = self.ledger.lock();
        l.steps += 1;
        if self.is_child() {
            l.children_cost += cost;
        } else {
            l.root_cost = total;
        }
    }

    /// What the whole tree has spent: `own` is the calling session's cost (the root's is
    /// current in its own state; a sub-agent reads the root's as last published).
    pub fn tree_spent(&self, own: f64) -> f64 {
        let l = self.ledger.lock();
        if self.is_child() {
            l.root_cost + l.children_cost
        } else {
            own + l.children_cost
        }
    }

    /// One more (or one fewer) sub-agent running in the tree.
    pub fn active(&self, delta: i32) {
        self.ledger.running(delta);
    }

    /// A sub-agent's cost joined the main session's own (`root_cost` now): the ledger no
    /// longer counts it apart.
    pub fn child_merged(&self, cost: f64, root_cost: f64) {
        if !self.is_child() {
            let mut l = self.ledger.lock();
            l.children_cost = (l.children_cost - cost).max(0.0);
            l.root_cost = root_cost;
        }
    }

    /// Why the tree may not make another call now (its step limit), for any of its sessions.
    pub fn steps_exceeded(&self) -> Option<(u32, u32)> {
        let l = self.ledger.lock();
        match l.max_steps {
            Some(max) if l.steps >= max => Some((l.steps, max)),
            _ => None,
        }
    }
}

impl Session {
    /// Checked before every model call: a stopped sub-agent ends (interrupted), and the step
    /// limit holds for the whole tree.
    pub fn tree_gate(&self) -> Option<TurnSummary> {
        if self.agents.stop.is_cancelled() {
            return Some(crate::turn::interrupted());
        }
        // An approved plan's run gets its allowance here too (`plan_step_limit`).
        let max = self.step_limit();
        if !self.agents.is_child() {
            // The main session publishes its limit before its own first call of the turn.
            self.agents.ledger.lock().max_steps = max;
        }
        let (used, max) = self.agents.steps_exceeded()?;
        self.budget_exhausted("tool_loop", used, max);
        Some(self.limit(format!(
            "step limit reached ({max} model calls, counting sub-agents)"
        )))
    }

    /// A sub-agent finished: its cost, usage and steps join this session's (the main
    /// session's ledger no longer counts them separately).
    pub fn merge_child(&self, cost: f64, steps: u32, usage: &yuyao_protocol::Usage) {
        let mut st = self.lock();
        st.cost_usd += cost;
        st.steps += steps;
        st.usage.add(usage);
        self.agents.child_merged(cost, st.cost_usd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(ledger: &Arc<Ledger>) -> AgentLink {
        PENDING.with(|p| {
            *p.borrow_mut() = Some(Pending {
                depth: 1,
                ledger: ledger.clone(),
                stop: CancellationToken::new(),
            })
        });
        AgentLink::at_open()
    }

    #[test]
    fn the_tree_shares_one_budget_and_reservations_count() {
        let root = AgentLink::at_open();
        assert!(!root.is_child());
        // The root publishes its ceiling and cost.
        assert_eq!(root.budget(Some(1.0), 0.25, None), (Some(1.0), 0.25, 1));
        let a = child(&root.ledger);
        let b = child(&root.ledger);
        assert!(a.is_child() && b.is_child());
        a.reserve_within((None, 0.0, None), |_, _, _| ((), 0.3));
        // b sees the root's cost and a's reservation.
        let (max, spent, _) = b.budget(None, 0.0, None);
        assert_eq!(max, Some(1.0));
        assert!((spent - 0.55).abs() < 1e-9, "{spent}");
        // a's call cost 0.1: its reservation is settled.
        a.after_call(0.1, 0.1);
        let (_, spent, _) = b.budget(None, 0.0, None);
        assert!((spent - 0.35).abs() < 1e-9, "{spent}");
        // The root sees the same tree total.
        let (_, spent, _) = root.budget(Some(1.0), 0.25, None);
        assert!((spent - 0.35).abs() < 1e-9, "{spent}");
    }

    #[test]
    fn parallel_sub_agents_never_both_take_the_last_of_the_budget() {
        let root = AgentLink::at_open();
        root.publish(Some(1.0), 0.0, None);
        let kids: Vec<AgentLink> = (0..8).map(|_| child(&root.ledger)).collect();
        let granted = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|scope| {
            for kid in &kids {
                let granted = &granted;
                scope.spawn(move || {
                    let go = kid.reserve_within((None, 0.0, None), |max, spent, _| {
                        // A slow decision: a check-then-reserve race would show here.
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        if max.unwrap_or(0.0) - spent >= 0.3 {
                            (true, 0.3)
                        } else {
                            (false, 0.0)
                        }
                    });
                    if go {
                        granted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(granted.into_inner(), 3, "0.3 fits three times in 1.0");
    }

    #[test]
    fn steps_count_across_the_tree_and_reset_with_the_roots_turn() {
        let root = AgentLink::at_open();
        root.publish(None, 0.0, Some(3));
        let a = child(&root.ledger);
        root.after_call(0.0, 0.0);
        a.after_call(0.0, 0.0);
        assert!(a.steps_exceeded().is_none());
        a.after_call(0.0, 0.0);
        assert!(a.steps_exceeded().is_some() && root.steps_exceeded().is_some());
        a.turn_start(); // a sub-agent's turn does not reset the tree's count
        assert!(root.steps_exceeded().is_some());
        root.turn_start();
        assert!(root.steps_exceeded().is_none());
    }
}
