//! `/batch <instruction>` (seed 002 §5.2): the model proposes independent units of work (one
//! request through the same builder), the user approves or edits the list when someone
//! attends (headless and agent_api proceed), each unit runs as a write-capable sub-agent in
//! its own git worktree — at most `agents.max_parallel` at once — and each unit's branch is
//! then merged into the session's branch, or reported (a conflict is never forced).
//!
//! Two units never edit the same file at once: units whose declared files overlap are
//! serialized, and a file tool of a running unit that targets a file another running unit
//! holds (declared, or already edited by it) is refused for that unit ([`claim_gate`]).

#[allow(unused_imports)]
use crate::session_ext::*;

use super::fork::Running;
use super::run::{ChildResult, run_child};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;
use yuyao_core::SideCallError;
use yuyao_core::{CoreError, Session};
use yuyao_model::build_request;
use yuyao_protocol::{Event, Message, Mode, NoticeLevel, Request};
use yuyao_store::worktree::{self, Worktree};

const MAX_UNITS: usize = 8;
const DEFAULT_MAX_PARALLEL: usize = 2;
const PLAN_SYSTEM: &str = "You split a change to a code repository into independent units of work that separate agents do in parallel, each in its own copy of the repository. Answer with JSON only, no prose: {\"units\": [{\"title\": \"short title\", \"prompt\": \"complete instructions for this unit\", \"files\": [\"relative/path/it/edits\"]}]}. Units must not depend on each other's results, and two units must not edit the same file. At most 8 units.";

/// One unit of a batch, as the model proposed it (or the user edited it).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub(crate) struct Unit {
    pub title: String,
    pub prompt: String,
    #[serde(default)]
    pub files: Vec<String>,
}

/// `{"units": [...]}` or a bare list, possibly fenced or surrounded by prose.
pub(crate) fn parse_units(text: &str) -> Result<Vec<Unit>, String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Wrapped { units: Vec<Unit> },
        Bare(Vec<Unit>),
    }
    let start = text
        .find(['{', '['])
        .ok_or("the answer holds no JSON list of units")?;
    let end = text.rfind(['}', ']']).filter(|e| *e > start);
    let body = &text[start..=end.ok_or("the answer holds no JSON list of units")?];
    let units = match serde_json::from_str::<Shape>(body) {
        Ok(Shape::Wrapped { units }) | Ok(Shape::Bare(units)) => units,
        Err(e) => return Err(format!("the list of units is not valid JSON ({e})")),
    };
    if units.is_empty() {
        return Err("the list of units is empty".into());
    }
    if units.len() > MAX_UNITS {
        return Err(format!(
            "{} units proposed; at most {MAX_UNITS}",
            units.len()
        ));
    }
    units
        .into_iter()
        .enumerate()
        .map(|(i, mut u)| {
            if u.title.trim().is_empty() || u.prompt.trim().is_empty() {
                return Err(format!("unit {} has no title or no prompt", i + 1));
            }
            for f in &mut u.files {
                *f = normalize(f).ok_or_else(|| {
                    format!("unit {}: '{f}' is not a path inside the repository", i + 1)
                })?;
            }
            Ok(u)
        })
        .collect()
}

