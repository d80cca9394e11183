//! Sub-agents (seed 002 §1 `task`, DESIGN §8): another [`Session`] of the same core — same request builder, policy
//! and sandbox (DESIGN §1) — opened with a fresh context and its own options (read-only by
//! default, a declared tool set), run on its own thread, its events forwarded nested under the
//! parent's call.
//!
//! - `task.rs`: the `task` tool; a reply's task calls run concurrently (`agents.max_parallel`).
//! - `defs.rs`: agent definitions (`agents/<name>.md`, built-ins) and `/agents`.
//! - `fork.rs`: `/fork`, background sub-agents, their reports, `/tasks` rows, Ctrl+X Ctrl+K.
//! - `goal.rs`: `/goal` and `/loop` (turns judged by one model call).
//! - `team.rs`: `--role orchestrator`: the team's task list with owners, mailbox, run + merge.
//! - `workflow.rs`: `/workflow <name>` (YAML stages, cross-checks) and `/workflows`.
//! - `batch.rs`: `/batch` (units proposed by the model, each in its own worktree, merged).
//!
//! One [`Ledger`] is shared by a session and every sub-agent under it: spend and steps of the
//! whole tree are checked before every model call of any of them, and a call reserves what it
//! may cost until it is settled, so concurrent sub-agents can never pass the ceiling together.

pub(crate) mod batch;
pub(crate) mod defs;
mod fork;
mod goal;
mod isolated;
mod run;
mod task;
pub(crate) mod team;
pub(crate) mod workflow;

pub(crate) use defs::agents_cmd;
pub(crate) use fork::fork_cmd;
pub(crate) use goal::{goal_cmd, loop_cmd};

use crate::session::{Session, TurnSummary};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// Sub-agents nest at most this deep: a depth-2 sub-agent is not offered the `task` tool.
pub(crate) const MAX_DEPTH: u32 = 2;

/// Spend and steps of a session tree (the main session and all its sub-agents).
#[derive(Default)]
pub(crate) struct Ledger {
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
}

/// A session's place in its tree: the main session has depth 0.
pub(crate) struct AgentLink {
    pub depth: u32,
    pub ledger: Arc<Ledger>,
    /// Set when the sub-agent is stopped (checked before every model call).
    pub stop: CancellationToken,
    /// This session's reservation for its call in flight.
    reserved: Mutex<f64>,
    /// Sub-agents and forks this session started (for `/tasks`, stop, reports).
    pub(crate) children: Arc<Mutex<Vec<Arc<fork::Running>>>>,
    /// Finished forks' reports, joined to the history before the next model call.
    pub(crate) reports: Arc<Mutex<Vec<fork::Report>>>,
}

/// What a sub-agent's `Session::open` is given (the open runs on the spawning thread).
struct Pending {
    depth: u32,
    ledger: Arc<Ledger>,
    stop: CancellationToken,
}

thread_local! {
    static PENDING: RefCell<Option<Pending>> = const { RefCell::new(None) };
}

