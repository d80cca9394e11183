//! yuyao-planning-workflow — the planning workflow (seed 001), a feature registered with the
//! core's kernel (removing it is deleting this crate and its registration line): while the mode
//! is `plan` the model researches read-only and proposes one `<proposed_plan>`; the runtime
//! validates it (`validate.rs`), persists it (`files.rs`), and waits for approval (the TUI's
//! gate, an intent phrase, `/plan approve`). Approval writes the tracker, returns to the write-
//! capable mode the user came from, pins the plan into the context and starts the
//! implementation turn by itself. `synthesis.rs` holds planning's tool-free synthesis when
//! research ends. The kernel keeps the bounded recovery of every mode (`recovery.rs`: the
//! blocked-call fuse, the recovery pass), the turn budgets with planning's floors
//! (`turn_budget.rs`), and the navigation balancer (`yuyao_planning::navigation`).

#[allow(unused_imports)]
use crate::session_ext::*;

pub(crate) mod todo;
pub(crate) use yuyao_planning::extract;
pub(crate) mod files;
pub(crate) mod synthesis;
pub(crate) use yuyao_planning::validate;

/// The session methods each module adds (a crate outside the core extends `Session` through
/// traits); every module imports them all.
pub(crate) mod session_ext {
    pub(crate) use crate::PlanningExt;
    pub(crate) use crate::synthesis::SynthesisExt;
    pub(crate) use crate::todo::TodoExt;
}

use serde_json::{Value, json};
use validate::Plan;
use yuyao_core::{CoreError, Session, TurnSummary};
use yuyao_protocol::{Event, Mode, NoticeLevel, Role};
use yuyao_tools::ToolOutput;

pub(crate) const START_TOOL: &str = "start_planning";

/// The extra model calls an approved plan's implementation turn may make, once.
pub(crate) const APPROVED_ALLOWANCE: u32 = 50;
/// No allowance lifts a turn past this many model calls.
pub(crate) const HARD_STEP_CAP: u32 = 400;
/// Repair requests for an invalid plan in one turn before planning reports it and waits
/// (seed 001: "one bounded repair request").
const MAX_REPAIRS: u32 = 1;

const INSTRUCTIONS: &str = "[planning] You are in the planning workflow: research read-only (read, grep, glob, read-only shell), ask the user only when two readings lead to materially different work, then write `Repository facts checked:` (a bullet per fact confirmed in the repository: file:symbol or behaviour, or observed command output -> the insight it establishes) and `Next open decision:` (the decision still open, or: No remaining scope decisions), then emit exactly one final <proposed_plan> block. Inside it: `# Title`, then `## Summary`, `## Implementation Steps` (each step one line: `N. action -> files: path, path -> verify: concrete command or observable check`), `## Test Cases and Validation`, `## Assumptions and Defaults` (optional: `## Expected Outcomes`, `## Dependencies and Prerequisites`). File references as plain text or inline code, never markdown links. Keep it under ~1500 tokens. Do not implement anything: the user approves the plan first.";

const IMPLEMENT: &str = "The plan was approved. Implement it now, step by step, keeping the todo list current (mark each step in_progress, then completed), and run each step's verify checks.";

#[derive(Default)]
pub(crate) struct PlanState {
    /// The planning instructions were given for this planning session.
    instructed: bool,
    /// The slug of this session's plan file (`.plans/<slug>.md`).
    pub slug: Option<String>,
    /// The last valid plan persisted.
    pub draft: Option<Plan>,
    /// A valid draft waits for approval.
    pub awaiting: bool,
    /// An approved plan's run: a revision continues without a gate.
    pub approved: bool,
    /// The approved plan, pinned into the context (and again after a compaction).
    pub pinned: Option<String>,
    /// The +50 allowance: armed for the turn that starts after approval.
    allowance_pending: bool,
    pub allowance: bool,
    /// Headless planning: the one clarification question was answered for the human.
    pub asked_headless: bool,
    /// Repair requests sent in this turn.
    pub repairs: u32,
    /// The tool-free synthesis ran in this turn.
    pub synthesized: bool,
}

/// What the user's words mean while a draft waits for approval.
#[derive(Debug, PartialEq)]
pub(crate) enum Intent {
    Approve,
    Stay,
    Cancel,
    None,
}

