//! What the read-only list adds when the command runs under the enforced read-only OS
//! sandbox ([`super::Trust::Sandboxed`]: plan mode, the ask role, `--sandbox read-only`).
//!
//! That sandbox, not this list, is what keeps files intact: Landlock lets a tool process
//! write nothing but build outputs and the session's scratch folder, and with the network
//! off seccomp refuses every socket but `AF_UNIX`. So forms whose only possible effect is a
//! file write may be read-only here: command substitutions whose inner commands are
//! read-only, awk programs that only print, `sort -T DIR`, BSD `find -x`, `env VAR=…` before
//! a program that reads no configuration, `--help`/`--version` of any program, and the
//! reading verbs of package managers and service CLIs (`clis.rs`).
//!
//! What the sandbox cannot stop stays refused in every form: running a program the command
//! names or computes (`awk 'BEGIN{system(…)}'`, `find -exec rm`, `xargs rm`, `rg --pre`),
//! anything that asks a daemon, registry, cluster or cloud API to change something (the
//! docker socket is a local `AF_UNIX` socket; the network switch may be on), signals, a
//! second machine (`ssh`), a redirection to a file (`> f` fails, but the line is a write),
//! and interactive programs, which would wait for keys until the command times out.

use super::args::{is_dynamic, words_are_static};
use super::{PURE, assignment_is_harmless, awk, clis, git, program_is_read_only, text, tools};
use crate::shell::Segment;

/// Programs that wait for keys on a terminal. A tool command has none: refused with a
/// reason, so the model reads with `cat`/`head`/`rg` instead of waiting for a timeout.
pub const INTERACTIVE: &[&str] = &[
    "less",
    "more",
    "most",
    "pg",
    "vim",
    "vi",
    "nvim",
    "view",
    "vimdiff",
    "ex",
    "nano",
    "pico",
    "emacs",
    "micro",
    "hx",
    "helix",
    "joe",
    "fzf",
    "sk",
    "peco",
    "htop",
    "btop",
    "atop",
    "iotop",
    "iftop",
    "nethogs",
    "glances",
    "tmux",
    "screen",
    "mc",
    "ranger",
    "nnn",
    "lf",
    "tig",
    "lazygit",
    "gitui",
    "ncdu",
    "info",
    "irb",
    "ghci",
    "tty-clock",
    "top",
];

/// Pagers show even their own help in the pager.
const PAGERS: &[&str] = &["less", "more", "most", "pg"];

/// Programs whose `-h` alone is help (beyond the strict list; `-h` is an option of many
/// programs: `ls -h`, `sort -h`, `shutdown -h`).
const HELP_H: &[&str] = &[
    "rg",
    "fd",
    "jq",
    "yq",
    "ruff",
    "black",
    "mypy",
    "pytest",
    "tsc",
    "eslint",
    "prettier",
    "deno",
    "gh",
    "helm",
    "terraform",
    "gcloud",
    "yarn",
    "pnpm",
    "poetry",
    "rustup",
    "go",
    "tokei",
    "bat",
    "delta",
    "hyperfine",
    "just",
    "node",
    "npx",
    "uv",
    "cargo",
    "pip",
    "pip3",
];

/// CLIs where `PROG SUB --help` (and `-h`) prints the help of SUB without running it, and
/// `PROG help [SUB…]` prints help: their argument parsers (cobra, clap, click, optparse,
/// npm's) act on `--help` before any subcommand runs. How many subcommand words may precede
/// `--help`: never a word that could be an operand (`docker run IMAGE --help` runs IMAGE with
/// `--help`; `uv run TOOL --help` runs TOOL). git is not here: `git help` obeys the
/// repository's `help.format`/`help.browser` settings.
const HELP_CLIS: &[(&str, usize)] = &[
    ("cargo", 1),
    ("uv", 1),
    ("npm", 1),
    ("pip", 1),
    ("pip3", 1),
    ("poetry", 1),
    ("rustup", 2),
    ("gh", 2),
    ("kubectl", 2),
    ("helm", 2),
    ("docker", 1),
    ("terraform", 1),
    ("gcloud", 3),
    ("conda", 1),
    ("brew", 1),
    ("deno", 1),
    ("go", 0),
    ("yarn", 0),
    ("pnpm", 0),
];

/// Programs whose `--help` is not taken on trust: they signal processes, stop the machine or
/// write to other terminals, where an implementation that does not know `--help` would act
/// on it (Info-ZIP's unzip reads `--version` as the letters `-v -e -r -s -i -o -n`).
const NO_HELP: &[&str] = &[
    "kill", "killall", "killall5", "pkill", "skill", "snice", "xkill", "halt", "reboot",
    "poweroff", "shutdown", "init", "telinit", "wall", "write", "logger",
];

