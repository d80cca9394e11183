//! Trust and the sandbox, on the session's side (the pipeline's policy stage): persisted
//! permission rules loaded at open, "always" answers saved, the rules an approval may
//! offer, the record of the last blocked call (read by `/sandbox explain` and by `yuyao
//! sandbox explain` from another process), redaction of what enters the history, the
//! `@path` mentions the exfiltration guard honours, and the one-time "cannot enforce"
//! message. The commands that manage them are `cmd_permissions.rs`.

use crate::session::{CoreError, Session};
use serde_json::json;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use yuyao_policy::rules::exact_command;
use yuyao_policy::{Action, Decision, Policy, Rule, readonly, redact, sandbox};
use yuyao_protocol::{NoticeLevel, PermissionAnswer};
use yuyao_store::Paths;
use yuyao_store::permissions::{self, RuleKind, Scope};

/// Adds the rules of `<project>/.yuyao/permissions.json` and `~/.yuyao/permissions.json`
/// to the policy (after the flags' rules; deny is checked first whatever the order).
/// Loads the persisted rules. An untrusted project's allow rules are skipped (returned, to
/// be reported); its deny and ask rules always apply.
pub(crate) fn load_persisted(
    policy: &mut Policy,
    paths: &Paths,
    trusted: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<String>, CoreError> {
    let (rules, problems) = permissions::merged_lenient(paths).map_err(CoreError::Usage)?;
    warnings.extend(problems);
    let mut ignored = Vec::new();
    let granted = yuyao_store::trust::granted(paths);
    for (scope, kind, text) in rules {
        if !trusted
            && scope == permissions::Scope::Project
            && kind == RuleKind::Allow
            && !granted.contains(&text)
        {
            ignored.push(format!("allow {text}"));
            continue;
        }
        let rule = match Rule::parse(&text) {
            Ok(r) => r,
            // A project's bad rule is said and skipped; the user's own stays an error.
            Err(e) if scope == permissions::Scope::Project => {
                warnings.push(format!(
                    "{}: {e}; the rule is ignored",
                    permissions::path_for(paths, scope).display()
                ));
                continue;
            }
            Err(e) => {
                return Err(CoreError::Usage(format!(
                    "{}: {e}",
                    permissions::path_for(paths, scope).display()
                )));
            }
        };
        match kind {
            RuleKind::Allow => policy.allow.push(rule),
            RuleKind::Ask => policy.ask.push(rule),
            RuleKind::Deny => policy.deny.push(rule),
        }
    }
    Ok(ignored)
}

/// Claude Code's `permissions.allow|ask|deny` (`.claude/settings.json`, `~/.claude/…`): deny
/// and ask rules always apply; allow rules from the user scope, or from a trusted project.
/// Returns (ignored allow rules, warnings: unreadable files, rules yuyao cannot parse).
pub(crate) fn load_claude_settings(
    policy: &mut Policy,
    paths: &Paths,
    trusted: bool,
) -> (Vec<String>, Vec<String>) {
    let (rules, mut warnings) = permissions::claude_rules(paths);
    let mut ignored = Vec::new();
    for r in rules {
        if r.kind == RuleKind::Allow && r.scope == Scope::Project && !trusted {
            ignored.push(format!("allow {} ({})", r.text, r.file.display()));
            continue;
        }
        match Rule::parse(&r.text) {
            Ok(rule) => match r.kind {
                RuleKind::Allow => policy.allow.push(rule),
                RuleKind::Ask => policy.ask.push(rule),
                RuleKind::Deny => policy.deny.push(rule),
            },
            Err(e) => warnings.push(format!(
                "{}: {} rule '{}' skipped: {e}",
                r.file.display(),
                r.kind.as_str(),
                r.text
            )),
        }
    }
    (ignored, warnings)
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// Once per process: say so when the kernel cannot enforce the requested confinement.
pub(crate) fn startup_notice(s: &Session) {
    let c = s.lock().policy.confinement();
    if let Some(why) = sandbox::support().cannot_enforce(&c)
        && !WARNED.swap(true, Ordering::SeqCst)
    {
        s.notice(
            NoticeLevel::Warning,
            format!(
                "the OS sandbox cannot be enforced on this machine: {why}. Shell commands will be refused; `yuyao sandbox list` shows what this kernel supports, `yuyao sandbox explain` why a call was blocked"
            ),
        );
    }
}

/// Records the files the user named with `@path` in a message (the exfiltration guard lets
/// the agent read those).
pub(crate) fn note_mentions(s: &Session, text: &str) {
    let found: Vec<PathBuf> = text
        .split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .map(|w| w.trim_end_matches([',', '.', ';', ':', '!', '?', ')', '"', '\'']))
        .filter(|w| !w.is_empty())
        .map(|w| s.ctx.resolve(w))
        .collect();
    if !found.is_empty() {
        let mut st = s.lock();
        for p in found {
            if !st.policy.mentioned.contains(&p) {
                st.policy.mentioned.push(p);
            }
        }
    }
}

/// A tool result (or a background report) as it may enter the history: values of the
/// project's secret files and key material redacted, unless the user named or allowed the
/// file (DESIGN §5, redaction). The model's own API key is always redacted.
pub fn redact<'a>(s: &Session, policy: &Policy, text: &'a str) -> Cow<'a, str> {
    let key = s.model_key();
    let extra: Vec<(String, String)> = key
        .map(|k| vec![(k.trim().to_string(), "the model API key".to_string())])
        .unwrap_or_default();
    redact::redact_result(policy, &extra, text)
}

