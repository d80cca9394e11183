//! What would allow a refused call. The remedy is derived from the deciding source (a mode,
//! a role, a sandbox level, a rule, a secret, …) and checked by deciding again with the
//! change applied, step by step, until the call is allowed (or a person can approve it, in
//! an interactive session). So the advice never names the mode already in force, or a
//! mode when a rule is what refuses.

use crate::{Action, Decision, Policy, Rule, Verdict};
use std::fmt::Write as _;
use std::path::PathBuf;
use yuyao_protocol::{Mode, NetworkAccess, Role, SandboxLevel};

/// One change of the session's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Mode(Mode),
    Role(Role),
    Sandbox(SandboxLevel),
    Network,
    RemoveDeny(String),
    RemoveAsk(String),
    Allow(Vec<String>),
    Mention(String),
}

/// The changes that together allow the call, or why nothing does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remedy {
    Changes(Vec<Change>),
    Impossible(&'static str),
}

/// How far a chain of changes may go (a read-only role, then a mode, then a rule, …).
const MAX_STEPS: usize = 5;

impl Policy {
    /// What allows `a` after decision `d` refused it: the chain of changes derived from
    /// each deciding source, verified by deciding again. `rules` are the allow rules that
    /// would cover exactly this call (offered as an alternative to a wider mode).
    pub fn remedies(&self, a: &Action, d: &Decision, rules: &[String]) -> Vec<Remedy> {
        let mut out = Vec::new();
        match self.chain(a, d, None) {
            Some(r) => out.push(r),
            None => return out,
        }
        // The narrow alternative to a wider mode: allow rules for exactly this call, with
        // at most a less permissive mode.
        let mode_of = |r: &Remedy| match r {
            Remedy::Changes(c) => c.iter().find_map(|c| match c {
                Change::Mode(m) => Some(permissiveness(*m)),
                _ => None,
            }),
            Remedy::Impossible(_) => None,
        };
        if let (Some(wide), false) = (mode_of(&out[0]), rules.is_empty())
            && let Some(alt) = self.chain(a, d, Some(Change::Allow(rules.to_vec())))
            && matches!(alt, Remedy::Changes(_))
            && mode_of(&alt).is_none_or(|m| m < wide)
        {
            out.push(alt);
        }
        out
    }

    /// The advice sentence for a refusal, empty when the reason already says it.
    pub fn advice(&self, a: &Action, d: &Decision, rules: &[String]) -> String {
        let remedies = self.remedies(a, d, rules);
        let mut parts = Vec::new();
        for r in &remedies {
            match r {
                Remedy::Impossible(why) => return (*why).to_string(),
                Remedy::Changes(changes) => parts.push(
                    changes
                        .iter()
                        .map(|c| self.render(c))
                        .collect::<Vec<_>>()
                        .join(" and "),
                ),
            }
        }
        if parts.is_empty() {
            return String::new();
        }
        let mut s = format!("What would allow it: {}", parts[0]);
        for p in &parts[1..] {
            let _ = write!(s, "; or, narrower, {p}");
        }
        s
    }

    /// Changes derived from the deciding sources until the call passes. `first` is tried
    /// before the source is looked at (the alternative with allow rules).
    fn chain(&self, a: &Action, d: &Decision, first: Option<Change>) -> Option<Remedy> {
        let mut p = self.clone();
        let mut changes = Vec::new();
        let mut d = d.clone();
        if let Some(c) = first {
            p.apply(&c);
            changes.push(c);
            d = p.decide(a);
        }
        for _ in 0..MAX_STEPS {
            if p.passes(&d) {
                return Some(Remedy::Changes(changes));
            }
            let c = match p.change_for(a, &d) {
                Ok(Some(c)) => c,
                Ok(None) => return None,
                Err(why) => return Some(Remedy::Impossible(why)),
            };
            p.apply(&c);
            // A later mode (role, level) supersedes an earlier one: the end state is the same.
            changes.retain(|x| std::mem::discriminant(x) != std::mem::discriminant(&c));
            changes.push(c);
            d = p.decide(a);
        }
        None
    }

    /// Allowed, or (interactive) put to a person who can allow it. Unattended, the
    /// classifier of auto-review may still block: only an allow counts.
    fn passes(&self, d: &Decision) -> bool {
        match d.verdict {
            Verdict::Allow => true,
            Verdict::Ask | Verdict::Review => !self.headless,
            Verdict::Deny => false,
        }
    }

