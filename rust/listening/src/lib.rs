//! yuyao-listening — how yuyao listens (seed 000): the turn's declared scope and its guard
//! ([`scope`]), the intent line above every tool batch ([`intent`]), the files a command
//! changed ([`command_edits`]), verification before the final answer ([`verification`]), the
//! honest completion check ([`completion`]) and the predicted next step ([`next_step`]). One
//! feature of the core's kernel (`yuyao_core::Feature`): the tool pipeline and the turn loop
//! call it through the moments it registers below and never name this crate; the program
//! that assembles yuyao registers it as a leading feature. Removing it is deleting this crate
//! and its registration line.

#[allow(unused_imports)]
use crate::session_ext::*;

pub mod ask;
pub(crate) mod command_edits;
pub(crate) mod completion;
pub(crate) mod intent;
pub(crate) mod next_step;
pub(crate) mod scope;
pub(crate) mod verification;

/// The session methods each module adds (a crate outside the core extends `Session` through
/// traits); every module imports them all.
#[allow(unused_imports)]
pub(crate) mod session_ext {
    pub(crate) use crate::ListeningExt;
    pub(crate) use crate::ask::AskExt;
    pub(crate) use crate::command_edits::CommandEditsExt;
    pub(crate) use crate::completion::CompletionExt;
    pub(crate) use crate::intent::IntentExt;
    pub(crate) use crate::next_step::NextStepExt;
    pub(crate) use crate::scope::ScopeExt;
    pub(crate) use crate::verification::VerificationExt;
    pub(crate) use crate::verification::run::RunExt;
}

use std::sync::Mutex;
use yuyao_core::{CallDone, Feature, FeatureTools, FinalHooks};
use yuyao_core::{Session, State, TurnSummary};
use yuyao_policy::Action;
use yuyao_protocol::{ToolCall, canonical_tool_name};
use yuyao_tools::{ToolArgs, ToolOutput};

/// The running turn's facts, kept with the session's state (under its lock): they change
/// with the history and the completion check reads them with it.
#[derive(Default)]
pub(crate) struct TurnFacts {
    /// Facts of the running turn for its completion check.
    pub(crate) completion: completion::CompletionFacts,
    /// The work tree as the last command left it (`command_edits.rs`).
    pub(crate) work_stamp: Option<command_edits::Stamp>,
    /// Nothing but commands ran since that stamp was taken: it is still current.
    pub(crate) work_stamp_fresh: bool,
    /// The stamp taken before the command now running, read back after it.
    pub(crate) running_stamp: Option<command_edits::Stamp>,
    /// Tool batches in a row without a stated reason (`intent.rs`'s reminder).
    pub(crate) silent_batches: usize,
}

/// The listening state outside the state lock.
#[derive(Default)]
pub(crate) struct Listening {
    /// What the tool calls did, for the next-step prediction (`next_step.rs`).
    pub(crate) work: Mutex<next_step::WorkLog>,
    /// The turn's declared scope and what its guard let through (`scope/`).
    pub(crate) scope: Mutex<scope::Tracker>,
}

/// The turn's facts in the session's state.
pub(crate) trait Facts {
    fn facts(&mut self) -> &mut TurnFacts;
}

impl Facts for State {
    fn facts(&mut self) -> &mut TurnFacts {
        self.part_mut::<TurnFacts>()
    }
}

pub(crate) trait ListeningExt {
    fn listening(&self) -> &Listening;
}

impl ListeningExt for Session {
    fn listening(&self) -> &Listening {
        self.part::<Listening>()
    }
}

/// A call begins: a tool other than bash may change files the stamp does not know about.
fn call_begin(s: &Session, name: &str) {
    if canonical_tool_name(name) != Some("bash") {
        s.work_stamp_stale();
    }
}

/// Before a built-in runs: the pre-images of the files it writes, and the work tree stamped
/// before a command that may change files (so the files it changed are known after it).
fn before_run(s: &Session, name: &str, action: &Action, may_change_repo: bool) {
    s.completion_before_write(name, &action.paths);
    if name == "bash" && may_change_repo {
        let stamp = s.stamp_before_command();
        let mut st = s.lock();
        if stamp.is_none() {
            // What it changes cannot be known: the turn is never judged unchanged.
            st.facts().completion.untracked_changes = true;
        }
        st.facts().running_stamp = stamp;
    }
}