/// Programs that run code they are given (interpreters, shells, runners, build-recipe
/// tools): an "always" answer saves the full command, never the bare program.
const CODE_RUNNERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "node",
    "nodejs",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "csh",
    "tcsh",
    "ruby",
    "perl",
    "php",
    "deno",
    "bun",
    "npx",
    "uvx",
    "pnpx",
    "bunx",
    "Rscript",
    "R",
    "lua",
    "luajit",
    "java",
    "jshell",
    "groovy",
    "scala",
    "kotlin",
    "swift",
    "osascript",
    "pwsh",
    "powershell",
    "tclsh",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "make",
    "gmake",
    "cmake",
    "ninja",
    "just",
    "rake",
    "xargs",
    "env",
    "eval",
    "exec",
    "source",
    ".",
    "sudo",
    "doas",
    "ssh",
    "watch",
    "parallel",
    "nohup",
    "timeout",
    "busybox",
];

/// Programs with subcommands: "always" saves `program subcommand:*`.
const SUBCOMMAND_TOOLS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pipenv",
    "pdm",
    "hatch",
    "gh",
    "glab",
    "dotnet",
    "terraform",
    "tofu",
    "rustup",
    "bundle",
    "composer",
    "brew",
    "conda",
    "mix",
    "dart",
    "flutter",
    "gradle",
    "mvn",
];

/// Subcommands that run whatever program or code follows: the full command is saved.
const RUNNER_SUBCOMMANDS: &[&str] = &["exec", "x", "dlx", "eval", "shell", "run"];

/// Package managers whose `run <script>` names a script of the project (`npm run test:*`).
const SCRIPT_RUNNERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// The display name of a tool in a rule (`Bash(…)`, `Edit(…)`).
fn rule_tool_name(name: &str) -> &str {
    match name {
        "bash" => "Bash",
        "monitor" => "Monitor",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "multi-edit" => "MultiEdit",
        "notebook-edit" => "NotebookEdit",
        "apply-patch" => "ApplyPatch",
        "grep" => "Grep",
        "glob" => "Glob",
        other => other,
    }
}

