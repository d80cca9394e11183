//! Skills (the agentskills standard): `skills/<name>/SKILL.md` — YAML frontmatter (`name`,
//! `description`, optional `allowed-tools`, optional `triggers`) and a Markdown body — from
//! `<project>/.yuyao/skills`, `~/.yuyao/skills`, `<project>/.claude/skills` and the active
//! plugins' `skills/` folders (the first skill of a name wins). The folders are read at every
//! use, so a skill dropped in is usable at once.
//!
//! Only names and descriptions are in the system prompt (a `# Skills` section built with the
//! conversation's prompt, which is never rewritten: a skill added later arrives as a
//! `[skills]` note appended before the next call). The body, with the list of the files beside
//! it, loads when the skill is triggered:
//! - by the model: the `skill` tool (`{"name": …, "arguments": …}`);
//! - by the prompt: one of the skill's `triggers:` phrases, or its name when the name has more
//!   than one word (`pdf-report`, also written `pdf report`), as whole words, any case; a
//!   skill already loaded in this conversation is not loaded again;
//! - by the user: `/skill <name> [args]` (`$ARGUMENTS`, `{{args}}`, `$1`… as in commands).
//!
//! `allowed-tools` pre-approves tools while the skill runs (the rest of the turn it was
//! loaded in), with Claude Code's meaning: a call they cover needs no permission prompt
//! (`Session::skill_preapproval`); other tools stay available under the usual policy.
//! `Bash(git:*)`-style entries pre-approve matching commands only. Pre-approval takes only
//! the mode's question away: deny and ask rules, protected paths, secret files, the sandbox,
//! the role and undetermined commands decide as before.
//!
//! A project's skills (and a project plugin's) are project extensions: listed and usable only
//! where `Session::project_extensions_allowed`. `features.skills = false` → none.

#[allow(unused_imports)]
use crate::session_ext::*;

use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use yuyao_core::{CoreError, Session};
use yuyao_extension_files::hooks::HookSource;
use yuyao_protocol::{Message, MessageRole, NoticeLevel, canonical_tool_name};
use yuyao_tools::ToolOutput;

pub(crate) const NAMES: &[&str] = &["skill"];

/// How a loaded skill begins in the history (also how "already loaded" is recognised).
const LOADED_PREFIX: &str = "[skill ";

#[derive(Debug, Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub allowed_tools: Vec<String>,
    pub triggers: Vec<String>,
    pub body: String,
    pub dir: PathBuf,
    pub file: PathBuf,
    /// `project`, `user`, `.claude`, `plugin:<name>`.
    pub source: String,
    pub origin: HookSource,
}

impl Skill {
    /// Holds a flow graph (`/flow:<name>` runs it).
    pub fn is_flow(&self) -> bool {
        crate::flow::has_block(&self.body)
    }
}

/// The session's skill state: what the system prompt listed, the restriction in force.
#[derive(Default)]
pub(crate) struct ExtState {
    /// The skill names the conversation's prompt (and notes since) told the model.
    told: Mutex<Option<BTreeSet<String>>>,
    /// While a skill with `allowed-tools` runs: its name, the entries, and for a project's
    /// skill its SKILL.md, whose content must be approved for the entries to pre-approve.
    active: Mutex<Option<ActiveSkill>>,
}

pub(crate) trait SkillState {
    fn ext(&self) -> &ExtState;
}

impl SkillState for Session {
    /// The session's skill state.
    fn ext(&self) -> &ExtState {
        self.part()
    }
}

/// The skill whose `allowed-tools` are in force (see [`ExtState`]).
type ActiveSkill = (String, Vec<String>, Option<PathBuf>);

