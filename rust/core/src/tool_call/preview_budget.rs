//! The per-turn tool-preview budget (seed 001, "Research Scope"): the tool output one turn
//! shows the model is bounded — 96 KiB while planning, 32 KiB in execution — so research
//! converges instead of filling the context.
//!
//! - While planning, an inspection that gives no explicit output control (`limit`,
//!   `max_output_tokens`, `head_limit` …) is previewed at ~8 KiB, so a research fan-out fits.
//! - Once the budget is spent, inspections (read, grep, glob, read-only commands, web, media,
//!   the language server) are refused before they run; what still runs without being an
//!   inspection (an MCP tool, a command that is neither) answers with a metadata stub whose
//!   body waits in a spill file. Spill files stay readable page by page through a small
//!   credit, and what the seed keeps open stays open: verification commands, the interview,
//!   the task tracker, background-job polling and re-reads of the plan draft. Open is not
//!   free: a job's output, a plan re-read and a planning turn's test output are shown whole
//!   and still counted, so no open door carries unbounded content past the budget.
//! - Planning: the spend schedules the turn's one tool-free plan synthesis at once.
//! - Execution: the budget covers one stretch of research, not the whole turn: a change or a
//!   verification opens a new one. A literal per-turn 32 KiB would end a long autonomous run
//!   (a `run_agent.sh` task of hundreds of steps) after its first few files; the seed's own
//!   execution churn guard resets the same way (`rust/planning/src/navigation.rs`).
//!
//! `tools.preview_budget_kib` and `planning.preview_budget_kib` move the two budgets
//! (0 turns one off); a project cannot raise them (`yuyao_store::config::guarded`).

use crate::session::Session;
use serde_json::Value;
use std::path::Path;
use yuyao_planning::navigation::{Kind, classify};

pub(crate) const PLANNING_KIB: usize = 96;
pub(crate) const EXECUTION_KIB: usize = 32;
/// A planning inspection's preview when the caller set no output control.
pub(crate) const PLANNING_RESULT_BYTES: usize = 8 * 1024;
/// Spill-file pages readable once the budget is spent, and the size of each.
pub(crate) const SPOOL_PAGES: u32 = 8;
pub(crate) const SPOOL_PAGE_BYTES: usize = 4 * 1024;

/// Argument names by which a caller sets how much of a result it wants.
const OUTPUT_CONTROLS: &[&str] = &["max_output_tokens", "max_tokens", "limit", "head_limit"];

/// Tools whose results the budget never withholds (seed 001: the interview, task
/// bookkeeping, session polling) and that inspect nothing of the workspace.
const OPEN_TOOLS: &[&str] = &[
    "ask-user",
    "declare-scope",
    "todo",
    "start_planning",
    "tool-search",
    "bg-list",
    "bg-stop",
    "skill",
    "task",
    "team",
    "memory-search",
    "memory-get",
];

/// Inspections the navigation classifier does not know (it judges files and commands).
const OTHER_INSPECTIONS: &[&str] = &["web-fetch", "web-search", "read-media", "browser", "lsp"];

/// How one call meets the budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Class {
    /// Never refused, never stubbed, not charged.
    Open,
    /// Never refused and shown whole, but charged: a background job's output, a re-read of
    /// the plan draft (what they show is content like any inspection's).
    Polled,
    /// A verification command: open, and in execution it starts a new stretch.
    Verification,
    /// A read of a spill file (the whole output behind an earlier capped result).
    Spool,
    /// A look at the workspace or the web; `explicit` when the caller set an output control.
    Inspection { explicit: bool },
    /// Anything else (a change, an MCP tool, a command that is neither).
    Other,
}

#[derive(Debug, Default)]
pub(crate) struct PreviewBudget {
    /// Bytes shown in this turn (planning) or stretch (execution).
    spent: usize,
    /// The budget was spent: inspections are refused from here on.
    exhausted: bool,
    /// Spill pages read since it was spent.
    spool_pages: u32,
    /// The spend is still to be answered by the turn loop (planning's synthesis).
    newly_spent: bool,
}

