//! What counts as read-only in the shell. Plan mode, the ask role and headless `ask` mode
//! (nobody to approve) let a bash command run only when every segment is read-only.
//!
//! Read-only means no effect: a program is read-only only in forms known to be safe, per
//! program — its options from a table, no output operand, no option that runs another
//! program — like Codex's known-safe-command check. Anything unknown is not read-only: an
//! unknown program, an unknown or abbreviated option of a known one, a word computed at run
//! time where it could become an option, an environment assignment not known harmless, a
//! file redirection, a command substitution.
//!
//! That is the [`Trust::Strict`] list. Where the command runs under the enforced read-only OS
//! sandbox ([`Trust::Sandboxed`]: plan mode, the ask role), forms whose only possible effect
//! is a file write that sandbox stops are read-only too ([`sandboxed`]).

mod args;
mod awk;
pub(crate) use awk::may_run_commands as awk_may_run_commands;
mod clis;
mod git;
pub mod sandboxed;
mod system;
mod text;
mod tools;

use crate::shell::Segment;

/// Programs that are read-only whatever their arguments: none of their options writes a file
/// or runs another program, so unknown options and computed words are harmless too.
const PURE: &[&str] = &[
    // coreutils and friends that only read files and print
    "cat",
    "head",
    "tail", // `-f`/`--pid` only wait
    "wc",   // `--files0-from` reads
    "ls",
    "dir",
    "vdir",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
    "nl",
    "od",
    "comm",
    "paste",
    "fold",
    "expand",
    "unexpand",
    "tac",
    "rev",
    "join",
    "fmt",
    "pr",
    "numfmt",
    "tsort",
    "factor",
    "expr",
    "seq",
    "sleep",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "md5sum",
    "b2sum",
    "cksum",
    "sum",
    // grep has no option that writes or runs anything (that is rg's `--pre`)
    "grep",
    "egrep",
    "fgrep",
    // GNU diff and cmp only compare
    "diff",
    "cmp",
    // util-linux / bsdmainutils / binutils printers
    "column",
    "hexdump",
    "strings",
    "zipinfo",
    "lscpu",
    "lsblk",
    "lsb_release",
    "vmstat",
    "iostat",
    "mpstat",
    "objdump",
    "readelf",
    "size",
    "eza",
    "exa",
    "tokei",
    "cal",
    // jq reads files (`--rawfile`, `-f`, `-L`) but cannot write or run anything
    "jq",
    // identity and system state
    "whoami",
    "id",
    "groups",
    "logname",
    "who",
    "w",
    "users",
    "uname", // cannot set anything
    "arch",
    "nproc",
    "getconf",
    "locale",
    "tty",
    "uptime",
    "free",
    "ps",
    "lsof",
    "pgrep", // pkill is another program
    "pidof",
    "netstat",
    "getent",
    "printenv",
    "which",
    "whereis",
    // shell builtins that only print or test
    "pwd",
    "echo", // bash's echo: `-n`, `-e`, `-E` only
    "true",
    "false",
    ":",
    "type",
    "help",
    "cd", // changes only the working directory of the rest of the line
    "pushd",
    "popd",
    "dirs",
    "jobs",
];

/// Programs whose `--help` or `--version` alone only prints (beyond the ones judged below,
/// which accept these forms through their own tables or purity).
const VERSIONED: &[&str] = &[
    "git", "python", "python3", "node", "npm", "npx", "pip", "pip3", "cargo", "rustc", "uv",
    "docker", "kubectl", "gcc", "g++", "cc", "clang", "make", "cmake", "bash", "tar", "openssl",
    "sqlite3", "rg", "fd", "tree", "file", "find", "sed", "sort", "uniq", "xxd", "base64",
    "base32", "date", "hostname", "dmesg", "perl", "ruby", "java", "deno",
];

/// Programs whose `-h` alone is help. Not every program: `bash -h` sets an option and then
/// reads a script from stdin.
const HELP_H: &[&str] = &[
    "git", "python", "python3", "node", "npm", "pip", "pip3", "cargo", "rustc", "uv", "docker",
    "kubectl", "make", "cmake", "perl",
];

