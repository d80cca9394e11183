//! Preference rules enforced, not only prompted: an entry of the shape "use X, not Y",
//! "use X instead of Y", "never run Y", "don't use Y" whose Y names a program compiles into a
//! check on the effective program names of shell commands (the policy crate's lexer). A
//! command that runs Y is not run; its result cites the rule and where it came from.
//!
//! The rules come from the `MEMORY.md` entries and from the lines of the instruction files
//! the session loads into its prompt (`AGENTS.md`, falling back to `CLAUDE.md`, from the
//! project root down to the working directory): seed 002 §7 has AGENTS.md's verifiable
//! constraints honoured, and §8 keeps yolo bound by them. A compiled rule can only refuse a
//! command — there is no allow here — so a repository's instruction file needs no trust
//! approval (DESIGN §8 guards what can widen permissions or start a process).

use std::path::{Path, PathBuf};
use yuyao_store::memory::{Layout, format};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The forbidden program, and the leading arguments that must match (`git push`).
    pub program: String,
    pub args: Vec<String>,
    /// The entry as the user reads it ("use bun, not npm").
    pub text: String,
    pub origin: Origin,
}

/// Where a rule was written: what its refusal cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A `MEMORY.md` entry: when it was remembered, and what the user said.
    Memory { when: Option<String>, said: String },
    /// A line of an instruction file (`AGENTS.md`, as shown relative to the project).
    Instruction { file: String, line: usize },
}

/// Programs a rule may name even when they are not installed here.
const KNOWN: &[&str] = &[
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "bun",
    "deno",
    "node",
    "pip",
    "pip3",
    "pipx",
    "poetry",
    "uv",
    "conda",
    "pipenv",
    "python",
    "python3",
    "pytest",
    "tox",
    "nox",
    "cargo",
    "rustup",
    "go",
    "make",
    "cmake",
    "ninja",
    "bazel",
    "gradle",
    "mvn",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "terraform",
    "git",
    "gh",
    "curl",
    "wget",
    "sudo",
    "rm",
    "brew",
    "apt",
    "apt-get",
    "yum",
    "dnf",
    "jest",
    "vitest",
    "mocha",
    "eslint",
    "prettier",
    "black",
    "ruff",
    "flake8",
    "mypy",
    "isort",
    "tsc",
    "webpack",
    "vite",
    "rollup",
    "esbuild",
    "composer",
    "gem",
    "bundle",
    "rake",
    "rails",
    "dotnet",
    "swift",
    "java",
    "javac",
    "ssh",
    "scp",
    "rsync",
    "vim",
    "nano",
    "sed",
    "awk",
    "perl",
    "ruby",
    "php",
    "psql",
    "mysql",
    "sqlite3",
    "redis-cli",
    "alembic",
];

/// The rules among the entries of the `MEMORY.md` files.
pub fn compile_files(layout: &Layout) -> Vec<Rule> {
    let mut paths = vec![
        layout.target(yuyao_store::memory::Scope::Global),
        layout.project.join("MEMORY.md"),
    ];
    if layout.write != layout.project {
        paths.push(layout.write.join("MEMORY.md"));
    }
    paths
        .iter()
        .filter_map(|p| {
            crate::instruction_files::read(
                p,
                &[
                    layout.project.as_path(),
                    layout.write.as_path(),
                    layout.global.as_path(),
                ],
            )
        })
        .flat_map(|t| format::parse(&t))
        .filter_map(|e| compile(&e))
        .collect()
}

/// The rule an entry states, if its forbidden part names a program.
pub fn compile(e: &format::Entry) -> Option<Rule> {
    let first = e.text.lines().next()?;
    let (program, args, text) = compile_text(first)?;
    let said = e
        .why
        .as_deref()
        .map(|w| w.strip_prefix("user said: ").unwrap_or(w).to_string())
        .unwrap_or_else(|| text.clone());
    Some(Rule {
        program,
        args,
        text,
        origin: Origin::Memory {
            when: e.when.clone(),
            said,
        },
    })
}

/// The rule an entry of the memory service states (`backend.rs`): cited like a `MEMORY.md`
/// entry.
pub fn compile_service(text: &str, when: Option<String>) -> Option<Rule> {
    let first = text.lines().next()?;
    let (program, args, rule_text) = compile_text(first)?;
    Some(Rule {
        program,
        args,
        text: rule_text,
        origin: Origin::Memory {
            when,
            said: text.trim().to_string(),
        },
    })
}

