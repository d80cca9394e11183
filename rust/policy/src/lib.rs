//! Permission adjudication and confinement (DESIGN §5): whether a tool call may run, the OS
//! sandbox every tool process runs in, and the redaction of what comes back.
//!
//! Every tool call passes [`Policy::decide`] in one fixed order: read-only role/mode, deny
//! rules, sandbox and network, then ask/allow.
//! Each decision names the rule or mode that made it, for the trace and `sandbox explain`.

mod advice;
mod bash_tree;
pub mod domains;
mod helper_exe;
mod namespaces;
pub mod os_denies;
pub mod protected;
pub mod read_denies;
pub mod readonly;
pub mod redact;
pub mod rules;
pub mod sandbox;
pub mod sensitive;
pub mod shell;
mod shell_programs;
mod spawner;

use std::path::{Path, PathBuf};
use yuyao_protocol::{Mode, NetworkAccess, Role, SandboxLevel};

pub use advice::{Change, Remedy};
pub use rules::Rule;
pub use shell::{Segment, Undetermined, segments, segments_in};

/// Tools that change files.
pub const FILE_MUTATING: &[&str] = &[
    "write",
    "edit",
    "multi-edit",
    "apply-patch",
    "notebook-edit",
];
/// Tools that run a shell command.
pub const SHELL_TOOLS: &[&str] = &["bash", "monitor"];
/// Tools that reach the network.
pub const NETWORK_TOOLS: &[&str] = &["web-fetch", "web-search", "browser"];

/// What a tool call wants to do, as far as the policy is concerned.
#[derive(Debug, Clone)]
pub struct Action {
    /// Canonical tool name.
    pub tool: String,
    /// The command line, for shell tools.
    pub command: Option<String>,
    /// Absolute target paths, for file tools.
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// A human must confirm (the front's handler is asked; headless refuses).
    Ask,
    /// The secondary classifier decides (auto-review mode).
    Review,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub reason: String,
    /// The rule or mode that decided.
    pub source: String,
    /// The shell segment (or path) the deciding rule matched, when one did.
    pub segment: Option<String>,
}

impl Decision {
    fn new(verdict: Verdict, reason: impl Into<String>, source: impl Into<String>) -> Self {
        Decision {
            verdict,
            reason: reason.into(),
            source: source.into(),
            segment: None,
        }
    }

    fn on(mut self, segment: impl Into<String>) -> Self {
        self.segment = Some(segment.into());
        self
    }
}

/// Programs that take a sensitive file's name without reading its content.
const NAME_ONLY: &[&str] = &[
    "echo", "printf", "ls", "stat", "test", "[", "[[", "rm", "touch", "chmod", "chown", "du", "wc",
    "realpath", "readlink", "basename", "dirname", "mkdir", "file",
];

#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: Mode,
    pub role: Role,
    pub sandbox: SandboxLevel,
    pub network: NetworkAccess,
    pub allow: Vec<Rule>,
    /// Rules that always turn a matching call into a confirmation (even in yolo).
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// "Always" answers given during this session.
    pub granted: Vec<Rule>,
    /// Files the user named with `@path`: the exfiltration guard lets these through.
    pub mentioned: Vec<PathBuf>,
    /// Nobody is there to answer a question.
    pub headless: bool,
    /// Roots the file tools may write under (project root and `/add-dir` folders).
    pub roots: Vec<PathBuf>,
    /// yuyao's own folder (`~/.yuyao`): never written by a tool.
    pub home: Option<PathBuf>,
    /// MCP tools their server marks read-only (`readOnlyHint`); every other MCP tool is
    /// taken to change something.
    pub mcp_read_only: Vec<String>,
}

/// An MCP tool as the model calls it: `mcp__<server>__<tool>`.
pub fn is_mcp_tool(tool: &str) -> bool {
    tool.starts_with("mcp__")
}

/// The shell command's segments, or why they cannot be determined. Scripts the line runs
/// are read relative to `cwd` (the project root until the session cwd reaches the policy).
fn parse(cmd: &str, cwd: &Path) -> Result<Vec<Segment>, Undetermined> {
    shell::segments_in(cmd, Some(cwd))
}

