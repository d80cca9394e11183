//! The extension boundary (DESIGN §8): project files that can start a process or widen what
//! the agent may do are honoured only while their content is what the user approved.
//!
//! The agent's tools can write anywhere in the project, including paths that did not exist
//! when the session opened, so the host never trusts a project file for existing: every
//! loader asks [`Session::project_file_held`] at use, which compares the file's hash with the
//! approval record in `~/.yuyao/` (out of the agent's reach, `yuyao_store::trust`). The check
//! runs at every `Session::open` (top-level, sub-agent, teammate, background worker) and at
//! every use, never only at a clean close, so a killed session changes nothing.
//!
//! Approvals come only from the user: `/trust` (after the TUI showed what would run),
//! `--trust-project` on a project never approved before (top-level opens only; a sub-agent
//! inherits, it never approves), and `yuyao trust approve`. Files this
//! host saw its own agent write are marked after each tool batch, and a blanket trust
//! gesture leaves them held until they are reviewed one by one.

use crate::hooks::{self, HookSource};
use crate::session::Session;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use yuyao_protocol::NoticeLevel;
use yuyao_store::trust;

/// Every project file (existing now) that can start a process or widen permissions: hook
/// files, `.mcp.json`, plugin manifests and the hook/MCP files they name, the project config
/// and permissions, Claude Code's project settings (permissions and hooks), custom commands
/// (`!{cmd}`, `allowed-tools`), custom agents, and skills with `allowed-tools`.
pub fn project_files(home: &Path, project: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = hooks::files(home, project)
        .into_iter()
        .filter(|(_, s)| *s == HookSource::Project)
        .map(|(p, _)| p)
        .collect();
    for rel in [
        ".mcp.json",
        ".yuyao/config.toml",
        ".yuyao/permissions.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
    ] {
        out.push(project.join(rel));
    }
    for dir in [".claude/agents", ".yuyao/agents"] {
        out.extend(crate::frontmatter::files_with_ext(&project.join(dir), "md"));
    }
    // Each feature's own: plugins' manifests and the files they name, custom commands,
    // skills that pre-approve tools.
    for files in crate::feature::hooks(|f| f.program_files) {
        out.extend(files(home, project));
    }
    out.retain(|p| p.is_file());
    out.sort();
    out.dedup();
    out
}

/// The files of [`project_files`] with their content digests now.
pub fn snapshot(home: &Path, project: &Path) -> Vec<(PathBuf, String)> {
    project_files(home, project)
        .into_iter()
        .filter_map(|p| trust::digest_file(&p).map(|d| (p, d)))
        .collect()
}

/// Why a file is held, for the user: the record's status other than approved.
pub type Held = trust::Status;

/// The user's words for a held file's status.
pub fn label(why: Held) -> &'static str {
    match why {
        Held::Approved => "approved",
        Held::New => "new",
        Held::Changed => "changed since you approved it",
        Held::AgentWritten => "written by the agent or during a session",
    }
}

/// The project's extension files that are not approved as they are now, and why.
pub fn held_files(paths: &yuyao_store::Paths) -> Vec<(PathBuf, Held)> {
    project_files(&paths.home, &paths.project)
        .into_iter()
        .map(|f| {
            let why = trust::status(paths, &f);
            (f, why)
        })
        .filter(|(_, why)| *why != Held::Approved)
        .collect()
}

/// The user's blanket trust gesture (`/trust`, `--trust-project`): approves every held file
/// except those the agent wrote. Returns (approved, still held).
pub fn approve_all_but_agent_written(paths: &yuyao_store::Paths) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (agent, rest): (Vec<_>, Vec<_>) = held_files(paths)
        .into_iter()
        .partition(|(_, why)| *why == Held::AgentWritten);
    let rest: Vec<PathBuf> = rest.into_iter().map(|(f, _)| f).collect();
    let approved = trust::approve(paths, &rest).unwrap_or_default();
    (approved, agent.into_iter().map(|(f, _)| f).collect())
}

/// The path as the user sees it: relative to the project when inside it.
pub fn shown(project: &Path, file: &Path) -> String {
    file.strip_prefix(project)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| file.display().to_string())
}

impl Session {
    /// Project-provided executables may run: `-p` and agent_api say so in their options
    /// (unless `--no-project-extensions` / `project_extensions=False`), run_agent.sh never,
    /// the TUI once the project is trusted.
    pub fn project_extensions_allowed(&self) -> bool {
        if self.opts.no_project_extensions {
            return false;
        }
        self.opts
            .project_extensions
            .unwrap_or_else(|| self.lock().trusted)
    }