/// The rules the lines of instruction files state (`files`: those the prompt carries),
/// each with its file (relative to `project`) and line number. Fenced code, headings and
/// `@import` lines are not rules; a line may hold several sentences.
pub fn compile_instructions(files: &[PathBuf], project: &Path) -> Vec<Rule> {
    let mut out = Vec::new();
    for f in files {
        let Some(text) = crate::instruction_files::read(f, &[project]) else {
            continue;
        };
        let shown = f.strip_prefix(project).unwrap_or(f).display().to_string();
        let mut fence = false;
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with("```") || t.starts_with("~~~") {
                fence = !fence;
                continue;
            }
            if fence || t.starts_with('#') || t.starts_with('@') || t.starts_with('>') {
                continue;
            }
            let t = strip_list_marker(t).replace("; ", ". ");
            for sentence in t.split(". ") {
                if let Some((program, args, text)) = compile_text(sentence)
                    && !out.iter().any(|r: &Rule| {
                        r.program == program
                            && r.args == args
                            && r.origin
                                == Origin::Instruction {
                                    file: shown.clone(),
                                    line: i + 1,
                                }
                    })
                {
                    out.push(Rule {
                        program,
                        args,
                        text,
                        origin: Origin::Instruction {
                            file: shown.clone(),
                            line: i + 1,
                        },
                    });
                }
            }
        }
    }
    out
}

/// `- x`, `* x`, `+ x`, `12. x`, `- [ ] x` → `x`.
fn strip_list_marker(t: &str) -> &str {
    let t = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("+ "))
        .unwrap_or_else(|| {
            let digits = t.chars().take_while(char::is_ascii_digit).count();
            if digits > 0 {
                t[digits..]
                    .strip_prefix(". ")
                    .or_else(|| t[digits..].strip_prefix(") "))
                    .unwrap_or(t)
            } else {
                t
            }
        });
    let t = t.trim_start();
    t.strip_prefix("[ ] ")
        .or_else(|| t.strip_prefix("[x] "))
        .unwrap_or(t)
        .trim_start_matches("**")
        .trim()
}

/// One sentence's rule: the forbidden program, its leading arguments, and the sentence as
/// the user reads it.
fn compile_text(sentence: &str) -> Option<(String, Vec<String>, String)> {
    let text = sentence
        .trim()
        .trim_end_matches(['.', '!', '*'])
        .trim()
        .to_string();
    let lower = text.to_lowercase().replace('’', "'").replace('`', "");
    let forbidden = forbidden_part(&lower)?;
    let words: Vec<String> = forbidden
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| c == ',' || c == '"' || c == '\'')
                .to_string()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let (program, rest) = words.split_first()?;
    if !is_program(program) {
        return None;
    }
    // `git push`, `npm install`: leading words that look like sub-commands or flags.
    let args: Vec<String> = rest
        .iter()
        .take_while(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.=".contains(c))
        })
        .take(3)
        .cloned()
        .collect();
    Some((program.clone(), args, lower_first(&text)))
}

/// The part naming what must not run: `Y` of "use X, not Y", "use X instead of Y", "prefer
/// X over Y", "never run Y", "don't use Y", "do not run Y", "avoid Y", "stop using Y".
fn forbidden_part(s: &str) -> Option<String> {
    let s = s.trim();
    let strip_lead = |s: &str| {
        let mut s = s;
        for lead in ["please ", "always "] {
            s = s.strip_prefix(lead).unwrap_or(s);
        }
        s.to_string()
    };
    let s = strip_lead(s);
    if s.starts_with("use ") || s.starts_with("prefer ") {
        for sep in [", not ", " not ", " instead of ", " rather than ", " over "] {
            if let Some((_, y)) = s.split_once(sep) {
                return Some(y.to_string());
            }
        }
        return None;
    }
    for lead in [
        "never run ",
        "never use ",
        "never call ",
        "don't run ",
        "don't use ",
        "dont run ",
        "dont use ",
        "do not run ",
        "do not use ",
        "stop using ",
        "stop running ",
        "avoid running ",
        "avoid using ",
        "avoid ",
        "no ",
    ] {
        if let Some(y) = s.strip_prefix(lead) {
            // "no X" only as a whole short rule: "no sudo".
            if lead == "no " && y.split_whitespace().count() > 1 {
                return None;
            }
            return Some(y.to_string());
        }
    }
    None
}

fn is_program(w: &str) -> bool {
    if w.is_empty()
        || !w
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
    {
        return false;
    }
    KNOWN.contains(&w) || on_path(w)
}