/// The skill folders that are not plugins', with their source.
pub fn roots(home: &Path, project: &Path) -> Vec<(PathBuf, HookSource, String)> {
    vec![
        (
            project.join(".yuyao").join("skills"),
            HookSource::Project,
            "project".into(),
        ),
        (home.join("skills"), HookSource::User, "user".into()),
        (
            project.join(".claude").join("skills"),
            HookSource::Project,
            ".claude".into(),
        ),
    ]
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Every skill of `roots`, and a warning (file and line) for each that cannot be read.
pub fn load_from(roots: &[(PathBuf, HookSource, String)]) -> (Vec<Skill>, Vec<String>) {
    let mut out: Vec<Skill> = Vec::new();
    let mut warnings = Vec::new();
    for (root, origin, source) in roots {
        for dir in yuyao_extension_files::frontmatter::sorted_entries(root)
            .into_iter()
            .filter(|p| p.is_dir())
        {
            let Some(file) = ["SKILL.md", "skill.md"]
                .iter()
                .map(|f| dir.join(f))
                .find(|f| f.is_file())
            else {
                continue;
            };
            // A repository's SKILL.md is read only from inside its folder: a link to a file
            // elsewhere (a secret) would send that file to the model.
            if *origin == HookSource::Project {
                let inside = std::fs::canonicalize(&file)
                    .ok()
                    .zip(std::fs::canonicalize(root).ok())
                    .is_some_and(|(f, r)| f.starts_with(r));
                if !inside {
                    warnings.push(format!(
                        "{}: a link to a file outside {}; the skill is skipped",
                        file.display(),
                        root.display()
                    ));
                    continue;
                }
            }
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let folder = dir
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let (fm, body) = match yuyao_extension_files::frontmatter::split(&text) {
                Ok(x) => x,
                Err(e) => {
                    warnings.push(format!(
                        "{}: {e}; the skill '{folder}' is skipped",
                        file.display()
                    ));
                    continue;
                }
            };
            let s = |k: &str| {
                fm.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim()
                    .to_string()
            };
            let name = match s("name") {
                n if n.is_empty() => folder.clone(),
                n => n.to_ascii_lowercase(),
            };
            if !valid_name(&name) {
                warnings.push(format!(
                    "{}: line 2: the skill name '{name}' is not letters, digits, '-', '_' or '.'; skipped",
                    file.display()
                ));
                continue;
            }
            if out.iter().any(|k| k.name == name) {
                continue;
            }
            let description = match s("description") {
                d if d.is_empty() => body
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty() && !l.starts_with("```"))
                    .unwrap_or("")
                    .trim_start_matches('#')
                    .trim()
                    .chars()
                    .take(120)
                    .collect(),
                d => d,
            };
            out.push(Skill {
                name,
                description,
                allowed_tools: yuyao_extension_files::frontmatter::list(
                    fm.get("allowed-tools").or_else(|| fm.get("allowed_tools")),
                ),
                triggers: yuyao_extension_files::frontmatter::list(fm.get("triggers")),
                body: body.to_string(),
                dir,
                file,
                source: source.clone(),
                origin: *origin,
            });
        }
    }
    (out, warnings)
}

/// The files beside SKILL.md (depth 3, at most 50), for the model to read when it needs them.
fn files_beside(skill: &Skill) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        for p in yuyao_extension_files::frontmatter::sorted_entries(dir) {
            if out.len() >= 50 {
                return;
            }
            if p.is_dir() && depth < 3 {
                walk(&p, depth + 1, out);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&skill.dir, 0, &mut out);
    out.retain(|p| *p != skill.file);
    out
}

/// The text a loaded skill adds to the conversation.
pub(crate) fn render(skill: &Skill, args: &str, why: &str) -> String {
    let words = yuyao_core::split_words(args).unwrap_or_default();
    let body = crate::custom_commands::expand_args(&skill.body, args.trim(), &words);
    let mut out = format!(
        "{LOADED_PREFIX}{} loaded ({why}) from {}]\n{}",
        skill.name,
        skill.file.display(),
        body.trim_end()
    );
    if !args.trim().is_empty() && !skill.body.contains("$ARGUMENTS") && !skill.body.contains("{{") {
        out.push_str(&format!("\n\nArguments: {}", args.trim()));
    }
    let files = files_beside(skill);
    if !files.is_empty() {
        out.push_str(
            "\n\nFiles in the skill's folder (read them when the instructions need them):",
        );
        for f in files {
            out.push_str(&format!("\n- {}", f.display()));
        }
    }
    if !skill.allowed_tools.is_empty() {
        out.push_str(&format!(
            "\n\nWhile this skill runs, these tools are pre-approved (no permission prompt): {}.",
            skill.allowed_tools.join(", ")
        ));
    }
    out
}

/// The phrases that load `skill` from a prompt.
fn phrases(skill: &Skill) -> Vec<String> {
    let mut out: Vec<String> = skill
        .triggers
        .iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    if skill.name.contains(['-', '_']) {
        out.push(skill.name.clone());
        out.push(skill.name.replace(['-', '_'], " "));
    }
    out
}

