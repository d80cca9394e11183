//! Custom slash commands: `commands/<name>.md` (Markdown, optional YAML frontmatter:
//! `description`, `argument-hint`, `allowed-tools`, `model`) from `<project>/.yuyao/commands`,
//! `~/.yuyao/commands` and `<project>/.claude/commands`; subfolders are namespaces
//! (`git/commit.md` → `/git:commit`). The folders are read at every use, so a file dropped in
//! is a command at once. A custom command never shadows a built-in.
//!
//! Running one: `{{args}}` / `$ARGUMENTS` become the arguments, `$1`… each word; `@{file}`
//! injects a file the policy lets the agent read (secrets stay out, output redacted);
//! `!{cmd}` runs a command through the permission engine, under the tools' sandbox, and
//! injects its output (a project command's only where project extensions may run). The
//! expanded text is the next prompt.

#[allow(unused_imports)]
use crate::session_ext::*;

use regex::Regex;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use yuyao_core::{CoreError, Session};
use yuyao_extension_files::hooks::HookSource;
use yuyao_policy::{Action, Verdict};

#[derive(Debug, Clone)]
pub struct CustomCommand {
    pub name: String,
    pub description: String,
    pub argument_hint: String,
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    pub body: String,
    pub source: HookSource,
    pub file: PathBuf,
}

/// The folders, in precedence order (the first file of a name wins).
pub fn dirs(home: &Path, project: &Path) -> Vec<(PathBuf, HookSource)> {
    vec![
        (project.join(".yuyao").join("commands"), HookSource::Project),
        (home.join("commands"), HookSource::User),
        (
            project.join(".claude").join("commands"),
            HookSource::Project,
        ),
    ]
}

/// `git/commit.md` → `git:commit`.
fn name_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?.with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_ascii_lowercase())
        .collect();
    let name = parts.join(":");
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '-' | '_' | '.'));
    ok.then_some(name)
}

/// Every custom command, and warnings (bad frontmatter, a name a built-in already has).
#[cfg(test)]
pub fn load(home: &Path, project: &Path) -> (Vec<CustomCommand>, Vec<String>) {
    load_dirs(dirs(home, project))
}

/// The commands of `roots` (the first file of a name wins).
pub fn load_dirs(roots: Vec<(PathBuf, HookSource)>) -> (Vec<CustomCommand>, Vec<String>) {
    let mut out: Vec<CustomCommand> = Vec::new();
    let mut warnings = Vec::new();
    for (root, source) in roots {
        for file in yuyao_extension_files::frontmatter::files_with_ext(&root, "md") {
            let Some(name) = name_of(&root, &file) else {
                continue;
            };
            if out.iter().any(|c| c.name == name) {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let (fm, body) = match yuyao_extension_files::frontmatter::split(&text) {
                Ok(x) => x,
                Err(e) => {
                    warnings.push(format!("{}: {e}; /{name} is skipped", file.display()));
                    continue;
                }
            };
            if yuyao_core::is_builtin_command(&name) {
                warnings.push(format!(
                    "{}: /{name} is a built-in command; the custom one is ignored",
                    file.display()
                ));
                continue;
            }
            let s = |k: &str| fm.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let description = match s("description") {
                d if d.is_empty() => body
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("")
                    .chars()
                    .take(80)
                    .collect(),
                d => d,
            };
            out.push(CustomCommand {
                name,
                description,
                argument_hint: s("argument-hint"),
                allowed_tools: yuyao_extension_files::frontmatter::list(fm.get("allowed-tools")),
                model: Some(s("model")).filter(|m| !m.is_empty()),
                body: body.to_string(),
                source,
                file,
            });
        }
    }
    (out, warnings)
}

/// `{{args}}` and `$ARGUMENTS` → the whole argument text; `$1`…`$9` → one word each.
pub fn expand_args(body: &str, raw: &str, words: &[String]) -> String {
    static POS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$([1-9])").expect("regex"));
    let text = body
        .replace("{{args}}", raw)
        .replace("{{ args }}", raw)
        .replace("$ARGUMENTS", raw);
    POS.replace_all(&text, |c: &regex::Captures<'_>| {
        let i: usize = c[1].parse().unwrap_or(1);
        words.get(i - 1).cloned().unwrap_or_default()
    })
    .into_owned()
}

static FILE_REF: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"@\{([^}\n]+)\}").expect("regex"));
static SHELL_REF: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"!\{([^}\n]+)\}").expect("regex"));

pub(crate) trait CustomCommandsExt {
    fn custom_commands(&self) -> Vec<CustomCommand>;
    fn load_custom_commands(&self) -> (Vec<CustomCommand>, Vec<String>);
    fn run_custom_command(&self, name: &str, rest: &str) -> Option<Result<String, CoreError>>;
    fn expand_inline(&self, cmd: &CustomCommand, text: &str) -> String;
    fn inline_file(&self, raw: &str) -> String;
    fn inline_shell(&self, cmd: &CustomCommand, command: &str) -> String;
    fn custom_command_table(&self) -> Value;
}

