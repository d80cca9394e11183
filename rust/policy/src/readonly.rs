//! What counts as read-only in the shell (seed 001's allow-list). Plan mode, the ask role
//! and headless `ask` mode let a bash command run only when every segment is read-only.

use crate::shell::Segment;

/// Inspection programs that never change anything (whatever their arguments, except the
/// per-program exceptions in [`segment_is_read_only`]).
const INSPECTION: &[&str] = &[
    "rg",
    "ls",
    "cat",
    "sed",
    "grep",
    "egrep",
    "fgrep",
    "find",
    "head",
    "tail",
    "fd",
    "tree",
    "stat",
    "file",
    "which",
    "jq",
    "wc",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "cd",
    "du",
    "df",
    "diff",
    "cmp",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "less",
    "more",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "whoami",
    "id",
    "uname",
    "date",
    "env",
    "printenv",
    "type",
    "command",
    "hostname",
    "column",
    "od",
    "xxd",
    "hexdump",
    "sha256sum",
    "md5sum",
    "sha1sum",
    "cksum",
    "awk",
    "ps",
    "uptime",
    "free",
    "lsof",
    "comm",
    "paste",
    "fold",
    "expand",
    "tac",
    "rev",
    "strings",
    "ldd",
    "nproc",
    "locale",
    "seq",
    "sleep",
    ":",
];

const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "ls-files",
    "rev-parse",
    "describe",
    "shortlog",
    "grep",
    "branch",
    "remote",
    "ls-tree",
    "cat-file",
    "rev-list",
    "reflog",
    "tag",
];

/// Whether one segment only reads.
pub fn segment_is_read_only(s: &Segment) -> bool {
    if s.writes_file || s.substituted {
        return false;
    }
    let p = s.program.as_str();
    let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
    match p {
        "sed" => !args
            .iter()
            .any(|a| a.starts_with("-i") || *a == "--in-place"),
        "find" => !args.iter().any(|a| {
            matches!(
                *a,
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "awk" => !args.iter().any(|a| a.contains("system") || a.contains('>')),
        "fd" => !args
            .iter()
            .any(|a| matches!(*a, "-x" | "-X" | "--exec" | "--exec-batch")),
        "sort" => !args
            .iter()
            .any(|a| a.starts_with("-o") || a.starts_with("--output")),
        "env" => args.is_empty(),
        "command" => matches!(args.first(), Some(&("-v" | "-V"))),
        "date" => !args
            .iter()
            .any(|a| a.starts_with("-s") || a.starts_with("--set")),
        "git" => git_is_read_only(&args),
        "cargo" => {
            matches!(
                args.first(),
                Some(&("check" | "test" | "clippy" | "metadata" | "tree"))
            ) || args.starts_with(&["nextest", "run"])
        }
        "npm" | "pnpm" | "yarn" => args.first() == Some(&"test"),
        _ => INSPECTION.contains(&p),
    }
}

fn git_is_read_only(args: &[&str]) -> bool {
    let mut i = 0;
    // Global options that only select a directory are fine; `-c` can run anything.
    while i < args.len() && args[i].starts_with('-') {
        match args[i] {
            "-C" | "--git-dir" | "--work-tree" => i += 2,
            "--no-pager" | "-P" => i += 1,
            _ => return false,
        }
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    let rest = &args[i + 1..];
    if rest
        .iter()
        .any(|a| a.starts_with("--output") || a.starts_with("--exec") || *a == "-c")
    {
        return false;
    }
    match *sub {
        // These also have writing forms: only the listing forms are read-only.
        "branch" | "tag" | "remote" => rest.iter().all(|a| {
            matches!(
                *a,
                "-a" | "-r" | "-l" | "--list" | "-v" | "-vv" | "--all" | "--show-current"
            )
        }),
        s => GIT_READ_ONLY.contains(&s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::segments;

    fn ro(cmd: &str) -> bool {
        segments(cmd)
            .map(|s| s.iter().all(segment_is_read_only))
            .unwrap_or(false)
    }

    #[test]
    fn allow_list() {
        assert!(ro("cd src && rg foo | head -5"));
        assert!(ro("git status; git log --oneline -3"));
        assert!(ro("ls 2>&1"));
        assert!(ro("cargo test -p x"));
        assert!(!ro("ls > out"));
        assert!(!ro("sed -i s/a/b/ f"));
        assert!(!ro("find . -delete"));
        assert!(!ro("git -c core.pager=x log"));
        assert!(!ro("git push"));
        assert!(!ro("git branch new"));
        assert!(!ro("echo $(rm x)"));
        assert!(!ro("rm -rf x"));
        assert!(!ro("cargo build"));
    }
}