/// A declared file as a clean relative path (`./a/b` → `a/b`); `None` outside the repository.
fn normalize(f: &str) -> Option<String> {
    let p = Path::new(f.trim());
    if p.is_absolute() {
        return None;
    }
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Files held by the running units of one batch: path → unit index.
#[derive(Default)]
struct Claims {
    held: HashMap<String, usize>,
    titles: HashMap<usize, String>,
}

/// Running units' worktrees, so the gate of a unit's session finds its batch's claims.
type Registry = Mutex<Vec<(PathBuf, usize, Arc<Mutex<Claims>>)>>;

fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hook in `tool_call/mod.rs`: a file tool of a batch unit targeting a file another running
/// unit of the same batch holds is refused; otherwise the unit now holds the file.
pub(crate) fn claim_gate(s: &Session, action: &yuyao_policy::Action) -> Result<(), String> {
    if action.command.is_some() || action.paths.is_empty() {
        return Ok(());
    }
    let entry = {
        let reg = lock(registry());
        if reg.is_empty() {
            return Ok(());
        }
        let project = &s.paths().project;
        reg.iter()
            .find(|(root, _, _)| project.starts_with(root))
            .cloned()
    };
    let Some((root, me, claims)) = entry else {
        return Ok(());
    };
    if !s.lock().policy.is_mutating(action) {
        return Ok(());
    }
    let mut c = lock(&claims);
    let rels: Vec<String> = action
        .paths
        .iter()
        .filter_map(|p| p.strip_prefix(&root).ok())
        .filter_map(|p| normalize(&p.to_string_lossy()))
        .collect();
    for rel in &rels {
        if let Some(&other) = c.held.get(rel)
            && other != me
        {
            let title = c.titles.get(&other).cloned().unwrap_or_default();
            return Err(format!(
                "Refused: {rel} is being edited by batch unit {} ({title}), which runs at the same time. Leave {rel} alone and finish your own unit; say in your final message that it needs a change.",
                other + 1
            ));
        }
    }
    for rel in rels {
        c.held.insert(rel, me);
    }
    Ok(())
}

/// How one unit ended.
pub(crate) struct Outcome {
    wt: Option<Worktree>,
    result: Option<ChildResult>,
    error: Option<String>,
}

pub(crate) trait BatchExt {
    fn propose_units(&self, instruction: &str) -> Result<Vec<Unit>, String>;
    fn approve_units(&self, units: Vec<Unit>) -> Result<Vec<Unit>, String>;
}

impl BatchExt for Session {
    /// One request through the same builder: the model's list of units for `instruction`.
    fn propose_units(&self, instruction: &str) -> Result<Vec<Unit>, String> {
        let view = vec![Message::user(format!(
            "Instruction: {instruction}\n\nRepository: {}\nSplit it into independent units (JSON only).",
            self.paths().project.display()
        ))];
        let mut req = build_request(PLAN_SYSTEM, &view, Vec::new(), false, None);
        let (reply, cost) = self
            .side_call(&mut req, None, &self.arm_cancel(), true)
            .map_err(|e| match e {
                SideCallError::Model(why) => format!("the planning call failed: {why}"),
                other => other.to_string(),
            })?;
        self.lock().trajectory.record(
            "batch_plan",
            json!({"instruction": instruction, "text": reply.text, "cost_usd": cost}),
        );
        parse_units(&reply.text)
    }

    /// Someone attends: the list is shown; run it, cancel, drop units or paste an edited list.
    fn approve_units(&self, mut units: Vec<Unit>) -> Result<Vec<Unit>, String> {
        let Some(h) = self.shared_handler().filter(|_| !self.options().headless) else {
            return Ok(units);
        };
        for _ in 0..5 {
            let listing: Vec<String> = units
                .iter()
                .enumerate()
                .map(|(i, u)| {
                    format!(
                        "{}. {} — files: {}",
                        i + 1,
                        u.title,
                        if u.files.is_empty() {
                            "(none declared)".into()
                        } else {
                            u.files.join(", ")
                        }
                    )
                })
                .collect();
            let run = format!("Run all {} units", units.len());
            let question = format!(
                "Run these units in parallel, each in its own worktree?\n{}\n(or type: drop <n>[,<n>…], or an edited JSON list)",
                listing.join("\n")
            );
            let answer = h
                .request(&Request::AskUser {
                    question,
                    options: vec![run.clone(), "Cancel".into()],
                })
                .unwrap_or_default();
            let a = answer.trim();
            let low = a.to_ascii_lowercase();
            if a == run || low == "1" || low == "y" || low == "yes" || low.starts_with("run") {
                return Ok(units);
            }
            if let Some(list) = low.strip_prefix("drop") {
                let drop: Vec<usize> = list
                    .split([',', ' '])
                    .filter_map(|n| n.trim().parse::<usize>().ok())
                    .collect();
                units = units
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !drop.contains(&(i + 1)))
                    .map(|(_, u)| u)
                    .collect();
                if units.is_empty() {
                    return Err("every unit was dropped".into());
                }
                continue;
            }
            if a.starts_with(['{', '[']) {
                match parse_units(a) {
                    Ok(u) => units = u,
                    Err(e) => self.notice(NoticeLevel::Warning, format!("batch: {e}")),
                }
                continue;
            }
            return Err("cancelled".into());
        }
        Err("no decision on the list of units".into())
    }
}

