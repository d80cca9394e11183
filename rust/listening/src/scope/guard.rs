//! The scope guard: before a mutating call of a scoped turn runs, its actual effect (the
//! files' contents before and after, the command's effective programs) is checked by
//! category. A hit is put to the user with the diff or command and the category (the
//! permission request), or refused when nobody can confirm it (yolo, headless, agent_api).

#[allow(unused_imports)]
use crate::session_ext::*;

use super::{Category, declare::Declared};
use regex::Regex;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use yuyao_core::Session;
use yuyao_policy::{Action, Decision, Verdict};
use yuyao_tools::ToolArgs;

/// One objection: its category and what exactly it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub category: Category,
    pub detail: String,
}

/// Manifest and lock files of the package managers: a change to one is a dependency change.
const MANIFESTS: &[&str] = &[
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    "bun.lockb",
    "bun.lock",
    "Cargo.toml",
    "Cargo.lock",
    "pyproject.toml",
    "poetry.lock",
    "uv.lock",
    "Pipfile",
    "Pipfile.lock",
    "pdm.lock",
    "setup.py",
    "setup.cfg",
    "environment.yml",
    "go.mod",
    "go.sum",
    "go.work",
    "Gemfile",
    "Gemfile.lock",
    "composer.json",
    "composer.lock",
    "mix.exs",
    "mix.lock",
    "build.gradle",
    "build.gradle.kts",
    "pom.xml",
    "Package.swift",
    "Package.resolved",
    "pubspec.yaml",
    "pubspec.lock",
    "deno.json",
    "deno.lock",
];

pub(crate) fn is_manifest(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    MANIFESTS.contains(&name)
        || (name.starts_with("requirements") && (name.ends_with(".txt") || name.ends_with(".in")))
        || name.ends_with(".csproj")
}

/// A file that holds tests, by the naming conventions of the common runners.
pub(crate) fn is_test_file(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let code = [
        ".py", ".rs", ".go", ".js", ".ts", ".jsx", ".tsx", ".mjs", ".cjs", ".rb", ".java", ".kt",
    ]
    .iter()
    .any(|e| name.ends_with(e));
    if !code {
        return false;
    }
    let stem = name.split('.').next().unwrap_or_default();
    if stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || name.contains(".test.")
        || name.contains(".spec.")
    {
        return true;
    }
    path.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("tests" | "test" | "__tests__" | "spec")
        )
    })
}

static PY_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+test\w*[ \t]*\(").unwrap());
static RS_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t]*#\[(?:\w+::)*test\b[^\]]*\]").unwrap());
static GO_TEST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^func[ \t]+(?:Test|Benchmark|Fuzz)\w*[ \t]*\(").unwrap());
static JS_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?:^|[^\w.$])(?:it|test)(?:\.(?:only|skip|each\([^)]*\)))?[ \t]*\(").unwrap()
});

/// How many test functions or cases a file's text defines (by its language).
pub(crate) fn count_tests(path: &Path, text: &str) -> usize {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "py" => PY_TEST.find_iter(text).count(),
        "rs" => RS_TEST.find_iter(text).count(),
        "go" => GO_TEST.find_iter(text).count(),
        "js" | "ts" | "jsx" | "tsx" | "mjs" | "cjs" => JS_TEST.find_iter(text).count(),
        _ => {
            PY_TEST.find_iter(text).count()
                + RS_TEST.find_iter(text).count()
                + GO_TEST.find_iter(text).count()
        }
    }
}

/// The text with layout dropped: whitespace runs removed, except one space where it
/// separates two words (`return x` stays distinct from `returnx`).
fn layout_free(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let word = |c: char| c.is_alphanumeric() || c == '_';
    for chunk in text.split_whitespace() {
        if let (Some(prev), Some(next)) = (out.chars().last(), chunk.chars().next())
            && word(prev)
            && word(next)
        {
            out.push(' ');
        }
        out.push_str(chunk);
    }
    out
}

/// A rewrite whose only differences are whitespace, line endings or line breaks.
pub(crate) fn formatting_only(before: &str, after: &str) -> bool {
    before != after && layout_free(before) == layout_free(after)
}

fn changed_lines(before: &str, after: &str) -> u64 {
    // Bounded: a huge rewrite must not stall the call; past the deadline the diff is coarser
    // (more lines counted as changed), which only makes the backstop earlier.
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(250))
        .diff_lines(before, after)
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .count() as u64
}

/// One file's effect: bytes before (`None`: absent) and after (`None`: deleted or moved away).
struct Change {
    path: PathBuf,
    before: Option<String>,
    after: Option<String>,
}