pub(crate) fn intent(text: &str) -> Intent {
    let t: String = text
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, '.' | '!' | ',' | '?'))
        .collect();
    let t = t.trim();
    if t.contains("stay in planning") {
        return Intent::Stay;
    }
    let t = t
        .trim_end_matches(" please")
        .trim_start_matches("please ")
        .trim();
    match t {
        "implement" | "implement it" | "implement the plan" | "approve" | "approved" | "lgtm"
        | "ship it" | "yes" | "y" | "continue" | "go" | "go ahead" | "start" | "execute" => {
            Intent::Approve
        }
        "no" | "cancel" | "abandon plan" | "abandon the plan" | "cancel plan" => Intent::Cancel,
        _ => Intent::None,
    }
}

pub(crate) fn schemas(s: &Session, enabled: impl Fn(&str) -> bool) -> Vec<Value> {
    let mut out = Vec::new();
    if enabled(crate::todo::NAME) {
        out.push(crate::todo::schema());
    }
    let (mode, role) = {
        let st = s.lock();
        (st.policy.mode, st.policy.role)
    };
    if enabled(START_TOOL) && mode != Mode::Plan && role == Role::Execute {
        out.push(json!({
            "type": "function",
            "function": {
                "name": START_TOOL,
                "description": "Propose entering the planning workflow (read-only research, then a plan the user approves before any change) when the request is demanding or ambiguous. Interactive users are asked first.",
                "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}}
            }
        }));
    }
    out
}

/// Runs `todo` or `start_planning`; `None` for any other tool.
pub(crate) fn run_tool(s: &Session, name: &str, raw: &str) -> Option<ToolOutput> {
    match name {
        crate::todo::NAME => Some(s.run_todo(raw)),
        START_TOOL => Some(start_planning(s)),
        _ => None,
    }
}

fn start_planning(s: &Session) -> ToolOutput {
    let (mode, role, headless) = {
        let st = s.lock();
        (st.policy.mode, st.policy.role, st.policy.headless)
    };
    if mode == Mode::Plan {
        return ToolOutput::ok("Already in the planning workflow.");
    }
    if role != Role::Execute {
        return ToolOutput::err("start_planning is available to the execution role only.");
    }
    let accept = match mode {
        Mode::Yolo | Mode::AutoEdit | Mode::AutoReview => true,
        _ if headless || !s.has_handler() => {
            s.notice(
                NoticeLevel::Info,
                "the model asked to enter the planning workflow: pending (nobody can accept it in this run); nothing changed",
            );
            return ToolOutput::ok(
                "Pending: nobody can accept entering the planning workflow in this run, so nothing changed. Continue without it.",
            );
        }
        _ => {
            let answer = s.handler().and_then(|h| {
                h.request(&yuyao_protocol::Request::AskUser {
                    question: "Enter planning workflow?".into(),
                    options: vec![
                        "Enter planning workflow (Recommended)".into(),
                        "Continue without".into(),
                    ],
                })
            });
            answer.is_some_and(|a| {
                let a = a.to_ascii_lowercase();
                a.starts_with("enter") || a.starts_with('1') || a.starts_with("yes")
            })
        }
    };
    if !accept {
        return ToolOutput::ok(
            "The user chose to continue without the planning workflow. Go on with the task.",
        );
    }
    if let Err(e) = yuyao_core::set_mode(s, "plan") {
        return ToolOutput::err(e.to_string());
    }
    s.planning().instructed = true;
    s.notice(
        NoticeLevel::Info,
        "entered the planning workflow (read-only)",
    );
    ToolOutput::ok(format!(
        "Entered the planning workflow; tools are read-only now.\n{INSTRUCTIONS}"
    ))
}

pub(crate) trait PlanningExt {
    fn planning(&self) -> std::sync::MutexGuard<'_, PlanState>;
    fn in_planning(&self) -> bool;
    fn plan_intercept(&self, text: &str) -> Option<String>;
    fn plan_problem(&self, why: String) -> String;
    fn plan_step_limit(&self, max: Option<u32>) -> Option<u32>;
    fn plan_after_reply(&self, text: &str, has_tool_calls: bool) -> PlanStep;
    fn persist_plan(&self, plan: &Plan) -> Result<std::path::PathBuf, String>;
    fn emit_plan(&self, plan: &Plan, path: &std::path::Path, approved: bool);
    fn refresh_tracker(&self, plan: &Plan) -> Option<std::path::PathBuf>;
    fn plan_restore(&self);
    fn plan_tracker_sync(&self, items: &[crate::todo::Item]);
    fn approve(&self, mode: Option<Mode>, fresh: bool) -> Result<String, CoreError>;
    fn plan_lifecycle(&self, event: Event);
    fn fresh_thread(&self, trigger: &str);
    fn cancel_plan(&self) -> String;
    fn plan_pins(&self, log: &yuyao_store::sessions::SessionLog) -> Vec<String>;
    fn plan_revise(&self, text: &str) -> Result<String, CoreError>;
    fn plan_json(&self) -> String;
    fn plan_headless_ask(&self) -> Option<ToolOutput>;
}