/// After a built-in ran: the files a command changed join its result, a job left running
/// makes the stamp stale, and the work log sees the call.
fn after_run(s: &Session, name: &str, args: &ToolArgs, action: &Action, out: &mut ToolOutput) {
    let stamp = s.lock().facts().running_stamp.take();
    if let Some(stamp) = stamp
        && let Some(note) = s.command_changed_files(stamp, action.command.as_deref().unwrap_or(""))
    {
        out.text = format!("{}\n\n{note}", out.text.trim_end());
    }
    // A job left running may change files after the stamp: it is not current.
    if let ToolArgs::Bash(b) = args
        && b.run_in_background == Some(true)
    {
        s.work_stamp_stale();
    }
    s.observe_tool(name, action, out);
}

/// Every call's result joins the completion facts. Files a sub-agent, a team merge or an
/// MCP server changed are not in the turn's pre-images: the turn is then never judged
/// unchanged.
fn call_done(s: &Session, done: &CallDone) {
    if done.ran
        && done.may_change_repo
        && (matches!(canonical_tool_name(done.name), Some("task" | "team"))
            || yuyao_policy::is_mcp_tool(done.name))
    {
        s.lock().facts().completion.untracked_changes = true;
    }
    s.completion_after_call(done.name, done.arguments, done.ok, done.ran, done.text);
}

fn turn_begin(s: &Session, prompt: &str) {
    s.scope_begin_turn();
    s.completion_begin(prompt);
}

/// Honest completion: a turn that changed files or ran commands gets its check; a check
/// that finds the turn not clean is appended to the text returned.
fn turn_result(s: &Session, summary: &TurnSummary, text: String) -> String {
    let check = match summary.status {
        "completed" | "limits_exceeded" => s.completion_check(&summary.text),
        _ => None,
    };
    completion::with_flagged_check(&text, check.as_ref())
}

fn batch_line(s: &Session, text: &str, calls: &[ToolCall]) -> String {
    let batch = intent::batch_intent(text, calls);
    s.announce_batch(&batch, calls);
    batch.line
}

static FINAL: FinalHooks = FinalHooks {
    // Verification by default: after edits, the project's tests run before the final
    // answer; a failure goes back to the model once.
    before_gates: |s, token| s.verify_before_final(token),
    // Honest completion: a check that is not clean goes to the model once, before its
    // final answer.
    review: |s, text| s.completion_review(text),
    // Asked for a change and none was made (refused, or only talk): not done, whatever the
    // answer claims (seed 000 #7).
    not_done: |s| s.change_not_made(),
};

static TOOLS: FeatureTools = FeatureTools {
    specs: &[yuyao_core::registry::core(
        "declare-scope",
        false,
        |s, name, call, _| {
            (
                yuyao_core::registry::one(scope::declare::run_tool(s, name, &call.arguments)),
                false,
            )
        },
    )],
    summaries: &[],
    names: |_| vec!["declare-scope"],
    schemas: |_, ok| {
        if ok("declare-scope") {
            vec![scope::declare::schema()]
        } else {
            Vec::new()
        }
    },
    beside: None,
};

/// This crate's features, in registration order: listening, then `ask-user`.
pub static FEATURES: &[&Feature] = &[&FEATURE, &ask::FEATURE];

/// What this feature adds to a session (feature.rs).
pub static FEATURE: Feature = Feature {
    name: "listening",
    tools: Some(&TOOLS),
    state: Some(|_| Box::new(Listening::default())),
    locked_state: Some(|_| Box::new(TurnFacts::default())),
    change_gate: Some(scope::guard::gate),
    call_begin: Some(call_begin),
    before_run: Some(before_run),
    after_run: Some(after_run),
    call_done: Some(call_done),
    assumed: Some(|s, question| s.completion_assumed(question)),
    next_step: Some(NextStepExt::next_step),
    turn_begin: Some(turn_begin),
    turn_result: Some(turn_result),
    batch_line: Some(batch_line),
    final_answer: Some(&FINAL),
    after_batch: Some(|s, token| s.auto_test_after_batch(token)),
    // What the read-only phase was refused is that role working as designed, not an
    // unresolved error of the edit the user asked for.
    new_phase: Some(|st| st.facts().completion.errors.clear()),
    ..Feature::NONE
};