    /// The change the deciding source calls for. `Ok(None)`: the reason already names the
    /// remedy; `Err`: nothing the user can set allows it.
    fn change_for(&self, a: &Action, d: &Decision) -> Result<Option<Change>, &'static str> {
        let source = d.source.trim_end_matches(" (unattended)");
        let rule = |prefix: &str| source.strip_prefix(prefix).map(str::to_string);
        if let Some(r) = rule("deny ") {
            return Ok(Some(Change::RemoveDeny(r)));
        }
        if let Some(r) = rule("ask ") {
            return Ok(Some(Change::RemoveAsk(r)));
        }
        Ok(Some(match source {
            "mode plan" => Change::Mode(self.least_mode(a).ok_or(NO_MODE)?),
            "role ask" => Change::Role(Role::Execute),
            "sandbox read-only" => Change::Sandbox(SandboxLevel::WorkspaceWrite),
            "network off" => Change::Network,
            "sandbox workspace-write" => Change::Sandbox(SandboxLevel::FullAccess),
            "sensitive file" => Change::Mention(d.segment.clone().ok_or(NO_MODE)?),
            "protected control file" => return Err(PROTECTED),
            "undetermined command" => return Err(UNDETERMINED),
            "sandbox unavailable" => return Ok(None),
            s if s.starts_with("mode ") => Change::Mode(self.least_mode(a).ok_or(NO_MODE)?),
            _ => return Ok(None),
        }))
    }

    /// The least permissive mode, other than the current one and plan, under which the
    /// call passes.
    fn least_mode(&self, a: &Action) -> Option<Mode> {
        [Mode::Ask, Mode::AutoEdit, Mode::AutoReview, Mode::Yolo]
            .into_iter()
            .filter(|m| *m != self.mode)
            .find(|m| {
                let mut p = self.clone();
                p.mode = *m;
                let d = p.decide(a);
                // A mode that only moves the refusal elsewhere does not count.
                p.passes(&d) || !d.source.starts_with("mode ")
            })
    }

    fn apply(&mut self, c: &Change) {
        match c {
            Change::Mode(m) => self.mode = *m,
            Change::Role(r) => self.role = *r,
            Change::Sandbox(l) => self.sandbox = *l,
            Change::Network => self.network = NetworkAccess::On,
            Change::RemoveDeny(r) => self.deny.retain(|x| x.text != *r),
            Change::RemoveAsk(r) => self.ask.retain(|x| x.text != *r),
            Change::Allow(rules) => self
                .allow
                .extend(rules.iter().filter_map(|r| Rule::parse(r).ok())),
            Change::Mention(p) => self.mentioned.push(PathBuf::from(p)),
        }
    }

    /// A change as the user makes it: flags unattended, commands in a live session.
    fn render(&self, c: &Change) -> String {
        let live = !self.headless;
        match c {
            Change::Mode(m) if live => format!("/mode {m}"),
            Change::Mode(m) => format!("--mode {m}"),
            Change::Role(r) if live => format!("/role {r}"),
            Change::Role(r) => format!("--role {r}"),
            Change::Sandbox(l) if live => format!("/config set sandbox {l}"),
            Change::Sandbox(l) => format!("--sandbox {l}"),
            Change::Network if live => "/config set network on".into(),
            Change::Network => "--network on".into(),
            Change::RemoveDeny(r) => format!("removing the deny rule {r} (/permissions remove)"),
            Change::RemoveAsk(r) => format!(
                "removing the ask rule {r} (/permissions remove; it asks a person in every mode)"
            ),
            Change::Allow(rules) if live => rules
                .iter()
                .map(|r| format!("/permissions allow {r}"))
                .collect::<Vec<_>>()
                .join(" and "),
            Change::Allow(rules) => rules
                .iter()
                .map(|r| format!("--allow '{r}'"))
                .collect::<Vec<_>>()
                .join(" "),
            Change::Mention(p) => format!("the user naming @{p} in the prompt"),
        }
    }
}

fn permissiveness(m: Mode) -> u8 {
    match m {
        Mode::Plan => 0,
        Mode::Ask => 1,
        Mode::AutoEdit => 2,
        Mode::AutoReview => 3,
        Mode::Yolo => 4,
    }
}

