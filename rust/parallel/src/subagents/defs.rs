//! Agent definitions: `agents/<name>.md` (frontmatter `name`, `description`, `tools`,
//! `model`, `mode`; the body is the agent's instructions) under `<project>/.yuyao/agents`,
//! `<project>/.claude/agents`, `~/.yuyao/agents`, `~/.claude/agents` (and directories a
//! plugin adds, [`load_from`]), plus the built-ins `explore` and `general`. `/agents` lists,
//! creates, shows, edits and deletes them.

#[allow(unused_imports)]
use crate::session_ext::*;

use std::path::{Path, PathBuf};
use yuyao_core::{CoreError, Session};
use yuyao_protocol::Mode;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentDef {
    pub name: String,
    pub description: String,
    /// `None`: every tool the parent has.
    pub tools: Option<Vec<String>>,
    pub model: Option<String>,
    /// `None`: read-only (plan) for `task`.
    pub mode: Option<Mode>,
    /// The body: the agent's instructions.
    pub prompt: String,
    /// Declared tools this build does not have (another tool's definition, an MCP tool):
    /// left out of its tool list, and said by `/agents`.
    pub ignored_tools: Vec<String>,
    /// `built-in`, `project`, `user` or `plugin`.
    pub source: String,
    pub path: Option<PathBuf>,
}

pub(crate) fn builtins() -> Vec<AgentDef> {
    vec![
        AgentDef {
            name: "explore".into(),
            description: "read-only search of the code base: finds files, definitions and usages, and reports them".into(),
            tools: Some(vec!["read".into(), "grep".into(), "glob".into()]),
            model: None,
            mode: Some(Mode::Plan),
            prompt: "You explore a code base to answer a question. Use grep and glob to find candidates and read to confirm them. Report the relevant paths with line numbers and what you found; say what you could not find.".into(),
            ignored_tools: Vec::new(),
            source: "built-in".into(),
            path: None,
        },
        AgentDef {
            name: "general".into(),
            description: "general-purpose sub-agent for a self-contained research or multi-step task (read-only unless its mode says otherwise)".into(),
            tools: None,
            model: None,
            mode: None,
            prompt: String::new(),
            ignored_tools: Vec::new(),
            source: "built-in".into(),
            path: None,
        },
    ]
}

/// `model:` values that mean "the session's model".
const CLAUDE_ALIASES: &[&str] = &["inherit", "sonnet", "opus", "haiku"];

/// A valid agent name: letters, digits, `-` and `_`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Parses one definition file; the name defaults to the file's stem.
pub(crate) fn parse(text: &str, path: &Path, source: &str) -> Result<AgentDef, String> {
    let (fm, body) = yuyao_extension_files::frontmatter::split(text)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string();
    let name = fm
        .get("name")
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or(stem);
    if !valid_name(&name) {
        return Err(format!(
            "invalid agent name '{name}' (letters, digits, - and _)"
        ));
    }
    // A declared tool this build lacks is left out (fewer tools, never more); one that is
    // known keeps the agent to exactly its list.
    let mut ignored_tools = Vec::new();
    let tools = match fm.get("tools") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => {
            let (known, unknown): (Vec<String>, Vec<String>) =
                yuyao_extension_files::frontmatter::list(Some(v))
                    .into_iter()
                    .partition(|t| yuyao_protocol::canonical_tool_name(t).is_some());
            ignored_tools = unknown;
            Some(known)
        }
    };
    let mode = match fm.get("mode").and_then(|v| v.as_str()) {
        None => None,
        Some(m) => Some(m.parse::<Mode>().map_err(|e| format!("mode: {e}"))?),
    };
    Ok(AgentDef {
        name,
        description: fm
            .get("description")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .trim()
            .to_string(),
        tools,
        model: fm
            .get("model")
            .and_then(|v| v.as_str())
            // Another tool's family aliases name no model this gateway serves: inherit.
            .filter(|m| !m.trim().is_empty() && !CLAUDE_ALIASES.contains(m))
            .map(str::to_string),
        mode,
        prompt: body.to_string(),
        ignored_tools,
        source: source.into(),
        path: Some(path.to_path_buf()),
    })
}

