//! git: only the read-only subcommands and, for the ones that also write (`branch`, `tag`,
//! `config`, `stash`, `reflog`, `remote`, `worktree`), only their listing forms.
//!
//! Refused everywhere: global `-c`/`--config-env`/`--exec-path`/`-p`/`--paginate` (they run
//! programs), `--output` (writes), `--ext-diff`/`--textconv` (run configured programs),
//! `--open-files-in-pager`/`-O` (runs a program), `--upload-pack`/`--receive-pack`/`--exec`
//! (run a program), `ext::`/`fd::` transports, and words that may turn into options at run
//! time. git's parse-options accepts abbreviated long options, so prefixes count too.

use super::args::{is_dynamic, long_abbreviates, short_bundle_has};

/// Subcommands that never write (beyond git's own index refresh) in any of their forms.
const READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "annotate",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "describe",
    "shortlog",
    "grep",
    "cat-file",
    "rev-list",
    "diff-tree",
    "diff-files",
    "diff-index",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "count-objects",
    "whatchanged",
    "show-branch",
    "cherry",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "range-diff",
    "var",
    "version",
    // Network, but only reads: `--network off` blocks it.
    "ls-remote",
];

/// Long options that write or run a program, in any subcommand.
const DANGEROUS_LONG: &[&str] = &[
    "output",
    "output-directory",
    "ext-diff",
    "textconv",
    "open-files-in-pager",
    "upload-pack",
    "receive-pack",
    "exec",
    "paginate",
];

pub(super) fn git(args: &[String]) -> bool {
    // Computed words only as paths after `--` (`git log -- $f`).
    if args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| is_dynamic(a))
    {
        return false;
    }
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            s if !s.starts_with('-') => break,
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            "--no-pager"
            | "-P"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--bare" => i += 1,
            o if o.starts_with("--git-dir=")
                || o.starts_with("--work-tree=")
                || o.starts_with("--namespace=") =>
            {
                i += 1
            }
            "--version" | "--help" | "-h" if args.len() == i + 1 => return true,
            // `-c`, `--config-env`, `--exec-path`, `-p`/`--paginate`, anything unknown.
            _ => return false,
        }
    }
    let Some(sub) = args.get(i) else {
        return false;
    };
    let rest = &args[(i + 1).min(args.len())..];
    if !options_are_safe(sub, rest) {
        return false;
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    match sub.as_str() {
        "branch" => branch(&rest),
        "tag" => tag(&rest),
        "config" => config(&rest),
        "remote" => matches!(rest.as_slice(), [] | ["-v" | "--verbose"] | ["get-url", ..]),
        "stash" => matches!(rest.first(), Some(&("list" | "show"))),
        "reflog" => match rest.first() {
            None => true,
            Some(&("show" | "list" | "exists")) => true,
            Some(a) => a.starts_with('-'),
        },
        "worktree" => rest.first() == Some(&"list"),
        "submodule" => rest.first() == Some(&"status"),
        "notes" => matches!(rest.first(), None | Some(&("list" | "show"))),
        "ls-remote" => !rest.iter().any(|a| *a == "-u" || a.contains("::")),
        s => READ_ONLY.contains(&s),
    }
}

/// The checks every subcommand's arguments get.
fn options_are_safe(sub: &str, rest: &[String]) -> bool {
    let mut only_operands = false;
    for a in rest {
        if only_operands {
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        // `--text` is an option of its own, not an abbreviation of `--textconv`.
        if a != "--text" && long_abbreviates(a, DANGEROUS_LONG) {
            return false;
        }
        // `git grep -O[cmd]` opens the matches with a program.
        if sub == "grep" && short_bundle_has(a, "O") {
            return false;
        }
    }
    true
}

/// How a `branch`/`tag` command line reads.
struct Listing<'a> {
    operands: Vec<&'a str>,
    /// A filter option (`--merged`, `--contains`, …) was given: git then lists.
    filtering: bool,
    /// `--list`/`-l` (or, for `tag`, `-n`) came before the first operand.
    listed: bool,
}