impl PlanningExt for Session {
    fn planning(&self) -> std::sync::MutexGuard<'_, PlanState> {
        self.part::<std::sync::Mutex<PlanState>>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn in_planning(&self) -> bool {
        self.lock().policy.mode == Mode::Plan
    }

    /// Before a user message joins the history: planning instructions at the start of a
    /// planning session, and the intent phrases typed at a waiting draft. `Some(text)`: the
    /// message was handled here and the turn ends with `text` (no model call).
    fn plan_intercept(&self, text: &str) -> Option<String> {
        {
            let mut p = self.planning();
            p.allowance = std::mem::take(&mut p.allowance_pending);
            p.repairs = 0;
            p.synthesized = false;
        }
        let awaiting = self.planning().awaiting;
        if awaiting {
            match intent(text) {
                Intent::Approve => match self.approve(None, false) {
                    Ok(msg) => {
                        self.notice(NoticeLevel::Info, msg);
                        self.planning().allowance = true;
                    }
                    Err(e) => return Some(self.plan_problem(e.to_string())),
                },
                Intent::Cancel => return Some(self.cancel_plan()),
                Intent::Stay | Intent::None => {}
            }
        }
        if self.in_planning() && !self.planning().instructed {
            self.planning().instructed = true;
            self.lock().pending_notes.push(INSTRUCTIONS.to_string());
        }
        None
    }

    fn plan_problem(&self, why: String) -> String {
        self.notice(NoticeLevel::Warning, why.clone());
        why
    }

    /// An approved plan's implementation turn gets [`APPROVED_ALLOWANCE`] more model calls,
    /// never past [`HARD_STEP_CAP`] (an unlimited turn stays unlimited).
    fn plan_step_limit(&self, max: Option<u32>) -> Option<u32> {
        let max = max?;
        if self.planning().allowance {
            Some(
                max.saturating_add(APPROVED_ALLOWANCE)
                    .min(HARD_STEP_CAP.max(max)),
            )
        } else {
            Some(max)
        }
    }