impl CustomCommandsExt for Session {
    fn custom_commands(&self) -> Vec<CustomCommand> {
        self.load_custom_commands().0
    }

    /// The command folders and the active plugins' `commands/` (plugins.rs).
    fn load_custom_commands(&self) -> (Vec<CustomCommand>, Vec<String>) {
        let mut roots = dirs(&self.paths().home, &self.paths().project);
        roots.extend(
            self.plugin_dirs("commands")
                .into_iter()
                .map(|(d, source, _)| (d, source)),
        );
        load_dirs(roots)
    }

    /// `/name args` for a custom command, if `name` is one: the expanded prompt runs as a turn.
    fn run_custom_command(&self, name: &str, rest: &str) -> Option<Result<String, CoreError>> {
        let (list, warnings) = self.load_custom_commands();
        self.warn_once(warnings);
        let cmd = list.into_iter().find(|c| c.name == name)?;
        if self.is_busy() {
            return Some(Err(CoreError::Usage(format!(
                "/{name} starts a turn: send it when the running turn has ended"
            ))));
        }
        let words = yuyao_core::split_words(rest).unwrap_or_default();
        let prompt = self.expand_inline(&cmd, &expand_args(&cmd.body, rest.trim(), &words));
        let prompt = if prompt.trim().is_empty() {
            format!("/{name} {rest}")
        } else {
            prompt
        };
        self.lock().trajectory.record(
            "custom_command",
            json!({"name": name, "file": cmd.file, "source": cmd.source.label(), "prompt": prompt}),
        );
        // For this turn: `model` switches the model, `allowed-tools` runs those tools without
        // asking (a project's command grants that only where the project's programs may run).
        let grants: Vec<yuyao_policy::Rule> =
            if cmd.source == HookSource::User || self.project_file_ok(&cmd.file) {
                cmd.allowed_tools
                    .iter()
                    .filter_map(|t| yuyao_policy::Rule::parse(t).ok())
                    .collect()
            } else {
                Vec::new()
            };
        let saved = {
            let mut st = self.lock();
            let saved = (
                st.policy.allow.len(),
                grants.len(),
                st.model_override.clone(),
            );
            st.policy.allow.extend(grants);
            if let Some(m) = &cmd.model {
                st.model_override = Some(m.clone());
            }
            saved
        };
        self.expand_next_prompt();
        let answer = self.chat(&prompt);
        {
            let mut st = self.lock();
            // Only the grants go: a rule the user added during the turn stays.
            let end = (saved.0 + saved.1).min(st.policy.allow.len());
            st.policy.allow.drain(saved.0..end);
            if cmd.model.is_some() {
                st.model_override = saved.2;
            }
        }
        // The fronts with a handler render the turn from its events.
        Some(answer.map(|a| if self.has_handler() { String::new() } else { a }))
    }

    /// `@{file}` and `!{cmd}` of an expanded command.
    fn expand_inline(&self, cmd: &CustomCommand, text: &str) -> String {
        let with_files = FILE_REF.replace_all(text, |c: &regex::Captures<'_>| {
            self.inline_file(c[1].trim())
        });
        SHELL_REF
            .replace_all(&with_files, |c: &regex::Captures<'_>| {
                self.inline_shell(cmd, c[1].trim())
            })
            .into_owned()
    }

    fn inline_file(&self, raw: &str) -> String {
        let path = self.tool_context().cwd().join(raw);
        let action = Action {
            tool: "read".into(),
            command: None,
            paths: vec![path.clone()],
        };
        let decision = self.lock().policy.decide(&action);
        if decision.verdict != Verdict::Allow {
            // The reason may name the path as `@path`: said without the `@`.
            return format!(
                "(@{{{raw}}} not included: {})",
                decision.reason.replace('@', "")
            );
        }
        match std::fs::read_to_string(&path) {
            Ok(t) => {
                let policy = self.lock().policy.clone();
                let t = yuyao_core::redact(self, &policy, &t).into_owned();
                format!("Contents of {raw}:\n```\n{}\n```", t.trim_end())
            }
            Err(e) => format!("(@{{{raw}}} not included: {e})"),
        }
    }

    fn inline_shell(&self, cmd: &CustomCommand, command: &str) -> String {
        // A project's command file runs programs only as the content the user approved (a
        // file the agent wrote is held until reviewed, DESIGN §8): the reason is said.
        if cmd.source == HookSource::Project
            && let Some(why) = self.project_file_held(&cmd.file)
        {
            return format!("(!{{{command}}} not run: {why})");
        }
        let action = Action {
            tool: "bash".into(),
            command: Some(command.to_string()),
            paths: Vec::new(),
        };
        let decision = self.lock().policy.decide(&action);
        let approved = match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(format!("refused: {}", decision.reason)),
            Verdict::Ask | Verdict::Review => {
                match yuyao_tools::ToolArgs::parse("bash", &json!({"command": command}).to_string())
                {
                    Ok(args) => self.ask_permission(
                        "bash",
                        &self.detail("bash", &args, &action),
                        &action,
                        &decision.reason,
                    ),
                    Err(e) => Err(e),
                }
            }
        };
        if let Err(why) = approved {
            return format!("(!{{{command}}} not run: {why})");
        }
        let token = tokio_util::sync::CancellationToken::new();
        match yuyao_tools::exec::run_foreground(
            self.tool_context(),
            command,
            self.tool_context().bash_timeout_ms(),
            &token,
        ) {
            Ok(run) => {
                let policy = self.lock().policy.clone();
                let text = yuyao_core::redact(self, &policy, &run.text).into_owned();
                format!("Output of `{command}`:\n```\n{}\n```", text.trim_end())
            }
            Err(e) => format!("(!{{{command}}} failed: {e})"),
        }
    }

    /// The custom commands for the fronts' `/help` and completion (same shape as
    /// `command_table`, with the file and source).
    fn custom_command_table(&self) -> Value {
        let (list, warnings) = self.load_custom_commands();
        self.warn_once(warnings);
        let mut rows: Vec<Value> = list
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "aliases": [],
                    "usage": c.argument_hint,
                    "help": c.description,
                    "group": "Custom commands",
                    "available": true,
                    "source": c.source.label(),
                    "file": c.file.display().to_string(),
                })
            })
            .collect();
        // `/flow:<name>` of the skills holding a flow graph (skills.rs).
        rows.extend(self.flow_table());
        Value::Array(rows)
    }
}

