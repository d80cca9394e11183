//! The session commands (`/sessions`, `/title`, `/new`, `/clear`, `/branch`, `/tree`,
//! `/export`, `/usage`) over the saved sessions (`saved_session.rs`).

use crate::session::{CoreError, Session};
use serde_json::{Value, json};
use std::collections::HashMap;
use yuyao_protocol::{MessageRole, NoticeLevel};
use yuyao_store::sessions::{self, SessionLog};

fn short(id: &str) -> &str {
    &id[..id.len().min(8)]
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

pub(crate) fn sessions_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let dir = s.sessions_dir();
    let all = args.first().map(String::as_str) == Some("all");
    if let Some(id) = args.first().filter(|_| !all) {
        let id = sessions::resolve_session(&dir, id).map_err(CoreError::Usage)?;
        if id == s.session_id() {
            return Ok(format!("session {id} is the current one"));
        }
        let (log, warnings) = SessionLog::load(&dir, &id).map_err(CoreError::Failed)?;
        for w in warnings {
            s.notice(NoticeLevel::Warning, w);
        }
        let replay = log.replay();
        let n = replay.messages.len();
        s.restore_switches(&replay);
        s.install(log, replay.messages);
        return Ok(format!("resumed session {id} ({n} messages)"));
    }
    let current = s.session_id();
    let cwd = s.cwd();
    let project = s.paths.project.display().to_string();
    let list: Vec<_> = sessions::list_sessions(&dir)
        .into_iter()
        .filter(|x| all || x.cwd == cwd || x.cwd.starts_with(&project))
        .take(if all { 200 } else { 30 })
        .collect();
    if list.is_empty() {
        return Ok(format!(
            "no saved sessions for {project} yet (the current one, {current}, is saved with its first message)"
        ));
    }
    let mut out = String::from("sessions (most recent first; /sessions <id> to resume):\n");
    for x in list {
        let when: chrono::DateTime<chrono::Local> = x.updated.into();
        let name = x
            .title
            .clone()
            .or_else(|| x.first_prompt.as_deref().map(|p| one_line(p, 50)))
            .unwrap_or_else(|| "(untitled)".into());
        let mut flags = Vec::new();
        if x.archived {
            flags.push("archived".to_string());
        }
        if let Some(f) = &x.forked_from {
            flags.push(format!("from {}", short(f)));
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        out.push_str(&format!(
            "{} {}  {}  {:>3} msgs  {name}{flags}\n",
            if x.id == current { "*" } else { " " },
            x.id,
            when.format("%Y-%m-%d %H:%M"),
            x.messages,
        ));
    }
    Ok(out.trim_end().to_string())
}

pub(crate) fn title_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let title = args.join(" ");
    let mut st = s.lock();
    if title.trim().is_empty() {
        return Ok(match st.log.title() {
            Some(t) => format!("title: {t}"),
            None => "this session has no title (set one with /title <text>)".into(),
        });
    }
    st.log_entry("title", json!({"title": title.trim()}));
    Ok(format!(
        "session {} is now titled: {}",
        st.log.id(),
        title.trim()
    ))
}

pub(crate) fn new_command(s: &Session, _: &[String]) -> Result<String, CoreError> {
    // A new conversation starts from the memory as it reads now.
    for reload in crate::feature::hooks(|f| f.new_conversation) {
        reload(s);
    }
    s.forget_conventions();
    let dir = s.sessions_dir();
    let mut st = s.lock();
    let old = st.log.id().to_string();
    st.log_entry("archive", json!({}));
    let id = sessions::new_session_id();
    st.log = SessionLog::create(&dir, &id, &s.cwd());
    st.history.clear();
    st.logged = 0;
    st.reset_prefix();
    st.trajectory.record(
        "new_conversation",
        json!({"archived": old, "session_id": id}),
    );
    Ok(format!(
        "archived session {old}; started session {id} (the old one stays in /sessions)"
    ))
}

pub(crate) fn clear_command(s: &Session, _: &[String]) -> Result<String, CoreError> {
    for reload in crate::feature::hooks(|f| f.new_conversation) {
        reload(s);
    }
    s.forget_conventions();
    let mut st = s.lock();
    st.log_entry("clear", json!({}));
    st.history.clear();
    st.logged = 0;
    st.reset_prefix();
    Ok(
        "context cleared (not archived: the earlier messages stay in the session tree, see /tree)"
            .into(),
    )
}

