//! `--role orchestrator [--team-name <n>]` (seed 002 §3.2): the lead splits the work into the
//! team's shared task list (items with owners), messages teammates, and runs the list: each
//! item is a write-capable sub-agent (the teammate who owns it) in its own git worktree, run
//! like `/batch` units, then merged back (a conflict is reported, never forced).
//!
//! Mailbox: every member (the lead is `lead`) reads the messages addressed to it before each
//! of its model calls — they are appended to its history as one user note (append-only).
//! The `team` tool is the lead's (`add`, `list`, `send`, `run`) and each running teammate's
//! (`send`, `list`). The todo tool is built on another branch: this team list is kept here,
//! with owners, until the two meet.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::batch::{Unit, UnitHooks, merge_all, run_units};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;
use yuyao_core::{Session, State};
use yuyao_protocol::{Message, Role};
use yuyao_tools::ToolOutput;

pub(crate) const LEAD: &str = "lead";

#[derive(Clone)]
struct Item {
    title: String,
    prompt: String,
    owner: String,
    files: Vec<String>,
    /// `pending`, `running`, then the outcome line of the run.
    status: String,
}

struct Mail {
    from: String,
    to: String,
    text: String,
}

#[derive(Default)]
struct Team {
    items: Vec<Item>,
    mail: Vec<Mail>,
    /// How many of the mail entries each member has read.
    read: HashMap<String, usize>,
}

type Shared = Arc<Mutex<Team>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Teams by key (project root + team name) and running teammates by worktree root.
#[derive(Default)]
struct Registry {
    teams: HashMap<String, Shared>,
    members: Vec<(PathBuf, String, Shared)>,
}

fn registry() -> &'static Mutex<Registry> {
    static R: OnceLock<Mutex<Registry>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// This session's team and its name in it: the orchestrator lead, or a running teammate.
fn membership(s: &Session) -> Option<(Shared, String)> {
    let lead = !s.is_sub_agent() && s.lock().policy.role == Role::Orchestrator;
    let mut reg = lock(registry());
    if lead {
        let name = s
            .options()
            .team_name
            .clone()
            .unwrap_or_else(|| "team".into());
        let key = format!("{}\u{0}{name}", s.paths().project.display());
        let team = reg.teams.entry(key).or_default().clone();
        return Some((team, LEAD.into()));
    }
    if !s.is_sub_agent() || reg.members.is_empty() {
        return None;
    }
    let project = &s.paths().project;
    reg.members
        .iter()
        .find(|(root, _, _)| project.starts_with(root))
        .map(|(_, name, team)| (team.clone(), name.clone()))
}

/// The `team` tool's names for this session (none outside a team).
pub(crate) fn tool_names(s: &Session) -> Vec<&'static str> {
    if membership(s).is_some() {
        vec!["team"]
    } else {
        Vec::new()
    }
}