/// `/batch <instruction>`.
pub(crate) fn batch_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        return Err(CoreError::Usage("usage: /batch <instruction>".into()));
    }
    let instruction = args.join(" ");
    let mode = s.lock().policy.mode;
    if mode == Mode::Plan {
        return Err(CoreError::Failed(
            "/batch edits files, and plan mode is read-only: switch mode first (/mode auto-edit)"
                .into(),
        ));
    }
    // A repository is needed before anything is spent.
    yuyao_store::worktree::check_repo(Path::new(&s.cwd())).map_err(CoreError::Failed)?;
    let units = s
        .propose_units(&instruction)
        .map_err(|e| CoreError::Failed(format!("batch: {e}")))?;
    let units = match s.approve_units(units) {
        Ok(u) => u,
        Err(e) => return Ok(format!("batch not run: {e}")),
    };
    let token = CancellationToken::new();
    s.set_interrupt_token(&token);
    let slots = run_units(s, &units, &token, &NoHooks, "batch")?;
    let summary = merge_all(s, &units, &slots, "batch");
    // The model learns what the batch did (a follow-up like "fix the conflict" needs it).
    yuyao_core::push_note(&mut s.lock(), format!("[/batch {instruction}]\n{summary}"));
    Ok(summary)
}

/// What a caller of [`run_units`] adds around each unit (the team's membership).
pub(crate) trait UnitHooks: Sync {
    fn started(&self, _i: usize, _root: &Path) {}
    fn ended(&self, _i: usize, _root: &Path) {}
}

struct NoHooks;
impl UnitHooks for NoHooks {}

