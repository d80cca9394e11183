//! `/fork [prompt]`: a background sub-agent that starts from the current conversation, runs
//! while the session goes on, and posts its result into the session when done (one message,
//! joined before the next model call; the front is told at once). Also the registry of
//! running sub-agents behind `/tasks` and Ctrl+X Ctrl+K.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::defs::AgentDef;
use super::run::run_child;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use yuyao_core::{CoreError, Session, State};
use yuyao_protocol::{Event, Message, NoticeLevel, Usage};

const FORK_DEFAULT: &str = "Continue the work of this conversation on your own from here, then report what you did and found.";

/// A sub-agent started by this session (a `task` call running, or a fork).
pub(crate) struct Running {
    pub id: String,
    pub agent: String,
    /// `task` or `fork`.
    pub kind: &'static str,
    pub description: String,
    call_id: String,
    started: std::time::Instant,
    pub stop: CancellationToken,
    session: Mutex<Option<Arc<Session>>>,
    /// `running`, then the sub-agent's end status and its account.
    state: Mutex<(String, String)>,
}

impl Running {
    pub(crate) fn new(
        id: &str,
        agent: &str,
        kind: &'static str,
        description: &str,
        call_id: &str,
    ) -> Arc<Running> {
        Arc::new(Running {
            id: id.into(),
            agent: agent.into(),
            kind,
            description: description
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect(),
            call_id: call_id.into(),
            started: std::time::Instant::now(),
            stop: CancellationToken::new(),
            session: Mutex::new(None),
            state: Mutex::new(("running".into(), String::new())),
        })
    }

    pub(crate) fn call_id_is(&self, id: &str) -> bool {
        self.call_id == id
    }

    pub(crate) fn attach(&self, s: Arc<Session>) {
        *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
        // Stopped while it was opening: the gate ends it before its first call; the
        // interrupt reaches a call already in flight.
        if self.stop.is_cancelled() {
            self.halt();
        }
    }

    /// Stops it: the gate refuses its next model call, the call or tool in flight is cancelled.
    pub(crate) fn halt(&self) {
        self.stop.cancel();
        if let Some(s) = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            s.interrupt();
        }
    }

    pub(crate) fn finish(&self, status: &str, account: &str) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = (status.into(), account.into());
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    pub(crate) fn is_running(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 == "running"
    }

    fn row(&self) -> String {
        let (state, account) = self.state.lock().unwrap_or_else(|e| e.into_inner()).clone();
        format!(
            "{}  {} {}  {}  {:.0}s  {}{}",
            self.id,
            self.kind,
            self.agent,
            state,
            self.started.elapsed().as_secs_f64(),
            self.description,
            if account.is_empty() {
                String::new()
            } else {
                format!("  ({account})")
            }
        )
    }
}

/// A finished fork's report, waiting for the next model call.
pub(crate) struct Report {
    text: String,
    /// A writing fork's worktree: its work is applied when the report joins the session
    /// (between model calls, when no tool of the session is running).
    iso: Option<super::isolated::Isolation>,
    cost: f64,
    steps: u32,
    usage: Usage,
}

impl super::Family {
    pub(crate) fn children_push(&self, r: Arc<Running>) {
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
    }

    pub(crate) fn children_remove(&self, gone: &[Arc<Running>]) {
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|r| !gone.iter().any(|g| Arc::ptr_eq(g, r)));
    }
}

pub(crate) trait ForkExt {
    fn apply_fork_work(&self);
    fn inject_fork_reports(&self, st: &mut State);
    fn subagent_rows(&self) -> Vec<String>;
    fn stop_subagent(&self, id: &str) -> Option<String>;
}

impl ForkExt for Session {
    /// Finished writing forks' work back into the checkout, before their reports join the
    /// history (between model calls: no tool of this session runs). Extension files it
    /// brought are marked as the agent's at once, before any hook can read them (DESIGN §8).
    fn apply_fork_work(&self) {
        let taken: Vec<(usize, super::isolated::Isolation)> = {
            let mut reports = self
                .family()
                .reports
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            reports
                .iter_mut()
                .enumerate()
                .filter_map(|(i, r)| r.iso.take().map(|iso| (i, iso)))
                .collect()
        };
        if taken.is_empty() {
            return;
        }
        let lines: Vec<(usize, String)> = taken
            .into_iter()
            .map(|(i, iso)| (i, self.bring_back(iso, "fork")))
            .collect();
        {
            // Reports are only appended meanwhile (by fork threads): the indexes hold.
            let mut reports = self
                .family()
                .reports
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for (i, line) in lines {
                if let Some(r) = reports.get_mut(i) {
                    r.text = format!("{}\n{line}", r.text);
                }
            }
        }
        self.note_agent_extension_writes();
    }