impl Policy {
    pub fn new(mode: Mode, role: Role, project: &Path) -> Self {
        Policy {
            mode,
            role,
            sandbox: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::Off,
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            granted: Vec::new(),
            mentioned: Vec::new(),
            headless: false,
            roots: vec![project.to_path_buf()],
            home: None,
            mcp_read_only: Vec::new(),
        }
    }

    /// Whether the action changes the workspace (seed 001's definition).
    pub fn is_mutating(&self, a: &Action) -> bool {
        let segs = a.command.as_deref().map(|c| parse(c, self.project()));
        Self::mutating_with(a, segs.as_ref(), self.trust_for(a)) || self.mcp_mutating(a)
    }

    /// The classifier's trust for this action: only a shell command needs the probe.
    fn trust_for(&self, a: &Action) -> readonly::Trust {
        if SHELL_TOOLS.contains(&a.tool.as_str()) {
            self.shell_trust()
        } else {
            readonly::Trust::Strict
        }
    }

    /// How far the shell classifier may lean on the OS sandbox: a read-only session's
    /// commands run under the read-only sandbox (`os_level`), so where the kernel enforces
    /// it the sandboxed list applies; everywhere else (a command an allow rule or a mode
    /// lets through runs with write access), and where the kernel cannot enforce it, the
    /// strict list.
    pub fn shell_trust(&self) -> readonly::Trust {
        let read_only = sandbox::Confinement {
            level: SandboxLevel::ReadOnly,
            network: self.network,
            ..Default::default()
        };
        if self.read_only_reason().is_some()
            && sandbox::support().cannot_enforce(&read_only).is_none()
        {
            readonly::Trust::Sandboxed
        } else {
            readonly::Trust::Strict
        }
    }

    fn mcp_mutating(&self, a: &Action) -> bool {
        is_mcp_tool(&a.tool) && !self.mcp_read_only.contains(&a.tool)
    }

    fn mutating_with(
        a: &Action,
        segs: Option<&Result<Vec<Segment>, Undetermined>>,
        trust: readonly::Trust,
    ) -> bool {
        if FILE_MUTATING.contains(&a.tool.as_str()) {
            return true;
        }
        if SHELL_TOOLS.contains(&a.tool.as_str()) {
            return match segs {
                Some(Ok(segs)) => !segs
                    .iter()
                    .all(|s| readonly::segment_is_read_only_under(s, trust)),
                _ => true,
            };
        }
        false
    }

    /// Why the session is read-only, if it is (a conflict of axes resolves to read-only).
    pub fn read_only_reason(&self) -> Option<String> {
        if self.mode.is_read_only() {
            Some("plan mode is read-only".into())
        } else if self.role.is_read_only() {
            Some("the ask role answers only and makes no changes".into())
        } else if self.sandbox == SandboxLevel::ReadOnly {
            Some("the read-only sandbox forbids changes".into())
        } else {
            None
        }
    }

