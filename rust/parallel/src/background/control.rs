//! `yuyao agents list` and `yuyao agents stop`.

#[allow(unused_imports)]
use crate::session_ext::*;

use std::path::Path;
use std::time::{Duration, Instant};
use yuyao_store::bg_agents::{self, Status};

/// Every background session with its real state (a dead process reads as failed), as JSON.
pub fn list_json(home: &Path) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = bg_agents::list(home)
        .into_iter()
        .map(|s| {
            let mut v = serde_json::to_value(&s).expect("serializes");
            v["state"] = s.effective_state().into();
            v["pending"] = bg_agents::dir(home, &s.id)
                .ok()
                .and_then(|d| bg_agents::pending(&d))
                .unwrap_or(serde_json::Value::Null);
            v
        })
        .collect();
    serde_json::Value::Array(rows)
}

fn age(created_at: &str) -> String {
    let Ok(t) = chrono::DateTime::parse_from_rfc3339(created_at) else {
        return "?".into();
    };
    let secs = (chrono::Utc::now() - t.with_timezone(&chrono::Utc))
        .num_seconds()
        .max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// One line per session: id, state, worktree, cost, age, last activity.
pub fn list_text(home: &Path) -> String {
    let all = bg_agents::list(home);
    if all.is_empty() {
        return "no background sessions (start one: yuyao --bg \"<task>\")".into();
    }
    let mut rows = vec![[
        "ID".to_string(),
        "STATE".into(),
        "WORKTREE".into(),
        "COST".into(),
        "AGE".into(),
        "LAST ACTIVITY".into(),
    ]];
    for s in &all {
        let state = s.effective_state();
        let activity = if state == bg_agents::FAILED && s.is_live_state() {
            "the process ended without finishing".to_string()
        } else {
            s.last_activity.replace('\n', " ")
        };
        rows.push([
            s.id.clone(),
            state,
            s.worktree
                .clone()
                .unwrap_or_else(|| format!("(in {})", s.cwd)),
            format!("${:.4}", s.cost_usd),
            age(&s.created_at),
            format!(
                "{} ({} ago)",
                activity.chars().take(80).collect::<String>(),
                age(&s.updated_at)
            ),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            let mut line = String::new();
            for (i, w) in widths.iter().enumerate() {
                line.push_str(&format!("{:<w$}  ", r[i]));
            }
            line.push_str(&r[5]);
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every live (non-zombie) process: (pid, parent pid, process group).
fn processes() -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let num = |i: usize| fields.get(i).and_then(|v| v.parse().ok());
        // state, ppid, pgrp: a zombie is already gone for our purpose.
        if fields.first() != Some(&"Z")
            && let (Some(ppid), Some(pgrp)) = (num(1), num(2))
        {
            out.push((pid, ppid, pgrp));
        }
    }
    out
}

/// The session's processes: its process group, and every descendant of its leader (a
/// command the bash tool started in a process group of its own included).
fn session_processes(leader: u32) -> Vec<u32> {
    let all = processes();
    let mut found: Vec<u32> = all
        .iter()
        .filter(|(_, _, g)| *g == leader)
        .map(|(p, _, _)| *p)
        .collect();
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for (p, pp, _) in &all {
            if *pp == parent && !found.contains(p) {
                found.push(*p);
            }
        }
        i += 1;
    }
    found
}

fn still_alive(targets: &[u32]) -> Vec<u32> {
    let live: Vec<u32> = processes().iter().map(|(p, _, _)| *p).collect();
    targets
        .iter()
        .copied()
        .filter(|p| live.contains(p))
        .collect()
}

fn signal_all(pids: &[u32], signal: i32) {
    for pid in pids {
        // SAFETY: a plain signal send to a process of the session being stopped.
        unsafe { libc::kill(*pid as i32, signal) };
    }
}

/// Ends a background session: its process group gets SIGTERM, then SIGKILL after a grace
/// period; the worktree stays.
pub fn stop(home: &Path, id: &str) -> Result<Status, String> {
    let dir = bg_agents::dir(home, id)?;
    let status = bg_agents::read(&dir)?;
    if status.process_alive()
        && let Some(pid) = status.pid
    {
        // setsid made the worker the leader: its pid is the group's id. The descendants are
        // listed before anything dies (an orphan's parent is no longer the worker).
        let mut targets = session_processes(pid);
        signal_all(&targets, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline && !still_alive(&targets).is_empty() {
            std::thread::sleep(Duration::from_millis(50));
        }
        targets = still_alive(&targets);
        if !targets.is_empty() {
            signal_all(&targets, libc::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(2);
            while Instant::now() < deadline && !still_alive(&targets).is_empty() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    let _ = std::fs::remove_file(dir.join("pending.json"));
    bg_agents::update(&dir, |s| {
        if s.is_live_state() {
            s.state = bg_agents::STOPPED.into();
            s.last_activity = "stopped by the user".into();
        }
    })
}
