//! Archive, package, container and system tools: only their inspection forms.

use super::args::{Spec, is_dynamic, parse, words_are_static};

/// `tar` only lists: `-t`/`--list` (also old style `tvf`). Refused: every other mode,
/// `--to-command`/`--use-compress-program`/`-I`/`--checkpoint-action`/`-F` (run programs),
/// `--index-file`/`--volno-file`/`-g` (write), and a remote archive `host:file` (runs rsh).
pub(super) fn tar(args: &[String]) -> bool {
    const FLAGS: &str = "tvzjJaiRBOkw";
    const VALUED: &str = "fbCT";
    const LONG_FLAGS: &[&str] = &[
        "list",
        "verbose",
        "gzip",
        "gunzip",
        "bzip2",
        "xz",
        "lzma",
        "lzip",
        "lzop",
        "zstd",
        "auto-compress",
        "wildcards",
        "no-wildcards",
        "anchored",
        "no-anchored",
        "full-time",
        "numeric-owner",
        "utc",
        "ignore-zeros",
        "block-number",
        "force-local",
        "totals",
        "show-transformed-names",
    ];
    const LONG_VALUED: &[&str] = &[
        "file",
        "exclude",
        "quoting-style",
        "blocking-factor",
        "directory",
        "files-from",
        "occurrence",
    ];
    if !words_are_static(args) {
        return false;
    }
    let mut words: Vec<String> = args.to_vec();
    // Old style: `tar tvf x.tar` — the first word is a bundle without a dash.
    if let Some(first) = words.first()
        && !first.starts_with('-')
    {
        words[0] = format!("-{first}");
    }
    // Old-style bundles take the values of their valued letters from the following words,
    // in order; rewrite `-tvf x` so each valued letter ends its bundle.
    let mut normalized: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if w.starts_with("--") || !w.starts_with('-') || w == "-" {
            normalized.push(w.clone());
            continue;
        }
        let letters: Vec<char> = w[1..].chars().collect();
        let valued: Vec<usize> = (0..letters.len())
            .filter(|&k| VALUED.contains(letters[k]))
            .collect();
        if valued.len() <= 1 {
            normalized.push(w.clone());
            continue;
        }
        for (k, c) in letters.iter().enumerate() {
            normalized.push(format!("-{c}"));
            if valued.contains(&k) {
                let Some(v) = words.get(i) else {
                    return false;
                };
                normalized.push(v.clone());
                i += 1;
            }
        }
    }
    let spec = Spec {
        flags: FLAGS,
        valued: VALUED,
        optional: "",
        long_flags: LONG_FLAGS,
        long_valued: LONG_VALUED,
        long_optional: &[],
    };
    let Some(p) = parse(&normalized, &spec) else {
        return false;
    };
    let remote = p
        .values
        .iter()
        .any(|(o, v)| (o == "-f" || o == "--file") && v.contains(':'));
    (p.has("-t") || p.has("--list")) && (!remote || p.has("--force-local"))
}

/// `unzip` only lists or tests (`-l`, `-v`, `-t`, `-z`), prints to stdout (`-p`, `-c`), or is
/// zipinfo (`-Z`, which never writes). With none of these it extracts.
pub(super) fn unzip(args: &[String]) -> bool {
    if !words_are_static(args) {
        return false;
    }
    let Some(first) = args.first() else {
        return false;
    };
    if first.starts_with("-Z") {
        return true;
    }
    let mut mode = false;
    for a in args.iter().take_while(|a| a.starts_with('-')) {
        for c in a[1..].chars() {
            match c {
                'l' | 'v' | 't' | 'z' | 'p' | 'c' => mode = true,
                'q' | 'C' => {}
                _ => return false,
            }
        }
    }
    // `-x` lists exclusions; any other option after the archive is refused.
    mode && !args
        .iter()
        .skip_while(|a| a.starts_with('-'))
        .any(|a| a.starts_with('-') && a != "-x")
}