    pub fn decide(&self, a: &Action) -> Decision {
        let tool = a.tool.as_str();
        let segs = a.command.as_deref().map(|c| parse(c, self.project()));
        let trust = self.trust_for(a);
        let mutating = Self::mutating_with(a, segs.as_ref(), trust) || self.mcp_mutating(a);

        // 2. role and mode
        if mutating && let Some(why) = self.read_only_reason() {
            let what = match &segs {
                Some(Err(u)) => format!(" ({u})"),
                Some(Ok(s)) => match s.iter().find_map(|s| readonly::refusal_hint(s, trust)) {
                    Some(hint) => format!(" (only read-only commands may run; {hint})"),
                    None => " (only read-only commands may run)".into(),
                },
                None => String::new(),
            };
            return Decision::new(Verdict::Deny, format!("{why}{what}"), mode_source(self));
        }

        // 3. deny rules: one matching segment or path vetoes.
        for r in self.deny.iter().filter(|r| self.judges(r, tool)) {
            if let Some(hit) = self.rule_hit(r, a, segs.as_ref()) {
                return Decision::new(
                    Verdict::Deny,
                    format!("denied by rule {} (matched: {hit})", r.text),
                    format!("deny {}", r.text),
                )
                .on(hit);
            }
        }

        // 5. sandbox: yuyao's control files and the repository's git configuration are never
        // written by a file tool, in any mode (the OS sandbox keeps them read-only for bash).
        if FILE_MUTATING.contains(&tool)
            && let Some(why) = a
                .paths
                .iter()
                .find_map(|p| protected::protected_reason(p, &self.roots, self.home.as_deref()))
        {
            return Decision::new(Verdict::Deny, why, "protected control file");
        }
        // The browser stays available with the network off: it reaches loopback only
        // (enforced inside Chromium, see yuyao_tools::browser).
        if NETWORK_TOOLS.contains(&tool) && tool != "browser" && self.network == NetworkAccess::Off
        {
            return Decision::new(
                Verdict::Deny,
                "network access is off (--network off); turn it on with --network on",
                "network off",
            );
        }
        if FILE_MUTATING.contains(&tool)
            && self.sandbox == SandboxLevel::WorkspaceWrite
            && let Some(p) = a.paths.iter().find(|p| !self.within_roots(p))
        {
            return Decision::new(
                Verdict::Deny,
                format!(
                    "{} is outside the workspace ({}); the workspace-write sandbox forbids it",
                    p.display(),
                    self.project().display()
                ),
                "sandbox workspace-write",
            );
        }

        if SHELL_TOOLS.contains(&tool) {
            // Only the level and the network decide what the kernel must enforce.
            let c = sandbox::Confinement {
                level: self.os_level(),
                network: self.network,
                ..Default::default()
            };
            if let Some(why) = sandbox::support().cannot_enforce(&c) {
                return Decision::new(
                    Verdict::Deny,
                    format!(
                        "the OS sandbox cannot be enforced on this machine: {why}; the command was not run (see `yuyao sandbox explain`; --sandbox full-access --network on runs without confinement)"
                    ),
                    "sandbox unavailable",
                );
            }
        }

        // Exfiltration guard: a sensitive file's content needs the user to have named it.
        if let Some(hit) = self.sensitive_hit(a, segs.as_ref()) {
            return self.ask_or_refuse_by(
                format!(
                    "{hit} looks like a secret (key, credential or .env file); its content is only read when the user names it with @{hit} or approves"
                ),
                "sensitive file".into(),
            )
            .on(hit);
        }

        // 6. ask rules veto like deny rules, but into a confirmation.
        for r in self.ask.iter().filter(|r| self.judges(r, tool)) {
            if let Some(hit) = self.rule_hit(r, a, segs.as_ref()) {
                return self
                    .ask_or_refuse_by(
                        format!("rule {} asks for a confirmation (matched: {hit})", r.text),
                        format!("ask {}", r.text),
                    )
                    .on(hit);
            }
        }

        // 6. ask / allow
        if !mutating {
            return Decision::new(Verdict::Allow, "read-only", "read-only");
        }
        // Undetermined means not permitted: a confirmation even in yolo, refused unattended.
        if let Some(Err(u)) = &segs {
            return self.ask_or_refuse_by(
                format!("{u}; it needs an explicit approval"),
                "undetermined command".into(),
            );
        }
        if let Some(r) = self.allowing_rule(a, segs.as_ref()) {
            return Decision::new(
                Verdict::Allow,
                format!("allowed by rule {}", r.text),
                format!("allow {}", r.text),
            );
        }
        match self.mode {
            Mode::Yolo => {
                Decision::new(Verdict::Allow, "yolo mode approves everything", "mode yolo")
            }
            Mode::AutoEdit if FILE_MUTATING.contains(&tool) => Decision::new(
                Verdict::Allow,
                "auto-edit mode approves file edits",
                "mode auto-edit",
            ),
            Mode::AutoReview => Decision::new(
                Verdict::Review,
                "auto-review: the classifier decides",
                "mode auto-review",
            ),
            _ => self.ask_or_refuse(format!("{} mode asks before every change", self.mode)),
        }
    }

    fn ask_or_refuse(&self, why: String) -> Decision {
        self.ask_or_refuse_by(why, format!("mode {}", self.mode))
    }

    fn ask_or_refuse_by(&self, why: String, source: String) -> Decision {
        if self.headless {
            Decision::new(
                Verdict::Deny,
                format!("{why}, and nobody is there to approve it in this unattended run"),
                format!("{source} (unattended)"),
            )
        } else {
            Decision::new(Verdict::Ask, why, source)
        }
    }

    /// Whether a deny or ask rule judges this tool: rules for the tool, and path rules
    /// (`Edit(glob)`, `Read(glob)`) for the paths a shell command writes or reads.
    fn judges(&self, r: &Rule, tool: &str) -> bool {
        r.covers_tool(tool) || (SHELL_TOOLS.contains(&tool) && r.path_access().is_some())
    }