/// The definitions in `dirs` (`(folder, source)`, lowest precedence first) over the
/// built-ins: a later definition of a name replaces an earlier one. Plugins call this with
/// their folders. Problems are returned, one line each.
pub(crate) fn load_from(dirs: &[(PathBuf, String)]) -> (Vec<AgentDef>, Vec<String>) {
    let mut out = builtins();
    let mut problems = Vec::new();
    for (dir, source) in dirs {
        let files = yuyao_extension_files::frontmatter::sorted_entries(dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file());
        for f in files {
            let parsed = std::fs::read_to_string(&f)
                .map_err(|e| e.to_string())
                .and_then(|t| parse(&t, &f, source));
            match parsed {
                Ok(def) => {
                    out.retain(|d| d.name != def.name);
                    out.push(def);
                }
                Err(e) => problems.push(format!("{}: {e}", f.display())),
            }
        }
    }
    (out, problems)
}

pub(crate) trait DefsExt {
    fn agent_dirs(&self) -> Vec<(PathBuf, String)>;
    fn agent_defs(&self) -> (Vec<AgentDef>, Vec<String>);
    fn agent_def(&self, name: &str) -> Result<AgentDef, String>;
}

impl DefsExt for Session {
    /// The agent folders of this session, lowest precedence first. A project's folders only
    /// where project extensions may run (`project_extensions_allowed`).
    fn agent_dirs(&self) -> Vec<(PathBuf, String)> {
        let mut dirs = Vec::new();
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            dirs.push((
                PathBuf::from(home).join(".claude/agents"),
                "user".to_string(),
            ));
        }
        dirs.push((self.paths().home.join("agents"), "user".to_string()));
        // The active plugins' agents (a project's plugin only where project extensions run).
        for (dir, _, plugin) in self.extension_dirs("agents") {
            dirs.push((dir, format!("plugin {plugin}")));
        }
        if self.project_extensions_allowed() {
            let p = &self.paths().project;
            dirs.push((p.join(".claude/agents"), "project".to_string()));
            dirs.push((p.join(".yuyao/agents"), "project".to_string()));
        }
        dirs
    }

    /// Every agent this session can start, with the problems of unreadable definitions.
    fn agent_defs(&self) -> (Vec<AgentDef>, Vec<String>) {
        let (mut defs, mut problems) = load_from(&self.agent_dirs());
        // A project's agent definition acts only as the content the user approved (§8).
        defs.retain(|d| match &d.path {
            Some(p)
                if d.source == "project"
                    || (d.source.starts_with("plugin") && p.starts_with(&self.paths().project)) =>
            {
                match self.project_file_held(p) {
                    None => true,
                    Some(why) => {
                        problems.push(why);
                        false
                    }
                }
            }
            _ => true,
        });
        (defs, problems)
    }

    fn agent_def(&self, name: &str) -> Result<AgentDef, String> {
        let (defs, problems) = self.agent_defs();
        if let Some(d) = defs.into_iter().find(|d| d.name == name) {
            return Ok(d);
        }
        let mut why = format!("unknown agent '{name}'");
        if let Some(p) = problems.iter().find(|p| p.contains(&format!("/{name}.md"))) {
            why.push_str(&format!(" ({p})"));
        }
        let names: Vec<String> = self.agent_defs().0.into_iter().map(|d| d.name).collect();
        Err(format!("{why}; agents: {}", names.join(", ")))
    }
}

fn render(d: &AgentDef) -> String {
    let mut s = String::from("---\n");
    s.push_str(&format!("name: {}\n", d.name));
    s.push_str(&format!(
        "description: {}\n",
        serde_json::to_string(&d.description).unwrap_or_default()
    ));
    if let Some(t) = &d.tools {
        s.push_str(&format!("tools: [{}]\n", t.join(", ")));
    }
    if let Some(m) = &d.model {
        s.push_str(&format!("model: {m}\n"));
    }
    if let Some(m) = d.mode {
        s.push_str(&format!("mode: {m}\n"));
    }
    s.push_str("---\n");
    s.push_str(d.prompt.trim());
    s.push('\n');
    s
}

fn describe(d: &AgentDef) -> String {
    format!(
        "{} ({}) — {}\n  tools: {} · mode: {} · model: {}{}{}",
        d.name,
        d.source,
        if d.description.is_empty() {
            "(no description)"
        } else {
            &d.description
        },
        d.tools
            .as_ref()
            .map(|t| t.join(", "))
            .unwrap_or_else(|| "all of the parent's".into()),
        d.mode
            .map(|m| m.to_string())
            .unwrap_or_else(|| "plan (read-only)".into()),
        d.model.as_deref().unwrap_or("the session's"),
        if d.ignored_tools.is_empty() {
            String::new()
        } else {
            format!(
                "\n  tools not in this build (left out): {}",
                d.ignored_tools.join(", ")
            )
        },
        d.path
            .as_ref()
            .map(|p| format!("\n  file: {}", p.display()))
            .unwrap_or_default()
    )
}