/// `pip`/`pip3 list|show|freeze|check`, options from a table (pip's optparse accepts
/// abbreviated long options: only exact names are taken). `--python`, `--log`, `--cache-dir`
/// and the like are refused. `python -m pip` is not here: `-m` puts the working directory
/// first on `sys.path`, so a planted `pip/` package would run.
pub(super) fn pip(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "oueflvqr",
        valued: "",
        optional: "",
        long_flags: &[
            "outdated",
            "uptodate",
            "editable",
            "local",
            "user",
            "pre",
            "not-required",
            "exclude-editable",
            "include-editable",
            "verbose",
            "quiet",
            "no-color",
            "disable-pip-version-check",
            "no-input",
            "isolated",
            "require-virtualenv",
            "files",
            "all",
            "no-index",
        ],
        long_valued: &["format", "path", "exclude", "requirement"],
        long_optional: &[],
    };
    let Some(sub) = args.first() else {
        return false;
    };
    matches!(sub.as_str(), "list" | "show" | "freeze" | "check")
        && parse(&args[1..], &SPEC).is_some()
}

/// `uv pip list|show|freeze|tree`. Note: uv runs the interpreter it discovers (`.venv/bin/
/// python` of the project) to query it, like the validation commands run project code; the
/// OS sandbox around read-only bash keeps files intact. `--python` (pick any program) refused.
pub(super) fn uv(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "eqv",
        valued: "",
        optional: "",
        long_flags: &[
            "editable",
            "exclude-editable",
            "outdated",
            "strict",
            "system",
            "quiet",
            "verbose",
            "no-color",
            "offline",
            "files",
            "no-dedupe",
            "invert",
        ],
        long_valued: &["format", "depth", "prune", "package"],
        long_optional: &[],
    };
    match args {
        [p, sub, rest @ ..] if p == "pip" => {
            matches!(sub.as_str(), "list" | "show" | "freeze" | "tree")
                && parse(rest, &SPEC).is_some()
        }
        _ => false,
    }
}

/// `npm` inspection subcommands (no package code runs; `view` reads the registry). Not
/// `outdated`, and no git, URL or path spec for `view`: resolving a git dependency runs the
/// program the project's `.npmrc` names as `git`.
pub(super) fn npm(args: &[String]) -> bool {
    const LOCAL: &[&str] = &["ls", "list", "ll", "la", "root", "prefix", "explain", "why"];
    const REGISTRY: &[&str] = &["view", "v", "info", "show", "search"];
    let Some(sub) = args.first() else {
        return false;
    };
    if !words_are_static(args) || args.iter().any(|a| a.starts_with("--git")) {
        return false;
    }
    if LOCAL.contains(&sub.as_str()) {
        return true;
    }
    if REGISTRY.contains(&sub.as_str()) {
        // `name`, `name@1.2`, `@scope/name`: a registry spec, not `user/repo`, `git+…`,
        // `https://…`, `./dir`.
        return args[1..].iter().filter(|a| !a.starts_with('-')).all(|a| {
            let name = a.strip_prefix('@').unwrap_or(a);
            !a.contains(':')
                && !a.starts_with(['.', '/', '~'])
                && (a.starts_with('@') || !name.contains('/'))
        });
    }
    sub == "config" && matches!(args.get(1).map(String::as_str), Some("get" | "list" | "ls"))
}

/// `openssl version`, and `openssl x509 … -noout …` with options from a table (no `-out`, no
/// `-engine`/`-provider` (load code), no `-writerand`, no signing).
pub(super) fn openssl(args: &[String]) -> bool {
    const FLAGS: &[&str] = &[
        "-noout",
        "-text",
        "-subject",
        "-issuer",
        "-dates",
        "-startdate",
        "-enddate",
        "-serial",
        "-fingerprint",
        "-sha1",
        "-sha256",
        "-sha512",
        "-md5",
        "-hash",
        "-subject_hash",
        "-issuer_hash",
        "-subject_hash_old",
        "-issuer_hash_old",
        "-purpose",
        "-pubkey",
        "-modulus",
        "-email",
        "-ocsp_uri",
        "-ocspid",
        "-alias",
        "-nocert",
    ];
    const VALUED: &[&str] = &[
        "-in",
        "-inform",
        "-nameopt",
        "-certopt",
        "-ext",
        "-checkend",
        "-checkhost",
        "-checkemail",
        "-checkip",
        "-dateopt",
    ];
    if !words_are_static(args) {
        return false;
    }
    match args.first().map(String::as_str) {
        Some("version") => args[1..]
            .iter()
            .all(|a| a.len() == 2 && a.starts_with('-') && "avbofpdemrc".contains(&a[1..])),
        Some("x509") => {
            let mut i = 1;
            while let Some(a) = args.get(i) {
                i += 1;
                if VALUED.contains(&a.as_str()) {
                    if args.get(i).is_none() {
                        return false;
                    }
                    i += 1;
                } else if !FLAGS.contains(&a.as_str()) {
                    return false;
                }
            }
            args.iter().any(|a| a == "-noout")
        }
        _ => false,
    }
}