/// Environment assignments that cannot change what a program runs or writes: a few names
/// known harmless, and lowercase names (`f=x.py; head $f`, `for f in …`), which no program
/// or shell feature reads for code or paths to run. Everything else — `PATH`, `GIT_*`,
/// `LD_*`, `BASH_ENV`, `PAGER`, `EDITOR`, `PYTHON*`, `NODE_OPTIONS`, `HOME`, `IFS`, … —
/// makes the segment not read-only.
fn assignment_is_harmless(a: &str) -> bool {
    const NAMES: &[&str] = &[
        "LANG",
        "LANGUAGE",
        "TZ",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "COLORTERM",
        "COLUMNS",
        "LINES",
        "TERM",
        "RUST_BACKTRACE",
        "CARGO_TERM_COLOR",
    ];
    let (name, value) = a.split_once('=').unwrap_or((a, ""));
    let lowercase = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    lowercase
        || (name.starts_with("LC_") && name != "LC_")
        || NAMES.contains(&name)
        || (matches!(name, "GIT_PAGER" | "PAGER") && value == "cat")
}

/// Directories whose programs are the system's: a program named by another path (`./ls`,
/// `bin/grep`, `/tmp/x/cat`) is whatever file is there, not the program of that name.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
];

fn program_is_the_system_one(s: &Segment) -> bool {
    match s.program_path.rsplit_once('/') {
        None => true,
        Some((dir, name)) => name == s.program && SYSTEM_DIRS.contains(&dir),
    }
}

/// The arguments as the per-program checks see them: a word whose text is not what the
/// program receives (an expansion, a glob) becomes empty, the mark of a computed word.
/// Missing flags count as computed; words appended at run time (`xargs`) are one more.
fn visible_args(s: &Segment) -> Vec<String> {
    let mut v: Vec<String> = s
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if s.dynamic_args.get(i).copied().unwrap_or(true) {
                String::new()
            } else {
                a.clone()
            }
        })
        .collect();
    if s.dynamic_args.len() > s.args.len() {
        v.push(String::new());
    }
    v
}

/// How much the classifier may lean on the OS sandbox around the command it judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// None: the command may run with write access (a line an allow rule lets through runs
    /// under the session's sandbox), or the kernel cannot enforce the read-only sandbox.
    /// Only forms with no effect at all are read-only.
    Strict,
    /// The command runs under the enforced read-only OS sandbox (Landlock: no file written
    /// but build outputs and the session's scratch; seccomp: no socket but `AF_UNIX` with
    /// the network off). Forms whose only possible effect that sandbox stops are read-only
    /// too; see [`sandboxed`] for what that adds and what it still refuses.
    Sandboxed,
}

/// Whether one segment only reads, with nothing but the classifier to rely on.
pub fn segment_is_read_only(s: &Segment) -> bool {
    segment_is_read_only_under(s, Trust::Strict)
}

/// Whether one segment only reads, given how much the OS sandbox around it may be trusted.
pub fn segment_is_read_only_under(s: &Segment, trust: Trust) -> bool {
    if s.writes_file || !wrappers_are_harmless(s) || !program_is_the_system_one(s) {
        return false;
    }
    let p = s.program.as_str();
    let visible = visible_args(s);
    let a = visible.as_slice();
    match trust {
        Trust::Strict => {
            !s.substituted
                && s.assignments.iter().all(|x| assignment_is_harmless(x))
                && program_is_read_only(p, a)
        }
        Trust::Sandboxed => sandboxed::segment(s, p, a),
    }
}

/// Why a segment that is not read-only under `trust` was refused, when there is more to say
/// than "not read-only": an interactive program, a form one change away from an allowed one.
pub fn refusal_hint(s: &Segment, trust: Trust) -> Option<String> {
    if segment_is_read_only_under(s, trust) {
        return None;
    }
    sandboxed::hint(s, trust)
}

/// Wrappers that only run the program they wrap, in the same process tree and sandbox, and
/// write nothing themselves: `xargs`, `env`, `timeout`, `nice`, … `find -exec`, and the
/// shells whose command string the lexer has read into segments (`bash -c '…'`). Others
/// are refused whatever they wrap: `strace -o`, `script`, `valgrind --log-file` and `flock`
/// write files, `ssh` runs the program on another machine, `systemd-run` asks the service
/// manager to run it outside the sandbox, `watch` never ends, `sudo`/`su`/`doas` change
/// user, `parallel`/`busybox`/`gdb` run more than the wrapped word says.
const HARMLESS_WRAPPERS: &[&str] = &[
    "env", "timeout", "nice", "ionice", "stdbuf", "command", "builtin", "exec", "nohup", "xargs",
    "find", "time", "setsid", "taskset", "chrt", "sh", "bash", "zsh", "dash", "ksh", "mksh",
    "yash", "ash", "fish",
];