/// `--description d --tools a,b --model m --mode m --prompt text [--user]` of create/edit.
fn apply_flags(d: &mut AgentDef, args: &[String]) -> Result<bool, CoreError> {
    let mut user = false;
    let mut i = 0;
    let value = |i: usize, flag: &str| -> Result<String, CoreError> {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| CoreError::Usage(format!("/agents: {flag} needs a value")))
    };
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--user" | "--global" => {
                user = true;
                i += 1;
                continue;
            }
            "--project" => {
                i += 1;
                continue;
            }
            "--description" => d.description = value(i, flag)?,
            "--tools" => {
                let v = value(i, flag)?;
                let list =
                    yuyao_extension_files::frontmatter::list(Some(&serde_json::Value::String(v)));
                for t in &list {
                    if yuyao_protocol::canonical_tool_name(t).is_none() {
                        return Err(CoreError::Usage(format!("/agents: unknown tool '{t}'")));
                    }
                }
                d.tools = if list.is_empty() { None } else { Some(list) };
            }
            "--model" => d.model = Some(value(i, flag)?).filter(|m| m != "inherit"),
            "--mode" => {
                d.mode = Some(
                    value(i, flag)?
                        .parse()
                        .map_err(|e: String| CoreError::Usage(format!("/agents: {e}")))?,
                )
            }
            "--prompt" => d.prompt = value(i, flag)?,
            other => {
                return Err(CoreError::Usage(format!(
                    "/agents: unknown option '{other}' (--description, --tools, --model, --mode, --prompt, --user)"
                )));
            }
        }
        i += 2;
    }
    Ok(user)
}

/// `/agents [list | show <name> | create <name> [options] | edit <name> [options] | delete <name>]`.
pub(crate) fn agents_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let name_arg = |what: &str| -> Result<String, CoreError> {
        args.get(1)
            .cloned()
            .ok_or_else(|| CoreError::Usage(format!("usage: /agents {what} <name>")))
    };
    match args.first().map(String::as_str) {
        None | Some("list") | Some("ls") => {
            let (defs, problems) = s.agent_defs();
            let mut out: Vec<String> = defs.iter().map(describe).collect();
            for p in problems {
                out.push(format!("problem: {p}"));
            }
            let p = &s.paths().project;
            let has_project_agents =
                p.join(".yuyao/agents").is_dir() || p.join(".claude/agents").is_dir();
            if has_project_agents && !s.project_extensions_allowed() {
                out.push(
                    "(this project's agents are not loaded: the project is not trusted (/trust) or project extensions are off)".into(),
                );
            }
            Ok(out.join("\n"))
        }
        Some("show") => {
            let d = s.agent_def(&name_arg("show")?).map_err(CoreError::Usage)?;
            Ok(format!("{}\n\n{}", describe(&d), render(&d)))
        }
        Some("create") | Some("new") => {
            let name = name_arg("create")?;
            if !valid_name(&name) {
                return Err(CoreError::Usage(format!(
                    "/agents: invalid name '{name}' (letters, digits, - and _)"
                )));
            }
            let mut d = AgentDef {
                name: name.clone(),
                description: String::new(),
                tools: None,
                model: None,
                mode: None,
                prompt: String::new(),
                ignored_tools: Vec::new(),
                source: String::new(),
                path: None,
            };
            let user = apply_flags(&mut d, &args[2..])?;
            let dir = if user {
                s.paths().home.join("agents")
            } else {
                s.paths().project.join(".yuyao/agents")
            };
            let path = dir.join(format!("{name}.md"));
            if path.exists() {
                return Err(CoreError::Usage(format!(
                    "/agents: {} exists (use /agents edit {name})",
                    path.display()
                )));
            }
            // The user's command: the new file starts approved (extension_trust.rs).
            yuyao_store::trust::keep_approval(s.paths(), &path, || {
                std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, render(&d)))
            })
            .map_err(|e| CoreError::Failed(format!("cannot write {}: {e}", path.display())))?;
            Ok(format!("agent '{name}' created: {}", path.display()))
        }
        Some("edit") => {
            let name = name_arg("edit")?;
            let mut d = s.agent_def(&name).map_err(CoreError::Usage)?;
            let Some(path) = d.path.clone() else {
                return Err(CoreError::Usage(format!(
                    "/agents: '{name}' is built in; create your own with /agents create <name>"
                )));
            };
            if args.len() <= 2 {
                return Ok(format!(
                    "edit {} (or give --description, --tools, --model, --mode, --prompt)",
                    path.display()
                ));
            }
            apply_flags(&mut d, &args[2..])?;
            yuyao_store::trust::keep_approval(s.paths(), &path, || {
                std::fs::write(&path, render(&d))
            })
            .map_err(|e| CoreError::Failed(format!("cannot write {}: {e}", path.display())))?;
            Ok(format!("agent '{name}' updated: {}", path.display()))
        }
        Some("delete") | Some("rm") | Some("remove") => {
            let name = name_arg("delete")?;
            let d = s.agent_def(&name).map_err(CoreError::Usage)?;
            let Some(path) = d.path else {
                return Err(CoreError::Usage(format!(
                    "/agents: '{name}' is built in and cannot be deleted"
                )));
            };
            std::fs::remove_file(&path)
                .map_err(|e| CoreError::Failed(format!("cannot delete {}: {e}", path.display())))?;
            Ok(format!("agent '{name}' deleted ({})", path.display()))
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown /agents action '{other}': use list, show, create, edit or delete"
        ))),
    }
}