pub(crate) fn schema(s: &Session) -> Option<Value> {
    let (_, me) = membership(s)?;
    let lead = me == LEAD;
    let (actions, text): (Vec<&str>, String) = if lead {
        (
            vec!["add", "list", "send", "run"],
            "Your team's shared task list and mailbox. `add` an item {title, prompt, owner, files} (owner: a teammate's name; files: the relative paths it edits); `send` {to, text} a message a teammate reads before its next model call; `list` the items with owners and status; `run` starts every pending item as its owner, a sub-agent that may write, each in its own git worktree, in parallel, and merges each result into this branch (a conflict is reported, never forced).".into(),
        )
    } else {
        (
            vec!["send", "list"],
            format!(
                "You are teammate '{me}'. `send` {{to, text}} messages the lead ('lead') or another teammate; `list` shows the team's items with owners and status."
            ),
        )
    };
    Some(json!({
        "type": "function",
        "function": {
            "name": "team",
            "description": text,
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": actions},
                    "title": {"type": "string"},
                    "prompt": {"type": "string"},
                    "owner": {"type": "string"},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "to": {"type": "string"},
                    "text": {"type": "string"}
                },
                "required": ["action"]
            }
        }
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    prompt: String,
    #[serde(default)]
    owner: String,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    to: String,
    #[serde(default)]
    text: String,
}

fn list_text(t: &Team) -> String {
    if t.items.is_empty() {
        return "the team's task list is empty".into();
    }
    t.items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            format!(
                "{}. [{}] {} — owner {}",
                i + 1,
                it.status,
                it.title,
                it.owner
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs a `team` call; `None` when the call is not this tool's. `.1`: it may have changed
/// the repository (a run merged).
pub(crate) fn run_tool(
    s: &Session,
    name: &str,
    arguments: &str,
    token: &CancellationToken,
) -> Option<(ToolOutput, bool)> {
    if name != "team" {
        return None;
    }
    let Some((team, me)) = membership(s) else {
        return Some((ToolOutput::err("this session is not part of a team"), false));
    };
    let a: Args = match serde_json::from_str(arguments) {
        Ok(a) => a,
        Err(e) => {
            return Some((
                ToolOutput::err(format!(
                    "invalid team arguments ({e}); send {{\"action\": \"send\", \"to\": \"…\", \"text\": \"…\"}}"
                )),
                false,
            ));
        }
    };
    let lead = me == LEAD;
    let out = match a.action.as_str() {
        "list" => Ok(list_text(&lock(&team))),
        "send" => {
            if a.to.trim().is_empty() || a.text.trim().is_empty() {
                Err("send needs `to` and `text`".to_string())
            } else {
                lock(&team).mail.push(Mail {
                    from: me.clone(),
                    to: a.to.trim().to_string(),
                    text: a.text.trim().to_string(),
                });
                s.lock()
                    .trajectory
                    .record("team_mail", json!({"from": me, "to": a.to, "text": a.text}));
                Ok(format!("sent to {}", a.to.trim()))
            }
        }
        "add" if lead => {
            let owner = a.owner.trim().to_string();
            let unit = super::batch::parse_units(
                &json!([{"title": a.title, "prompt": a.prompt, "files": a.files}]).to_string(),
            );
            match unit {
                _ if owner.is_empty()
                    || owner == LEAD
                    || yuyao_store::worktree::check_name(&owner).is_err() =>
                {
                    Err("add needs an `owner`: a teammate's name (letters, digits, - or _)".into())
                }
                Err(e) => Err(e),
                Ok(mut u) => {
                    let u = u.remove(0);
                    let mut t = lock(&team);
                    t.items.push(Item {
                        title: u.title,
                        prompt: u.prompt,
                        owner,
                        files: u.files,
                        status: "pending".into(),
                    });
                    Ok(format!("item {} added\n{}", t.items.len(), list_text(&t)))
                }
            }
        }
        "run" if lead => return Some(run_items(s, &team, token)),
        "add" | "run" => Err(format!("only the lead can {}", a.action)),
        other => Err(format!("unknown action '{other}'")),
    };
    Some(match out {
        Ok(t) => (ToolOutput::ok(t), false),
        Err(e) => (ToolOutput::err(e), false),
    })
}

struct Members {
    team: Shared,
    owners: Vec<String>,
}

impl UnitHooks for Members {
    fn started(&self, i: usize, root: &Path) {
        lock(registry()).members.push((
            root.to_path_buf(),
            self.owners[i].clone(),
            self.team.clone(),
        ));
    }
    fn ended(&self, _i: usize, root: &Path) {
        lock(registry()).members.retain(|(p, _, _)| p != root);
    }
}

fn run_items(s: &Session, team: &Shared, token: &CancellationToken) -> (ToolOutput, bool) {
    let (idx, units, owners): (Vec<usize>, Vec<Unit>, Vec<String>) = {
        let mut t = lock(team);
        let mut idx = Vec::new();
        let mut units = Vec::new();
        let mut owners = Vec::new();
        for (i, it) in t.items.iter_mut().enumerate() {
            if it.status == "pending" {
                it.status = "running".into();
                idx.push(i);
                owners.push(it.owner.clone());
                units.push(Unit {
                    title: it.title.clone(),
                    prompt: format!(
                        "You are teammate '{}' of a team led by 'lead'. Messages from the team arrive as notes; the `team` tool sends yours.\n\n{}",
                        it.owner, it.prompt
                    ),
                    files: it.files.clone(),
                });
            }
        }
        (idx, units, owners)
    };
    if units.is_empty() {
        return (ToolOutput::err("no pending item: add items first"), false);
    }
    let hooks = Members {
        team: team.clone(),
        owners,
    };
    let slots = match run_units(s, &units, token, &hooks, "team") {
        Ok(x) => x,
        Err(e) => {
            let mut t = lock(team);
            for i in &idx {
                t.items[*i].status = "pending".into();
            }
            return (ToolOutput::err(e.to_string()), false);
        }
    };
    let summary = merge_all(s, &units, &slots, "team");
    let mut t = lock(team);
    for (k, line) in summary.lines().skip(1).enumerate() {
        if let Some(i) = idx.get(k) {
            t.items[*i].status = line
                .split_once(" — ")
                .map(|(_, r)| r.chars().take(120).collect())
                .unwrap_or_else(|| "done".into());
        }
    }
    (ToolOutput::ok(summary), true)
}

/// Before each model call of a team member: the messages addressed to it since its last
/// call join its history as one user note.
pub(crate) fn deliver_mail(s: &Session, st: &mut State) {
    if lock(registry()).teams.is_empty() {
        return;
    }
    let is_lead = !s.is_sub_agent() && st.policy.role == Role::Orchestrator;
    let found = if is_lead {
        let name = s
            .options()
            .team_name
            .clone()
            .unwrap_or_else(|| "team".into());
        let key = format!("{}\u{0}{name}", s.paths().project.display());
        lock(registry())
            .teams
            .get(&key)
            .map(|t| (t.clone(), LEAD.to_string()))
    } else if s.is_sub_agent() {
        let reg = lock(registry());
        reg.members
            .iter()
            .find(|(root, _, _)| s.paths().project.starts_with(root))
            .map(|(_, n, t)| (t.clone(), n.clone()))
    } else {
        None
    };
    let Some((team, me)) = found else { return };
    let mut t = lock(&team);
    let start = t.read.get(&me).copied().unwrap_or(0);
    let new: Vec<String> = t.mail[start.min(t.mail.len())..]
        .iter()
        .filter(|m| m.to == me || m.to == "all")
        .filter(|m| m.from != me)
        .map(|m| format!("from {}: {}", m.from, m.text))
        .collect();
    let end = t.mail.len();
    t.read.insert(me.clone(), end);
    drop(t);
    if !new.is_empty() {
        let text = format!("[team mail for {me}]\n{}", new.join("\n"));
        st.trajectory
            .record("team_mail_read", json!({"member": me, "text": text}));
        st.history.push(Message::user(text));
    }
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    // The orchestrator's team tool: a run merges teammates' work (may change the repo).
    specs: &[yuyao_core::registry::Spec {
        name: "team",
        effect: yuyao_core::registry::Effect::Runs,
        evidence: true,
        runner: yuyao_core::registry::Runner::Core(|s, name, call, token| {
            run_tool(s, name, &call.arguments, token)
                .unwrap_or_else(|| (yuyao_tools::ToolOutput::err("team: not this tool"), false))
        }),
    }],
    summaries: &[],
    names: tool_names,
    schemas: |s, ok| schema(s).filter(|_| ok("team")).into_iter().collect(),
    beside: None,
};

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "team",
    tools: Some(&TOOLS),
    ..yuyao_core::Feature::NONE
};