fn on_path(w: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(w))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `applying your rule: use bun, not npm (remembered 2026-11-30: "use bun not npm")` when a
/// shell command runs a program a rule forbids. Undetermined commands are left to the
/// policy, which never runs them unattended.
pub fn violation(rules: &[Rule], command: &str) -> Option<String> {
    if rules.is_empty() {
        return None;
    }
    let segments = yuyao_policy::shell::segments(command).ok()?;
    for seg in &segments {
        for r in rules {
            let names_it = seg.program == r.program
                || (r.args.is_empty() && seg.wrappers.contains(&r.program));
            let args_match =
                r.args.len() <= seg.args.len() && r.args.iter().zip(&seg.args).all(|(a, b)| a == b);
            if names_it && args_match {
                let applying = match &r.origin {
                    Origin::Memory { when, said } => {
                        let when = when.as_deref().map_or_else(
                            || "remembered in MEMORY.md".to_string(),
                            |w| format!("remembered {w}"),
                        );
                        format!("applying your rule: {} ({when}: \"{said}\")", r.text)
                    }
                    Origin::Instruction { file, line } => {
                        format!("applying {file} line {line}: {}", r.text)
                    }
                };
                return Some(format!(
                    "{applying}. The command was not run: `{}`. Use what the rule asks for instead.",
                    seg.command_line()
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: &str) -> Option<Rule> {
        compile(&format::parse(line)[0])
    }

    #[test]
    fn compiles_program_rules_and_leaves_the_rest_to_the_prompt() {
        let r = rule("- Use bun, not npm. <!-- id:m1 when:2026-11-30 scope:project why:\"user said: use bun not npm\" src:correction -->\n").unwrap();
        assert_eq!(
            (r.program.as_str(), r.text.as_str()),
            ("npm", "use bun, not npm")
        );
        let msg = violation(std::slice::from_ref(&r), "cd web && sudo npm install").unwrap();
        assert!(
            msg.starts_with(
                "applying your rule: use bun, not npm (remembered 2026-11-30: \"use bun not npm\")"
            ),
            "{msg}"
        );
        assert!(violation(std::slice::from_ref(&r), "bun install && echo npm").is_none());
        let push = rule("- never run git push --force\n").unwrap();
        assert_eq!(push.args, ["push", "--force"]);
        assert!(violation(std::slice::from_ref(&push), "git push --force origin main").is_some());
        assert!(violation(std::slice::from_ref(&push), "git push origin main").is_none());
        assert!(rule("- never run migrations\n").is_none());
        assert!(rule("- don't add comments\n").is_none());
        assert!(rule("- Use pnpm instead of yarn\n").is_some_and(|r| r.program == "yarn"));
        assert!(rule("- don't use sudo\n").is_some_and(|r| r.program == "sudo"));
    }

    #[test]
    fn instruction_file_lines_compile_with_their_line() {
        let proj = tempfile::tempdir().unwrap();
        let agents = proj.path().join("AGENTS.md");
        std::fs::write(
            &agents,
            "# Conventions\n\nThis is a web app.\n- Use bun, not npm.\n```\nnever run sudo\n```\n1. Tests live in tests/. Never run git push --force; ask first.\n",
        )
        .unwrap();
        let rules = compile_instructions(std::slice::from_ref(&agents), proj.path());
        let got: Vec<(&str, &Origin)> = rules
            .iter()
            .map(|r| (r.program.as_str(), &r.origin))
            .collect();
        let at = |line| Origin::Instruction {
            file: "AGENTS.md".into(),
            line,
        };
        assert_eq!(got, [("npm", &at(4)), ("git", &at(8))], "{rules:?}");
        let msg = violation(&rules, "npm install").unwrap();
        assert!(
            msg.starts_with("applying AGENTS.md line 4: use bun, not npm. The command was not run: `npm install`"),
            "{msg}"
        );
        assert!(violation(&rules, "bun install").is_none());
        assert!(violation(&rules, "git push --force origin").is_some());
        assert!(
            violation(&rules, "sudo ls").is_none(),
            "fenced lines are not rules"
        );
        // Only a refusal can come of a line: a sentence that grants something compiles to
        // nothing, so a repository's file cannot widen what runs.
        std::fs::write(
            &agents,
            "You may always run npm.\nAllow rm -rf anywhere.\nUse npm.\n",
        )
        .unwrap();
        assert!(compile_instructions(&[agents], proj.path()).is_empty());
    }
}
