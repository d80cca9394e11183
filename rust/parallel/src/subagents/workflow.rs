//! `/workflow <name>` runs `.yuyao/workflows/<name>.yaml` (the project's, then the user's
//! `~/.yuyao/workflows/`): stages run one after another, the agents of a stage in parallel
//! (`agents.max_parallel`), each a sub-agent of this session (read-only unless `write: true`).
//! A cross-check stage (`cross_check: <agent>`) hands each of its agents the named agent's
//! result to verify; its first line must be VERIFIED or REJECTED, and a rejection stops the
//! workflow. `/workflows` lists the workflows of this process — running and completed — with
//! their stage and every agent's progress.
//!
//! ```yaml
//! description: implement, then verify
//! stages:
//!   - name: implement
//!     agents:
//!       - {name: writer, prompt: "Add hello.txt", write: true}
//!   - name: verify
//!     cross_check: writer
//!     agents:
//!       - {name: checker, agent: explore, prompt: "Check hello.txt exists"}
//! ```

#[allow(unused_imports)]
use crate::session_ext::*;

use super::fork::Running;
use super::run::run_child;
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;
use yuyao_core::{CoreError, Session};
use yuyao_protocol::{Event, Mode, NoticeLevel};

const DEFAULT_MAX_PARALLEL: usize = 2;
const CROSS_CHECK_NOTE: &str = "\n\nThis is a cross-check: verify the result below against the repository (read the files, run read-only checks); do not trust it on its word. Answer on the first line exactly VERIFIED or REJECTED, then the reason.";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    #[serde(default)]
    description: String,
    stages: Vec<StageSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageSpec {
    name: String,
    #[serde(default)]
    cross_check: Option<String>,
    agents: Vec<AgentSpec>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct AgentSpec {
    name: String,
    prompt: String,
    /// An agent definition (`explore`, `general`, `agents/<name>.md`); default `general`.
    #[serde(default)]
    agent: Option<String>,
    /// May edit files (the session's mode, never more); default read-only.
    #[serde(default)]
    write: bool,
}

/// One workflow run, as `/workflows` shows it.
struct RunView {
    name: String,
    project: PathBuf,
    /// `running`, `completed`, `rejected by <agent>`, `failed: …`.
    state: String,
    stage: String,
    /// (stage, agent, status, account or verdict)
    agents: Vec<(String, String, String, String)>,
}

fn runs() -> &'static Mutex<Vec<Arc<Mutex<RunView>>>> {
    static R: OnceLock<Mutex<Vec<Arc<Mutex<RunView>>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Checked at load: names unique, a cross-check names an agent of an earlier stage.
fn load(text: &str) -> Result<Spec, String> {
    let spec: Spec =
        serde_yaml_ng::from_str(text).map_err(|e| format!("not a valid workflow: {e}"))?;
    if spec.stages.is_empty() {
        return Err("the workflow has no stages".into());
    }
    let mut seen: Vec<&str> = Vec::new();
    for st in &spec.stages {
        if st.agents.is_empty() {
            return Err(format!("stage '{}' has no agents", st.name));
        }
        if let Some(target) = &st.cross_check
            && !seen.contains(&target.as_str())
        {
            return Err(format!(
                "stage '{}' cross-checks '{target}', which no earlier stage runs",
                st.name
            ));
        }
        for a in &st.agents {
            if seen.contains(&a.name.as_str()) {
                return Err(format!("two agents are named '{}'", a.name));
            }
            if a.prompt.trim().is_empty() {
                return Err(format!("agent '{}' has no prompt", a.name));
            }
        }
        if st.agents.iter().filter(|a| a.write).count() > 1 {
            return Err(format!(
                "stage '{}' has more than one writing agent: they would edit the same work tree at once",
                st.name
            ));
        }
        seen.extend(st.agents.iter().map(|a| a.name.as_str()));
    }
    Ok(spec)
}

/// VERIFIED / REJECTED on the first line (markdown aside); anything else is a rejection.
fn cross_verdict(text: &str) -> (bool, String) {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let head = first
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_uppercase();
    let ok = head.starts_with("VERIFIED");
    let reason = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .nth(1)
        .unwrap_or(first)
        .to_string();
    if !ok && !head.starts_with("REJECTED") {
        return (false, format!("no VERIFIED/REJECTED verdict: {first}"));
    }
    (ok, reason)
}

pub(crate) trait WorkflowExt {
    fn workflow_dirs(&self) -> Vec<PathBuf>;
}

impl WorkflowExt for Session {
    fn workflow_dirs(&self) -> Vec<PathBuf> {
        vec![
            self.paths().project.join(".yuyao").join("workflows"),
            self.paths().home.join("workflows"),
        ]
    }
}

/// `/workflows` (list) and `/workflow <name>` (run).
pub(crate) fn workflows_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args.first().map(String::as_str) {
        None | Some("list" | "ls" | "status") => Ok(list(s)),
        Some(name) => run(s, name),
    }
}