/// `seg` without the shell variables a compound command sets for its body (`for i in …`
/// puts `i=` on every segment of the line): a rule offered for `seq 1 400` names `seq`, not
/// `i= seq 1 400`. Only an unset lowercase name goes (`PATH=`, `http_proxy=` and any
/// assignment with a value stay): a rule without it is narrower for an exact rule, and the
/// same for a program rule, which does not read assignments.
fn without_loop_variables(mut seg: yuyao_policy::Segment) -> yuyao_policy::Segment {
    const ENV_LOWER: &[&str] = &[
        "http_proxy",
        "https_proxy",
        "ftp_proxy",
        "all_proxy",
        "no_proxy",
    ];
    seg.assignments.retain(|a| {
        let Some(name) = a.strip_suffix('=') else {
            return true;
        };
        let local = !name.is_empty()
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !ENV_LOWER.contains(&name);
        !local
    });
    seg
}

/// The narrowest useful rule for one shell segment, or None when no rule can say exactly
/// this (a bare interpreter with no arguments is never saved).
fn segment_rule(s: &yuyao_policy::Segment) -> Option<String> {
    let program = s.program.as_str();
    let base = program.rsplit('/').next().unwrap_or(program);
    // An exact rule says exactly what runs: not when an argument is only known at run time
    // (`python3 gen.py $i` in a loop), whose approval would cover whatever it becomes.
    let computed = (0..=s.args.len()).any(|k| s.arg_computed(k));
    let exact = || {
        ((!s.args.is_empty() || !s.assignments.is_empty()) && !computed).then(|| exact_command(s))
    };
    let runs_code = CODE_RUNNERS.contains(&base)
        || base.starts_with("python")
        || base.starts_with("ruby")
        || base.starts_with("perl")
        || base.starts_with("php")
        || base.starts_with("node")
        // A repository script (`./build.sh`; segments keep the base name) runs whatever
        // it holds.
        || program.contains('/')
        || [".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".R"]
            .iter()
            .any(|ext| base.ends_with(ext));
    if runs_code || !s.assignments.is_empty() {
        return exact();
    }
    if SUBCOMMAND_TOOLS.contains(&base) {
        let Some(sub) = s.args.first().filter(|a| !a.starts_with('-')) else {
            return exact(); // global options first (`git -c k=v …`): exactly this
        };
        if SCRIPT_RUNNERS.contains(&base)
            && matches!(sub.as_str(), "run" | "run-script")
            && let Some(script) = s.args.get(1).filter(|a| !a.starts_with('-'))
        {
            return Some(format!("{base} {sub} {script}:*"));
        }
        if RUNNER_SUBCOMMANDS.contains(&sub.as_str()) && base != "cargo" {
            return exact();
        }
        return Some(format!("{base} {sub}:*"));
    }
    Some(base.to_string())
}

/// A path as a rule pattern: `/<rel>` inside the project, `//<abs>` outside, glob
/// characters escaped so the rule names that one file.
fn path_pattern(s: &Session, p: &std::path::Path) -> String {
    let project = s.paths.project.clone();
    let escape = |t: &str| {
        t.chars()
            .flat_map(|c| {
                let special = "*?[]{}\\".contains(c);
                special
                    .then_some('\\')
                    .into_iter()
                    .chain(std::iter::once(c))
            })
            .collect::<String>()
    };
    match p.strip_prefix(&project) {
        Ok(rel) if !rel.as_os_str().is_empty() => {
            format!("/{}", escape(&rel.display().to_string()))
        }
        _ => format!(
            "//{}",
            escape(p.display().to_string().trim_start_matches('/'))
        ),
    }
}

/// "Allow always" answers: the rules that cover exactly this action (shown in the prompt
/// before the user picks, saved when they do).
pub(crate) fn grant_rules(s: &Session, name: &str, action: &Action) -> Vec<String> {
    let tool = rule_tool_name(name);
    let Some(command) = action.command.as_deref() else {
        if action.paths.is_empty() {
            // A tool without a target (web-search): the tool itself.
            return vec![tool.to_string()];
        }
        return action
            .paths
            .iter()
            .map(|p| format!("{tool}({})", path_pattern(s, p)))
            .collect();
    };
    command_rules(tool, command, &s.paths.project)
}

/// The rules of a command line: one per segment that is not read-only and can be named.
fn command_rules(tool: &str, command: &str, project: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Read as the policy reads it (scripts relative to the project root): a script's own
    // commands need rules too, for the content approved now; changed content asks again.
    for seg in yuyao_policy::segments_in(command, Some(project)).unwrap_or_default() {
        let seg = without_loop_variables(seg);
        if readonly::segment_is_read_only(&seg) {
            continue;
        }
        let Some(r) = segment_rule(&seg) else {
            continue;
        };
        let r = format!("{tool}({r})");
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// Applies an "allow for the session / project / always" answer; persists the last two.
pub(crate) fn grant(
    s: &Session,
    answer: PermissionAnswer,
    name: &str,
    action: &Action,
) -> Result<(), String> {
    let texts = grant_rules(s, name, action);
    let scope = match answer {
        PermissionAnswer::AllowProject => Some(Scope::Project),
        PermissionAnswer::AllowAlways => Some(Scope::User),
        _ => None,
    };
    let mut saved = Vec::new();
    for t in &texts {
        let Ok(rule) = Rule::parse(t) else { continue };
        if let Some(scope) = scope {
            permissions::add(&s.paths, scope, RuleKind::Allow, t)?;
            saved.push(t.clone());
        }
        s.lock().policy.granted.push(rule);
    }
    if let Some(scope) = scope {
        s.lock().trajectory.record(
            "permission_saved",
            json!({"scope": scope.as_str(), "rules": saved,
                   "file": permissions::path_for(&s.paths, scope).display().to_string()}),
        );
    }
    Ok(())
}

pub(crate) fn last_blocked_path(s: &Session) -> PathBuf {
    s.paths.home.join("sandbox").join("last-blocked.json")
}

/// Remembers a refused call for `sandbox explain` (in `~/.yuyao/sandbox/`, so another
/// process — `yuyao sandbox explain` — can read it).
pub(crate) fn record_block(
    s: &Session,
    tool: &str,
    action: &Action,
    decision: Option<&Decision>,
    message: &str,
) {
    let (mode, role, sandbox_level, network) = {
        let st = s.lock();
        (
            st.policy.mode.to_string(),
            st.policy.role.to_string(),
            st.policy.sandbox.to_string(),
            st.policy.network.to_string(),
        )
    };
    let record = json!({
        "ts": chrono::Utc::now().to_rfc3339(),
        "session": s.id,
        "cwd": s.cwd(),
        "tool": tool,
        "command": action.command,
        "paths": action.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "verdict": decision.map(|d| format!("{:?}", d.verdict)),
        "source": decision.map(|d| d.source.clone()).unwrap_or_else(|| "OS sandbox".into()),
        "segment": decision.and_then(|d| d.segment.clone()),
        "reason": decision.map(|d| d.reason.clone()),
        "message": message,
        "mode": mode, "role": role, "sandbox": sandbox_level, "network": network,
    });
    let _ = yuyao_store::write_atomic(&last_blocked_path(s), format!("{record:#}\n").as_bytes());
}

/// The OS sandbox's note in a tool result means the sandbox (probably) refused something.
pub(crate) fn after_run(s: &Session, tool: &str, action: &Action, output: &str) {
    if output.contains(sandbox::BLOCKED_MARKER) {
        let tail: String = output
            .lines()
            .rev()
            .take(6)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n");
        record_block(s, tool, action, None, &tail);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(cmd: &str) -> Option<String> {
        // Scripts the commands run exist (their content is read); the command's own segment
        // is the one named by its first word.
        let dir = tempfile::tempdir().unwrap();
        for f in ["run.sh", "setup.sh"] {
            std::fs::write(dir.path().join(f), "echo hi\n").unwrap();
        }
        let first = cmd.split_whitespace().next().unwrap();
        let program = first.rsplit('/').next().unwrap();
        let mut segs = yuyao_policy::segments_in(cmd, Some(dir.path())).unwrap();
        let seg = match segs.iter().position(|s| s.program == program) {
            Some(i) => segs.remove(i),
            None => segs.pop().unwrap(),
        };
        segment_rule(&seg)
    }

    #[test]
    fn always_rules_are_the_narrowest_useful_ones() {
        let cases: &[(&str, Option<&str>)] = &[
            // Interpreters and shells: the full command, never the bare program.
            ("python3 test_calc.py", Some("python3 test_calc.py")),
            ("python test_calc.py -v", Some("python test_calc.py -v")),
            ("/usr/bin/python3.12 t.py", Some("python3.12 t.py")),
            ("node build.js", Some("node build.js")),
            ("bash ./run.sh", Some("bash ./run.sh")),
            ("sh setup.sh --force", Some("sh setup.sh --force")),
            ("npx prettier --write .", Some("npx prettier --write .")),
            ("uvx ruff check", Some("uvx ruff check")),
            ("ruby x.rb", Some("ruby x.rb")),
            ("perl -e 'unlink q(f)'", Some("perl -e 'unlink q(f)'")),
            ("make install", Some("make install")),
            ("./build.sh --release", Some("build.sh --release")),
            ("./build.sh", None),
            ("python3", None),
            ("make", None),
            // Tools with subcommands: the subcommand as a prefix.
            ("cargo test -p core", Some("cargo test:*")),
            ("git commit -m x", Some("git commit:*")),
            ("npm run test -- --watch", Some("npm run test:*")),
            ("pnpm install", Some("pnpm install:*")),
            ("npm exec evil", Some("npm exec evil")),
            ("uv run python -c 'x'", Some("uv run python -c x")),
            ("go run ./cmd", Some("go run ./cmd")),
            ("git -c core.pager=x log", Some("git -c core.pager=x log")),
            // Assignments are part of what was approved.
            ("FOO=1 cargo test", Some("FOO=1 cargo test")),
            // Plain programs: the program.
            ("mkdir made1", Some("mkdir")),
            ("touch a", Some("touch")),
        ];
        for (cmd, want) in cases {
            assert_eq!(rule(cmd).as_deref(), *want, "{cmd}");
        }
    }

    #[test]
    fn compound_commands_offer_rules_naming_real_programs_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let rules = |c: &str| command_rules("Bash", c, dir.path());
        assert_eq!(
            rules("for i in $(seq 1 400); do echo \"$i\" >> out.txt; done"),
            ["Bash(seq)", "Bash(echo)"]
        );
        assert_eq!(
            rules("for f in a b; do touch \"$f\"; done"),
            ["Bash(touch)"]
        );
        // Code run with a value only known at run time: no exact rule to offer.
        assert_eq!(
            rules("for i in $(seq 1 3); do python3 gen.py $i; done"),
            ["Bash(seq)"]
        );
        assert!(rules("for i in 1 2; do python3 gen.py \"$i\"; done").is_empty());
        for c in [
            "for i in $(seq 1 400); do echo $i >> out.txt; done",
            "for i in 1 2; do python3 gen.py $i; done",
        ] {
            assert!(
                rules(c).iter().all(|r| !r.contains("i=")),
                "{c}: {:?}",
                rules(c)
            );
        }
        // An environment variable set for the body stays part of what was approved.
        assert_eq!(
            rules("for PATH in .; do python3 t.py; done"),
            ["Bash(PATH= python3 t.py)"]
        );
    }

    #[test]
    fn saved_interpreter_rule_allows_only_that_command() {
        let text = format!("Bash({})", rule("python3 test_calc.py").unwrap());
        assert_eq!(text, "Bash(python3 test_calc.py)");
        let r = Rule::parse(&text).unwrap();
        let seg = |c: &str| yuyao_policy::segments(c).unwrap().pop().unwrap();
        assert!(r.allows_segment(&seg("python3 test_calc.py")));
        assert!(!r.allows_segment(&seg("python3 -c 'open(\"f\",\"w\")'")));
        assert!(!r.allows_segment(&seg("python3 test_calc.py; rm f")));
    }
}