impl PreviewBudget {
    /// A new turn, or a fresh execution thread.
    pub(crate) fn reset(&mut self) {
        *self = PreviewBudget::default();
    }
}

/// What a caller decided about one call, carried from admission to its result.
pub struct Ticket {
    class: Class,
    planning: bool,
    limit: usize,
}

impl Session {
    /// The budget in force, in bytes (0: none), for planning or execution.
    fn preview_limit(&self, planning: bool) -> usize {
        let (key, default) = if planning {
            ("planning.preview_budget_kib", PLANNING_KIB)
        } else {
            ("tools.preview_budget_kib", EXECUTION_KIB)
        };
        let kib = self
            .config
            .get(key)
            .and_then(|v| v.as_integer())
            .filter(|n| *n >= 0)
            .map_or(default, |n| n as usize);
        kib.saturating_mul(1024)
    }

    /// Admission: the call's class, or the refusal of an inspection once the budget is spent.
    pub(crate) fn preview_admit(&self, name: &str, arguments: &str) -> Result<Ticket, String> {
        let planning = self.lock().policy.mode == yuyao_protocol::Mode::Plan;
        let limit = self.preview_limit(planning);
        let class = self.preview_class(name, arguments);
        let ticket = Ticket {
            class,
            planning,
            limit,
        };
        if limit == 0 {
            return Ok(ticket);
        }
        let st = self.lock();
        let b = &st.preview;
        if !b.exhausted {
            return Ok(ticket);
        }
        match class {
            Class::Inspection { .. } => Err(format!(
                "Not run: this {} tool-preview budget ({} KiB of tool output) is spent, so further inspections are refused. {}",
                if planning {
                    "turn's"
                } else {
                    "research stretch's"
                },
                limit / 1024,
                if planning {
                    "Draft the plan from the evidence gathered."
                } else {
                    "Make the change, or run the tests or build (either opens a new budget), or answer from what you have; a spill file named in an earlier result can still be read page by page with read."
                }
            )),
            Class::Spool if b.spool_pages >= SPOOL_PAGES => Err(format!(
                "Not run: the {SPOOL_PAGES} spill-file pages readable after the tool-preview budget was spent are used up."
            )),
            _ => Ok(ticket),
        }
    }

    fn preview_class(&self, name: &str, arguments: &str) -> Class {
        if OPEN_TOOLS.contains(&name) {
            return Class::Open;
        }
        if name == "bg-output" {
            return Class::Polled;
        }
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let explicit = OUTPUT_CONTROLS.iter().any(|k| args.get(k).is_some());
        if name == "read"
            && let Some(path) = ["file_path", "path", "filePath"]
                .iter()
                .find_map(|k| args.get(k).and_then(Value::as_str))
        {
            let path = self.ctx.resolve(path);
            if within(&path, &self.ctx.spill_dir) {
                return Class::Spool;
            }
            // A feature's own draft re-read (the plan draft while planning, seed 001).
            if crate::feature::hooks(|f| f.draft_dir)
                .filter_map(|dir| dir(self))
                .any(|dir| within(&path, &dir))
            {
                return Class::Polled;
            }
        }
        if OTHER_INSPECTIONS.contains(&name) {
            return Class::Inspection { explicit };
        }
        match classify(name, arguments) {
            Kind::Verification => Class::Verification,
            Kind::Navigation { .. } => Class::Inspection { explicit },
            Kind::Neutral => Class::Other,
        }
    }

    /// The read page size for this call: planning's smaller preview, or a spill page once
    /// the budget is spent (0: the tool's own default).
    pub(crate) fn preview_read_cap(&self, ticket: &Ticket) -> usize {
        if ticket.limit == 0 {
            return 0;
        }
        match ticket.class {
            Class::Spool if self.lock().preview.exhausted => SPOOL_PAGE_BYTES,
            Class::Inspection { explicit: false } if ticket.planning => PLANNING_RESULT_BYTES,
            _ => 0,
        }
    }