fn mentions(text: &str, phrase: &str) -> bool {
    let pattern = format!(
        r"(?i)(^|[^\w]){}($|[^\w])",
        regex::escape(phrase)
            .replace(r"\ ", r"\s+")
            .replace(' ', r"\s+")
    );
    Regex::new(&pattern).is_ok_and(|r| r.is_match(text))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillArgs {
    #[serde(alias = "skill", alias = "command")]
    name: String,
    #[serde(default, alias = "args", alias = "input")]
    arguments: Option<Value>,
}

pub(crate) fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "skill",
            "description": "Load a skill listed under '# Skills' in the system prompt (or announced later in a [skills] note): returns its instructions and the files beside it. Load one when the task matches its description, then follow it.",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "the skill's name"},
                    "arguments": {"type": "string", "description": "optional arguments for the skill"}
                },
                "required": ["name"],
                "additionalProperties": false
            }
        }
    })
}

pub(crate) trait SkillUse {
    fn skills(&self) -> Vec<Skill>;
    fn find_skill(&self, name: &str) -> Result<Skill, String>;
    fn with_skills_section(&self, system: String) -> String;
    fn tool_enabled_skill(&self) -> bool;
    fn skill_tool_offered(&self) -> bool;
    fn skills_note(&self) -> Option<String>;
    fn skill_loaded(&self, name: &str) -> bool;
    fn skill_triggers(&self, text: &str) -> Vec<String>;
    fn activate_skill(&self, skill: &Skill);
    fn end_skill_scope(&self);
    fn run_skill_tool(&self, name: &str, raw: &str) -> Option<ToolOutput>;
    fn skill_preapproval(
        &self,
        action: &yuyao_policy::Action,
        raw_args: &str,
        decision: &mut yuyao_policy::Decision,
    );
}

impl SkillUse for Session {
    /// The skills usable now (feature switch, trust, active plugins), problems said once.
    fn skills(&self) -> Vec<Skill> {
        if !self.feature_enabled("skills") {
            return Vec::new();
        }
        let project_ok = self.project_extensions_allowed();
        let mut roots: Vec<(PathBuf, HookSource, String)> =
            roots(&self.paths().home, &self.paths().project)
                .into_iter()
                .filter(|(_, o, _)| *o == HookSource::User || project_ok)
                .collect();
        roots.extend(
            self.plugin_dirs("skills")
                .into_iter()
                .map(|(d, o, name)| (d, o, format!("plugin:{name}"))),
        );
        let (list, warnings) = load_from(&roots);
        self.warn_once(warnings.into_iter().map(|w| format!("skills: {w}")));
        list
    }