    /// What a deny or ask rule matched in this action (a segment's command line or a path),
    /// if anything. Fail closed: a shell rule vetoes a segment unless its arguments are
    /// known to miss, and an undetermined line in which the rule's program word appears.
    fn rule_hit(
        &self,
        r: &Rule,
        a: &Action,
        segs: Option<&Result<Vec<Segment>, Undetermined>>,
    ) -> Option<String> {
        if let (Some(access), Some(segs)) = (r.path_access(), segs) {
            return match segs {
                Ok(s) => self.shell_path_hit(r, access, s),
                // Left to the confirmation an undetermined line needs, and to the OS sandbox.
                Err(_) => None,
            };
        }
        match (segs, r.pattern.is_some()) {
            (Some(Ok(s)), true) => s
                .iter()
                .find(|seg| r.vetoes_segment(seg))
                .map(Segment::command_line),
            (Some(Err(_)), true) => a.command.as_deref().filter(|c| r.vetoes_text(c)).map(|c| {
                format!(
                    "{} (undetermined; the rule's program appears in it)",
                    c.trim()
                )
            }),
            (None, true) if matches!(r.pattern, Some(rules::Pattern::Mcp(_))) => {
                Some(a.tool.clone())
            }
            (None, true) => a
                .paths
                .iter()
                .find(|p| r.matches_path(p, self.project()))
                .map(|p| p.display().to_string()),
            (_, false) => Some(
                a.command
                    .clone()
                    .or_else(|| a.paths.first().map(|p| p.display().to_string()))
                    .unwrap_or_else(|| a.tool.clone()),
            ),
        }
    }

    /// A path a shell command writes (or, for a `Read` rule, reads or writes) that the path
    /// rule `r` matches. Relative paths resolve lexically against the project root and
    /// every literal `cd` target of the line. Where a known writer's (or reader's) path
    /// cannot be determined — a glob, an expansion, a computed `cd`, `git checkout BRANCH` —
    /// the rule is taken to match (fail closed).
    fn shell_path_hit(
        &self,
        r: &Rule,
        access: rules::PathAccess,
        segs: &[Segment],
    ) -> Option<String> {
        let project = self.project();
        let mut bases = vec![project.to_path_buf()];
        let mut computed_cd = false;
        for s in segs
            .iter()
            .filter(|s| matches!(s.program.as_str(), "cd" | "pushd" | "popd"))
        {
            match (
                s.args.iter().position(|a| !a.starts_with('-')),
                s.program.as_str(),
            ) {
                // Each `cd` may follow any earlier one (`cd src; cd sub`): every combination.
                (Some(i), "cd" | "pushd") if !s.arg_computed(i) && s.args[i] != "-" => {
                    let more: Vec<PathBuf> = bases.iter().map(|b| resolve(b, &s.args[i])).collect();
                    bases.extend(more);
                    bases.sort();
                    bases.dedup();
                    if bases.len() > 64 {
                        computed_cd = true;
                    }
                }
                _ => computed_cd = true,
            }
        }
        for s in segs {
            let p = shell::segment_paths(s);
            let unknown = "paths not determinable";
            if p.unknown_writes {
                return Some(format!("{} ({unknown})", s.command_line()));
            }
            let mut candidates: Vec<(String, bool, bool)> = p
                .writes
                .into_iter()
                .map(|(w, c)| (w, c, p.recursive_writes))
                .collect();
            if access == rules::PathAccess::Read {
                candidates.extend(p.reads.into_iter().map(|(w, c)| (w, c, p.recursive_reads)));
            }
            for (word, computed, recursive) in candidates {
                if computed {
                    return Some(format!("{} ({unknown}: {word})", s.command_line()));
                }
                let relative = !word.starts_with('/') && !word.starts_with('~');
                if relative && computed_cd {
                    return Some(format!(
                        "{} ({unknown}: after a computed cd)",
                        s.command_line()
                    ));
                }
                for b in &bases {
                    let path = resolve(b, &word);
                    if r.matches_path(&path, project)
                        || (recursive && r.may_match_under(&path, project))
                    {
                        return Some(path.display().to_string());
                    }
                    if !relative {
                        break;
                    }
                }
            }
        }
        None
    }