    /// Joins finished forks' reports to the history (one user message each) and their cost
    /// and steps to this session's.
    fn inject_fork_reports(&self, st: &mut State) {
        let reports: Vec<Report> = std::mem::take(
            &mut *self
                .family()
                .reports
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for r in reports {
            st.cost_usd += r.cost;
            st.steps += r.steps;
            st.usage.add(&r.usage);
            self.agents().child_merged(r.cost, st.cost_usd);
            st.trajectory
                .record("fork_report", json!({"text": r.text, "cost_usd": r.cost}));
            st.push(Message::user(r.text));
        }
    }

    /// `/tasks` rows for sub-agents (running ones and finished forks).
    fn subagent_rows(&self) -> Vec<String> {
        self.family()
            .children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|r| r.row())
            .collect()
    }

    /// `/tasks stop <id>` for a sub-agent: `None` when no sub-agent has that id.
    fn stop_subagent(&self, id: &str) -> Option<String> {
        let children = self
            .family()
            .children
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let r = children.iter().find(|r| r.id == id)?;
        if !r.is_running() {
            return Some(format!("{id}: already ended"));
        }
        r.halt();
        Some(format!("{id}: stopped"))
    }
}

/// Stops every running fork of the session.
pub(crate) fn stop_all(s: &Session) -> String {
    let running: Vec<Arc<Running>> = s
        .family()
        .children
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|r| r.kind == "fork" && r.is_running())
        .cloned()
        .collect();
    for r in &running {
        r.halt();
    }
    match running.len() {
        0 => "no background sub-agents to stop".into(),
        n => format!(
            "stopped {n} background sub-agent{}",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// `/fork [prompt]`.
pub(crate) fn fork_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let prompt = if args.is_empty() {
        FORK_DEFAULT.to_string()
    } else {
        args.join(" ")
    };
    let def = AgentDef {
        name: "fork".into(),
        description: String::new(),
        tools: None,
        model: None,
        // The parent's mode, but nobody attends it: what would need a question is refused.
        mode: None,
        prompt: String::new(),
        ignored_tools: Vec::new(),
        source: "built-in".into(),
        path: None,
    };
    let seed = s.messages();
    let mut launch = s
        .child_launch(&def, "", true, seed)
        .map_err(CoreError::Usage)?;
    launch.call_id = format!("fork-{}", launch.agent_id);
    // A fork in a writing mode works in a worktree of its own while the session goes on.
    let label = format!("fork-{}", launch.agent_id);
    let iso = s.isolate_child(&mut launch, &label);
    let running = Running::new(&launch.agent_id, "fork", "fork", &prompt, &launch.call_id);
    s.family().children_push(running.clone());
    s.lock().trajectory.record(
        "subagent_start",
        json!({"agent_id": launch.agent_id, "agent": "fork", "call_id": launch.call_id,
               "mode": launch.opts.mode, "prompt": prompt}),
    );
    let reports = s.family().reports.clone();
    let handler = s.shared_handler();
    let link_ledger = s.agents().ledger.clone();
    let id = launch.agent_id.clone();
    let thread_running = running.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("yuyao-fork-{id}"))
        .spawn(move || {
            link_ledger.running(1);
            let r = run_child(&launch, &prompt, &thread_running.stop, |c| {
                thread_running.attach(c)
            });
            link_ledger.running(-1);
            thread_running.finish(&r.status, &r.account);
            let head = if r.status == "completed" {
                format!("[fork {id} finished] {}", r.text.trim())
            } else {
                format!(
                    "[fork {id} ended: {}{}] {}",
                    r.status,
                    r.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default(),
                    r.text.trim()
                )
            };
            let text = format!("{head}\n({})", r.account);
            reports
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Report {
                    text: text.clone(),
                    iso,
                    cost: r.cost,
                    steps: r.steps,
                    usage: r.usage,
                });
            if let Some(h) = handler {
                h.event(&Event::Notice {
                    level: NoticeLevel::Info,
                    text: format!(
                        "{text}\n(the report joins the conversation before the next model call)"
                    ),
                });
            }
        });
    if let Err(e) = spawned {
        running.finish("error", &e.to_string());
        return Err(CoreError::Failed(format!("cannot start the fork: {e}")));
    }
    Ok(format!(
        "fork {} started in the background ({} mode); /tasks lists it, Ctrl+X Ctrl+K stops it",
        running.id,
        launch_mode_label(s)
    ))
}

fn launch_mode_label(s: &Session) -> String {
    s.lock().policy.mode.to_string()
}