/// What a file tool call would do, computed without writing. `None`: not a file change.
fn file_changes(s: &Session, args: &ToolArgs, action: &Action) -> Option<Vec<Change>> {
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    match args {
        ToolArgs::ApplyPatch(p) => {
            let v = yuyao_tools::patch::patch_preview(s.tool_context(), &p.patch).ok()?;
            Some(
                v.into_iter()
                    .map(|(path, b, a)| Change {
                        path,
                        before: b.map(text),
                        after: a.map(text),
                    })
                    .collect(),
            )
        }
        ToolArgs::Write(_)
        | ToolArgs::Edit(_)
        | ToolArgs::MultiEdit(_)
        | ToolArgs::NotebookEdit(_) => {
            let path = action.paths.first()?.clone();
            let before = yuyao_tools::fs::read_file(&path).ok();
            let after = yuyao_tools::fs::preview(args, before.as_deref().unwrap_or_default())?;
            Some(vec![Change {
                path,
                before: before.map(text),
                after: Some(text(after)),
            }])
        }
        _ => None,
    }
}

/// `a/./b/../c` → `a/c` without touching the disk (a command's target may not exist yet).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
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

fn rel(project: &Path, p: &Path) -> Option<String> {
    p.strip_prefix(project)
        .ok()
        .map(|r| r.to_string_lossy().replace('\\', "/"))
}

/// The guard's judgement of file changes; adds the lines it let through to `counted`.
fn judge_files(
    sc: &Declared,
    project: &Path,
    changes: &[Change],
    counted: u64,
) -> Result<u64, Hit> {
    let hit = |category, detail: String| Err(Hit { category, detail });
    let mut lines = 0;
    for c in changes {
        let shown = rel(project, &c.path).unwrap_or_else(|| c.path.display().to_string());
        let before = c.before.as_deref();
        let after = c.after.as_deref();
        if before.is_some() && after.is_none() {
            if is_test_file(&c.path) && !sc.allows(Category::TestRemoved) {
                return hit(
                    Category::TestRemoved,
                    format!("deletes the test file {shown}"),
                );
            }
            if !sc.allows(Category::RenameDelete) {
                return hit(Category::RenameDelete, format!("deletes or moves {shown}"));
            }
        }
        if let (Some(b), Some(a)) = (before, after) {
            let (was, now) = (count_tests(&c.path, b), count_tests(&c.path, a));
            if now < was && !sc.allows(Category::TestRemoved) {
                return hit(
                    Category::TestRemoved,
                    format!("removes {} test(s) from {shown} ({was} → {now})", was - now),
                );
            }
        }
        if is_manifest(&c.path) && !sc.names_exactly(&shown) && !sc.allows(Category::Dependency) {
            return hit(
                Category::Dependency,
                format!("changes the dependency file {shown}"),
            );
        }
        let inside = rel(project, &c.path).is_some_and(|r| sc.covers(&r));
        if !inside {
            return hit(
                Category::OutsideScope,
                format!(
                    "{shown} is not in the declared files ({})",
                    sc.files.join(", ")
                ),
            );
        }
        if let (Some(b), Some(a)) = (before, after)
            && formatting_only(b, a)
            && !sc.allows(Category::FormattingOnly)
        {
            return hit(
                Category::FormattingOnly,
                format!("rewrites {shown} changing only whitespace, line endings or line breaks"),
            );
        }
        lines += changed_lines(before.unwrap_or(""), after.unwrap_or(""));
    }
    if let Some(limit) = sc.size_limit()
        && counted + lines > limit
    {
        return hit(
            Category::Size,
            format!(
                "{} changed lines this turn would pass the backstop of {limit} (3 × the declared estimate, at least 200)",
                counted + lines
            ),
        );
    }
    Ok(lines)
}

/// Programs that add, remove or install packages: `(program, sub-commands)`; an empty list
/// means the program itself installs.
const INSTALLERS: &[(&str, &[&str])] = &[
    (
        "npm",
        &[
            "install",
            "i",
            "in",
            "ins",
            "add",
            "uninstall",
            "remove",
            "rm",
            "un",
            "r",
            "update",
            "up",
        ],
    ),
    (
        "pnpm",
        &[
            "add",
            "install",
            "i",
            "remove",
            "rm",
            "uninstall",
            "update",
            "up",
        ],
    ),
    ("yarn", &["add", "install", "remove", "upgrade"]),
    ("bun", &["add", "install", "i", "remove", "rm", "update"]),
    ("npx", &[]),
    ("pip", &["install", "uninstall"]),
    ("pip3", &["install", "uninstall"]),
    ("pipx", &["install"]),
    ("uv", &["add", "remove", "pip"]),
    ("poetry", &["add", "remove"]),
    ("pdm", &["add", "remove"]),
    ("conda", &["install", "remove"]),
    ("mamba", &["install", "remove"]),
    ("cargo", &["add", "remove", "rm", "install"]),
    ("go", &["get", "install"]),
    ("gem", &["install", "uninstall"]),
    ("bundle", &["add", "remove"]),
    ("composer", &["require", "remove"]),
    ("apt", &["install", "remove"]),
    ("apt-get", &["install", "remove"]),
    ("brew", &["install", "uninstall"]),
    ("dotnet", &["add"]),
    ("deno", &["add", "install"]),
];