/// Where nested groups make two subcommand words safe before `--help`.
const DOCKER_GROUPS: &[&str] = &[
    "container",
    "image",
    "network",
    "volume",
    "compose",
    "system",
    "context",
    "builder",
    "buildx",
    "manifest",
    "plugin",
    "secret",
    "service",
    "stack",
    "swarm",
    "node",
    "config",
    "trust",
];

/// Judges a segment under the read-only sandbox; `p` and `a` as the strict tables see them.
pub(super) fn segment(s: &Segment, p: &str, a: &[String]) -> bool {
    if !s
        .assignments
        .iter()
        .all(|x| assignment_is_harmless_here(x, p))
    {
        return false;
    }
    if program_is_read_only(p, a) {
        return true;
    }
    if INTERACTIVE.contains(&p) {
        return !PAGERS.contains(&p) && matches!(a, [o] if o == "--help" || o == "--version");
    }
    help_form(p, a) || program(p, a)
}

/// An assignment before a program that reads no configuration and runs nothing (`env
/// FOO=bar ls`, `LC_ALL=C sort`): any uppercase name but those that load code, change how a
/// program is found or parses its options, or point at configuration, a helper or a pager.
fn assignment_is_harmless_here(a: &str, program: &str) -> bool {
    const EXACT: &[&str] = &[
        "ENV",
        "IFS",
        "PS4",
        "POSIXLY_CORRECT",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "RES_OPTIONS",
        "TERMINFO",
        "TERMCAP",
        "VISUAL",
        "BROWSER",
        "GLOBIGNORE",
    ];
    const PREFIXES: &[&str] = &[
        "LD_", "DYLD_", "BASH", "MALLOC", "GLIBC", "PYTHON", "PERL", "RUBY", "NODE", "JAVA",
        "_JAVA", "JDK_", "GIT_", "LESS", "XDG_", "SSH_", "GPG", "GNUPG", "SYSTEMD", "DBUS",
        "SHELL", "PROMPT", "LOC", "GCONV", "NLS",
    ];
    const PARTS: &[&str] = &[
        "PATH", "LIB", "PRELOAD", "CONF", "PAGER", "EDITOR", "COMMAND", "CMD", "EXEC", "PROG",
        "SHELL", "HOOK", "PLUGIN", "HOME", "OPT", "FILE", "RC",
    ];
    if assignment_is_harmless(a) {
        return true;
    }
    let name = a.split_once('=').map_or(a, |(n, _)| n);
    let tolerant = PURE.contains(&program) || ENV_TOLERANT.contains(&program);
    tolerant
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !EXACT.contains(&name)
        && !PREFIXES.iter().any(|p| name.starts_with(p))
        && !PARTS.iter().any(|p| name.contains(p))
}

/// Programs with a table of their own that read no configuration file and run no helper
/// named by the environment. Not `find` nor `fd`: the environment reaches what their
/// `-exec` runs (`RUSTC_WRAPPER=x find . -exec cargo tree \;`), a segment of its own.
const ENV_TOLERANT: &[&str] = &[
    "sed", "sort", "uniq", "xxd", "base64", "base32", "printf", "test", "[", "[[", "date", "tree",
    "file", "awk", "gawk", "mawk", "nawk",
];

/// `PROG --help`, `PROG --version` (any program: the word alone, nothing else on the line
/// for it to act on), `PROG -h` where `-h` is help, `PROG SUB --help` and `PROG help …`
/// for the CLIs of [`HELP_CLIS`]. `rm -rf x --help` is none of these.
fn help_form(p: &str, a: &[String]) -> bool {
    if !words_are_static(a) {
        return false;
    }
    match a {
        [one] if one == "--help" || one == "--version" => return !NO_HELP.contains(&p),
        [one] if one == "-h" && HELP_H.contains(&p) => return true,
        _ => {}
    }
    let Some(&(_, depth)) = HELP_CLIS.iter().find(|(n, _)| *n == p) else {
        return p == "aws" && aws_help(a);
    };
    let word = |w: &String| {
        w.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
    };
    match a.split_last() {
        Some((last, subs)) if last == "--help" || last == "-h" => {
            let allowed = if p == "docker"
                && subs
                    .first()
                    .is_some_and(|g| DOCKER_GROUPS.contains(&g.as_str()))
            {
                2
            } else {
                depth
            };
            !subs.is_empty() && subs.len() <= allowed && subs.iter().all(word)
        }
        _ => {
            // `cargo help build`, `kubectl help get`, `uv help pip list`.
            a.first().is_some_and(|h| h == "help") && a.len() <= 4 && a[1..].iter().all(word)
        }
    }
}