    /// A reply's plan block, if any: validated and persisted (valid), or sent back with what
    /// to fix (invalid). `Some(summary)` ends the turn.
    fn plan_after_reply(&self, text: &str, has_tool_calls: bool) -> PlanStep {
        let blocks = extract::plans(text);
        let Some(body) = blocks.last() else {
            return PlanStep::Go;
        };
        let planning = self.in_planning();
        let approved_run = self.planning().approved && !planning;
        match validate::validate(body) {
            Err(problems) => {
                let list = problems
                    .iter()
                    .map(|p| format!("- {p}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let repairs = {
                    let mut p = self.planning();
                    p.repairs += 1;
                    p.repairs
                };
                self.notice(
                    NoticeLevel::Warning,
                    format!("the proposed plan was rejected (nothing was saved):\n{list}"),
                );
                self.lock().pending_notes.push(format!(
                    "[plan validation] Your <proposed_plan> was rejected and not saved:\n{list}\nFix these and re-emit the whole <proposed_plan> block."
                ));
                if has_tool_calls || repairs <= MAX_REPAIRS {
                    PlanStep::Again
                } else {
                    PlanStep::Stop(TurnSummary {
                        status: "completed",
                        exit_status: "NotSubmitted",
                        error: Some(format!(
                            "the plan is still invalid after {MAX_REPAIRS} repair request(s){}; nothing was saved:\n{list}",
                            if planning {
                                "; planning stays active"
                            } else {
                                ""
                            }
                        )),
                        text: String::new(),
                    })
                }
            }
            Ok(plan) => {
                let path = match self.persist_plan(&plan) {
                    Ok(p) => p,
                    Err(e) => {
                        return PlanStep::Stop(TurnSummary {
                            status: "error",
                            exit_status: "Error",
                            error: Some(self.plan_problem(e)),
                            text: String::new(),
                        });
                    }
                };
                if approved_run {
                    // A revision inside an approved run: persisted, pinned, and work goes on.
                    self.refresh_tracker(&plan);
                    self.planning().pinned = Some(plan.text.clone());
                    self.notice(
                        NoticeLevel::Info,
                        format!(
                            "plan revised and saved to {}; the approved run continues",
                            path.display()
                        ),
                    );
                    self.lock().pending_notes.push(
                        "[plan revised] The revised plan was validated and saved; it replaces the approved one. Continue implementing it.".into(),
                    );
                    return PlanStep::Again;
                }
                self.planning().awaiting = true;
                self.plan_lifecycle(Event::PlanApprovalRequested {
                    path: path.display().to_string(),
                    title: plan.title.clone(),
                    steps: plan.steps.len(),
                });
                if has_tool_calls {
                    return PlanStep::Go;
                }
                PlanStep::Stop(TurnSummary {
                    status: "completed",
                    exit_status: "Answered",
                    error: None,
                    text: plan.text.clone(),
                })
            }
        }
    }

    /// Writes the plan and its tracker sidecar, tells the fronts; the path of the plan file.
    fn persist_plan(&self, plan: &Plan) -> Result<std::path::PathBuf, String> {
        let slug = {
            let mut p = self.planning();
            p.slug
                .get_or_insert_with(|| files::unique_slug(&self.paths().project, &plan.title))
                .clone()
        };
        let path = files::write_plan(&self.paths().project, &slug, plan)?;
        self.planning().draft = Some(plan.clone());
        self.lock().log_entry(
            "plan",
            json!({"path": path.display().to_string(), "title": plan.title}),
        );
        self.emit_plan(plan, &path, false);
        Ok(path)
    }

    fn emit_plan(&self, plan: &Plan, path: &std::path::Path, approved: bool) {
        let mut files: Vec<String> = Vec::new();
        let mut verify: Vec<String> = Vec::new();
        for s in &plan.steps {
            for f in &s.files {
                if !files.contains(f) {
                    files.push(f.clone());
                }
            }
            verify.extend(s.verify.iter().cloned());
        }
        self.emit(Event::Plan {
            plan: plan.text.clone(),
            title: plan.title.clone(),
            path: path.display().to_string(),
            steps: plan.steps.len(),
            files,
            verify,
            approved,
        });
    }

    /// The steps become the todo list and the sidecar is rewritten.
    fn refresh_tracker(&self, plan: &Plan) -> Option<std::path::PathBuf> {
        let slug = self.planning().slug.clone()?;
        let path = files::write_tracker(&self.paths().project, &slug, plan).ok()?;
        self.set_todo(files::tracker_items(plan));
        Some(path)
    }

    /// The planning state of a resumed session, from its `plan` / `plan_approved` entries
    /// on the current path and the plan file on disk (validated again).
    /// A session that was planning when it ended comes back planning (plan mode only
    /// narrows what tools may do, so unlike other modes it is safe to restore), unless the
    /// resuming invocation names a mode.
    fn plan_restore(&self) {
        let (mut path, mut approved, mut planning) = (None::<String>, false, false);
        {
            let st = self.lock();
            let by_id: std::collections::HashMap<&str, &yuyao_store::sessions::Entry> = st
                .log
                .entries()
                .iter()
                .map(|e| (e.id.as_str(), e))
                .collect();
            for id in st.log.path_ids() {
                let Some(e) = by_id.get(id.as_str()) else {
                    continue;
                };
                match e.kind.as_str() {
                    "plan" => {
                        path = e.data.get("path").and_then(Value::as_str).map(String::from);
                        approved = false;
                    }
                    "plan_approved" => approved = true,
                    "mode" => {
                        planning = e.data.get("value").and_then(Value::as_str) == Some("plan");
                    }
                    _ => {}
                }
            }
        }
        let mut state = PlanState::default();
        if let Some(path) = path.map(std::path::PathBuf::from)
            && path.starts_with(files::dir(&self.paths().project))
            && let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(plan) = validate::validate(&text)
        {
            state.slug = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            state.awaiting = !approved;
            state.approved = approved;
            state.pinned = approved.then(|| plan.text.clone());
            state.draft = Some(plan);
        }
        *self.planning() = state;
        if planning && self.options().mode.is_none() {
            if !self.in_planning() {
                let _ = yuyao_core::set_mode(self, "plan");
            }
        } else if planning {
            // The invocation's mode replaces planning: the log says so, so a later resume
            // does not bring planning back.
            let mut st = self.lock();
            let now = st.policy.mode;
            if now != Mode::Plan {
                st.log_entry("mode", json!({"value": now}));
            }
        }
    }

    /// The plan's tracker sidecar follows the todo list (statuses by step id).
    fn plan_tracker_sync(&self, items: &[crate::todo::Item]) {
        let slug = self.planning().slug.clone();
        if let Some(slug) = slug {
            files::sync_statuses(&self.paths().project, &slug, items);
        }
    }

    /// Approval: the persisted plan must validate and its tracker must be written; then the
    /// write-capable mode returns, the plan is pinned, and the allowance is armed.
    fn approve(&self, mode: Option<Mode>, fresh: bool) -> Result<String, CoreError> {
        let slug = self.planning().slug.clone();
        let Some(slug) = slug else {
            return Err(CoreError::Usage(
                "no plan to approve yet: the planning agent has not proposed a valid plan".into(),
            ));
        };
        let file = files::plan_path(&self.paths().project, &slug);
        let text = std::fs::read_to_string(&file).map_err(|e| {
            CoreError::Failed(format!(
                "the plan file {} cannot be read: {e}",
                file.display()
            ))
        })?;
        let plan = validate::validate(&text).map_err(|problems| {
            CoreError::Usage(format!(
                "{} does not validate, so it cannot be approved; planning stays active:\n{}",
                file.display(),
                problems
                    .iter()
                    .map(|p| format!("- {p}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ))
        })?;
        let Some(tracker) = self.refresh_tracker(&plan) else {
            return Err(CoreError::Failed(
                "the task tracker could not be written; planning stays active".into(),
            ));
        };
        let back = {
            let st = self.lock();
            mode.unwrap_or_else(|| match (st.policy.mode, st.mode_before_plan) {
                // Not in plan mode (a resumed session, a replan): the mode in force stays.
                (now, _) if now != Mode::Plan => now,
                (_, Some(m)) if m != Mode::Plan => m,
                _ => Mode::Ask,
            })
        };
        yuyao_core::set_mode(self, back.as_str())?;
        if self.lock().policy.role == Role::Ask {
            yuyao_core::set_role(self, "execute")?;
        }
        {
            let mut p = self.planning();
            p.awaiting = false;
            p.approved = true;
            p.instructed = false;
            p.draft = Some(plan.clone());
            p.pinned = Some(plan.text.clone());
            p.allowance_pending = true;
        }
        self.lock()
            .log_entry("plan_approved", json!({"path": file.display().to_string()}));
        self.emit_plan(&plan, &file, true);
        self.plan_lifecycle(Event::PlanApprovalResolved {
            decision: if fresh { "fresh_context" } else { "execute" }.into(),
            automatic: false,
            path: file.display().to_string(),
        });
        if fresh {
            self.fresh_thread("plan_approval");
        }
        self.lock()
            .pending_notes
            .push(format!("{}\n\n{}", pin_header(), plan.text));
        Ok(format!(
            "plan approved: {} (tracker {}); mode: {back}; implementation starts",
            file.display(),
            tracker.display()
        ))
    }

    /// A plan lifecycle event: to the fronts (and stream-json) and to the trace.
    fn plan_lifecycle(&self, event: Event) {
        if let Ok(v) = serde_json::to_value(&event) {
            self.lock().trajectory.record("plan_lifecycle", v);
        }
        self.emit(event);
    }

    /// "Clear context and implement" (seed 001): the conversation starts over as a fresh
    /// execution thread; the plan (pinned by the approval), the task tracker, the file tree,
    /// permissions and usage stay. The session file keeps the earlier messages (`/tree`).
    fn fresh_thread(&self, trigger: &str) {
        let previous = self.status_json()["context_percent"]
            .as_f64()
            .unwrap_or(0.0);
        {
            let mut st = self.lock();
            // The task list lives on the session path: carried over the cut.
            let tasks = crate::todo::current(&st.log);
            st.log_entry("clear", json!({"trigger": trigger}));
            st.history.clear();
            st.logged = 0;
            st.reset_prefix();
            st.log_entry("todo", json!({"items": tasks}));
        }
        self.plan_lifecycle(Event::ContextReset {
            trigger: trigger.into(),
            plan_preserved: true,
            previous_context_percent: previous,
            tool_budget_reset: true,
        });
        self.notice(
            NoticeLevel::Info,
            format!("fresh thread for the implementation (context before: {previous:.0}% used); the plan and the task list are kept"),
        );
    }

    fn cancel_plan(&self) -> String {
        let slug = {
            let mut p = self.planning();
            p.awaiting = false;
            p.draft = None;
            p.instructed = false;
            p.slug.take()
        };
        if let Some(slug) = &slug {
            self.plan_lifecycle(Event::PlanApprovalResolved {
                decision: "cancel".into(),
                automatic: false,
                path: files::plan_path(&self.paths().project, slug)
                    .display()
                    .to_string(),
            });
            files::remove(&self.paths().project, slug);
        }
        if self.in_planning() {
            let back = self.lock().mode_before_plan.filter(|m| *m != Mode::Plan);
            let _ = yuyao_core::set_mode(self, back.unwrap_or(Mode::Ask).as_str());
        }
        let msg = "planning cancelled; the draft plan was removed".to_string();
        self.notice(NoticeLevel::Info, msg.clone());
        msg
    }

    /// What is pinned into the request after a compaction: the approved plan and the task
    /// list (they must survive the summary).
    fn plan_pins(&self, log: &yuyao_store::sessions::SessionLog) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(p) = self.planning().pinned.clone() {
            out.push(format!("{}\n\n{p}", pin_header()));
        }
        out.extend(crate::todo::pin_text(log));
        out
    }

    /// An edit of the waiting plan made in a front (the TUI's inline editor): validated
    /// exactly like a proposed plan or an `$EDITOR` edit, and written only when valid — an
    /// invalid edit leaves the plan file and the draft as they were.
    fn plan_revise(&self, text: &str) -> Result<String, CoreError> {
        let Some(slug) = self.planning().slug.clone() else {
            return Err(CoreError::Usage("no plan to edit yet".into()));
        };
        let plan = validate::validate(text).map_err(|problems| {
            CoreError::Usage(format!(
                "the edited plan does not validate, so it was not saved (the plan file is unchanged):\n{}",
                problems
                    .iter()
                    .map(|p| format!("- {p}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ))
        })?;
        let path = self.persist_plan(&plan).map_err(CoreError::Failed)?;
        let _ = files::write_tracker(&self.paths().project, &slug, &plan);
        self.planning().awaiting = true;
        self.plan_lifecycle(Event::PlanApprovalResolved {
            decision: "revise".into(),
            automatic: false,
            path: path.display().to_string(),
        });
        self.plan_lifecycle(Event::PlanApprovalRequested {
            path: path.display().to_string(),
            title: plan.title.clone(),
            steps: plan.steps.len(),
        });
        Ok(format!(
            "{} is valid ({} steps); approve it with /plan approve",
            path.display(),
            plan.steps.len()
        ))
    }

    /// The plan state for the fronts (the TUI's gate).
    fn plan_json(&self) -> String {
        let planning = self.in_planning();
        let p = self.planning();
        let path = p.slug.as_ref().map(|s| {
            files::plan_path(&self.paths().project, s)
                .display()
                .to_string()
        });
        json!({
            "planning": planning,
            "awaiting_approval": p.awaiting,
            "approved": p.approved,
            "path": path,
            "title": p.draft.as_ref().map(|d| d.title.clone()),
            "steps": p.draft.as_ref().map(|d| d.steps.len()),
            "plan": p.draft.as_ref().map(|d| d.text.clone()),
        })
        .to_string()
    }

    /// Headless planning: the first question is answered for the absent human, every later
    /// one refused. `None` outside headless planning.
    fn plan_headless_ask(&self) -> Option<ToolOutput> {
        let headless = {
            let st = self.lock();
            st.policy.mode == Mode::Plan && st.policy.headless
        } || (self.in_planning() && !self.has_handler());
        if !headless {
            return None;
        }
        let mut p = self.planning();
        if p.asked_headless {
            return Some(ToolOutput::err(
                "ask-user is denied for the rest of this planning session (no human is available): decide from the evidence and propose the plan.",
            ));
        }
        p.asked_headless = true;
        Some(ToolOutput::ok(
            "No human is available in this run; decide from the evidence. State the choice you made under Assumptions and Defaults.",
        ))
    }
}

fn pin_header() -> &'static str {
    "[approved plan — pinned for this run; follow it, and emit a revised <proposed_plan> only if the repository no longer matches it]"
}

/// What a reply's plan block did (`Again`: the plan was invalid and the feedback is
/// queued, or a revision of an approved plan was saved: the loop calls the model again).
pub(crate) use yuyao_core::ReplyStep as PlanStep;

/// `/plan [goal] | on | off | approve [auto-edit] | edit | check | show | cancel`.
pub(crate) fn command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let first = args.first().map(|a| a.to_ascii_lowercase());
    match first.as_deref() {
        None | Some("on") => {
            let out = yuyao_core::set_mode(s, "plan")?;
            Ok(format!(
                "{out}: the planning workflow is on (read-only research, then a plan to approve)"
            ))
        }
        Some("off") => {
            let (now, before) = {
                let st = s.lock();
                (st.policy.mode, st.mode_before_plan)
            };
            if now != Mode::Plan {
                return Ok(format!("plan mode is not on (mode: {now})"));
            }
            {
                let mut p = s.planning();
                p.awaiting = false;
                p.instructed = false;
            }
            yuyao_core::set_mode(
                s,
                before
                    .filter(|m| *m != Mode::Plan)
                    .unwrap_or(Mode::Ask)
                    .as_str(),
            )
        }
        Some("cancel" | "abandon") if args.len() == 1 => Ok(s.cancel_plan()),
        Some("approve" | "execute" | "implement") => {
            // `--fresh`: clear context and implement (seed 001).
            let fresh = args.iter().any(|a| a == "--fresh" || a == "fresh");
            let rest: Vec<&String> = args[1..]
                .iter()
                .filter(|a| *a != "--fresh" && *a != "fresh")
                .collect();
            let mode = match rest.first().map(|a| a.to_ascii_lowercase()).as_deref() {
                None => None,
                Some("auto-edit" | "auto" | "auto-accept") => Some(Mode::AutoEdit),
                Some(other) => Some(other.parse::<Mode>().map_err(CoreError::Usage)?),
            };
            if mode == Some(Mode::Plan) {
                return Err(CoreError::Usage(
                    "approval returns to a write-capable mode, not plan".into(),
                ));
            }
            let msg = s.approve(mode, fresh)?;
            s.notice(NoticeLevel::Info, msg);
            s.chat(IMPLEMENT)
        }
        Some("edit") => edit(s),
        Some("check") => check(s),
        // The plan file is the source of truth (seed 001): what is on disk, edits included.
        Some("show") => {
            let slug = s.planning().slug.clone();
            let Some(slug) = slug else {
                return Ok("no plan in this session yet".into());
            };
            let path = files::plan_path(&s.paths().project, &slug);
            match std::fs::read_to_string(&path) {
                Ok(text) => Ok(format!("{}\n\n{}", path.display(), text.trim_end())),
                Err(e) => Err(CoreError::Failed(format!(
                    "the plan file {} cannot be read: {e}",
                    path.display()
                ))),
            }
        }
        Some(_) => {
            let goal = args.join(" ");
            if s.lock().policy.mode != Mode::Plan {
                yuyao_core::set_mode(s, "plan")?;
            }
            s.chat(&goal)
        }
    }
}

/// `/plan edit`: the plan file in `$VISUAL`/`$EDITOR`, then validated again.
fn edit(s: &Session) -> Result<String, CoreError> {
    let Some(slug) = s.planning().slug.clone() else {
        return Err(CoreError::Usage("no plan to edit yet".into()));
    };
    let path = files::plan_path(&s.paths().project, &slug);
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".into());
    let mut words = yuyao_core::split_words(&editor)
        .map_err(|e| CoreError::Usage(format!("$EDITOR: {e}")))?
        .into_iter();
    let program = words
        .next()
        .ok_or_else(|| CoreError::Usage("$EDITOR is empty".into()))?;
    let status = std::process::Command::new(&program)
        .args(words)
        .arg(&path)
        .status()
        .map_err(|e| CoreError::Failed(format!("cannot start the editor {program}: {e}")))?;
    if !status.success() {
        return Err(CoreError::Failed(format!(
            "the editor exited with {status}; the plan was not re-validated"
        )));
    }
    check(s)
}

/// `/plan check`: the plan file (edited by hand) validated again.
fn check(s: &Session) -> Result<String, CoreError> {
    let Some(slug) = s.planning().slug.clone() else {
        return Err(CoreError::Usage("no plan in this session yet".into()));
    };
    let path = files::plan_path(&s.paths().project, &slug);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CoreError::Failed(format!("cannot read {}: {e}", path.display())))?;
    match validate::validate(&text) {
        Ok(plan) => {
            let _ = files::write_tracker(&s.paths().project, &slug, &plan);
            {
                let mut p = s.planning();
                p.draft = Some(plan.clone());
                p.awaiting = true;
            }
            s.emit_plan(&plan, &path, false);
            Ok(format!(
                "{} is valid ({} steps); approve it with /plan approve",
                path.display(),
                plan.steps.len()
            ))
        }
        Err(problems) => Err(CoreError::Usage(format!(
            "{} does not validate; fix it before approving:\n{}",
            path.display(),
            problems
                .iter()
                .map(|p| format!("- {p}"))
                .collect::<Vec<_>>()
                .join("\n")
        ))),
    }
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    specs: &[
        yuyao_core::registry::core(crate::todo::NAME, false, |s, name, call, _| {
            (
                yuyao_core::registry::one(run_tool(s, name, &call.arguments)),
                false,
            )
        }),
        yuyao_core::registry::core(START_TOOL, false, |s, name, call, _| {
            (
                yuyao_core::registry::one(run_tool(s, name, &call.arguments)),
                false,
            )
        }),
    ],
    summaries: &[(
        crate::todo::NAME,
        "Task tracker: items with status, dependencies, indices like 2.1",
    )],
    names: |_| vec![crate::todo::NAME, START_TOOL],
    schemas: |s, ok| schemas(s, ok),
    beside: None,
};

static TURN: yuyao_core::TurnHooks = yuyao_core::TurnHooks {
    intercept: |s, text| s.plan_intercept(text),
    step_limit: |s, max| s.plan_step_limit(max),
    after_reply: |s, text, has_calls| s.plan_after_reply(text, has_calls),
    research_end: |s, client, token, why| {
        Box::pin(async move {
            use yuyao_core::ResearchEnd;
            match why {
                // A limit or a guard ends research while planning: one synthesis.
                ResearchEnd::Limit(why) => {
                    if !s.in_planning() {
                        return None;
                    }
                    Some(s.plan_recovery_pass(client, token, &why).await)
                }
                ResearchEnd::EmptyTwice => s.plan_synthesis(client, token).await,
                ResearchEnd::Final => s.plan_headless_final(client, token).await,
            }
        })
    },
};

/// The calls the fronts make by name (`yuyao_core::front_call`): the task list (Ctrl+T,
/// agent_api), the plan waiting for approval or the approved one (the TUI's approval gate),
/// and a plan the user edited there, validated before it is written. Each answers JSON text.
static FRONT_CALLS: &[yuyao_core::FrontCall] = &[
    yuyao_core::FrontCall {
        name: "plan.tasks",
        run: |s, _| Ok(TodoExt::tasks_json(&**yuyao_core::front_session(s, "plan.tasks")?).into()),
    },
    yuyao_core::FrontCall {
        name: "plan.state",
        run: |s, _| {
            Ok(PlanningExt::plan_json(&**yuyao_core::front_session(s, "plan.state")?).into())
        },
    },
    yuyao_core::FrontCall {
        name: "plan.revise",
        run: |s, text| {
            let s = yuyao_core::front_session(s, "plan.revise")?;
            PlanningExt::plan_revise(&**s, text.as_str().unwrap_or_default()).map(Value::from)
        },
    },
];

/// The features of this crate, in registration order (one, the planning workflow).
pub static FEATURES: &[&yuyao_core::Feature] = &[&FEATURE];

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "planning",
    state: Some(|_| Box::<std::sync::Mutex<PlanState>>::default()),
    turn: Some(&TURN),
    // The plan waiting for approval (or the approved one) comes back with the session.
    restored: Some(|s| s.plan_restore()),
    // The approved plan and the task list outlive a compaction's summary.
    pins: Some(|s, log| s.plan_pins(log)),
    // Re-reading the plan draft stays open while planning (seed 001); elsewhere the folder
    // is one the agent can write, so a read there is a read like any.
    draft_dir: Some(|s| {
        s.in_planning()
            .then(|| files::dir(&s.tool_context().project()))
    }),
    commands: &[yuyao_core::Command {
        name: "plan",
        aliases: &[],
        usage: "[on|off|<goal>|approve [auto-edit]|edit|check|show|cancel]",
        help: "the planning workflow: research, a plan to approve",
        run: Some(crate::command),
    }],
    tools: Some(&TOOLS),
    ask_answer: Some(|s| s.plan_headless_ask()),
    front_calls: FRONT_CALLS,
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_phrases() {
        for a in [
            "LGTM",
            "ship it!",
            "yes",
            "approve",
            "implement",
            "go",
            "Continue.",
        ] {
            assert_eq!(intent(a), Intent::Approve, "{a}");
        }
        assert_eq!(intent("lgtm but stay in planning"), Intent::Stay);
        assert_eq!(intent("abandon plan"), Intent::Cancel);
        assert_eq!(intent("no"), Intent::Cancel);
        assert_eq!(intent("yes, but change step 2"), Intent::None);
    }
}