    /// A sensitive file this action would read that the user did not name, if any.
    fn sensitive_hit(
        &self,
        a: &Action,
        segs: Option<&Result<Vec<Segment>, Undetermined>>,
    ) -> Option<String> {
        let allowed_path = |p: &Path| {
            self.mentioned.iter().any(|m| m == p)
                || self.allow.iter().chain(self.granted.iter()).any(|r| {
                    r.covers_tool(&a.tool)
                        && r.pattern.is_some()
                        && r.matches_path(p, self.project())
                })
        };
        if rules::FILE_TOOLS.contains(&a.tool.as_str()) && !FILE_MUTATING.contains(&a.tool.as_str())
        {
            return a
                .paths
                .iter()
                .find(|p| sensitive::is_sensitive(p) && !allowed_path(p))
                .map(|p| p.display().to_string());
        }
        let Some(Ok(segs)) = segs else { return None };
        for seg in segs {
            if NAME_ONLY.contains(&seg.program.as_str()) {
                continue;
            }
            for w in &seg.args {
                if !sensitive::word_is_sensitive(w) {
                    continue;
                }
                let value = w.split_once('=').map_or(w.as_str(), |(_, v)| v);
                let rel = Path::new(value.trim_start_matches("./"));
                let named = self
                    .mentioned
                    .iter()
                    .any(|m| m.ends_with(rel) || m == Path::new(value));
                let allowed = self.allow.iter().chain(self.granted.iter()).any(|r| {
                    r.covers_tool(&a.tool) && r.matches_segment(seg) && r.pattern.is_some()
                });
                if !named && !allowed {
                    return Some(value.to_string());
                }
            }
        }
        None
    }

    /// The OS confinement this policy asks for (writable folders: the roots and temp dir; a
    /// read-only session or role writes nowhere — the tools add their scratch and build
    /// outputs, see `ToolContext::confinement`).
    pub fn confinement(&self) -> sandbox::Confinement {
        let level = self.os_level();
        let writable = if level == SandboxLevel::ReadOnly {
            Vec::new()
        } else {
            let mut w = self.roots.clone();
            w.push(std::env::temp_dir());
            w
        };
        let (deny_read, deny_write) = os_denies::os_denies(self);
        sandbox::Confinement {
            level,
            network: self.network,
            writable,
            deny_read,
            deny_write,
            ..Default::default()
        }
    }

    /// The OS sandbox level tool processes get: read-only whenever the mode or role is.
    fn os_level(&self) -> SandboxLevel {
        if self.read_only_reason().is_some() {
            SandboxLevel::ReadOnly
        } else {
            self.sandbox
        }
    }