/// `sqlite3 -readonly DB 'SQL'…`: options from a table (no `-cmd`/`-init`/`-A`), the SQL on
/// the command line (stdin could hold dot-commands), no dot-command at a line start
/// (`.shell`, `.output`, …), and none of the functions or statements that write or run
/// anything even on a read-only database: `writefile()`, `edit()`, `load_extension()`,
/// `ATTACH`, `VACUUM INTO`, the `zipfile`/`sqlar` tables, `fts3_tokenizer()`.
pub(super) fn sqlite3(args: &[String]) -> bool {
    sqlite3_with(args, false)
}

/// `sqlite3` as [`sqlite3`]; with `safe_stdin`, also `sqlite3 -readonly -safe DB` reading its
/// SQL from standard input: `-safe` turns off the dot-commands and functions that run
/// programs or load code (`.shell`, `.system`, `load_extension()`), and the read-only sandbox
/// bounds what is left (`.output`, `writefile()` can only fail).
pub(super) fn sqlite3_with(args: &[String], safe_stdin: bool) -> bool {
    const FLAGS: &[&str] = &[
        "readonly", "safe", "json", "csv", "html", "header", "noheader", "column", "line", "list",
        "box", "markdown", "table", "tabs", "quote", "ascii", "batch", "bail", "echo", "nofollow",
    ];
    const VALUED: &[&str] = &["nullvalue", "separator", "newline"];
    if !words_are_static(args) {
        return false;
    }
    let mut readonly = false;
    let mut safe = false;
    let mut operands: Vec<&String> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if !a.starts_with('-') {
            operands.push(a);
            continue;
        }
        let name = a.trim_start_matches('-');
        if name == "readonly" {
            readonly = true;
        } else if name == "safe" {
            safe = true;
        } else if VALUED.contains(&name) {
            if args.get(i).is_none() {
                return false;
            }
            i += 1;
        } else if !FLAGS.contains(&name) {
            return false;
        }
    }
    if readonly && safe && safe_stdin && operands.len() == 1 {
        return true;
    }
    if !readonly || operands.len() < 2 {
        return false;
    }
    operands[1..].iter().all(|sql| {
        let flat: String = sql
            .to_lowercase()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        !sql.lines().any(|l| l.trim_start().starts_with('.'))
            && ![
                "writefile",
                "edit(",
                "load_extension",
                "attach",
                "vacuum",
                "zipfile",
                "sqlar",
                "fts3_tokenizer",
            ]
            .iter()
            .any(|bad| flat.contains(bad))
    })
}

/// `ip [options] OBJECT [show|list]`: the listing forms of addresses, links, routes,
/// neighbours and rules (`ip route get` looks a route up). Refused: `-b`/`-batch` (reads
/// commands from a file), `-n`/`-netns`, and any other command (`add`, `del`, `flush`, …).
pub(super) fn ip(args: &[String]) -> bool {
    const OPTIONS: &[&str] = &[
        "-4", "-6", "-s", "-stats", "-d", "-details", "-j", "-json", "-p", "-pretty", "-c",
        "-color", "-br", "-brief", "-o", "-oneline", "-h", "-human", "-r", "-resolve",
    ];
    const OBJECTS: &[&str] = &[
        "a",
        "addr",
        "address",
        "l",
        "link",
        "r",
        "ro",
        "route",
        "n",
        "neigh",
        "neighbor",
        "neighbour",
        "rule",
        "ru",
        "maddr",
        "maddress",
    ];
    if !words_are_static(args) {
        return false;
    }
    let mut i = 0;
    while args.get(i).is_some_and(|a| OPTIONS.contains(&a.as_str())) {
        i += 1;
    }
    let Some(object) = args.get(i) else {
        return false;
    };
    if !OBJECTS.contains(&object.as_str()) {
        return false;
    }
    let route = matches!(object.as_str(), "r" | "ro" | "route");
    match args.get(i + 1).map(String::as_str) {
        None | Some("show" | "list" | "lst" | "ls") => true,
        Some("get") => route,
        _ => false,
    }
}