    /// Why the project file `file` is not honoured now (`None`: it is): project extensions
    /// are off for this session, or its content is not the approved one.
    pub fn project_file_held(&self, file: &Path) -> Option<String> {
        if !self.project_extensions_allowed() {
            return Some("project extensions are off for this session (trust the project: /trust, --trust-project)".into());
        }
        let why = match trust::status(&self.paths, file) {
            Held::Approved => return None,
            Held::New => "new since you trusted the project",
            other => label(other),
        };
        Some(format!(
            "{} is {why}; it is not loaded until you review it (`yuyao trust review`, or /trust review)",
            shown(&self.paths.project, file),
        ))
    }

    /// Whether `file` (a project file) may act now.
    pub fn project_file_ok(&self, file: &Path) -> bool {
        self.project_file_held(file).is_none()
    }

    /// At open (after `Session::open` pinned a first trust): guarded config keys follow the
    /// session's switch, and one warning per held file, when project extensions run.
    pub(crate) fn open_extension_trust(&self) {
        self.config
            .allow_project_programs(self.project_extensions_allowed());
        if let Ok(mut seen) = self.ext_seen.lock() {
            *seen = snapshot(&self.paths.home, &self.paths.project);
        }
        if !self.project_extensions_allowed() {
            return;
        }
        for (f, why) in held_files(&self.paths) {
            self.notice(
                NoticeLevel::Warning,
                format!(
                    "{} is {}: not loaded until you review it (`yuyao trust review`, or /trust review in a session)",
                    shown(&self.paths.project, &f),
                    label(why)
                ),
            );
        }
    }

    /// A turn starts: its first batch looks at the extension files whatever it calls (what
    /// ran between turns — a hook, a background job — is the session's doing too).
    pub(crate) fn extension_watch_turn_start(&self) {
        self.ext_watch
            .looked_this_turn
            .store(false, Ordering::SeqCst);
    }

    /// Before a tool batch runs: files written since the last look are marked (see
    /// [`ExtWatch`] for when nothing can have written any).
    pub(crate) fn note_extension_writes_before_batch(&self) {
        let w = &self.ext_watch;
        if !w.looked_this_turn.swap(true, Ordering::SeqCst) || w.writers.load(Ordering::SeqCst) {
            self.note_agent_extension_writes();
        }
    }

    /// After a tool batch of `calls`: the files they may have written are marked at once
    /// (a kill -9 later keeps the mark).
    pub(crate) fn note_extension_writes_after_batch(&self, calls: &[yuyao_protocol::ToolCall]) {
        let w = &self.ext_watch;
        let mut look = w.writers.load(Ordering::SeqCst);
        for c in calls {
            match call_writes(&c.name) {
                Writes::Never => {}
                Writes::During => look = true,
                Writes::After => {
                    w.writers.store(true, Ordering::SeqCst);
                    look = true;
                }
            }
        }
        if look {
            self.note_agent_extension_writes();
        }
    }