    /// A dry run of the adjudication, step by step, for `sandbox explain "<command>"`.
    pub fn explain(&self, a: &Action, confinement: &sandbox::Confinement) -> String {
        let mut out = String::new();
        if let Some(cmd) = &a.command {
            out.push_str(&format!("command: {cmd}\n"));
            match parse(cmd, self.project()) {
                Ok(segs) => {
                    out.push_str(&format!("segments ({}):\n", segs.len()));
                    let trust = self.shell_trust();
                    for (i, s) in segs.iter().enumerate() {
                        let ro = if readonly::segment_is_read_only_under(s, trust) {
                            "read-only"
                        } else {
                            "mutating"
                        };
                        let mut notes = vec![format!("program {}", s.program), ro.to_string()];
                        if s.substituted {
                            notes.push("from a substitution".into());
                        }
                        if s.writes_file {
                            notes.push("redirects to a file".into());
                        }
                        for r in &self.deny {
                            if r.covers_tool(&a.tool) && r.vetoes_segment(s) {
                                notes.push(format!("matches deny {}", r.text));
                            }
                        }
                        for r in &self.ask {
                            if r.covers_tool(&a.tool) && r.vetoes_segment(s) {
                                notes.push(format!("matches ask {}", r.text));
                            }
                        }
                        for r in self.allow.iter().chain(self.granted.iter()) {
                            if r.covers_tool(&a.tool) && r.matches_segment(s) {
                                notes.push(format!("matches allow {}", r.text));
                            }
                        }
                        out.push_str(&format!(
                            "  {}. {}  ({})\n",
                            i + 1,
                            s.command_line(),
                            notes.join("; ")
                        ));
                    }
                }
                Err(u) => out.push_str(&format!("segments: undetermined — {}\n", u.0)),
            }
        } else {
            out.push_str(&format!("tool: {}", a.tool));
            for p in &a.paths {
                out.push_str(&format!(" {}", p.display()));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "in force: mode {}, role {}, sandbox {}, network {}; rules: {} allow, {} ask, {} deny\n",
            self.mode,
            self.role,
            self.sandbox,
            self.network,
            self.allow.len() + self.granted.len(),
            self.ask.len(),
            self.deny.len()
        ));
        let mut line = |label: &str, p: &Policy| {
            let d = p.decide(a);
            let verdict = match d.verdict {
                Verdict::Allow => "ALLOW",
                Verdict::Ask => "ASK (a confirmation)",
                Verdict::Review => "REVIEW (the auto-review classifier decides)",
                Verdict::Deny => "DENY",
            };
            let advice = match d.verdict {
                Verdict::Deny => p.advice(a, &d, &[]),
                _ => String::new(),
            };
            out.push_str(&format!(
                "{label}: {verdict} — {}\n  deciding rule: {}{}{}\n",
                d.reason,
                d.source,
                d.segment
                    .as_ref()
                    .map(|s| format!("\n  segment: {s}"))
                    .unwrap_or_default(),
                if advice.is_empty() {
                    String::new()
                } else {
                    format!("\n  {advice}")
                }
            ));
        };
        let mut interactive = self.clone();
        interactive.headless = false;
        let mut unattended = self.clone();
        unattended.headless = true;
        line("interactive", &interactive);
        line("unattended", &unattended);
        if SHELL_TOOLS.contains(&a.tool.as_str()) {
            out.push_str(&format!("OS sandbox: {}\n", sandbox::describe(confinement)));
        }
        out.trim_end().to_string()
    }

    /// An allow (or granted) rule exempts only when it covers every segment or every path.
    fn allowing_rule(
        &self,
        a: &Action,
        segs: Option<&Result<Vec<Segment>, Undetermined>>,
    ) -> Option<&Rule> {
        let tool = a.tool.as_str();
        let rules = self.allow.iter().chain(self.granted.iter());
        let candidates: Vec<&Rule> = rules.filter(|r| r.covers_tool(tool)).collect();
        match segs {
            Some(Ok(s)) => {
                let all = s.iter().all(|seg| {
                    readonly::segment_is_read_only(seg)
                        || candidates.iter().any(|r| r.allows_segment(seg))
                });
                if all {
                    candidates
                        .into_iter()
                        .find(|r| s.iter().any(|seg| r.allows_segment(seg)))
                } else {
                    None
                }
            }
            Some(Err(_)) => None,
            None => candidates.into_iter().find(|r| {
                r.pattern.is_none()
                    || matches!(r.pattern, Some(rules::Pattern::Mcp(_)))
                    || (!a.paths.is_empty()
                        && a.paths.iter().all(|p| r.matches_path(p, self.project())))
            }),
        }
    }

    fn project(&self) -> &Path {
        self.roots
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/"))
    }

    fn within_roots(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| p.starts_with(r)) || p.starts_with(std::env::temp_dir())
    }
}