/// `aws help`, `aws SERVICE help`, `aws SERVICE OPERATION help`.
fn aws_help(a: &[String]) -> bool {
    a.last().is_some_and(|h| h == "help")
        && a.len() <= 3
        && a.iter().all(|w| {
            w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// The forms of each program that only the sandbox makes read-only.
fn program(p: &str, a: &[String]) -> bool {
    match p {
        "awk" | "gawk" | "mawk" | "nawk" => awk::awk(a),
        "sort" => text::sort_with(a, true),
        "find" => find_bsd(a),
        "git" => git_extra(a),
        "sqlite3" => tools::sqlite3_with(a, true),
        "man" => clis::man(a),
        "npm" => clis::npm(a),
        "yarn" => clis::yarn(a),
        "pnpm" => clis::pnpm(a),
        "pip" | "pip3" => clis::pip(a),
        "uv" => clis::uv(a),
        "cargo" => clis::cargo(a),
        "gh" => clis::gh(a),
        "kubectl" => clis::kubectl(a),
        "docker" => clis::docker(a),
        "aws" => clis::aws(a),
        "gcloud" => clis::gcloud(a),
        "helm" => clis::helm(a),
        "terraform" => clis::terraform(a),
        "openssl" => clis::openssl(a),
        "go" => clis::go(a),
        "az" => clis::az(a),
        // The JDK's single-dash version flags.
        "java" | "javac" => matches!(a, [v] if v == "-version" || v == "--version"),
        _ => false,
    }
}

/// BSD find's global options before the starting points: `-x` (stay on one file system),
/// `-E` (extended regexes), `-s` (sorted), `-X` (warn about xargs-unsafe names).
fn find_bsd(a: &[String]) -> bool {
    let k = a
        .iter()
        .take_while(|w| matches!(w.as_str(), "-x" | "-E" | "-s" | "-X" | "-H" | "-L" | "-P"))
        .count();
    k > 0 && text::find(&a[k..])
}

/// git beyond the strict table: `branch --remote` (git takes it for `--remotes`) and
/// `remote show [-n] NAME…` (asks the remote what it has; `-n` does not).
fn git_extra(a: &[String]) -> bool {
    if a.iter().any(|w| is_dynamic(w)) {
        return false;
    }
    if a.first().is_some_and(|w| w == "branch") && a.iter().any(|w| w == "--remote") {
        let fixed: Vec<String> = a
            .iter()
            .map(|w| {
                if w == "--remote" {
                    "--remotes".to_string()
                } else {
                    w.clone()
                }
            })
            .collect();
        return git::git(&fixed);
    }
    match a {
        [r, s, rest @ ..] if r == "remote" && s == "show" => {
            !rest.is_empty()
                && rest.iter().all(|w| {
                    w == "-n" || (!w.starts_with('-') && !w.contains("::") && !w.contains(':'))
                })
        }
        _ => false,
    }
}

/// Why `s` was refused, when there is more to say than "not read-only".
pub(super) fn hint(s: &Segment, trust: super::Trust) -> Option<String> {
    let p = s.program.as_str();
    if let Some(w) = s
        .wrappers
        .iter()
        .find(|w| !super::HARMLESS_WRAPPERS.contains(&w.as_str()))
    {
        return Some(if w == "watch" {
            "`watch` repeats its command until stopped: run the command once instead".into()
        } else {
            format!(
                "`{w}` writes files, changes user or runs the command elsewhere: run `{p}` without it"
            )
        });
    }
    if INTERACTIVE.contains(&p) {
        return Some(format!(
            "`{p}` is interactive: it waits for keys on a terminal, and a tool command has none; read with cat, head, tail or rg instead"
        ));
    }
    if s.writes_file {
        return Some("the output is redirected to a file".into());
    }
    if trust == super::Trust::Strict {
        return None;
    }
    if let Some(x) = s
        .assignments
        .iter()
        .find(|x| !assignment_is_harmless_here(x, p))
        && without_assignments(s)
    {
        let name = x.split_once('=').map_or(x.as_str(), |(n, _)| n);
        return Some(format!(
            "the assignment {name}=… can change what `{p}` runs, loads or reads as configuration"
        ));
    }
    match p {
        "awk" | "gawk" | "mawk" | "nawk" => Some(
            "an awk program may only read and print: no system(), no pipe to or from a command, no `>` redirection, no -f/@include/@load".into(),
        ),
        "sqlite3" => Some(
            "sqlite3 needs -readonly, and reads dot-commands such as .shell from its input: give the SQL as an argument, or add -safe".into(),
        ),
        _ if s.wrappers.iter().any(|w| w == "xargs") && without_appended(s) => Some(format!(
            "the words xargs appends could be options of `{p}`: put `--` after its options"
        )),
        _ => None,
    }
}

/// Whether `s` (under `xargs`) would be read-only if xargs appended nothing.
fn without_appended(s: &Segment) -> bool {
    let mut t = s.clone();
    t.dynamic_args.truncate(t.args.len());
    t.wrappers.retain(|w| w != "xargs");
    super::segment_is_read_only_under(&t, super::Trust::Sandboxed)
}

/// Whether `s` would be read-only without its environment assignments.
fn without_assignments(s: &Segment) -> bool {
    let mut t = s.clone();
    t.assignments.clear();
    super::segment_is_read_only_under(&t, super::Trust::Sandboxed)
}