    /// After a tool batch: extension files that appeared or changed were written by the agent
    /// (or something it started). They are marked at once, so no later blanket trust approves
    /// them unseen, and the user is told.
    pub fn note_agent_extension_writes(&self) {
        let now = snapshot(&self.paths.home, &self.paths.project);
        let fresh: Vec<(PathBuf, String)> = {
            let Ok(mut seen) = self.ext_seen.lock() else {
                return;
            };
            if *seen == now {
                return;
            }
            let fresh = now
                .iter()
                .filter(|(p, d)| !seen.iter().any(|(q, e)| q == p && e == d))
                .filter(|(p, _)| !trust::is_approved(&self.paths, p))
                .cloned()
                .collect();
            *seen = now;
            fresh
        };
        if fresh.is_empty() {
            return;
        }
        let _ = trust::mark_agent_written(&self.paths, &fresh);
        self.notice(
            NoticeLevel::Warning,
            format!(
                "the agent wrote {}: extension files it writes never run until you review them (`yuyao trust review`)",
                fresh
                    .iter()
                    .map(|(f, _)| shown(&self.paths.project, f))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
}

/// When the look at the extension files after and before each batch
/// ([`Session::note_agent_extension_writes`], a listing and a digest of every file) can be
/// skipped. The model writes files only through its tool calls; a call that only reads
/// (the registry's `Reads` effect: `read`, `grep`, `glob`, …) writes nothing, so a batch of
/// such calls needs no look — unless something the session started earlier may still be
/// writing: a command (its background children, `bash … &`, a background job), an MCP
/// server, a sub-agent. Once such a call ran, every batch looks, as before, for the rest of
/// the session. The first batch of every turn looks too.
#[derive(Default)]
pub struct ExtWatch {
    /// A call that can leave something running that writes (a command, an MCP tool, a
    /// sub-agent, a tool the registry does not know) ran in this session.
    writers: AtomicBool,
    /// The first batch of the turn looked.
    looked_this_turn: AtomicBool,
}

/// What a call of `name` (as the model spelled it) may write, and when.
#[derive(Debug, PartialEq, Eq)]
enum Writes {
    /// Nothing: it only reads the workspace.
    Never,
    /// Only while it runs (the file tools, the session's own state).
    During,
    /// Also after it returns: a program it started may go on running.
    After,
}

fn call_writes(name: &str) -> Writes {
    use crate::tool_call::registry::{Effect, Runner, spec};
    // Resolved as the pipeline resolves it (`tool_call/mod.rs`): an MCP tool first.
    if yuyao_policy::is_mcp_tool(name) {
        return Writes::After;
    }
    let Some(s) = yuyao_protocol::canonical_tool_name(name).and_then(spec) else {
        return Writes::After;
    };
    match (s.effect, s.runner) {
        (_, Runner::Delegated | Runner::Mcp) => Writes::After,
        (Effect::Reads, Runner::Builtin) => Writes::Never,
        (Effect::Writes | Effect::SessionState, _) => Writes::During,
        _ => Writes::After,
    }
}

/// What `/trust review` / `yuyao trust review|approve` asks for.
pub enum Review {
    /// List the held files: what each runs, or its diff since approval.
    List,
    /// Approve these held files (as shown: relative to the project, or absolute).
    Approve(Vec<String>),
    /// Approve every held file.
    ApproveAll,
}

/// `/trust review` and `yuyao trust review|approve`: what each held file would do, and the
/// user's approval of exactly that content.
pub fn review(paths: &yuyao_store::Paths, ask: &Review) -> Result<String, String> {
    let held = held_files(paths);
    let approve_all = matches!(ask, Review::ApproveAll);
    let named: Vec<String> = match ask {
        Review::Approve(files) => files
            .iter()
            .map(|a| a.trim_start_matches("./").to_string())
            .collect(),
        _ => Vec::new(),
    };
    if approve_all || !named.is_empty() {
        let mut chosen = Vec::new();
        for (f, _) in &held {
            let rel = shown(&paths.project, f);
            if approve_all
                || named
                    .iter()
                    .any(|n| *n == rel || Path::new(n.as_str()) == f)
            {
                chosen.push(f.clone());
            }
        }
        for n in &named {
            if !chosen
                .iter()
                .any(|f| shown(&paths.project, f) == *n || Path::new(n.as_str()) == f)
            {
                return Err(format!(
                    "{n} is not a held extension file of {} (see `yuyao trust review`)",
                    paths.project.display()
                ));
            }
        }
        let done = trust::approve(paths, &chosen).map_err(|e| e.to_string())?;
        trust::trust(paths).map_err(|e| e.to_string())?;
        return Ok(format!(
            "approved (this exact content): {}",
            if done.is_empty() {
                "nothing held".to_string()
            } else {
                done.iter()
                    .map(|f| shown(&paths.project, f))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ));
    }
    if held.is_empty() {
        return Ok(format!(
            "nothing held in {}: every extension file is approved as it is",
            paths.project.display()
        ));
    }
    let mut out = format!(
        "{} extension file(s) of {} held (not loaded until approved):\n",
        held.len(),
        paths.project.display()
    );
    for (f, why) in &held {
        out.push_str(&format!(
            "\n== {} ({})\n{}\n",
            shown(&paths.project, f),
            label(*why),
            what_it_does(paths, f)
        ));
    }
    out.push_str("\nApprove with `yuyao trust review --approve FILE…` or `--approve-all`.");
    Ok(out)
}

/// The content a held file would put in force, shown in full (capped): for hook and MCP
/// files the commands they run come first.
fn what_it_does(paths: &yuyao_store::Paths, file: &Path) -> String {
    let text = match std::fs::read(file) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return format!("(cannot read: {e})"),
    };
    let mut runs: Vec<String> = Vec::new();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        collect_commands(&v, &mut runs);
    } else if let Ok(t) = text.parse::<toml::Table>() {
        collect_settings("", &t, &mut runs);
    }
    let mut out = String::new();
    if !runs.is_empty() {
        out.push_str("runs:\n");
        for r in &runs {
            out.push_str(&format!("  $ {r}\n"));
        }
    }
    if let Some(before) = trust::approved_content(paths, file) {
        // Changed since approval: the difference is what the user is asked about.
        let before = String::from_utf8_lossy(&before).into_owned();
        let diff = similar::TextDiff::from_lines(&before, &text);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header("approved", "now")
                .to_string(),
        );
        return out;
    }
    const CAP: usize = 4000;
    let body: String = text.chars().take(CAP).collect();
    out.push_str(&body);
    if text.chars().count() > CAP {
        out.push_str("\n… (cut)");
    }
    out
}

/// The keys of a project config that name a program, an endpoint or a secret, or widen.
fn collect_settings(prefix: &str, t: &toml::Table, out: &mut Vec<String>) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(inner) => collect_settings(&key, inner, out),
            _ if yuyao_store::config::guarded(&key)
                || yuyao_store::config::lower_only(&key)
                || matches!(key.as_str(), "mode" | "sandbox" | "network") =>
            {
                out.push(format!("(sets) {key} = {v}"));
            }
            _ => {}
        }
    }
}