/// `word` resolved lexically against `base` (`~` is the home folder; `.`/`..` folded).
fn resolve(base: &Path, word: &str) -> PathBuf {
    let joined = if word == "~" || word.starts_with("~/") {
        let home = std::env::var("HOME").unwrap_or_default();
        PathBuf::from(home).join(word.trim_start_matches('~').trim_start_matches('/'))
    } else {
        base.join(word)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn mode_source(p: &Policy) -> String {
    if p.mode.is_read_only() {
        "mode plan".into()
    } else if p.role.is_read_only() {
        "role ask".into()
    } else {
        "sandbox read-only".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bash(cmd: &str) -> Action {
        Action {
            tool: "bash".into(),
            command: Some(cmd.into()),
            paths: vec![],
        }
    }

    fn write(p: &str) -> Action {
        Action {
            tool: "write".into(),
            command: None,
            paths: vec![PathBuf::from(p)],
        }
    }

    fn policy(mode: Mode) -> Policy {
        Policy::new(mode, Role::Execute, Path::new("/proj"))
    }

    #[test]
    fn mcp_tools_are_changes_unless_read_only_and_rules_name_tools_or_servers() {
        let call = |t: &str| Action {
            tool: t.into(),
            command: None,
            paths: vec![],
        };
        let get = call("mcp__time__get_current_time");
        let mut p = policy(Mode::Ask);
        assert_eq!(p.decide(&get).verdict, Verdict::Ask);
        assert_eq!(policy(Mode::Plan).decide(&get).verdict, Verdict::Deny);
        p.mcp_read_only.push(get.tool.clone());
        assert_eq!(p.decide(&get).verdict, Verdict::Allow);
        let mut p = policy(Mode::Ask);
        p.allow.push(Rule::parse("mcp__time").unwrap());
        assert_eq!(p.decide(&get).verdict, Verdict::Allow);
        // `mcp__time` is not `mcp__timeline`.
        assert_eq!(p.decide(&call("mcp__timeline__x")).verdict, Verdict::Ask);
        let mut p = policy(Mode::Yolo);
        p.deny
            .push(Rule::parse("mcp__time__get_current_time").unwrap());
        assert_eq!(p.decide(&get).verdict, Verdict::Deny);
        assert_eq!(
            p.decide(&call("mcp__time__convert_time")).verdict,
            Verdict::Allow
        );
        assert!(Rule::parse("mcp__").is_err());
    }

    #[test]
    fn modes() {
        assert_eq!(
            policy(Mode::Plan).decide(&write("/proj/a")).verdict,
            Verdict::Deny
        );
        assert_eq!(
            policy(Mode::Plan).decide(&bash("ls | head")).verdict,
            Verdict::Allow
        );
        assert_eq!(
            policy(Mode::Ask).decide(&write("/proj/a")).verdict,
            Verdict::Ask
        );
        assert_eq!(
            policy(Mode::AutoEdit).decide(&write("/proj/a")).verdict,
            Verdict::Allow
        );
        assert_eq!(
            policy(Mode::AutoEdit).decide(&bash("rm a")).verdict,
            Verdict::Ask
        );
        assert_eq!(
            policy(Mode::Yolo).decide(&bash("rm a")).verdict,
            Verdict::Allow
        );
        let mut p = policy(Mode::Ask);
        p.headless = true;
        assert_eq!(p.decide(&bash("touch a")).verdict, Verdict::Deny);
        assert_eq!(p.decide(&bash("cat a")).verdict, Verdict::Allow);
    }

    #[test]
    fn deny_vetoes_any_segment_and_allow_needs_all() {
        let mut p = policy(Mode::Yolo);
        p.deny.push(Rule::parse("Bash(rm)").unwrap());
        for cmd in [
            "ls && rm x",
            "echo $(rm x)",
            "sh -c 'r\"\"m x'",
            "find . -exec rm {} +",
        ] {
            assert_eq!(p.decide(&bash(cmd)).verdict, Verdict::Deny, "{cmd}");
        }
        assert_eq!(p.decide(&bash("grep 'rm ' f.txt")).verdict, Verdict::Allow);
        assert_eq!(p.decide(&bash("$X a")).verdict, Verdict::Ask);

        let mut p = policy(Mode::Ask);
        p.allow.push(Rule::parse("Bash(npm install:*)").unwrap());
        assert_eq!(
            p.decide(&bash("npm install && cat x")).verdict,
            Verdict::Allow
        );
        assert_eq!(
            p.decide(&bash("npm install && touch x")).verdict,
            Verdict::Ask
        );
    }

    #[test]
    fn read_only_wins_over_yolo() {
        let mut p = policy(Mode::Yolo);
        p.role = Role::Ask;
        assert_eq!(p.decide(&write("/proj/a")).verdict, Verdict::Deny);
    }

    #[test]
    fn every_reading_tool_meets_the_secret_guard() {
        let mut p = policy(Mode::Yolo);
        p.headless = true;
        for tool in ["read", "read-media", "grep", "glob"] {
            let a = Action {
                tool: tool.into(),
                command: None,
                paths: vec![PathBuf::from("/proj/.env")],
            };
            assert_eq!(p.decide(&a).verdict, Verdict::Deny, "{tool}");
        }
    }

    #[test]
    fn workspace_write_confines_file_tools() {
        let p = policy(Mode::Yolo);
        assert_eq!(p.decide(&write("/etc/passwd")).verdict, Verdict::Deny);
    }
}
