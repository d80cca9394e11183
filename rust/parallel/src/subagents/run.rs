//! Opening and running one sub-agent: its options derived from the parent's, its events
//! forwarded nested, its result and a one-line account of what it did.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::MAX_DEPTH;
use super::defs::AgentDef;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use yuyao_core::Handler;
use yuyao_core::Session;
use yuyao_core::tree::{PENDING, Pending};
use yuyao_protocol::{Event, Message, Mode, Request, SessionOptions, Usage};

/// Appended to every sub-agent's system prompt.
const SUBAGENT_NOTE: &str = "\n\n# You are a sub-agent\nAnother agent gave you this task; it sees only your final message, not your tool calls. Work on exactly the task, then end with a final message that states your findings or what you did, concretely (paths, names, results). Do not ask the user questions.";

/// What the parent hands to a sub-agent (owned: a fork outlives the call that made it).
#[derive(Clone)]
pub(crate) struct Launch {
    pub opts: SessionOptions,
    pub handler: Option<Arc<dyn Handler>>,
    pub ledger: Arc<yuyao_core::tree::Ledger>,
    pub depth: u32,
    pub agent: String,
    pub agent_id: String,
    pub call_id: String,
    /// The parent's history, for a fork; empty for a fresh context.
    pub seed: Vec<Message>,
    /// The parent's rules as they stand at launch (allow, ask, deny, granted): rules added
    /// after the parent opened (`/permissions … --session`, "always" answers) bind its
    /// sub-agents too.
    pub rules: [Vec<yuyao_policy::Rule>; 4],
}

/// How a sub-agent ended.
pub(crate) struct ChildResult {
    pub status: String,
    pub error: Option<String>,
    pub text: String,
    pub cost: f64,
    pub steps: u32,
    pub usage: Usage,
    /// `3 model calls · tools: read ×2, write ×1 (1 refused) · $0.0012`.
    pub account: String,
    /// The sub-agent's own trace file.
    pub trajectory: Option<String>,
}

/// How permissive a mode is: a sub-agent never gets more than its parent.
fn rank(m: Mode) -> u8 {
    match m {
        Mode::Plan => 0,
        Mode::Ask => 1,
        Mode::AutoEdit => 2,
        Mode::AutoReview => 3,
        Mode::Yolo => 4,
    }
}

pub(crate) trait RunExt {
    fn child_launch(
        &self,
        def: &AgentDef,
        call_id: &str,
        background: bool,
        seed: Vec<Message>,
    ) -> Result<Launch, String>;
}