const NO_MODE: &str = "No mode allows this call";
const PROTECTED: &str = "No mode or rule lets a tool write yuyao's control files or the repository's git configuration; the user edits them directly";
const UNDETERMINED: &str = "No mode or rule allows an undetermined command unattended; write it so every program is literal (no eval, computed command names or unbalanced quotes)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox;

    fn bash(cmd: &str) -> Action {
        Action {
            tool: "bash".into(),
            command: Some(cmd.into()),
            paths: vec![],
        }
    }

    fn file(tool: &str, p: &str) -> Action {
        Action {
            tool: tool.into(),
            command: None,
            paths: vec![PathBuf::from(p)],
        }
    }

    const MODES: [Mode; 5] = [
        Mode::Ask,
        Mode::Plan,
        Mode::AutoEdit,
        Mode::AutoReview,
        Mode::Yolo,
    ];

    /// Every refusal over modes × deciding sources × attended/unattended: the remedy never
    /// names the mode in force, and applying it makes the call pass; a remedy is given
    /// unless nothing can allow the call.
    #[test]
    fn the_remedy_allows_the_call_over_modes_and_sources() {
        let shell_ok = sandbox::support()
            .cannot_enforce(&sandbox::Confinement {
                level: SandboxLevel::WorkspaceWrite,
                ..Default::default()
            })
            .is_none();
        struct Case {
            name: &'static str,
            action: Action,
            setup: fn(&mut Policy),
            rules: Vec<String>,
        }
        let cases = vec![
            Case {
                name: "mutating bash",
                action: bash("npm install left-pad"),
                setup: |_| {},
                rules: vec!["Bash(npm install:*)".into()],
            },
            Case {
                name: "file edit",
                action: file("write", "/proj/a.txt"),
                setup: |_| {},
                rules: vec!["Write(/a.txt)".into()],
            },
            Case {
                name: "deny rule",
                action: bash("rm -rf build"),
                setup: |p| p.deny.push(Rule::parse("Bash(rm:*)").unwrap()),
                rules: vec!["Bash(rm -rf:*)".into()],
            },
            Case {
                name: "ask rule",
                action: bash("git push"),
                setup: |p| p.ask.push(Rule::parse("Bash(git push:*)").unwrap()),
                rules: vec!["Bash(git push:*)".into()],
            },
            Case {
                name: "role ask",
                action: file("edit", "/proj/a.txt"),
                setup: |p| p.role = Role::Ask,
                rules: vec![],
            },
            Case {
                name: "read-only sandbox",
                action: file("edit", "/proj/a.txt"),
                setup: |p| p.sandbox = SandboxLevel::ReadOnly,
                rules: vec![],
            },
            Case {
                name: "outside the workspace",
                action: file("write", "/elsewhere/b.txt"),
                setup: |_| {},
                rules: vec![],
            },
            Case {
                name: "network off",
                action: Action {
                    tool: "web-fetch".into(),
                    command: None,
                    paths: vec![],
                },
                setup: |_| {},
                rules: vec!["WebFetch".into()],
            },
            Case {
                name: "secret file",
                action: file("read", "/proj/.env"),
                setup: |_| {},
                rules: vec![],
            },
        ];
        let mut checked = 0;
        for case in &cases {
            if case.action.command.is_some() && !shell_ok {
                continue;
            }
            for mode in MODES {
                for headless in [true, false] {
                    let mut p = Policy::new(mode, Role::Execute, std::path::Path::new("/proj"));
                    p.headless = headless;
                    (case.setup)(&mut p);
                    let d = p.decide(&case.action);
                    if d.verdict != Verdict::Deny {
                        continue;
                    }
                    checked += 1;
                    let what = format!("{} in {mode} (headless {headless}): {d:?}", case.name);
                    let remedies = p.remedies(&case.action, &d, &case.rules);
                    assert!(!remedies.is_empty(), "no remedy for {what}");
                    for r in &remedies {
                        let Remedy::Changes(changes) = r else {
                            panic!("{what}: {r:?}");
                        };
                        assert!(
                            !changes.contains(&Change::Mode(mode)),
                            "{what}: advises the mode in force"
                        );
                        let mut fixed = p.clone();
                        changes.iter().for_each(|c| fixed.apply(c));
                        let after = fixed.decide(&case.action);
                        assert!(fixed.passes(&after), "{what}: {changes:?} leaves {after:?}");
                    }
                    let text = p.advice(&case.action, &d, &case.rules);
                    assert!(text.starts_with("What would allow it: "), "{what}: {text}");
                    assert!(
                        !text.contains(&format!("mode {mode}")),
                        "{what}: names the mode in force: {text}"
                    );
                }
            }
        }
        assert!(checked >= 20, "only {checked} refusals checked");
    }

    #[test]
    fn the_advice_is_the_one_that_fits_the_source() {
        let mut p = Policy::new(Mode::AutoEdit, Role::Execute, std::path::Path::new("/proj"));
        p.headless = true;
        // A file edit outside the workspace: the workspace, not the mode.
        let a = file("write", "/elsewhere/b.txt");
        let advice = p.advice(&a, &p.decide(&a), &[]);
        assert_eq!(advice, "What would allow it: --sandbox full-access");
        // A secret: naming it, not a mode.
        let a = file("read", "/proj/.env");
        let advice = p.advice(&a, &p.decide(&a), &[]);
        assert!(
            advice.contains("@/proj/.env") && !advice.contains("--mode"),
            "{advice}"
        );
        // A control file: nothing.
        let a = file("write", "/proj/.git/hooks/pre-commit");
        let advice = p.advice(&a, &p.decide(&a), &[]);
        assert!(advice.starts_with("No mode or rule"), "{advice}");
        // Plan mode, attended: the least mode that lets a person approve it.
        let mut p = Policy::new(Mode::Plan, Role::Execute, std::path::Path::new("/proj"));
        let a = file("write", "/proj/a.txt");
        assert_eq!(
            p.advice(&a, &p.decide(&a), &[]),
            "What would allow it: /mode ask"
        );
        p.headless = true;
        assert_eq!(
            p.advice(&a, &p.decide(&a), &["Write(/a.txt)".into()]),
            "What would allow it: --mode auto-edit; or, narrower, --allow 'Write(/a.txt)' and --mode ask"
        );
    }
}