/// `dmesg` reads the kernel log; `-c`/`-C` clear it, `-n`/`-D`/`-E` change the console.
pub(super) fn dmesg(args: &[String]) -> bool {
    const SPEC: Spec = Spec {
        flags: "HTkxtrSuwWedPJp",
        valued: "lfFs",
        optional: "L",
        long_flags: &[
            "human",
            "ctime",
            "kernel",
            "decode",
            "notime",
            "raw",
            "syslog",
            "userspace",
            "follow",
            "follow-new",
            "reltime",
            "nopager",
            "json",
            "show-delta",
            "force-prefix",
        ],
        long_valued: &[
            "level",
            "facility",
            "file",
            "buffer-size",
            "time-format",
            "since",
            "until",
        ],
        long_optional: &["color"],
    };
    parse(args, &SPEC).is_some_and(|p| p.operands.is_empty())
}

/// `kubectl get|describe|logs|version|…`: a subcommand from a table after known global
/// options. `--kubeconfig` is refused (a kubeconfig can name an `exec` credential plugin);
/// unknown subcommands run `kubectl-*` plugins.
pub(super) fn kubectl(args: &[String]) -> bool {
    const READ: &[&str] = &[
        "get",
        "describe",
        "logs",
        "version",
        "explain",
        "api-resources",
        "api-versions",
        "cluster-info",
        "top",
    ];
    const GLOBAL_VALUED: &[&str] = &["-n", "--namespace", "--context", "--cluster", "--user"];
    // `-s`/`--server` sends the current context's credentials to another server.
    if !words_are_static(args)
        || args.iter().any(|a| {
            a.starts_with("--kubeconfig")
                || a.starts_with("--server")
                || (a.starts_with("-s") && !a.starts_with("--"))
        })
    {
        return false;
    }
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if GLOBAL_VALUED.contains(&a.as_str()) {
            i += 2;
        } else if a.starts_with("--namespace=") || a.starts_with("--context=") {
            i += 1;
        } else {
            break;
        }
    }
    match args.get(i).map(String::as_str) {
        Some("config") => matches!(
            args.get(i + 1).map(String::as_str),
            Some("view" | "get-contexts" | "current-context" | "get-clusters")
        ),
        Some(s) => READ.contains(&s),
        None => false,
    }
}

/// `docker ps|images|inspect|logs|version|info|…` and the `ls`/`inspect` forms of the object
/// commands. Refused: `--config` (plugins and credential helpers), `-H`/`--host`/`--context`
/// (an `ssh://` host runs ssh).
pub(super) fn docker(args: &[String]) -> bool {
    const READ: &[&str] = &[
        "ps", "images", "inspect", "logs", "version", "info", "top", "port", "history", "diff",
        "stats", "events",
    ];
    const OBJECTS: &[&str] = &["container", "image", "network", "volume", "context"];
    if !words_are_static(args) {
        return false;
    }
    let Some(sub) = args.first() else {
        return false;
    };
    if READ.contains(&sub.as_str()) {
        return true;
    }
    OBJECTS.contains(&sub.as_str())
        && matches!(
            args.get(1).map(String::as_str),
            Some("ls" | "list" | "inspect" | "logs" | "history" | "top" | "port")
        )
}

/// `cargo`'s inspection forms (`fmt` only with `--check`, which writes nothing). Like the validation commands, cargo honours the project's
/// `rust-toolchain` file and `.cargo/config.toml` (which can name the program run as
/// `rustc`), so even these may run project-chosen code: the read-only OS sandbox around
/// plan-mode bash is what keeps source files intact. `--config` and `-Z` are refused.
pub(super) fn cargo_inspect(args: &[String]) -> bool {
    let mut rest = args;
    if rest.first().is_some_and(|a| a.starts_with('+')) {
        rest = &rest[1..];
    }
    let Some(sub) = rest.first() else {
        return false;
    };
    let inspect = matches!(
        sub.as_str(),
        "tree" | "metadata" | "version" | "locate-project" | "pkgid" | "verify-project"
    ) || (sub == "fmt" && rest.iter().any(|a| a == "--check"));
    inspect
        && !rest
            .iter()
            .any(|a| is_dynamic(a) || a.starts_with("--config") || a.starts_with("-Z"))
}