impl RunExt for Session {
    /// The options of a sub-agent of this session running `def` (`background`: a fork,
    /// which nobody attends: asks are refused).
    fn child_launch(
        &self,
        def: &AgentDef,
        call_id: &str,
        background: bool,
        seed: Vec<Message>,
    ) -> Result<Launch, String> {
        let depth = self.agents().depth + 1;
        if depth > MAX_DEPTH {
            return Err(format!(
                "sub-agents nest at most {MAX_DEPTH} deep; this one would be at depth {depth}"
            ));
        }
        let (parent_mode, role, trusted, trajectory_dir, rules) = {
            let st = self.lock();
            self.agents()
                .publish(st.max_cost_usd, st.cost_usd, st.max_steps);
            (
                st.policy.mode,
                st.policy.role,
                st.trusted,
                st.trajectory
                    .path()
                    .and_then(|p| p.parent())
                    .map(|p| p.display().to_string()),
                [
                    st.policy.allow.clone(),
                    st.policy.ask.clone(),
                    st.policy.deny.clone(),
                    st.policy.granted.clone(),
                ],
            )
        };
        // Read-only by default (the plan-mode gate); a declared mode, never more than the
        // parent's; a read-only parent makes read-only sub-agents.
        let wanted = def
            .mode
            .unwrap_or(if background { parent_mode } else { Mode::Plan });
        let mode = if rank(wanted) <= rank(parent_mode) {
            wanted
        } else {
            parent_mode
        };
        let mut o = self.options().clone();
        o.cwd = Some(self.cwd());
        o.mode = Some(mode);
        o.role = Some(role);
        // The declared tool set is the sub-agent's tool list: what is not in it is neither
        // offered nor dispatched. A parent's own restriction still applies.
        let mut tools: Option<Vec<String>> = match (&def.tools, &self.options().tools) {
            (Some(d), Some(p)) => Some(
                d.iter()
                    .filter(|t| {
                        p.iter().any(|q| {
                            yuyao_protocol::canonical_tool_name(q)
                                == yuyao_protocol::canonical_tool_name(t)
                        })
                    })
                    .cloned()
                    .collect(),
            ),
            (Some(d), None) => Some(d.clone()),
            (None, p) => p.clone(),
        };
        if depth >= MAX_DEPTH {
            // The last level cannot start sub-agents of its own.
            let all = tools.unwrap_or_else(|| {
                self.builtin_tools()
                    .names()
                    .into_iter()
                    .chain(["ask-user", "task"])
                    // Every feature's tools (memory's, the task list, …): only `task` goes.
                    .chain(
                        yuyao_core::features()
                            .filter_map(|f| f.tools)
                            .flat_map(|t| t.specs.iter().map(|spec| spec.name)),
                    )
                    .map(str::to_string)
                    .collect()
            });
            tools = Some(
                all.into_iter()
                    .filter(|t| yuyao_protocol::canonical_tool_name(t) != Some("task"))
                    .collect(),
            );
        }
        o.tools = tools;
        if let Some(m) = &def.model {
            o.model.name = Some(m.clone());
        } else if let Some(m) = self.model_name() {
            o.model.name = Some(m);
        }
        // Limits are the tree's (the ledger): the parent's ceiling and step limit.
        o.max_steps = None;
        o.max_cost_usd = None;
        // The wall-clock limit is the parent's deadline, not a new one.
        o.max_wall_seconds = self
            .options()
            .max_wall_seconds
            .map(|w| (w - self.started().elapsed().as_secs_f64()).max(0.0));
        let mut append = self
            .options()
            .append_system_prompt
            .clone()
            .unwrap_or_default();
        if !def.prompt.trim().is_empty() {
            append.push_str(&format!("\n\n# Agent: {}\n{}", def.name, def.prompt.trim()));
        }
        append.push_str(SUBAGENT_NOTE);
        o.append_system_prompt = Some(append);
        o.no_session = true;
        o.continue_last = false;
        o.resume = None;
        o.fork_session = false;
        o.trust_project = Some(trusted);
        // Inherited, not the user's gesture: it approves nothing (extension_trust.rs); and
        // the project stays the parent's even where the agent made a nested `.git`.
        o.inherited_trust = true;
        o.project_dir = Some(self.paths().project.display().to_string());
        o.project_extensions = Some(self.project_extensions_allowed());
        o.headless = self.options().headless || background;
        match trajectory_dir {
            Some(d) => o.trajectory_dir = Some(d),
            None => o.no_trajectory = true,
        }
        let agent_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        Ok(Launch {
            opts: o,
            handler: self.shared_handler(),
            ledger: self.agents().ledger.clone(),
            depth,
            agent: def.name.clone(),
            agent_id,
            call_id: call_id.to_string(),
            seed,
            rules,
        })
    }
}

/// Forwards a sub-agent's events to the parent's front, wrapped in [`Event::Agent`], and
/// counts what it did for the one-line account.
struct ChildHandler {
    parent: Option<Arc<dyn Handler>>,
    agent_id: String,
    agent: String,
    depth: u32,
    call_id: String,
    /// Open-time notices (settings warnings) are the parent's, already shown: not repeated.
    live: AtomicBool,
    /// Nobody attends it (a fork, a headless parent): its questions get no answer.
    unattended: bool,
    tally: Mutex<Tally>,
}

#[derive(Default)]
struct Tally {
    calls: BTreeMap<String, (u32, u32)>,
}

impl Handler for ChildHandler {
    fn event(&self, event: &Event) {
        if let Event::ToolEnd { name, ok, .. } = event {
            let mut t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
            let entry = t.calls.entry(name.clone()).or_default();
            entry.0 += 1;
            if !ok {
                entry.1 += 1;
            }
        }
        let forward = match event {
            // Already wrapped by a deeper sub-agent: it carries its own depth.
            Event::Agent { .. } => {
                if let Some(p) = &self.parent {
                    p.event(event);
                }
                return;
            }
            Event::TextDelta { .. } | Event::ThinkingDelta { .. } | Event::Usage { .. } => false,
            Event::Notice { .. } => self.live.load(Ordering::SeqCst),
            _ => true,
        };
        if forward && let Some(p) = &self.parent {
            p.event(&Event::Agent {
                agent_id: self.agent_id.clone(),
                agent: self.agent.clone(),
                depth: self.depth,
                call_id: self.call_id.clone(),
                event: Box::new(event.clone()),
            });
        }
    }