pub(crate) fn branch_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let dir = s.sessions_dir();
    let name = args.join(" ");
    let mut st = s.lock();
    st.sync_log();
    st.log.materialize();
    let old = st.log.id().to_string();
    let title = if name.trim().is_empty() {
        format!(
            "branch of {}",
            st.log.title().unwrap_or_else(|| short(&old).to_string())
        )
    } else {
        name.trim().to_string()
    };
    let forked = st.log.fork(&dir, true, Some(&title));
    let id = forked.id().to_string();
    st.log = forked;
    st.logged = st.history.len();
    Ok(format!(
        "branched into session {id} ({title}); the original {old} stays reachable through /sessions"
    ))
}

pub(crate) fn tree_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let mut st = s.lock();
    st.sync_log();
    if let Some(target) = args.first() {
        st.log.checkout(target).map_err(CoreError::Usage)?;
        let messages = st.log.replay().messages;
        let n = messages.len();
        st.logged = n;
        st.history.replace(messages);
        st.reset_prefix();
        return Ok(format!("switched to {target}: {n} messages in context"));
    }
    let entries = st.log.entries();
    if entries.is_empty() {
        return Ok("the session tree is empty".into());
    }
    let on_path: std::collections::HashSet<String> = st.log.path_ids().into_iter().collect();
    let leaf = st.log.leaf().map(str::to_string);
    // Checkout markers are transparent: what follows one hangs under the node it points at.
    let checkouts: HashMap<&str, Option<String>> = entries
        .iter()
        .filter(|e| e.kind == "checkout")
        .map(|e| (e.id.as_str(), e.parent.clone()))
        .collect();
    let mut children: HashMap<Option<String>, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.kind != "checkout" {
            let mut parent = e.parent.clone();
            let mut hops = 0;
            while let Some(p) = parent.as_deref().and_then(|p| checkouts.get(p)) {
                parent = p.clone();
                hops += 1;
                if hops > entries.len() {
                    break;
                }
            }
            children.entry(parent).or_default().push(i);
        }
    }
    // The visible position: the leaf, or the entry a trailing checkout points at.
    let here = leaf.and_then(|l| {
        let e = entries.iter().find(|e| e.id == l)?;
        Some(if e.kind == "checkout" {
            e.parent.clone().unwrap_or_default()
        } else {
            l
        })
    });
    let mut out = format!(
        "session tree of {} (* current path; /tree <id> switches to a node):\n",
        st.log.id()
    );
    let mut stack: Vec<(usize, usize)> = children
        .get(&None)
        .map(|v| v.iter().rev().map(|&i| (i, 0)).collect())
        .unwrap_or_default();
    let mut lines = 0;
    while let Some((i, depth)) = stack.pop() {
        let e = &entries[i];
        let label = match e.kind.as_str() {
            "message" => e.message().and_then(|m| match m.role {
                MessageRole::User => Some(format!("user: {}", one_line(&m.text(), 70))),
                MessageRole::Assistant => {
                    let calls: Vec<&str> = m.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    let text = one_line(&m.text(), 60);
                    Some(match (text.is_empty(), calls.is_empty()) {
                        (_, false) if text.is_empty() => {
                            format!("assistant: [{}]", calls.join(", "))
                        }
                        (_, false) => format!("assistant: {text} [{}]", calls.join(", ")),
                        _ => format!("assistant: {text}"),
                    })
                }
                _ => None,
            }),
            "compaction" => Some("(compacted)".into()),
            "clear" => Some("(cleared)".into()),
            "truncate" => Some("(rewound)".into()),
            "title" => e
                .data
                .get("title")
                .and_then(Value::as_str)
                .map(|t| format!("(title: {t})")),
            _ => None,
        };
        if let Some(label) = label {
            let mark = if on_path.contains(&e.id) { "*" } else { " " };
            let here_mark = if here.as_deref() == Some(e.id.as_str()) {
                "  ← here"
            } else {
                ""
            };
            out.push_str(&format!(
                "{mark} {}{}  {label}{here_mark}\n",
                "  ".repeat(depth),
                &e.id[..e.id.len().min(8)]
            ));
            lines += 1;
        }
        if let Some(kids) = children.get(&Some(e.id.clone())) {
            let d = if kids.len() > 1 { depth + 1 } else { depth };
            for &k in kids.iter().rev() {
                stack.push((k, d));
            }
        }
    }
    if lines == 0 {
        out.push_str("  (no messages yet)\n");
    }
    Ok(out.trim_end().to_string())
}