fn list(s: &Session) -> String {
    let mut out = Vec::new();
    for r in lock(runs()).iter() {
        let r = lock(r);
        if r.project != s.paths().project {
            continue;
        }
        out.push(format!("{} — {} (stage {})", r.name, r.state, r.stage));
        for (stage, agent, status, note) in &r.agents {
            out.push(format!(
                "  {stage} / {agent}: {status}{}",
                if note.is_empty() {
                    String::new()
                } else {
                    format!(" · {note}")
                }
            ));
        }
    }
    let mut available: Vec<String> = s
        .workflow_dirs()
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml"))
                .then(|| p.file_stem()?.to_str().map(str::to_string))
                .flatten()
        })
        .collect();
    available.sort();
    available.dedup();
    if out.is_empty() {
        out.push("no workflow has run in this session".into());
    }
    out.push(if available.is_empty() {
        "workflows: none defined (.yuyao/workflows/<name>.yaml)".into()
    } else {
        format!(
            "workflows: {} (run one with /workflow <name>)",
            available.join(", ")
        )
    });
    out.join("\n")
}

fn run(s: &Session, name: &str) -> Result<String, CoreError> {
    yuyao_store::worktree::check_name(name).map_err(CoreError::Usage)?;
    let file = s
        .workflow_dirs()
        .into_iter()
        .flat_map(|d| {
            [
                d.join(format!("{name}.yaml")),
                d.join(format!("{name}.yml")),
            ]
        })
        .find(|p| p.is_file())
        .ok_or_else(|| {
            CoreError::Usage(format!(
                "no workflow '{name}'\n{}",
                list(s).lines().last().unwrap_or("")
            ))
        })?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| CoreError::Failed(format!("cannot read {}: {e}", file.display())))?;
    let spec = load(&text).map_err(|e| CoreError::Failed(format!("{}: {e}", file.display())))?;
    let total: usize = spec.stages.iter().map(|st| st.agents.len()).sum();
    let view = Arc::new(Mutex::new(RunView {
        name: name.to_string(),
        project: s.paths().project.clone(),
        state: "running".into(),
        stage: spec.stages[0].name.clone(),
        agents: spec
            .stages
            .iter()
            .flat_map(|st| {
                st.agents.iter().map(|a| {
                    (
                        st.name.clone(),
                        a.name.clone(),
                        "pending".into(),
                        String::new(),
                    )
                })
            })
            .collect(),
    }));
    lock(runs()).push(view.clone());
    s.notice(
        NoticeLevel::Info,
        format!(
            "workflow {name}: {} stages, {total} agents{}",
            spec.stages.len(),
            if spec.description.is_empty() {
                String::new()
            } else {
                format!(" — {}", spec.description)
            }
        ),
    );
    let token = CancellationToken::new();
    s.set_interrupt_token(&token);
    let max_parallel = s
        .config()
        .get("agents.max_parallel")
        .and_then(|v| v.as_integer())
        .filter(|n| *n > 0)
        .map(|n| n as usize)
        .unwrap_or(DEFAULT_MAX_PARALLEL);
    let mode = s.lock().policy.mode;
    let mut results: HashMap<String, String> = HashMap::new();
    let mut done = 0u64;
    let set = |agent: &str, status: &str, note: &str| {
        let mut v = lock(&view);
        if let Some(row) = v.agents.iter_mut().find(|r| r.1 == agent) {
            row.2 = status.to_string();
            row.3 = note.to_string();
        }
    };
    let finish = |state: String| {
        lock(&view).state = state.clone();
        s.lock()
            .trajectory
            .record("workflow", json!({"name": name, "state": state}));
        state
    };
    let mut report = Vec::new();
    for st in &spec.stages {
        lock(&view).stage = st.name.clone();
        let mut launches = Vec::new();
        for a in &st.agents {
            let mut def = s
                .agent_def(a.agent.as_deref().unwrap_or("general"))
                .map_err(CoreError::Failed)?;
            if a.write {
                def.mode = Some(mode);
            } else if def.mode.is_none() {
                def.mode = Some(Mode::Plan);
            }
            let mut prompt = a.prompt.trim().to_string();
            if let Some(target) = &st.cross_check {
                prompt.push_str(CROSS_CHECK_NOTE);
                prompt.push_str(&format!(
                    "\n\nResult of agent '{target}' to verify:\n{}",
                    results.get(target).map(String::as_str).unwrap_or("(none)")
                ));
            }
            let mut l = s
                .child_launch(&def, &format!("workflow-{}", a.name), false, Vec::new())
                .map_err(CoreError::Failed)?;
            l.agent = format!("{name}/{}", a.name);
            let running = Running::new(&l.agent_id, &l.agent, "workflow", &a.name, &l.call_id);
            s.family().children_push(running.clone());
            launches.push((a.clone(), l, prompt, running));
        }
        let queue = Mutex::new(launches.iter().collect::<std::collections::VecDeque<_>>());
        let outs: Mutex<Vec<(String, super::run::ChildResult)>> = Mutex::default();
        std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for _ in 0..max_parallel.min(launches.len()) {
                handles.push(scope.spawn(|| {
                    while let Some((a, l, prompt, running)) = lock(&queue).pop_front() {
                        set(&a.name, "running", "");
                        s.agents().active(1);
                        let r = run_child(l, prompt, &running.stop, |x| running.attach(x));
                        s.agents().active(-1);
                        s.merge_child(r.cost, r.steps, &r.usage);
                        running.finish(&r.status, &r.account);
                        set(&a.name, &r.status, &r.account);
                        lock(&outs).push((a.name.clone(), r));
                    }
                }));
            }
            while handles.iter().any(|h| !h.is_finished()) {
                if token.is_cancelled() {
                    lock(&queue).clear();
                    for (_, _, _, r) in &launches {
                        r.halt();
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        let all: Vec<Arc<Running>> = launches.iter().map(|x| x.3.clone()).collect();
        s.family().children_remove(&all);
        let outs = outs.into_inner().unwrap_or_else(|e| e.into_inner());
        done += outs.len() as u64;
        s.emit(Event::Progress {
            label: format!("workflow {name}"),
            done,
            total: total as u64,
        });
        // Stage order, not completion order.
        for a in &st.agents {
            let Some((_, r)) = outs.iter().find(|(n, _)| *n == a.name) else {
                return Ok(finish(format!(
                    "workflow {name}: interrupted in stage {}",
                    st.name
                )));
            };
            if r.status != "completed" {
                report.push(format!("{} / {}: {}", st.name, a.name, r.status));
                let state = format!(
                    "workflow {name}: failed in stage {}: agent {} {}{}",
                    st.name,
                    a.name,
                    r.status,
                    r.error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                );
                return Ok(format!("{}\n{}", finish(state), report.join("\n")));
            }
            if st.cross_check.is_some() {
                let (ok, reason) = cross_verdict(&r.text);
                let verdict = if ok { "VERIFIED" } else { "REJECTED" };
                set(&a.name, "completed", &format!("{verdict}: {reason}"));
                report.push(format!("{} / {}: {verdict} — {reason}", st.name, a.name));
                if !ok {
                    let state = format!(
                        "workflow {name}: rejected by {} in stage {}",
                        a.name, st.name
                    );
                    return Ok(format!("{}\n{}", finish(state), report.join("\n")));
                }
            } else {
                report.push(format!(
                    "{} / {}: {}",
                    st.name,
                    a.name,
                    r.text.trim().lines().next().unwrap_or("")
                ));
            }
            results.insert(a.name.clone(), r.text.trim().to_string());
        }
    }
    let state = finish(format!("workflow {name}: completed"));
    Ok(format!("{state}\n{}", report.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cross_check_must_name_an_earlier_agent_and_writers_are_one_per_stage() {
        let ok = "stages:\n  - name: a\n    agents: [{name: w, prompt: p, write: true}]\n  - name: b\n    cross_check: w\n    agents: [{name: c, prompt: q}]\n";
        assert!(load(ok).is_ok());
        let bad = "stages:\n  - name: b\n    cross_check: w\n    agents: [{name: c, prompt: q}]\n";
        assert!(load(bad).unwrap_err().contains("no earlier stage"));
        let two = "stages:\n  - name: a\n    agents: [{name: w, prompt: p, write: true}, {name: v, prompt: p, write: true}]\n";
        assert!(
            load(two)
                .unwrap_err()
                .contains("more than one writing agent")
        );
        assert!(load("stages: []\n").is_err());
        assert!(cross_verdict("**VERIFIED**\nit holds").0);
        assert!(!cross_verdict("REJECTED\nmissing").0);
        assert!(!cross_verdict("looks fine").0);
    }
}