/// The first word that is not an option.
fn sub_command(args: &[String]) -> Option<&str> {
    args.iter()
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

/// A dependency change a shell segment makes: `npm install left-pad`, `pip install x`, …
fn installs(program: &str, args: &[String]) -> bool {
    // `python -m pip install x`
    if program.starts_with("python") {
        let m = args.iter().position(|a| a == "-m");
        return m.is_some_and(|i| {
            let rest = &args[i + 1..];
            matches!(rest.first().map(String::as_str), Some("pip" | "pip3"))
                && matches!(sub_command(&rest[1..]), Some("install" | "uninstall"))
        });
    }
    let Some((_, subs)) = INSTALLERS.iter().find(|(p, _)| *p == program) else {
        return false;
    };
    if subs.is_empty() {
        return false; // npx runs a package; it changes no manifest
    }
    let Some(sub) = sub_command(args) else {
        return false;
    };
    if !subs.contains(&sub) {
        return false;
    }
    // `npm install` / `yarn install` alone install what the lock file says: no change.
    let pkgs = args
        .iter()
        .skip_while(|a| a.as_str() != sub)
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .count();
    pkgs > 0 || matches!(sub, "add" | "get" | "require")
}

/// The guard's judgement of a shell command: its effective programs (installers, removals,
/// moves) and the project files it names as written (redirections, `sed -i`, `tee`, `cp`, …;
/// `yuyao_policy::shell::segment_paths`). Writes outside the project (scratch files) are not
/// the scope's business.
fn judge_command(sc: &Declared, command: &str, cwd: &Path, project: &Path) -> Result<(), Hit> {
    let Ok(segments) = yuyao_policy::shell::segments_in(command, Some(cwd)) else {
        // Undetermined commands are never permitted automatically anyway (policy).
        return Ok(());
    };
    for seg in segments {
        let program = seg.program.as_str();
        if installs(program, &seg.args) && !sc.allows(Category::Dependency) {
            return Err(Hit {
                category: Category::Dependency,
                detail: format!("`{}` installs or removes packages", seg.command_line()),
            });
        }
        let (removes, moves) = match (program, sub_command(&seg.args)) {
            ("rm" | "rmdir" | "unlink" | "shred", _) | ("git", Some("rm")) => (true, false),
            ("mv", _) | ("git", Some("mv")) => (false, true),
            _ => (false, false),
        };
        if removes
            && seg.args.iter().any(|a| is_test_file(Path::new(a)))
            && !sc.allows(Category::TestRemoved)
        {
            return Err(Hit {
                category: Category::TestRemoved,
                detail: format!("`{}` deletes a test file", seg.command_line()),
            });
        }
        if (removes || moves) && !sc.allows(Category::RenameDelete) {
            return Err(Hit {
                category: Category::RenameDelete,
                detail: format!("`{}` deletes or renames files", seg.command_line()),
            });
        }
        for (written, computed) in yuyao_policy::shell::segment_paths(&seg).writes {
            if computed {
                continue;
            }
            let path = lexical(&cwd.join(&written));
            let Some(r) = rel(project, &path) else {
                continue;
            };
            if is_manifest(&path) && !sc.names_exactly(&r) && !sc.allows(Category::Dependency) {
                return Err(Hit {
                    category: Category::Dependency,
                    detail: format!("`{}` writes the dependency file {r}", seg.command_line()),
                });
            }
            if !sc.covers(&r) {
                return Err(Hit {
                    category: Category::OutsideScope,
                    detail: format!(
                        "`{}` writes {r}, which is not in the declared files ({})",
                        seg.command_line(),
                        sc.files.join(", ")
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The hook in `tool_call/mod.rs`, after the policy's decision and before the call runs. In an
/// unscoped turn, with the guard off, or for a call the policy already refuses: nothing.
/// A hit with a human to ask turns the decision into a confirmation naming the category;
/// without one it is the refusal the model reads (`Err`).
pub(crate) fn gate(
    s: &Session,
    name: &str,
    args: &ToolArgs,
    action: &Action,
    decision: &mut Decision,
) -> Result<(), String> {
    if decision.verdict == Verdict::Deny
        || s.config().get(super::GUARD_KEY).and_then(|v| v.as_bool()) == Some(false)
    {
        return Ok(());
    }
    let Ok(mut t) = s.listening().scope.lock() else {
        return Ok(());
    };
    let counted = t.changed_lines;
    let Some(sc) = t.declared.as_ref() else {
        return Ok(());
    };
    let judged = if let Some(cmd) = &action.command {
        judge_command(sc, cmd, &s.tool_context().cwd(), &s.paths().project).map(|()| 0)
    } else if let Some(changes) = file_changes(s, args, action) {
        judge_files(sc, &s.paths().project, &changes, counted)
    } else {
        Ok(0)
    };
    let hit = match judged {
        Ok(lines) => {
            t.changed_lines += lines;
            return Ok(());
        }
        Err(h) => h,
    };
    drop(t);
    let attended = s.has_handler()
        && !s.options().headless
        && s.lock().policy.mode != yuyao_protocol::Mode::Yolo;
    s.lock().trajectory.record(
        "scope_guard",
        json!({"tool": name, "category": hit.category.label(), "detail": hit.detail,
               "outcome": if attended { "ask" } else { "refused" }}),
    );
    if attended {
        decision.verdict = Verdict::Ask;
        decision.reason = format!("scope guard — {}: {}", hit.category.label(), hit.detail);
        decision.source = "scope guard".into();
        return Ok(());
    }
    s.notice(
        yuyao_protocol::NoticeLevel::Warning,
        format!(
            "scope guard refused {name} ({}): {}",
            hit.category.label(),
            hit.detail
        ),
    );
    Err(format!(
        "Refused by the scope guard ({}): {}. It is outside the scope declared for this turn. Do not work around it: re-declare the scope if the user asked for this (declare-scope with the files, or `allow` for the category), otherwise leave it out and say so in your final answer.",
        hit.category.label(),
        hit.detail
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_only_is_layout_without_content() {
        assert!(formatting_only("a = 1\nb = 2\n", "a  =  1\r\nb = 2\n"));
        assert!(!formatting_only("f(a,b)\n", "f(\n    a,\n    b,\n)\n"));
        assert!(formatting_only("f(a,b)\n", "f(a, b)\n"));
        assert!(!formatting_only("return x\n", "returnx\n"));
        assert!(!formatting_only("same\n", "same\n"));
    }

    #[test]
    fn tests_are_counted_per_language() {
        let py = "def test_a():\n    pass\n\nasync def test_b():\n    pass\ndef helper(): pass\n";
        assert_eq!(count_tests(Path::new("t.py"), py), 2);
        let rs = "#[test]\nfn a() {}\n#[tokio::test]\nasync fn b() {}\n";
        assert_eq!(count_tests(Path::new("x.rs"), rs), 2);
        let js = "describe('x', () => {\n  it('a', () => {});\n  test.only('b', () => {});\n});\n";
        assert_eq!(count_tests(Path::new("x.test.js"), js), 2);
        assert_eq!(
            count_tests(Path::new("x_test.go"), "func TestA(t *testing.T) {}\n"),
            1
        );
    }

    #[test]
    fn installs_are_recognised_from_effective_programs() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(installs("npm", &a(&["install", "left-pad"])));
        assert!(installs("npm", &a(&["i", "-D", "left-pad"])));
        assert!(!installs("npm", &a(&["install"])));
        assert!(!installs("npm", &a(&["test"])));
        assert!(installs("pip", &a(&["install", "requests"])));
        assert!(installs("python3", &a(&["-m", "pip", "install", "x"])));
        assert!(installs("cargo", &a(&["add", "serde"])));
        assert!(installs("go", &a(&["get", "example.com/x"])));
        assert!(installs("uv", &a(&["pip", "install", "x"])));
        assert!(!installs("cargo", &a(&["test"])));
    }

    #[test]
    fn manifests_and_test_files() {
        assert!(is_manifest(Path::new("/p/requirements-dev.txt")));
        assert!(is_manifest(Path::new("/p/web/package.json")));
        assert!(!is_manifest(Path::new("/p/src/package.py")));
        assert!(is_test_file(Path::new("tests/test_x.py")));
        assert!(is_test_file(Path::new("src/a.test.ts")));
        assert!(is_test_file(Path::new("pkg/a_test.go")));
        assert!(!is_test_file(Path::new("src/testing_utils.md")));
        assert!(!is_test_file(Path::new("src/app.py")));
    }
}