pub(crate) fn export_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let (id, title, messages) = {
        let mut st = s.lock();
        st.sync_log();
        (st.log.id().to_string(), st.log.title(), st.history.to_vec())
    };
    let path = match args.first() {
        Some(p) => {
            let p = std::path::PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                s.ctx.cwd().join(p)
            }
        }
        None => s.ctx.cwd().join(format!("yuyao-session-{id}.md")),
    };
    let mut md = format!(
        "# {}\n\n- session: {id}\n- working directory: {}\n- exported: {}\n",
        title.as_deref().unwrap_or("yuyao session"),
        s.cwd(),
        chrono::Local::now().format("%Y-%m-%d %H:%M")
    );
    for m in &messages {
        match m.role {
            MessageRole::User => md.push_str(&format!("\n## User\n\n{}\n", m.text().trim())),
            MessageRole::Assistant => {
                md.push_str("\n## Assistant\n\n");
                let t = m.text();
                if !t.trim().is_empty() {
                    md.push_str(&format!("{}\n", t.trim()));
                }
                for c in &m.tool_calls {
                    md.push_str(&format!(
                        "\n**Tool call** `{}`\n\n```json\n{}\n```\n",
                        c.name, c.arguments
                    ));
                }
            }
            MessageRole::Tool => {
                let t = m.text();
                let fence = if t.contains("```") { "~~~~" } else { "```" };
                md.push_str(&format!(
                    "\n**Tool result**\n\n{fence}\n{}\n{fence}\n",
                    t.trim_end()
                ));
            }
            MessageRole::System => {}
        }
    }
    yuyao_store::write_atomic(&path, md.as_bytes())
        .map_err(|e| CoreError::Failed(format!("cannot write {}: {e}", path.display())))?;
    Ok(format!(
        "exported {} messages to {}",
        messages.len(),
        path.display()
    ))
}

pub(crate) fn usage_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args {
        [] => {
            let priced = s.price() != yuyao_model::Pricing::default();
            let st = s.lock();
            Ok(format!(
                "usage display: {}\nsession: {}",
                st.usage_display,
                crate::settings::session_usage_text(&st.usage, st.cost_usd, priced)
            ))
        }
        [v] => crate::settings::set_usage_display(s, v),
        _ => Err(CoreError::Usage("usage: /usage <off|tokens|full>".into())),
    }
}

/// The slash commands of this feature (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "cmd_sessions",
    commands: &[
        crate::cmd!(
            "clear",
            ["reset"],
            "",
            "clear the context (not archived; /new archives)",
            Some(crate::cmd_sessions::clear_command)
        ),
        crate::cmd!(
            "new",
            [],
            "",
            "archive this session and start a new one",
            Some(crate::cmd_sessions::new_command)
        ),
        crate::cmd!(
            "sessions",
            ["resume"],
            "[<id> | all]",
            "list and restore past sessions",
            Some(crate::cmd_sessions::sessions_command)
        ),
        crate::cmd!(
            "title",
            ["rename"],
            "<title>",
            "rename the session",
            Some(crate::cmd_sessions::title_command)
        ),
        crate::cmd!(
            "export",
            [],
            "[path]",
            "export the session as Markdown",
            Some(crate::cmd_sessions::export_command)
        ),
        crate::cmd!(
            "branch",
            [],
            "[name]",
            "fork the conversation here and switch into the copy",
            Some(crate::cmd_sessions::branch_command)
        ),
        crate::cmd!(
            "tree",
            [],
            "[node id]",
            "show the session tree, or switch to a node",
            Some(crate::cmd_sessions::tree_command)
        ),
        crate::cmd!(
            "usage",
            [],
            "<off|tokens|full>",
            "token and usage display",
            Some(crate::cmd_sessions::usage_command)
        ),
    ],
    ..crate::feature::Feature::NONE
};