/// `@name` in a prompt naming an agent: a note asking the model to hand that part to it.
pub(crate) fn mention_note(s: &Session, text: &str) -> Option<String> {
    if !s.tool_enabled("task") {
        return None;
    }
    let defs = s.agent_defs().0;
    let mut named = Vec::new();
    for word in text.split_whitespace() {
        let Some(rest) = word.strip_prefix('@') else {
            continue;
        };
        let name =
            rest.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_');
        // A path the user names is a file reference, not an agent.
        if name.is_empty() || s.tool_context().cwd().join(name).exists() {
            continue;
        }
        if defs.iter().any(|d| d.name == name) && !named.contains(&name.to_string()) {
            named.push(name.to_string());
        }
    }
    if named.is_empty() {
        return None;
    }
    Some(format!(
        "(The user names the sub-agent{} {}: hand that work to {} with the task tool, agent: \"{}\".)",
        if named.len() == 1 { "" } else { "s" },
        named
            .iter()
            .map(|n| format!("@{n}"))
            .collect::<Vec<_>>()
            .join(", "),
        if named.len() == 1 { "it" } else { "them" },
        named.join("\" / \"")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_declares_its_tools_and_mode() {
        let d = parse(
            "---\nname: finder\ndescription: finds\ntools: [read, grep]\nmode: plan\n---\nFind things.\n",
            Path::new("/x/agents/finder.md"),
            "project",
        )
        .unwrap();
        assert_eq!(d.tools, Some(vec!["read".into(), "grep".into()]));
        assert_eq!(d.mode, Some(Mode::Plan));
        assert_eq!(d.prompt.trim(), "Find things.");
        let odd = parse(
            "---\ntools: Read, Teleport\nmodel: sonnet\n---\n",
            Path::new("/a/b.md"),
            "user",
        )
        .unwrap();
        assert_eq!(odd.tools, Some(vec!["Read".into()]));
        assert_eq!(odd.ignored_tools, vec!["Teleport".to_string()]);
        assert_eq!(odd.model, None);
        assert!(parse("---\nname: ../x\n---\n", Path::new("/a/b.md"), "user").is_err());
    }

    #[test]
    fn a_later_folder_overrides_a_builtin() {
        let dir = std::env::temp_dir().join(format!("yuyao-agents-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("explore.md"),
            "---\ndescription: mine\n---\nbody\n",
        )
        .unwrap();
        std::fs::write(dir.join("bad.md"), "---\nmode: nope\n---\n").unwrap();
        let (defs, problems) = load_from(&[(dir.clone(), "plugin".into())]);
        let explore = defs.iter().find(|d| d.name == "explore").unwrap();
        assert_eq!(explore.description, "mine");
        assert_eq!(explore.source, "plugin");
        assert_eq!(problems.len(), 1, "{problems:?}");
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn render_round_trips() {
        let d = AgentDef {
            name: "r".into(),
            description: "a: b".into(),
            tools: Some(vec!["read".into()]),
            model: Some("m".into()),
            mode: Some(Mode::AutoEdit),
            prompt: "Do it.\n".into(),
            ignored_tools: Vec::new(),
            source: "project".into(),
            path: Some(PathBuf::from("/p/r.md")),
        };
        let back = parse(&render(&d), Path::new("/p/r.md"), "project").unwrap();
        assert_eq!(back, d);
    }
}