    fn find_skill(&self, name: &str) -> Result<Skill, String> {
        if !self.feature_enabled("skills") {
            return Err(format!(
                "no skill named '{name}': skills are disabled (features.skills = false; /features enable skills)"
            ));
        }
        let all = self.skills();
        let wanted = name.trim().trim_start_matches('/').to_ascii_lowercase();
        match all.iter().find(|s| s.name == wanted) {
            Some(s) => Ok(s.clone()),
            None => Err(format!(
                "no skill named '{name}'{}{}",
                if all.is_empty() {
                    " (no skills are available)".to_string()
                } else {
                    format!(
                        "; skills: {}",
                        all.iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
                if self.options().project_extensions.is_some() || self.project_extensions_allowed()
                {
                    ""
                } else {
                    " (a project's skills load once the project is trusted: /trust)"
                }
            )),
        }
    }

    /// The `# Skills` section appended to a new system prompt; records what it told.
    fn with_skills_section(&self, system: String) -> String {
        let list = if self.tool_enabled_skill() {
            self.skills()
        } else {
            Vec::new()
        };
        *self.ext().told.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(list.iter().map(|s| s.name.clone()).collect());
        if list.is_empty() {
            return system;
        }
        let mut out = system;
        out.push_str("\n\n# Skills\nSkills are packaged instructions for particular tasks. When a task matches a skill's description, load it with the skill tool ({\"name\": \"<skill>\"}) and follow what it says. Available skills:\n");
        for s in &list {
            out.push_str(&format!("- {}: {}\n", s.name, s.description));
        }
        out.trim_end().to_string()
    }

    fn tool_enabled_skill(&self) -> bool {
        self.options()
            .tools
            .as_ref()
            .is_none_or(|l| l.iter().any(|t| canonical_tool_name(t) == Some("skill")))
    }

    /// Whether the `skill` tool is offered (skills on and at least one usable).
    fn skill_tool_offered(&self) -> bool {
        self.tool_enabled_skill() && !self.skills().is_empty()
    }

    /// A note for the skills added or removed since the model was told (`None`: nothing).
    fn skills_note(&self) -> Option<String> {
        let told = self
            .ext()
            .told
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        if !self.tool_enabled_skill() {
            return None;
        }
        let now = self.skills();
        let names: BTreeSet<String> = now.iter().map(|s| s.name.clone()).collect();
        if names == told {
            return None;
        }
        let mut lines = Vec::new();
        let added: Vec<&Skill> = now.iter().filter(|s| !told.contains(&s.name)).collect();
        if !added.is_empty() {
            lines.push(
                "[skills] new skills are available (load one with the skill tool):".to_string(),
            );
            lines.extend(
                added
                    .iter()
                    .map(|s| format!("- {}: {}", s.name, s.description)),
            );
        }
        let gone: Vec<&String> = told.iter().filter(|n| !names.contains(*n)).collect();
        if !gone.is_empty() {
            lines.push(format!(
                "[skills] no longer available: {}",
                gone.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        *self.ext().told.lock().unwrap_or_else(|e| e.into_inner()) = Some(names);
        Some(lines.join("\n"))
    }

    /// Whether this conversation already holds `name`'s body.
    fn skill_loaded(&self, name: &str) -> bool {
        let marker = format!("{LOADED_PREFIX}{name} loaded");
        self.lock().history.iter().any(|m| {
            matches!(m.role, MessageRole::User | MessageRole::Tool) && m.text().starts_with(&marker)
        })
    }

    /// The skills a prompt triggers by keyword: their bodies, to append after the prompt.
    fn skill_triggers(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for skill in self.skills() {
            let Some(phrase) = phrases(&skill).into_iter().find(|p| mentions(text, p)) else {
                continue;
            };
            if self.skill_loaded(&skill.name) {
                continue;
            }
            self.activate_skill(&skill);
            self.lock().trajectory.record(
                "skill",
                json!({"name": skill.name, "by": "keyword", "keyword": phrase, "file": skill.file}),
            );
            self.notice(
                NoticeLevel::Info,
                format!("skill {} loaded (keyword '{phrase}')", skill.name),
            );
            out.push(render(
                &skill,
                "",
                &format!("triggered by the keyword '{phrase}'"),
            ));
        }
        out
    }

    /// Puts `skill`'s `allowed-tools` in force for the rest of the turn.
    fn activate_skill(&self, skill: &Skill) {
        if !skill.allowed_tools.is_empty() {
            let approval = (skill.origin == HookSource::Project).then(|| skill.file.clone());
            *self.ext().active.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((skill.name.clone(), skill.allowed_tools.clone(), approval));
        }
    }

    /// At the end of a turn: no skill runs any more.
    fn end_skill_scope(&self) {
        self.ext()
            .active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// The `skill` tool; `None` when `name` is another tool.
    fn run_skill_tool(&self, name: &str, raw: &str) -> Option<ToolOutput> {
        if name != "skill" {
            return None;
        }
        let raw = if raw.trim().is_empty() { "{}" } else { raw };
        let args = match serde_json::from_str::<SkillArgs>(raw) {
            Ok(a) => a,
            Err(e) => {
                return Some(ToolOutput::err(format!(
                    "invalid arguments for skill: {e}. Send {{\"name\": \"<skill>\"}} (optionally \"arguments\": \"…\")."
                )));
            }
        };
        let skill = match self.find_skill(&args.name) {
            Ok(s) => s,
            Err(e) => return Some(ToolOutput::err(e)),
        };
        let arguments = match &args.arguments {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        self.activate_skill(&skill);
        self.lock().trajectory.record(
            "skill",
            json!({"name": skill.name, "by": "tool", "file": skill.file}),
        );
        Some(ToolOutput::ok(render(
            &skill,
            &arguments,
            "by the skill tool",
        )))
    }

    /// While a skill with `allowed-tools` runs: a call they cover that the policy would put
    /// to the user (or refuse only because nobody is there to ask) is allowed. The policy
    /// decides again with the entries as allow rules, so every check that comes before an
    /// allow rule (role, deny rules, protected paths, sandbox, network, secret files, ask
    /// rules, undetermined commands) still stands; only the mode's question goes.
    fn skill_preapproval(
        &self,
        action: &yuyao_policy::Action,
        raw_args: &str,
        decision: &mut yuyao_policy::Decision,
    ) {
        use yuyao_policy::Verdict;
        let pending = match decision.verdict {
            Verdict::Ask | Verdict::Review => true,
            Verdict::Deny => decision.source.ends_with("(unattended)"),
            Verdict::Allow => false,
        };
        if !pending {
            return;
        }
        let Some((skill, allowed, approval)) = self
            .ext()
            .active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        else {
            return;
        };
        if !allowed_by(&allowed, &action.tool, raw_args) {
            return;
        }
        // A repository's skill widens what runs unasked only as the content the user
        // approved (DESIGN §8): one the agent wrote, or changed since, pre-approves nothing.
        if let Some(file) = approval
            && let Some(why) = self.project_file_held(&file)
        {
            self.warn_once(vec![format!(
                "skills: the allowed-tools of '{skill}' pre-approve nothing: {why}"
            )]);
            return;
        }
        let mut policy = self.lock().policy.clone();
        policy.allow = allowed
            .iter()
            .filter_map(|e| yuyao_policy::Rule::parse(e.trim()).ok())
            .collect();
        policy.granted.clear();
        let again = policy.decide(action);
        if again.verdict != Verdict::Allow || !again.source.starts_with("allow ") {
            return;
        }
        *decision = yuyao_policy::Decision {
            verdict: Verdict::Allow,
            reason: format!(
                "pre-approved by the skill '{skill}' ({})",
                again.source.trim_start_matches("allow ")
            ),
            source: "skill allowed-tools".into(),
            segment: again.segment,
        };
    }
}

/// Whether `allowed` (a skill's `allowed-tools`) lets `tool` run with these arguments.
fn allowed_by(allowed: &[String], tool: &str, raw_args: &str) -> bool {
    // Asking the user a question acts on nothing.
    if canonical_tool_name(tool) == Some("ask-user") {
        return true;
    }
    let mut command_rules = Vec::new();
    for entry in allowed {
        let entry = entry.trim();
        if yuyao_policy::is_mcp_tool(tool) {
            if tool == entry
                || tool
                    .strip_prefix(entry)
                    .is_some_and(|r| r.starts_with("__"))
            {
                return true;
            }
            continue;
        }
        let head = entry.split('(').next().unwrap_or(entry).trim();
        if canonical_tool_name(head).is_none()
            || canonical_tool_name(head) != canonical_tool_name(tool)
        {
            continue;
        }
        match yuyao_policy::Rule::parse(entry) {
            Ok(rule) => match &rule.pattern {
                Some(yuyao_policy::rules::Pattern::Command(_)) => command_rules.push(rule),
                // A tool-wide entry, or a path pattern (the policy checks paths).
                _ => return true,
            },
            Err(_) => continue,
        }
    }
    if command_rules.is_empty() {
        return false;
    }
    // `Bash(git:*)`: every segment of the command must match one of the entries.
    let command = serde_json::from_str::<Value>(raw_args)
        .ok()
        .and_then(|v| v.get("command").and_then(Value::as_str).map(str::to_string));
    let Some(command) = command else {
        return false;
    };
    match yuyao_policy::segments(&command) {
        Ok(segs) => {
            !segs.is_empty()
                && segs
                    .iter()
                    .all(|s| command_rules.iter().any(|r| r.matches_segment(s)))
        }
        Err(_) => false,
    }
}

/// A task that is `/flow:<name> …` or `/skill <name> …`: the skill runs, in every front.
pub fn runs_a_skill(task: &str) -> bool {
    let mut words = task.split_whitespace();
    match words.next() {
        Some(w) if w.starts_with("/flow:") => true,
        Some("/skill" | "/skills") => words.next().is_some_and(|w| w != "list" && w != "ls"),
        _ => false,
    }
}

pub(crate) trait FlowTable {
    fn flow_table(&self) -> Vec<Value>;
}

impl FlowTable for Session {
    /// `/flow:<name>` rows for `/help` and completion (the shape of `custom_command_table`).
    fn flow_table(&self) -> Vec<Value> {
        self.skills()
            .into_iter()
            .filter(|k| k.is_flow())
            .map(|k| {
                json!({
                    "name": format!("flow:{}", k.name),
                    "aliases": [],
                    "usage": "[args]",
                    "help": format!("run the flow of the skill {}: {}", k.name, k.description),
                    "group": "Flows",
                    "available": true,
                    "source": k.source,
                    "file": k.file.display().to_string(),
                })
            })
            .collect()
    }
}

/// `/skills [list]` and `/skill <name> [args]`.
pub(crate) fn skills_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args.first().map(String::as_str) {
        None | Some("list") | Some("ls") => Ok(list(s)),
        Some(name) => run_skill(s, name, &args[1..]),
    }
}

fn list(s: &Session) -> String {
    let mut out = Vec::new();
    if !s.feature_enabled("skills") {
        out.push("skills are disabled (features.skills = false): none loads".to_string());
    }
    let list = s.skills();
    if list.is_empty() && s.feature_enabled("skills") {
        out.push(format!(
            "no skills; folders read: {}, plugins' skills/",
            roots(&s.paths().home, &s.paths().project)
                .iter()
                .map(|(p, _, _)| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        if !s.project_extensions_allowed() {
            out.push("(a project's skills load once the project is trusted: /trust)".into());
        }
    }
    for k in &list {
        let mut extra = Vec::new();
        if !k.triggers.is_empty() {
            extra.push(format!("triggers: {}", k.triggers.join(", ")));
        }
        if !k.allowed_tools.is_empty() {
            extra.push(format!("allowed-tools: {}", k.allowed_tools.join(", ")));
        }
        if k.is_flow() {
            extra.push(format!("flow: /flow:{}", k.name));
        }
        out.push(format!(
            "  {:<20} [{}] {}{}  ({})",
            k.name,
            k.source,
            k.description,
            if extra.is_empty() {
                String::new()
            } else {
                format!(" · {}", extra.join(" · "))
            },
            k.file.display()
        ));
    }
    let plugins = s.plugin_lines();
    if !plugins.is_empty() {
        out.push("plugins:".into());
        out.extend(plugins.into_iter().map(|l| format!("  {l}")));
    }
    out.join("\n")
}

/// `/skill <name> [args]`: the skill's body runs as a turn, with its `allowed-tools` in force.
fn run_skill(s: &Session, name: &str, rest: &[String]) -> Result<String, CoreError> {
    let skill = s.find_skill(name).map_err(CoreError::Usage)?;
    if s.is_busy() {
        return Err(CoreError::Usage(format!(
            "/skill {name} starts a turn: send it when the running turn has ended"
        )));
    }
    let args = rest
        .iter()
        .map(|a| {
            if a.contains(char::is_whitespace) {
                format!("'{a}'")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    let prompt = render(&skill, &args, "by /skill");
    s.lock().trajectory.record(
        "skill",
        json!({"name": skill.name, "by": "command", "file": skill.file, "arguments": args}),
    );
    // No `@path` attachments and no keyword triggers: the text is the skill's, not the user's.
    s.expand_next_prompt();
    s.activate_skill(&skill);
    let answer = s.chat(&prompt);
    answer.map(|a| if s.has_handler() { String::new() } else { a })
}

/// Messages of the history that are loaded skills (for tests and `/context`).
#[allow(dead_code)]
pub(crate) fn loaded_in(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .filter_map(|m| m.text().strip_prefix(LOADED_PREFIX).map(str::to_string))
        .filter_map(|t| t.split(' ').next().map(str::to_string))
        .collect()
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    // Loading a skill reads instructions: no evidence of work on the workspace.
    specs: &[yuyao_core::registry::core(
        "skill",
        false,
        |s, name, call, _| {
            (
                yuyao_core::registry::one(s.run_skill_tool(name, &call.arguments)),
                false,
            )
        },
    )],
    summaries: &[("skill", "Load a skill's instructions (see /skills)")],
    names: |s| {
        if s.skill_tool_offered() {
            NAMES.to_vec()
        } else {
            Vec::new()
        }
    },
    schemas: |_, ok| {
        if ok("skill") {
            vec![schema()]
        } else {
            Vec::new()
        }
    },
    beside: None,
};

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "skills",
    // `/flow:<name> …` or `/skill <name> …` as a headless task runs the skill.
    task_command: Some(runs_a_skill),
    // A project skill (or a project plugin's) whose `allowed-tools` pre-approve tools widens
    // what runs unasked.
    program_files: Some(|home, project| {
        let mut roots: Vec<(PathBuf, HookSource, String)> = roots(home, project)
            .into_iter()
            .filter(|(_, o, _)| *o == HookSource::Project)
            .collect();
        let (plugins, _) = crate::plugins::load(home, project);
        for p in plugins.iter().filter(|p| p.source == HookSource::Project) {
            if let Some(dir) = p.dir_of("skills") {
                roots.push((dir, HookSource::Project, String::new()));
            }
        }
        let (skills, _) = load_from(&roots);
        skills
            .into_iter()
            .filter(|k| !k.allowed_tools.is_empty())
            .map(|k| k.file)
            .collect()
    }),
    state: Some(|_| Box::<ExtState>::default()),
    // Skills: names and descriptions only, fixed with the prompt (later ones as notes).
    system_tail: Some(|s, system| s.with_skills_section(system)),
    // Skills whose trigger keyword the prompt names load after it.
    prompt_context: Some(|s, text| s.skill_triggers(text)),
    // A skill added or removed since the prompt was built: said in a note.
    step_note: Some(|s| s.skills_note()),
    // A running skill's `allowed-tools` spare the mode's question (never a refusal).
    preapprove: Some(|s, action, raw_args, decision| {
        s.skill_preapproval(action, raw_args, decision)
    }),
    // A skill's `allowed-tools` last as long as the turn it was loaded in.
    turn_end: Some(|s| s.end_skill_scope()),
    commands: &[yuyao_core::cmd!(
        "skills",
        ["skill"],
        "[list | <name> [args]]",
        "list skills and plugins, or run one (/flow:<name> runs a flow)",
        Some(crate::skills::skills_cmd)
    )],
    tools: Some(&TOOLS),
    ..yuyao_core::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_triggers_and_warnings() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("skills");
        let put = |p: PathBuf, text: &str| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            root.join("pdf-report/SKILL.md"),
            "---\nname: pdf-report\ndescription: Make a PDF report\nallowed-tools: [Read, \"Bash(git log:*)\"]\ntriggers: [quarterly numbers]\n---\nDo it.\n",
        );
        put(root.join("pdf-report/template.txt"), "t");
        put(
            root.join("broken/SKILL.md"),
            "---\nname: broken\ndescription: [oops\n---\nx\n",
        );
        let secret = t.path().join("secret.txt");
        std::fs::write(&secret, "TOKEN").unwrap();
        std::fs::create_dir_all(root.join("linked")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join("linked/SKILL.md")).unwrap();
        let (_, w) = load_from(&[(root.clone(), HookSource::Project, "project".into())]);
        assert!(
            w.iter().any(|w| w.contains("linked/SKILL.md: a link")),
            "{w:?}"
        );
        std::fs::remove_file(root.join("linked/SKILL.md")).unwrap();
        let mcp = vec!["mcp__time".to_string()];
        assert!(allowed_by(&mcp, "mcp__time__now", "{}"));
        assert!(!allowed_by(&mcp, "mcp__timer__now", "{}") && !allowed_by(&mcp, "read", "{}"));
        assert!(allowed_by(&mcp, "ask-user", "{}"));
        assert!(runs_a_skill("/flow:release now") && runs_a_skill(" /skill x 1"));
        assert!(!runs_a_skill("/skills list") && !runs_a_skill("/skill") && !runs_a_skill("fix"));
        let (list, warnings) = load_from(&[(root.clone(), HookSource::User, "user".into())]);
        assert_eq!(list.len(), 1);
        assert!(
            warnings[0].contains("broken/SKILL.md: line 4"),
            "{warnings:?}"
        );
        let k = &list[0];
        assert!(
            phrases(k)
                .iter()
                .any(|p| mentions("Show the Quarterly  numbers now", p))
        );
        assert!(
            phrases(k)
                .iter()
                .any(|p| mentions("make a pdf report please", p))
        );
        assert!(!phrases(k).iter().any(|p| mentions("numbers", p)));
        let text = render(k, "", "test");
        assert!(text.contains("template.txt") && text.contains("Do it."));
        let allowed = &k.allowed_tools;
        assert!(allowed_by(allowed, "read", "{}"));
        assert!(!allowed_by(allowed, "write", "{}"));
        assert!(allowed_by(allowed, "bash", r#"{"command": "git log -1"}"#));
        assert!(!allowed_by(allowed, "bash", r#"{"command": "rm -rf x"}"#));
        assert!(!allowed_by(
            allowed,
            "bash",
            r#"{"command": "git log; rm x"}"#
        ));
    }
}