    fn request(&self, request: &Request) -> Option<String> {
        if self.unattended {
            return None;
        }
        let p = self.parent.as_ref()?;
        // The person answering sees which sub-agent asks.
        let tagged = match request {
            Request::Permission {
                tool,
                summary,
                detail,
                reason,
                rules,
            } => Request::Permission {
                tool: tool.clone(),
                summary: format!("[sub-agent {}] {summary}", self.agent),
                detail: detail.clone(),
                reason: reason.clone(),
                rules: rules.clone(),
            },
            other => other.clone(),
        };
        p.request(&tagged)
    }
}

impl ChildHandler {
    fn account(&self) -> String {
        let t = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        if t.calls.is_empty() {
            return "no tool calls".into();
        }
        let refused: u32 = t.calls.values().map(|c| c.1).sum();
        let list: Vec<String> = t
            .calls
            .iter()
            .map(|(n, (k, _))| format!("{n} ×{k}"))
            .collect();
        let mut s = format!("tools: {}", list.join(", "));
        if refused > 0 {
            s.push_str(&format!(" ({refused} failed or refused)"));
        }
        s
    }
}

/// Opens the sub-agent's session on this thread (its link comes through [`PENDING`]).
fn open(l: &Launch, stop: &CancellationToken) -> Result<(Session, Arc<ChildHandler>), String> {
    let handler = Arc::new(ChildHandler {
        parent: l.handler.clone(),
        agent_id: l.agent_id.clone(),
        agent: l.agent.clone(),
        depth: l.depth,
        call_id: l.call_id.clone(),
        live: AtomicBool::new(false),
        unattended: l.opts.headless,
        tally: Mutex::default(),
    });
    PENDING.with(|p| {
        *p.borrow_mut() = Some(Pending {
            depth: l.depth,
            ledger: l.ledger.clone(),
            stop: stop.clone(),
        })
    });
    let as_handler: Arc<dyn Handler> = handler.clone();
    let opened = Session::open(l.opts.clone(), Some(as_handler));
    PENDING.with(|p| p.borrow_mut().take());
    let child = opened.map_err(|e| format!("the sub-agent could not start: {e}"))?;
    {
        // The parent's current rules join the child's (its own from the files stay).
        let mut st = child.lock();
        let p = &mut st.policy;
        for (mine, parents) in [&mut p.allow, &mut p.ask, &mut p.deny, &mut p.granted]
            .into_iter()
            .zip(l.rules.iter())
        {
            for r in parents {
                if !mine.iter().any(|m| m.text == r.text) {
                    mine.push(r.clone());
                }
            }
        }
    }
    if !l.seed.is_empty() {
        let mut st = child.lock();
        st.history.replace(l.seed.clone());
        st.logged = st.history.len();
    }
    handler.live.store(true, Ordering::SeqCst);
    Ok((child, handler))
}

/// Runs a sub-agent to its end on this thread. `on_open` receives the session (so it can be
/// interrupted from elsewhere while it runs).
pub(crate) fn run_child(
    l: &Launch,
    prompt: &str,
    stop: &CancellationToken,
    on_open: impl FnOnce(Arc<Session>),
) -> ChildResult {
    let failed = |why: String| ChildResult {
        status: "error".into(),
        error: Some(why.clone()),
        text: String::new(),
        cost: 0.0,
        steps: 0,
        usage: Usage::default(),
        account: why,
        trajectory: None,
    };
    if stop.is_cancelled() {
        return ChildResult {
            status: "interrupted".into(),
            ..failed("stopped before it started".into())
        };
    }
    let (child, handler) = match open(l, stop) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let child = Arc::new(child);
    on_open(child.clone());
    let outcome = child.chat(prompt);
    let (status, error, text, cost, steps, usage, trajectory) = {
        let st = child.lock();
        (
            st.last_turn.status.to_string(),
            st.last_turn.error.clone(),
            match &outcome {
                Ok(t) => t.clone(),
                Err(_) => st.last_turn.text.clone(),
            },
            st.cost_usd,
            st.steps,
            st.usage,
            st.trajectory.path().map(|p| p.display().to_string()),
        )
    };
    child.agents().release();
    child.close();
    let account = format!(
        "{steps} model call{} · {} · ${cost:.4}",
        if steps == 1 { "" } else { "s" },
        handler.account()
    );
    ChildResult {
        status,
        error,
        text,
        cost,
        steps,
        usage,
        account,
        trajectory,
    }
}
