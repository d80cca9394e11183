//! Service, log, socket and package-database inspection, and a few command-line clients
//! (`gh`, `yq`): only their reading forms.

use super::args::{is_dynamic, long_abbreviates, short_bundle_has, words_are_static};

/// The first word not starting with `-`.
fn verb(args: &[String]) -> Option<&str> {
    args.iter()
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

/// `systemctl status|show|list-*|is-*|cat …`. Refused: `-H`/`--host` (runs ssh),
/// `-M`/`--machine`, every verb that starts, stops, enables or edits.
pub(super) fn systemctl(args: &[String]) -> bool {
    const READ: &[&str] = &[
        "status",
        "show",
        "cat",
        "list-units",
        "list-unit-files",
        "list-timers",
        "list-sockets",
        "list-dependencies",
        "list-jobs",
        "list-machines",
        "is-active",
        "is-enabled",
        "is-failed",
        "is-system-running",
        "get-default",
        "show-environment",
    ];
    words_are_static(args)
        && !args.iter().any(|a| {
            a.starts_with("-H") || a.starts_with("-M") || long_abbreviates(a, &["host", "machine"])
        })
        && verb(args).is_none_or(|v| READ.contains(&v))
}

/// `journalctl` reads the journal; `--vacuum-*`, `--rotate`, `--flush`, `--sync`,
/// `--relinquish-var`, `--update-catalog`, `--setup-keys` change it (getopt_long: prefixes
/// count). No short option writes.
pub(super) fn journalctl(args: &[String]) -> bool {
    const WRITES: &[&str] = &[
        "vacuum-size",
        "vacuum-time",
        "vacuum-files",
        "rotate",
        "flush",
        "sync",
        "relinquish-var",
        "smart-relinquish-var",
        "update-catalog",
        "setup-keys",
    ];
    !args
        .iter()
        .any(|a| is_dynamic(a) || long_abbreviates(a, WRITES))
}

/// `ss` lists sockets; `-K`/`--kill` closes them.
pub(super) fn ss(args: &[String]) -> bool {
    !args
        .iter()
        .any(|a| short_bundle_has(a, "K") || long_abbreviates(a, &["kill"]) || is_dynamic(a))
}

/// `apt-cache` queries (not `gencaches`), `apt list|show|search|policy`. `-o`/`-c` (set or
/// load configuration, which can name hook programs) are refused.
pub(super) fn apt(program: &str, args: &[String]) -> bool {
    const CACHE: &[&str] = &[
        "search", "show", "showpkg", "showsrc", "policy", "depends", "rdepends", "madison",
        "pkgnames", "stats", "unmet",
    ];
    const APT: &[&str] = &["list", "show", "search", "policy"];
    let read = if program == "apt" { APT } else { CACHE };
    words_are_static(args)
        && !args
            .iter()
            .any(|a| short_bundle_has(a, "oc") || long_abbreviates(a, &["option", "config-file"]))
        && verb(args).is_some_and(|v| read.contains(&v))
}

/// `dpkg` and `dpkg-query` queries: list, status, files, search, print.
pub(super) fn dpkg(args: &[String]) -> bool {
    const READ: &[&str] = &[
        "-l",
        "--list",
        "-L",
        "--listfiles",
        "-s",
        "--status",
        "-S",
        "--search",
        "-p",
        "--print-avail",
        "-W",
        "--show",
        "--get-selections",
        "--print-architecture",
        "--print-foreign-architectures",
    ];
    words_are_static(args)
        && args.first().is_some_and(|a| {
            READ.contains(&a.as_str()) || READ.iter().any(|r| a.starts_with(&format!("{r}=")))
        })
        && {
            // Only a display format may follow: `-f FMT`, `--showformat=FMT`.
            let mut rest = args[1..].iter();
            let mut ok = true;
            while let Some(a) = rest.next() {
                if a == "-f" || a == "--showformat" {
                    ok &= rest.next().is_some();
                } else if a.starts_with('-')
                    && !a.starts_with("--showformat=")
                    && !a.starts_with("-f")
                {
                    ok = false;
                }
            }
            ok
        }
}

/// `gh` (GitHub CLI) reading forms: `pr|issue view|list|diff|checks|status`, `repo view`,
/// `run list|view`, `release list|view`, `auth status`. Refused: `-w`/`--web` (opens a
/// browser), every other subcommand (unknown ones run `gh-*` extensions).
pub(super) fn gh(args: &[String]) -> bool {
    let read = match args.first().map(String::as_str) {
        Some("pr") => &["view", "list", "diff", "checks", "status"][..],
        Some("issue") => &["view", "list", "status"][..],
        Some("repo") => &["view", "list"][..],
        Some("run") => &["list", "view"][..],
        Some("release") => &["list", "view"][..],
        Some("workflow") => &["list", "view"][..],
        Some("auth") => &["status"][..],
        _ => return false,
    };
    words_are_static(args)
        && args.get(1).is_some_and(|s| read.contains(&s.as_str()))
        && !args
            .iter()
            .any(|a| a == "-w" || long_abbreviates(a, &["web"]))
}

/// `yq` prints; `-i`/`--inplace`/`--in-place` rewrite the file and `-s`/`--split-exp`
/// writes one file per document (argparse in the Python yq accepts prefixes).
pub(super) fn yq(args: &[String]) -> bool {
    words_are_static(args)
        && !args.iter().any(|a| {
            short_bundle_has(a, "is") || long_abbreviates(a, &["inplace", "in-place", "split-exp"])
        })
}