fn wrappers_are_harmless(s: &Segment) -> bool {
    s.wrappers
        .iter()
        .enumerate()
        // `time` is bash's keyword only as the first word; `env time -o f` is GNU time.
        .all(|(i, w)| HARMLESS_WRAPPERS.contains(&w.as_str()) && (w != "time" || i == 0))
}

/// Whether program `p` with the visible arguments `a` only reads (the per-program tables).
fn program_is_read_only(p: &str, a: &[String]) -> bool {
    if PURE.contains(&p) {
        return true;
    }
    match a {
        [one] if (one == "--help" || one == "--version") && VERSIONED.contains(&p) => return true,
        [one] if one == "-h" && HELP_H.contains(&p) => return true,
        _ => {}
    }
    match p {
        "sed" => text::sed(a),
        "sort" => text::sort(a),
        "uniq" => text::uniq(a),
        "xxd" => text::xxd(a),
        "base64" | "base32" => text::base64(a),
        "printf" => text::printf(a),
        "test" | "[" | "[[" => text::test(p, a),
        "date" => text::date(a),
        "hostname" => text::hostname(a),
        "tree" => text::tree(a),
        "file" => text::file(a),
        "find" => text::find(a),
        "fd" | "fdfind" => text::fd(a),
        "rg" => text::rg(a),
        "git" => git::git(a),
        "tar" => tools::tar(a),
        "unzip" => tools::unzip(a),
        "pip" | "pip3" => tools::pip(a) || matches!(a, [v] if v == "-V"),
        "uv" => tools::uv(a),
        "openssl" => tools::openssl(a),
        "sqlite3" => tools::sqlite3(a),
        "ip" => tools::ip(a),
        "dmesg" => tools::dmesg(a),
        "kubectl" => tools::kubectl(a),
        "docker" => tools::docker(a),
        "systemctl" => system::systemctl(a),
        "journalctl" => system::journalctl(a),
        "ss" => system::ss(a),
        "apt" | "apt-cache" => system::apt(p, a),
        "dpkg" | "dpkg-query" => system::dpkg(a),
        "gh" => system::gh(a),
        "yq" => system::yq(a),
        // `top` only in batch mode: interactively its keys kill and renice processes.
        "top" => {
            a.iter().any(|x| args::short_bundle_has(x, "b"))
                && a.iter().all(|x| !args::is_dynamic(x))
        }
        // `nm --plugin LIB` loads code; no other option of binutils' nm writes or runs.
        "nm" => !a
            .iter()
            .any(|x| args::is_dynamic(x) || args::long_abbreviates(x, &["plugin"])),
        // `env` alone prints the environment; `-S`, assignments and a command are other forms
        // (the lexer makes the command a segment of its own).
        "env" => a.is_empty() || matches!(a, [o] if o == "-0" || o == "--null"),
        // `command -v`/`-V` only look a name up.
        "command" => matches!(a.first().map(String::as_str), Some("-v" | "-V")),
        "python" | "python3" | "rustc" | "node" | "npx" => {
            matches!(a, [v] if v == "-V" || v == "-v" || v == "--version")
        }
        "npm" => matches!(a, [v] if v == "-v") || tools::npm(a) || validation(p, a),
        "cargo" => matches!(a, [v] if v == "-V") || tools::cargo_inspect(a) || validation(p, a),
        "pnpm" | "yarn" => validation(p, a),
        // Never read-only, whatever the arguments: awk/gawk (a program can pipe to or read
        // from a command, `system()`, `>`, `-f FILE`), tee (writes), less/more (`!cmd`, `v`
        // editor, LESSOPEN), ldd (may run the binary), man (pager), and every unknown program.
        _ => false,
    }
}

/// Validation commands seed 001 allows while planning. They RUN PROJECT CODE (`build.rs`,
/// proc macros, test bodies, package scripts): they are "read-only" only because the lead's
/// read-only OS sandbox around plan-mode bash keeps source files intact — not because they
/// have no effect. Keep this list short and keep it marked.
fn validation(program: &str, args: &[String]) -> bool {
    match program {
        "cargo" => {
            matches!(
                args.first().map(String::as_str),
                Some("check" | "test" | "clippy")
            ) || (args.len() >= 2 && args[0] == "nextest" && args[1] == "run")
        }
        "npm" | "pnpm" | "yarn" => args.first().is_some_and(|a| a == "test"),
        _ => false,
    }
}