impl AgentLink {
    /// The link of a session being opened: a sub-agent's when one is being spawned on this
    /// thread, else a new tree's root.
    pub(crate) fn at_open() -> AgentLink {
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
            children: Default::default(),
            reports: Default::default(),
        }
    }

    pub(crate) fn is_child(&self) -> bool {
        self.depth > 0
    }

    /// The main session begins a turn: the tree's step count starts again.
    pub(crate) fn turn_start(&self) {
        if !self.is_child() {
            self.ledger.lock().steps = 0;
        }
    }

    /// Spend ceiling and spent so far as this session must see them (the whole tree). The
    /// main session publishes its own values; a sub-agent reads them.
    pub(crate) fn budget(
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
    pub(crate) fn reserve_within<T>(
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
    pub(crate) fn publish(&self, max: Option<f64>, cost: f64, max_steps: Option<u32>) {
        if !self.is_child() {
            let mut l = self.ledger.lock();
            l.max_cost = max;
            l.root_cost = cost;
            l.max_steps = max_steps;
        }
    }

    /// Gives back this session's reservation (its call ended, or never happened).
    pub(crate) fn release(&self) {
        let mut mine = self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        if *mine > 0.0 {
            let mut l = self.ledger.lock();
            l.reserved = (l.reserved - *mine).max(0.0);
            *mine = 0.0;
        }
    }

    /// A model call of this session was paid: `cost`, the session's total now `total`.
    pub(crate) fn after_call(&self, cost: f64, total: f64) {
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
    pub(crate) fn tree_spent(&self, own: f64) -> f64 {
        let l = self.ledger.lock();
        if self.is_child() {
            l.root_cost + l.children_cost
        } else {
            own + l.children_cost
        }
    }

    /// Why the tree may not make another call now (its step limit), for any of its sessions.
    fn steps_exceeded(&self) -> Option<(u32, u32)> {
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
    pub(crate) fn subagent_gate(&self) -> Option<TurnSummary> {
        if self.agents.stop.is_cancelled() {
            return Some(crate::turn::interrupted());
        }
        // An approved plan's run gets its allowance here too (`plan_step_limit`).
        let max = self.plan_step_limit();
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
    pub(crate) fn merge_child(&self, cost: f64, steps: u32, usage: &yuyao_protocol::Usage) {
        let mut st = self.lock();
        st.cost_usd += cost;
        st.steps += steps;
        st.usage.add(usage);
        if !self.agents.is_child() {
            let mut l = self.agents.ledger.lock();
            l.children_cost = (l.children_cost - cost).max(0.0);
            l.root_cost = st.cost_usd;
        }
    }

    /// Ctrl+X Ctrl+K: stops every background sub-agent (forks) of this session.
    pub fn kill_subagents(&self) -> String {
        fork::stop_all(self)
    }
}

static TOOLS: crate::feature::FeatureTools = crate::feature::FeatureTools {
    specs: &[crate::tool_call::registry::Spec {
        name: "task",
        effect: crate::tool_call::registry::Effect::Runs,
        evidence: true,
        runner: crate::tool_call::registry::Runner::Delegated,
    }],
    summaries: &[],
    names: |_| vec!["task"],
    schemas: |s, ok| {
        if ok("task") {
            vec![s.task_schema()]
        } else {
            Vec::new()
        }
    },
};

/// What this feature adds to a session (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "subagents",
    // A stopped sub-agent, or the step limit of the whole tree (sub-agents included).
    step_gate: Some(|s| s.subagent_gate()),
    // Work of forks that finished is applied before the next call …
    step_begin: Some(|s| s.apply_fork_work()),
    // … and their reports and a teammate's mail join the history.
    step_inject: Some(|s, st| {
        s.inject_fork_reports(st);
        team::deliver_mail(s, st);
    }),
    // Background sub-agents end with the session.
    close: Some(|s| {
        s.kill_subagents();
    }),
    commands: &[
        crate::commands::cmd!(
            "agents",
            [],
            "[list | show|create|edit|delete <name> [--tools a,b --mode m …]]",
            "sub-agent definitions (agents/<name>.md)",
            Some(crate::subagents::agents_cmd)
        ),
        crate::commands::cmd!(
            "goal",
            [],
            "<condition>",
            "keep working until a condition holds",
            Some(crate::subagents::goal_cmd)
        ),
        crate::commands::cmd!(
            "loop",
            [],
            "<prompt> [--interval s] [--max n] [--until cond]",
            "repeat a prompt",
            Some(crate::subagents::loop_cmd)
        ),
        crate::commands::cmd!(
            "fork",
            [],
            "[prompt]",
            "a background sub-agent that starts from this conversation",
            Some(crate::subagents::fork_cmd)
        ),
        crate::commands::cmd!(
            "batch",
            [],
            "<instruction>",
            "split a change across parallel sub-agents",
            Some(crate::subagents::batch::batch_cmd)
        ),
        crate::commands::cmd!(
            "workflows",
            ["workflow"],
            "[name]",
            "scripted multi-agent workflows",
            Some(crate::subagents::workflow::workflows_cmd)
        ),
    ],
    tools: Some(&TOOLS),
    ..crate::feature::Feature::NONE
};

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