/// Reads the options of a listing form: each must be in `flags` (exact) or `valued`
/// (`--x=v` or `--x v`) or `FILTERS`. Everything from the first operand on counts as an
/// operand (`git config user.name --all` sets the name to `--all`: not every git command
/// takes options after operands). `None`: an unknown option.
fn listing<'a>(
    rest: &[&'a str],
    flags: &[&str],
    valued: &[&str],
    tag: bool,
) -> Option<Listing<'a>> {
    let mut l = Listing {
        operands: Vec::new(),
        filtering: false,
        listed: false,
    };
    let mut i = 0;
    while let Some(&a) = rest.get(i) {
        i += 1;
        if a == "--" {
            l.operands.extend_from_slice(&rest[i..]);
            break;
        }
        if !a.starts_with('-') {
            l.operands.extend_from_slice(&rest[i - 1..]);
            break;
        }
        let name = a.split_once('=').map_or(a, |(n, _)| n);
        let lines = tag && a.starts_with("-n") && a[2..].chars().all(|c| c.is_ascii_digit());
        if a == "--list" || a == "-l" || lines {
            l.listed = true;
        } else if flags.contains(&a) {
            // a display option
        } else if valued.contains(&name) {
            if !a.contains('=') {
                rest.get(i)?;
                i += 1;
            }
        } else if FILTERS.contains(&name) {
            // `--merged [commit]`: the commit is the next word when there is one.
            l.filtering = true;
            if !a.contains('=') && i < rest.len() {
                i += 1;
            }
        } else {
            return None;
        }
    }
    Some(l)
}

const FILTERS: &[&str] = &[
    "--merged",
    "--no-merged",
    "--contains",
    "--no-contains",
    "--points-at",
];

/// `git branch`: lists when given no operand, or `--list`/`-l`, or a filter option.
fn branch(rest: &[&str]) -> bool {
    const FLAGS: &[&str] = &[
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-v",
        "-vv",
        "--verbose",
        "--show-current",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "-i",
        "--ignore-case",
        "--omit-empty",
    ];
    const VALUED: &[&str] = &["--format", "--sort", "--abbrev", "--color", "--column"];
    listing(rest, FLAGS, VALUED, false)
        .is_some_and(|l| l.operands.is_empty() || l.filtering || l.listed)
}

/// `git tag`: lists when given no operand, or `-l`/`--list`, `-n`, or a filter option
/// (`-v` verifies with gpg, `-d` deletes, an operand alone creates).
fn tag(rest: &[&str]) -> bool {
    const FLAGS: &[&str] = &[
        "-i",
        "--ignore-case",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "--omit-empty",
    ];
    const VALUED: &[&str] = &["--format", "--sort", "--color", "--column"];
    listing(rest, FLAGS, VALUED, true)
        .is_some_and(|l| l.operands.is_empty() || l.filtering || l.listed)
}

/// `git config`: only `--get*`, `--list`/`-l`, the `get`/`list` subcommands, or a single
/// name (a get).
fn config(rest: &[&str]) -> bool {
    const SCOPE: &[&str] = &[
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "-z",
        "--null",
        "--bool",
        "--int",
        "--bool-or-int",
        "--path",
        "--expiry-date",
        "--includes",
        "--no-includes",
        "--all",
    ];
    const VALUED: &[&str] = &["--file", "-f", "--blob", "--type", "--default", "--url"];
    const ACTIONS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "--list",
        "-l",
    ];
    let (sub_action, rest) = match rest.first() {
        Some(&("get" | "list")) => (true, &rest[1..]),
        _ => (false, rest),
    };
    let mut action = sub_action;
    let mut operands = 0;
    let mut i = 0;
    while let Some(&a) = rest.get(i) {
        i += 1;
        let name = a.split_once('=').map_or(a, |(n, _)| n);
        if ACTIONS.contains(&a) {
            action = true;
        } else if VALUED.contains(&name) {
            if !a.contains('=') {
                if rest.get(i).is_none() {
                    return false;
                }
                i += 1;
            }
        } else if !a.starts_with('-') {
            // Every word from the first name on is an operand: `git config user.name --all`
            // sets the name to `--all`.
            operands += rest.len() - (i - 1);
            break;
        } else if !SCOPE.contains(&a) {
            return false;
        }
    }
    // Without an action, one operand is a get (`git config user.name`); two set it.
    action || operands == 1
}