    /// The result as the model sees it under the budget, and the charge for it. `changed`:
    /// the call ran and could have changed the workspace.
    pub(crate) fn preview_charge(
        &self,
        ticket: &Ticket,
        label: &str,
        text: String,
        changed: bool,
    ) -> String {
        if ticket.limit == 0 {
            return text;
        }
        let mut st = self.lock();
        let b = &mut st.preview;
        match ticket.class {
            Class::Open => return text,
            // In execution, a change or a verification opens a new stretch of research.
            Class::Verification if !ticket.planning => {
                b.reset();
                return text;
            }

            Class::Other if changed && !ticket.planning => {
                b.reset();
                return text;
            }
            Class::Spool if b.exhausted => {
                b.spool_pages += 1;
                return text;
            }
            Class::Other if b.exhausted => {
                drop(st);
                return self.preview_stub(label, &text);
            }
            _ => {}
        }
        let text = match ticket.class {
            // Planning's smaller preview for inspections that asked for no size (a read's
            // page was already cut to it by the tool, with its own continuation hint).
            Class::Inspection { explicit: false } if ticket.planning && label != "read" => {
                yuyao_tools::cap_output(&text, &self.ctx.spill_dir, label, PLANNING_RESULT_BYTES)
            }
            _ => text,
        };
        b.spent = b.spent.saturating_add(text.len());
        // What stays open is shown whole however much was spent, and counts all the same
        // (a planning turn's test output, a job's log), so no open door bypasses the budget.
        let open = matches!(ticket.class, Class::Polled | Class::Verification);
        if b.spent < ticket.limit || (open && b.exhausted) {
            return text;
        }
        b.exhausted = true;
        b.newly_spent = ticket.planning;
        let spent_kib = b.spent.div_ceil(1024);
        drop(st);
        self.lock().trajectory.record(
            "budget_exhausted",
            serde_json::json!({"budget": "tool_preview", "used": spent_kib, "max": ticket.limit / 1024, "unit": "KiB"}),
        );
        let next = if ticket.planning {
            "Research stops here: the plan is drafted from what was gathered."
        } else {
            "Further inspections (read, grep, glob, read-only commands, web) are refused until you change a file or run the tests or build; a spill file named in a result stays readable page by page."
        };
        format!(
            "{text}\n\n[tool-preview budget: {spent_kib} KiB of {} KiB shown this {}. {next}]",
            ticket.limit / 1024,
            if ticket.planning { "turn" } else { "stretch" }
        )
    }

    /// A result past the budget: its size and where its body waits, no content.
    fn preview_stub(&self, label: &str, text: &str) -> String {
        let lines = text.lines().count();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("{label}-withheld-{}-{nanos}.txt", std::process::id());
        let path = self.ctx.spill_dir.join(name);
        let saved =
            std::fs::create_dir_all(&self.ctx.spill_dir).and_then(|_| std::fs::write(&path, text));
        match saved {
            Ok(()) => format!(
                "[output withheld: the tool-preview budget is spent; {} bytes, {lines} lines, kept in {} (readable with read, page by page)]",
                text.len(),
                path.display()
            ),
            Err(e) => format!(
                "[output withheld: the tool-preview budget is spent; {} bytes, {lines} lines (it could not be kept: {e})]",
                text.len()
            ),
        }
    }

    /// Planning's budget was spent by the batch just run: the synthesis is due.
    pub(crate) fn preview_newly_spent(&self) -> Option<String> {
        let mut st = self.lock();
        if !std::mem::take(&mut st.preview.newly_spent) {
            return None;
        }
        Some(format!(
            "the planning tool-preview budget ({} KiB) is spent",
            self.preview_limit(true) / 1024
        ))
    }
}

/// `path` is `dir` or inside it (both as resolved; `dir` may not exist yet).
fn within(path: &Path, dir: &Path) -> bool {
    let dir = yuyao_tools::resolve_path(dir);
    path.starts_with(&dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_needs_a_whole_component() {
        let d = std::env::temp_dir().join("yuyao-preview-within");
        let sib = std::env::temp_dir().join("yuyao-preview-within-other/x.txt");
        assert!(within(&d.join("a.txt"), &d));
        assert!(!within(&sib, &d));
    }
}