/// What this feature adds to a session (feature.rs): commands read from `commands/*.md`.
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "custom_commands",
    // A command file can run `!{cmd}` and pre-approve tools (`allowed-tools`).
    program_files: Some(|home, project| {
        dirs(home, project)
            .into_iter()
            .filter(|(_, source)| *source == yuyao_extension_files::hooks::HookSource::Project)
            .flat_map(|(dir, _)| yuyao_extension_files::frontmatter::files_with_ext(&dir, "md"))
            .collect()
    }),
    // Not a built-in: a custom command, read from disk now.
    other_command: Some(|s, name, rest| s.run_custom_command(name, rest)),
    help: Some(|s, name| match name {
        Some(name) => s
            .custom_commands()
            .into_iter()
            .find(|c| c.name == name)
            .map(|c| {
                format!(
                    "/{} {}\n  {}\n  custom command ({}): {}",
                    c.name,
                    c.argument_hint,
                    c.description,
                    c.source.label(),
                    c.file.display()
                )
            }),
        None => {
            let custom = s.custom_commands();
            if custom.is_empty() {
                return None;
            }
            let mut out = String::from("Custom commands\n");
            for c in custom {
                let head = format!("/{} {}", c.name, c.argument_hint);
                out.push_str(&format!(
                    "  {:<30} {} ({})\n",
                    head.trim_end(),
                    c.description,
                    c.source.label()
                ));
            }
            Some(out)
        }
    }),
    // The fronts' `/help` and completion rows for the custom commands found now.
    front_calls: &[yuyao_core::FrontCall {
        name: "commands.custom",
        run: |s, _| Ok(yuyao_core::front_session(s, "commands.custom")?.custom_command_table()),
    }],
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_in_every_spelling() {
        let words = vec!["fix".to_string(), "the bug".to_string()];
        assert_eq!(
            expand_args(
                "a {{args}} b $ARGUMENTS c $1/$2/$3",
                "fix 'the bug'",
                &words
            ),
            "a fix 'the bug' b fix 'the bug' c fix/the bug/"
        );
    }

    #[test]
    fn namespaces_precedence_and_builtins() {
        let t = tempfile::tempdir().unwrap();
        let (home, project) = (t.path().join("home"), t.path().join("p"));
        let put = |p: PathBuf, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            project.join(".yuyao/commands/git/commit.md"),
            "---\ndescription: Commit\nargument-hint: <msg>\n---\nCommit {{args}}\n",
        );
        put(home.join("commands/git/commit.md"), "user version\n");
        put(home.join("commands/review-pr.md"), "Review PR $1\n");
        put(project.join(".claude/commands/help.md"), "shadow\n");
        put(
            project.join(".claude/commands/bad.md"),
            "---\nx: [\n---\nbody\n",
        );
        let (list, warnings) = load(&home, &project);
        let names: Vec<&str> = list.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["git:commit", "review-pr"]);
        assert_eq!(list[0].description, "Commit");
        assert_eq!(list[0].argument_hint, "<msg>");
        assert_eq!(list[0].source, HookSource::Project);
        assert_eq!(list[1].description, "Review PR $1");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("/help is a built-in")));
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("bad.md") && w.contains("line"))
        );
    }
}