/// `command` / `args` / `url` values anywhere in a JSON document (hook and MCP shapes).
fn collect_commands(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(c) = m.get("command") {
                let mut line = match c {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(a) => a
                        .iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    _ => String::new(),
                };
                if let Some(serde_json::Value::Array(a)) = m.get("args") {
                    for x in a.iter().filter_map(|x| x.as_str()) {
                        line.push(' ');
                        line.push_str(x);
                    }
                }
                if !line.is_empty() {
                    out.push(line);
                }
            } else if let Some(serde_json::Value::String(u)) = m.get("url") {
                out.push(format!("(connects to) {u}"));
            }
            for x in m.values() {
                collect_commands(x, out);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                collect_commands(x, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yuyao_store::Paths;

    /// Only a built-in that reads spares the look after its batch; what writes is looked at
    /// after it; a command, an MCP tool, a sub-agent or a name the registry does not know
    /// may leave a writer running, so every later batch looks too.
    #[test]
    fn only_reads_spare_the_look_and_a_command_keeps_it_for_good() {
        for name in [
            "read",
            "Read",
            "grep",
            "glob",
            "read-media",
            "bg-list",
            "bg-output",
        ] {
            assert_eq!(call_writes(name), Writes::Never, "{name}");
        }
        for name in [
            "write",
            "edit",
            "multi-edit",
            "apply-patch",
            "notebook-edit",
        ] {
            assert_eq!(call_writes(name), Writes::During, "{name}");
        }
        for name in [
            "bash",
            "shell",
            "monitor",
            "bg-stop",
            "task",
            "web-fetch",
            "mcp__fs__write_file",
            "mcp__fs__read",
            "no-such-tool",
            "",
        ] {
            assert_eq!(call_writes(name), Writes::After, "{name}");
        }
    }

    fn setup() -> (tempfile::TempDir, Paths) {
        let d = tempfile::tempdir().unwrap();
        let project = d.path().join("proj");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        let paths = Paths {
            home: d.path().join("home"),
            project,
        };
        (d, paths)
    }

    fn write(paths: &Paths, rel: &str, text: &str) -> PathBuf {
        let f = paths.project.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, text).unwrap();
        f
    }

    #[test]
    fn every_kind_of_extension_file_is_listed() {
        let (_d, paths) = setup();
        const KINDS: &[&str] = &[
            "hooks.json",
            ".yuyao/hooks.json",
            ".mcp.json",
            ".yuyao/config.toml",
            ".yuyao/permissions.json",
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".yuyao/agents/a.md",
            ".claude/agents/b.md",
        ];
        // The kinds features add (plugins, custom commands, skills) are listed by the
        // features' `program_files` (yuyao-extensions tests them with its features).
        for rel in KINDS {
            write(&paths, rel, "{}");
        }
        let listed: Vec<String> = project_files(&paths.home, &paths.project)
            .iter()
            .map(|f| shown(&paths.project, f))
            .collect();
        for want in KINDS {
            assert!(listed.iter().any(|l| l == want), "{want} not in {listed:?}");
        }
    }

    #[test]
    fn blanket_approval_skips_what_the_agent_wrote_and_review_shows_the_change() {
        let (_d, paths) = setup();
        let hooks = write(&paths, "hooks.json", "{\"hooks\": {}}\n");
        let mcp = write(&paths, ".mcp.json", "{}\n");
        trust::mark_agent_written(&paths, &[(mcp.clone(), trust::digest_file(&mcp).unwrap())])
            .unwrap();
        let (approved, agent) = approve_all_but_agent_written(&paths);
        assert_eq!(approved, vec![hooks.clone()]);
        assert_eq!(agent, vec![mcp.clone()]);
        assert_eq!(held_files(&paths), vec![(mcp, Held::AgentWritten)]);
        std::fs::write(
            &hooks,
            "{\"hooks\": {\"Stop\": [{\"command\": \"curl evil\"}]}}\n",
        )
        .unwrap();
        let review = review(&paths, &Review::List).unwrap();
        assert!(
            review.contains("== hooks.json (changed since you approved it)"),
            "{review}"
        );
        assert!(review.contains("$ curl evil"), "{review}");
        assert!(review.contains("-{\"hooks\": {}}"), "{review}");
        let out = super::review(&paths, &Review::Approve(vec!["./hooks.json".into()])).unwrap();
        assert!(out.contains("hooks.json"), "{out}");
        assert!(trust::is_approved(&paths, &hooks));
        assert!(super::review(&paths, &Review::Approve(vec!["nope.json".into()])).is_err());
    }
}