/// Runs `units` as write-capable sub-agents, each in its own new worktree, at most
/// `agents.max_parallel` at once, units sharing a declared file one after the other; a
/// `Progress` event over the units. `token` cancelled: every unit stops.
pub(crate) fn run_units(
    s: &Session,
    units: &[Unit],
    token: &CancellationToken,
    hooks: &dyn UnitHooks,
    what: &str,
) -> Result<Vec<Outcome>, CoreError> {
    let mode = s.lock().policy.mode;
    let mut def = s.agent_def("general").map_err(CoreError::Failed)?;
    def.mode = Some(mode);
    let total = units.len();
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..6];
    s.notice(NoticeLevel::Info, format!("{what}: {total} units"));
    // Worktrees are made one after another (one repository), units then run in parallel.
    let mut slots: Vec<Outcome> = Vec::new();
    let mut launches = Vec::new();
    for i in 0..units.len() {
        let made = worktree::create(
            Path::new(&s.cwd()),
            Some(&format!("{what}-{tag}-{}", i + 1)),
        )
        .and_then(|wt| {
            let mut l = s.child_launch(&def, &format!("batch-{}", i + 1), false, Vec::new())?;
            l.opts.cwd = Some(wt.path.clone());
            // A worktree yuyao made is the unit's own project (its root is recorded here, not
            // read from a `.git` the agent could have planted).
            l.opts.project_dir = Some(wt.path.clone());
            l.agent = format!("batch unit {}", i + 1);
            Ok((wt, l))
        });
        match made {
            Ok((wt, l)) => {
                slots.push(Outcome {
                    wt: Some(wt),
                    result: None,
                    error: None,
                });
                launches.push(Some(l));
            }
            Err(e) => {
                slots.push(Outcome {
                    wt: None,
                    result: None,
                    error: Some(e),
                });
                launches.push(None);
            }
        }
    }
    let max_parallel = s
        .config()
        .get("agents.max_parallel")
        .and_then(|v| v.as_integer())
        .filter(|n| *n > 0)
        .map(|n| n as usize)
        .unwrap_or(DEFAULT_MAX_PARALLEL);
    let claims = Arc::new(Mutex::new(Claims::default()));
    let running: Vec<Arc<Running>> = launches
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let id = l.as_ref().map(|l| l.agent_id.clone()).unwrap_or_default();
            Running::new(
                &id,
                "batch",
                "batch",
                &units[i].title,
                &format!("batch-{}", i + 1),
            )
        })
        .collect();
    for r in &running {
        s.family().children_push(r.clone());
    }
    let pending: Mutex<VecDeque<usize>> =
        Mutex::new((0..total).filter(|i| launches[*i].is_some()).collect());
    let done = Mutex::new(0u64);
    let results: Mutex<HashMap<usize, ChildResult>> = Mutex::default();
    let progress = |d: u64| {
        s.emit(Event::Progress {
            label: format!("{what} units"),
            done: d,
            total: total as u64,
        })
    };
    progress(slots.iter().filter(|o| o.error.is_some()).count() as u64);
    *lock(&done) = slots.iter().filter(|o| o.error.is_some()).count() as u64;
    // The next unit that may start: its declared files free of every running unit's.
    let take = || -> Option<Option<usize>> {
        let mut q = lock(&pending);
        if q.is_empty() {
            return None;
        }
        let mut c = lock(&claims);
        let Some(pos) = q
            .iter()
            .position(|&i| units[i].files.iter().all(|f| !c.held.contains_key(f)))
        else {
            // Every waiting unit shares a file with a running one: wait for it to end.
            return Some(None);
        };
        let i = q.remove(pos).expect("position is in range");
        for f in &units[i].files {
            c.held.insert(f.clone(), i);
        }
        c.titles.insert(i, units[i].title.clone());
        Some(Some(i))
    };
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for _ in 0..max_parallel.min(total) {
            handles.push(scope.spawn(|| {
                while let Some(picked) = take() {
                    let Some(i) = picked else {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        continue;
                    };
                    let l = launches[i]
                        .as_ref()
                        .expect("only launchable units are queued");
                    let wt = slots[i].wt.as_ref().expect("a launch has its worktree");
                    let root = PathBuf::from(&wt.path);
                    let root = root.canonicalize().unwrap_or(root);
                    lock(registry()).push((root.clone(), i, claims.clone()));
                    hooks.started(i, &root);
                    s.notice(
                        NoticeLevel::Info,
                        format!("{what} unit {}/{total} started: {}", i + 1, units[i].title),
                    );
                    s.agents().active(1);
                    s.lock().trajectory.record(
                        "subagent_start",
                        json!({"agent_id": l.agent_id, "agent": l.agent, "call_id": l.call_id,
                               "mode": l.opts.mode, "worktree": wt.path, "branch": wt.branch}),
                    );
                    let prompt = unit_prompt(&units[i], wt);
                    let r = run_child(l, &prompt, &running[i].stop, |x| running[i].attach(x));
                    s.agents().active(-1);
                    s.merge_child(r.cost, r.steps, &r.usage);
                    running[i].finish(&r.status, &r.account);
                    lock(registry()).retain(|(p, _, _)| *p != root);
                    hooks.ended(i, &root);
                    lock(&claims).held.retain(|_, u| *u != i);
                    s.lock().trajectory.record(
                        "subagent_end",
                        json!({"agent_id": l.agent_id, "call_id": l.call_id, "status": r.status,
                               "error": r.error, "cost_usd": r.cost, "steps": r.steps}),
                    );
                    s.notice(
                        NoticeLevel::Info,
                        format!("{what} unit {}/{total} {}: {}", i + 1, r.status, r.account),
                    );
                    lock(&results).insert(i, r);
                    // Emitted under the counter's lock: two units ending together never
                    // show the bar going backwards.
                    let mut d = lock(&done);
                    *d += 1;
                    progress(*d);
                }
            }));
        }
        // Esc stops every unit.
        while handles.iter().any(|h| !h.is_finished()) {
            if token.is_cancelled() {
                lock(&pending).clear();
                for r in &running {
                    r.halt();
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    s.family().children_remove(&running);
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    for (i, o) in slots.iter_mut().enumerate() {
        o.result = results.remove(&i);
    }
    Ok(slots)
}

fn unit_prompt(u: &Unit, wt: &Worktree) -> String {
    let files = if u.files.is_empty() {
        String::new()
    } else {
        format!("\nFiles of this unit: {}.", u.files.join(", "))
    };
    format!(
        "{}\n\nThis is one unit of a larger change split between agents working at the same time, each in its own git worktree; yours is {} (branch {}). Edit only what this unit needs; do not commit: your changes are committed and merged for you.{files}",
        u.prompt.trim(),
        wt.path,
        wt.branch
    )
}

/// A file this unit changed (by any means, a shell command too) that another unit declared
/// and this one did not: its work is not merged.
fn trespass(units: &[Unit], i: usize, wt: &Worktree, what: &str) -> Option<String> {
    let changed = worktree::changed_paths(wt, &format!("yuyao {what}: {}", units[i].title)).ok()?;
    for p in changed {
        if units[i].files.contains(&p) {
            continue;
        }
        if let Some((j, other)) = units
            .iter()
            .enumerate()
            .find(|(j, o)| *j != i && o.files.contains(&p))
        {
            return Some(format!(
                "it changed {p}, which unit {} ({}) holds",
                j + 1,
                other.title
            ));
        }
    }
    None
}

/// Each finished unit's branch is merged in order; a conflict, a failed unit or a refused
/// merge is reported and its worktree kept.
pub(crate) fn merge_all(s: &Session, units: &[Unit], slots: &[Outcome], what: &str) -> String {
    let mut lines = Vec::new();
    let (mut merged, mut kept, mut cost) = (0, 0, 0.0);
    let mut record: Vec<Value> = Vec::new();
    for (i, (u, o)) in units.iter().zip(slots).enumerate() {
        let n = i + 1;
        let line = match (&o.wt, &o.result, &o.error) {
            (_, _, Some(e)) => {
                kept += 1;
                format!("{n}. {} — not started: {e}", u.title)
            }
            (Some(wt), Some(r), _) if r.status == "completed" => {
                cost += r.cost;
                match worktree::changes(wt) {
                    Ok(c) if !c.any() => {
                        let _ = worktree::remove(wt);
                        format!("{n}. {} — no changes ({})", u.title, r.account)
                    }
                    _ if let Some(msg) = trespass(units, i, wt, what) => {
                        kept += 1;
                        format!("{n}. {} — NOT merged: {msg}; worktree {}", u.title, wt.path)
                    }
                    _ => match worktree::merge(wt, &format!("yuyao {what}: {}", u.title)) {
                        Ok(msg) => {
                            merged += 1;
                            let _ = worktree::remove(wt);
                            format!("{n}. {} — {msg} ({})", u.title, r.account)
                        }
                        Err(e) => {
                            kept += 1;
                            format!("{n}. {} — NOT merged: {e}; worktree {}", u.title, wt.path)
                        }
                    },
                }
            }
            (Some(wt), Some(r), _) => {
                cost += r.cost;
                kept += 1;
                let _ =
                    worktree::commit_all(wt, &format!("yuyao {what} (unfinished): {}", u.title));
                format!(
                    "{n}. {} — {}{}; not merged, kept in {} ({})",
                    u.title,
                    r.status,
                    r.error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default(),
                    wt.path,
                    wt.branch
                )
            }
            (wt, _, _) => {
                kept += 1;
                format!(
                    "{n}. {} — did not run{}",
                    u.title,
                    wt.as_ref()
                        .map(|w| format!("; worktree {}", w.path))
                        .unwrap_or_default()
                )
            }
        };
        record.push(json!({"unit": n, "title": u.title, "files": u.files, "outcome": line}));
        lines.push(line);
    }
    s.lock().trajectory.record(
        "batch",
        json!({"units": record, "merged": merged, "kept": kept}),
    );
    format!(
        "batch: {} units · {merged} merged · {kept} not merged · ${cost:.4}\n{}",
        units.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_from_fenced_or_bare_json_and_paths_stay_inside() {
        let u = parse_units("Here:\n```json\n{\"units\": [{\"title\": \"a\", \"prompt\": \"do a\", \"files\": [\"./src/a.rs\"]}]}\n```").unwrap();
        assert_eq!(u[0].files, vec!["src/a.rs".to_string()]);
        let u = parse_units("[{\"title\": \"b\", \"prompt\": \"do b\"}]").unwrap();
        assert!(u[0].files.is_empty());
        assert!(
            parse_units("[{\"title\": \"c\", \"prompt\": \"x\", \"files\": [\"../etc/passwd\"]}]")
                .is_err()
        );
        assert!(
            parse_units("[{\"title\": \"c\", \"prompt\": \"x\", \"files\": [\"/etc/passwd\"]}]")
                .is_err()
        );
        assert!(parse_units("[]").is_err());
        assert!(parse_units("no json here").is_err());
        assert!(parse_units("[{\"title\": \"\", \"prompt\": \"x\"}]").is_err());
    }
}
