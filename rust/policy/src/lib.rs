//! Permission adjudication (DESIGN §5). Every tool call passes [`Policy::decide`] in one
//! fixed order: read-only role/mode, deny rules, sandbox and network, then ask/allow.
//! Each decision names the rule or mode that made it, for the trace and `sandbox explain`.

pub mod readonly;
pub mod rules;
pub mod shell;

use std::path::{Path, PathBuf};
use yuyao_protocol::{Mode, NetworkAccess, Role, SandboxLevel};

pub use rules::Rule;
pub use shell::{Segment, Undetermined, segments};

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
}

impl Decision {
    fn new(verdict: Verdict, reason: impl Into<String>, source: impl Into<String>) -> Self {
        Decision {
            verdict,
            reason: reason.into(),
            source: source.into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Policy {
    pub mode: Mode,
    pub role: Role,
    pub sandbox: SandboxLevel,
    pub network: NetworkAccess,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// "Always" answers given during this session.
    pub granted: Vec<Rule>,
    /// Nobody is there to answer a question.
    pub headless: bool,
    /// Roots the file tools may write under (project root and `/add-dir` folders).
    pub roots: Vec<PathBuf>,
}

/// The shell command's segments, or why they cannot be determined.
fn parse(cmd: &str) -> Result<Vec<Segment>, Undetermined> {
    shell::segments(cmd)
}

impl Policy {
    pub fn new(mode: Mode, role: Role, project: &Path) -> Self {
        Policy {
            mode,
            role,
            sandbox: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::Off,
            allow: Vec::new(),
            deny: Vec::new(),
            granted: Vec::new(),
            headless: false,
            roots: vec![project.to_path_buf()],
        }
    }

    /// Whether the action changes the workspace (seed 001's definition).
    pub fn is_mutating(&self, a: &Action) -> bool {
        if FILE_MUTATING.contains(&a.tool.as_str()) {
            return true;
        }
        if SHELL_TOOLS.contains(&a.tool.as_str()) {
            return match parse(a.command.as_deref().unwrap_or("")) {
                Ok(segs) => !segs.iter().all(readonly::segment_is_read_only),
                Err(_) => true,
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
        let mutating = self.is_mutating(a);
        let segs = a.command.as_deref().map(parse);

        // 2. role and mode
        if mutating && let Some(why) = self.read_only_reason() {
            let what = match &segs {
                Some(Err(u)) => format!(" ({u})"),
                Some(Ok(_)) => " (only read-only commands may run)".into(),
                None => String::new(),
            };
            return Decision::new(Verdict::Deny, format!("{why}{what}"), mode_source(self));
        }

        // 3. deny rules: one matching segment or path vetoes.
        for r in self.deny.iter().filter(|r| r.covers_tool(tool)) {
            let hit = match (&segs, r.pattern.is_some()) {
                (_, false) => true,
                (Some(Ok(s)), true) => s.iter().any(|seg| r.matches_segment(seg)),
                (Some(Err(_)), true) => false,
                (None, true) => a.paths.iter().any(|p| r.matches_path(p, self.project())),
            };
            if hit {
                return Decision::new(
                    Verdict::Deny,
                    format!("denied by rule {}", r.text),
                    format!("deny {}", r.text),
                );
            }
        }
        let denies_bash = self
            .deny
            .iter()
            .any(|r| r.covers_tool(tool) && r.pattern.is_some());

        // 5. sandbox and network
        if NETWORK_TOOLS.contains(&tool) && self.network == NetworkAccess::Off {
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
                    "{} is outside the workspace ({}); the workspace-write sandbox forbids it (use /add-dir to widen it)",
                    p.display(),
                    self.project().display()
                ),
                "sandbox workspace-write",
            );
        }

        // 6. ask / allow
        if !mutating {
            return Decision::new(Verdict::Allow, "read-only", "read-only");
        }
        if let Some(Err(u)) = &segs
            && (self.mode != Mode::Yolo || denies_bash)
        {
            return self.ask_or_refuse(format!("{u}; it needs an explicit approval"));
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
        if self.headless {
            Decision::new(
                Verdict::Deny,
                format!(
                    "{why}, and nobody is there to approve it in this unattended run (use --mode auto-edit or --yolo, or an --allow rule)"
                ),
                format!("mode {} (unattended)", self.mode),
            )
        } else {
            Decision::new(Verdict::Ask, why, format!("mode {}", self.mode))
        }
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
                        || candidates.iter().any(|r| r.matches_segment(seg))
                });
                if all {
                    candidates
                        .into_iter()
                        .find(|r| s.iter().any(|seg| r.matches_segment(seg)))
                } else {
                    None
                }
            }
            Some(Err(_)) => None,
            None => candidates.into_iter().find(|r| {
                r.pattern.is_none()
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
    fn workspace_write_confines_file_tools() {
        let p = policy(Mode::Yolo);
        assert_eq!(p.decide(&write("/etc/passwd")).verdict, Verdict::Deny);
    }
}
