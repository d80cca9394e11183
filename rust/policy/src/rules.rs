//! Permission rules (spec §3.3): `bash`, `Bash(git log:*)`, `Edit(/src/*)`, `Read(**/.env)`,
//! or a bare path glob. Tool names go through the same canonical spelling as dispatch.
//!
//! Shell rules (`Bash(…)`, which cover every shell tool: `bash`, its background runs and
//! `monitor`) name a program, optionally followed by leading arguments:
//! - `Bash(rm)`, `Bash(rm:*)` and `Bash(rm *)` are the same rule: the program `rm` with any
//!   arguments (or none). `Bash(git push:*)` / `Bash(git push *)`: `git` whose first words
//!   are `push`. A `*` elsewhere is a wildcard over the arguments (`Bash(rm -rf /tmp/*)`).
//! - The program is the effective program of each segment the shell lexer finds (after
//!   quotes, paths, wrappers such as `sudo`/`env`/`timeout`/`sh -c`, substitutions and
//!   `find -exec`/`xargs`); see [`crate::shell`].
//! - Deny and ask rules veto: a segment whose program (or one of its wrappers) is the rule's
//!   program matches unless its arguments are statically known to miss the pattern; global
//!   options are skipped for the subcommand (`git -C . -c k=v --no-pager push` is
//!   `git push`), a computed argument or an unknown option before the subcommand counts as a
//!   match. A line yuyao cannot determine is vetoed when the rule's program word appears in
//!   it (quotes and backslashes removed); otherwise it still needs a confirmation.
//! - Allow rules exempt only on a full, literal match of every segment.
//! - Program rules name programs, not effects: `Bash(curl)` does not stop `wget`,
//!   `python -c 'urllib…'` or bash's `/dev/tcp`. "No network" is enforced by
//!   `--network off` (the OS sandbox), not by rules.
//!
//! Path rules (`Edit(glob)`, `Read(glob)`, a bare glob) also judge shell commands whose
//! paths the lexer can determine (see [`crate::shell::segment_paths`]): a deny `Edit` rule
//! vetoes a line writing a matching path, a deny `Read` rule one reading or writing it.

use crate::shell::Segment;
use globset::{GlobBuilder, GlobMatcher};
use std::path::Path;
use yuyao_protocol::canonical_tool_name;

#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule as the user wrote it (shown in decisions and traces).
    pub text: String,
    /// Canonical tool name; `None` means a path rule for every file tool.
    pub tool: Option<&'static str>,
    pub pattern: Option<Pattern>,
}

#[derive(Debug, Clone)]
pub enum Pattern {
    /// For bash: matched against each segment's effective command line.
    Command(String),
    /// For file tools: a glob over the target path.
    Path(GlobMatcher, String),
    /// An MCP tool (`mcp__server__tool`) or a whole server (`mcp__server`): the prefix.
    Mcp(String),
    /// For web tools: `WebFetch(domain:example.com)`, the host and its subdomains
    /// (`*.example.com`: subdomains only). Judged per URL by [`crate::domains`].
    Domain(String),
}

/// Whether `tool` is what an MCP rule (`mcp__server` or `mcp__server__tool`) names.
fn mcp_covers(rule: &str, tool: &str) -> bool {
    tool == rule
        || tool
            .strip_prefix(rule)
            .is_some_and(|rest| rest.starts_with("__"))
}

/// Tools whose `file_path`/`path` argument path rules apply to.
pub const FILE_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "multi-edit",
    "notebook-edit",
    "apply-patch",
    "grep",
    "glob",
    "read-media",
];

impl Rule {
    pub fn parse(text: &str) -> Result<Rule, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty permission rule".into());
        }
        // MCP tools have no fixed name: the rule names one (`mcp__time__get_current_time`),
        // a whole server (`mcp__time`, `mcp__time__*`), and `Mcp(…)` spellings of both.
        let mcp = t
            .strip_prefix("Mcp(")
            .or_else(|| t.strip_prefix("mcp("))
            .and_then(|i| i.strip_suffix(')'))
            .unwrap_or(t);
        if let Some(rest) = mcp.strip_prefix("mcp__") {
            let name = rest.trim_end_matches('*').trim_end_matches("__");
            if name.is_empty() || name.contains(['(', ')', ' ', '/']) {
                return Err(format!(
                    "invalid rule '{t}': use mcp__<server> or mcp__<server>__<tool>"
                ));
            }
            return Ok(Rule {
                text: t.to_string(),
                tool: None,
                pattern: Some(Pattern::Mcp(format!("mcp__{name}"))),
            });
        }
        if let Some(open) = t.find('(') {
            let Some(inner) = t[open + 1..].strip_suffix(')') else {
                return Err(format!("invalid rule '{t}': missing ')'"));
            };
            let name = &t[..open];
            let tool = canonical_tool_name(name)
                .ok_or_else(|| format!("invalid rule '{t}': unknown tool '{name}'"))?;
            let inner = inner.trim();
            let pattern = if inner.is_empty() || inner == "*" {
                None
            } else if tool == "bash" || tool == "monitor" {
                Some(Pattern::Command(inner.to_string()))
            } else if let Some(d) = crate::domains::parse_rule_domain(tool, inner)? {
                Some(Pattern::Domain(d))
            } else {
                Some(path_pattern(inner)?)
            };
            return Ok(Rule {
                text: t.to_string(),
                tool: Some(tool),
                pattern,
            });
        }
        if t == "*" {
            return Ok(Rule {
                text: t.into(),
                tool: None,
                pattern: None,
            });
        }
        if let Some(tool) = canonical_tool_name(t) {
            return Ok(Rule {
                text: t.into(),
                tool: Some(tool),
                pattern: None,
            });
        }
        Ok(Rule {
            text: t.into(),
            tool: None,
            pattern: Some(path_pattern(t)?),
        })
    }

    /// Whether the rule is about this tool at all. A shell command rule covers every shell
    /// tool (`Bash(rm)` and `Monitor(rm)` also judge `monitor` and `bash`), and a bare `bash`
    /// covers `monitor` too; a bare `monitor` is only about the monitor tool.
    pub fn covers_tool(&self, tool: &str) -> bool {
        let shell = |t: &str| crate::SHELL_TOOLS.contains(&t);
        match (self.tool, &self.pattern) {
            (Some(t), Some(Pattern::Command(_))) => t == tool || (shell(t) && shell(tool)),
            (Some(t), _) => t == tool || (t == "bash" && shell(tool)),
            (None, Some(Pattern::Mcp(m))) => mcp_covers(m, tool),
            (None, None) => true,
            (None, Some(_)) => FILE_TOOLS.contains(&tool),
        }
    }

    /// Matches a bash segment fully and literally (what an allow rule needs).
    pub fn matches_segment(&self, s: &Segment) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(p)) => CommandPattern::parse(p).allows(s),
            Some(Pattern::Path(..) | Pattern::Mcp(_) | Pattern::Domain(_)) => false,
        }
    }

    /// Whether a deny or ask rule vetoes this segment: the program (or a wrapper) matches and
    /// the arguments are not statically known to miss the pattern (fail closed).
    pub fn vetoes_segment(&self, s: &Segment) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(p)) => CommandPattern::parse(p).vetoes(s),
            Some(Pattern::Path(..) | Pattern::Mcp(_) | Pattern::Domain(_)) => false,
        }
    }

    /// Whether a deny or ask rule vetoes an undetermined command line: its program word
    /// appears in the text once quotes and backslashes are removed.
    pub fn vetoes_text(&self, cmd: &str) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(p)) => CommandPattern::parse(p).vetoes_text(cmd),
            Some(Pattern::Path(..) | Pattern::Mcp(_) | Pattern::Domain(_)) => false,
        }
    }

    /// For a path rule: whether something it matches may lie in the tree below `dir` (or be
    /// `dir`): compares `dir` with the literal directory prefix of the glob.
    pub fn may_match_under(&self, dir: &Path, project: &Path) -> bool {
        let Some(Pattern::Path(g, _)) = &self.pattern else {
            return false;
        };
        if g.is_match(dir) || dir.strip_prefix(project).is_ok_and(|r| g.is_match(r)) {
            return true;
        }
        let glob = g.glob().glob();
        let literal = &glob[..glob.find(['*', '?', '[', '{']).unwrap_or(glob.len())];
        let prefix = &literal[..literal.rfind('/').map_or(0, |i| i + 1)];
        let under = |d: &str| {
            let d = if d.is_empty() {
                String::new()
            } else {
                format!("{}/", d.trim_end_matches('/'))
            };
            prefix.starts_with(&d) || d.starts_with(prefix)
        };
        if prefix.starts_with('/') {
            under(&dir.to_string_lossy())
        } else {
            prefix.is_empty()
                || dir
                    .strip_prefix(project)
                    .is_ok_and(|r| under(&r.to_string_lossy()))
        }
    }

    /// For a path rule: whether it judges what a shell command writes (`Edit`, `Write`, …)
    /// or what it reads and writes (`Read`, `Grep`, `Glob`, a bare glob).
    pub fn path_access(&self) -> Option<PathAccess> {
        if !matches!(self.pattern, Some(Pattern::Path(..))) {
            return None;
        }
        match self.tool {
            None | Some("read" | "grep" | "glob") => Some(PathAccess::Read),
            Some(t) if crate::FILE_MUTATING.contains(&t) => Some(PathAccess::Write),
            _ => None,
        }
    }

    /// Matches a file path (absolute) with the project root for relative patterns.
    pub fn matches_path(&self, path: &Path, project: &Path) -> bool {
        match &self.pattern {
            None => true,
            Some(Pattern::Command(_) | Pattern::Mcp(_) | Pattern::Domain(_)) => false,
            Some(Pattern::Path(g, _)) => {
                let rel = path.strip_prefix(project).unwrap_or(path);
                g.is_match(path) || g.is_match(rel)
            }
        }
    }
}

/// What a path rule judges in a shell command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathAccess {
    /// Paths the command reads or writes.
    Read,
    /// Paths the command writes.
    Write,
}

fn path_pattern(p: &str) -> Result<Pattern, String> {
    // `/x` is relative to the project (as in Claude Code settings), `//x` absolute,
    // `~/x` in the home folder, anything else may match anywhere below.
    let glob = if let Some(abs) = p.strip_prefix("//") {
        format!("/{abs}")
    } else if let Some(home) = p.strip_prefix("~/") {
        let h = std::env::var("HOME").unwrap_or_default();
        format!("{h}/{home}")
    } else if let Some(rel) = p.strip_prefix('/') {
        rel.to_string()
    } else if p.starts_with("**") {
        p.to_string()
    } else {
        format!("{{{p},**/{p}}}")
    };
    let g = GlobBuilder::new(&glob)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid path pattern '{p}': {e}"))?;
    Ok(Pattern::Path(g.compile_matcher(), p.to_string()))
}

/// Wrappers an allow rule looks through: they change neither who runs the program nor where.
/// Behind any other (`sudo`, `ssh`, `sh -c`, `find -exec`, …) an allow rule does not apply.
const TRANSPARENT: &[&str] = &[
    "time", "nice", "nohup", "timeout", "stdbuf", "command", "builtin", "env", "ionice", "setsid",
    "exec",
];

/// A parsed shell rule pattern: the program and what its arguments must look like.
struct CommandPattern {
    /// `None` when the program word itself has a wildcard (`Bash(*rm*)`): the whole
    /// pattern is then a wildcard over the command line.
    program: Option<String>,
    rest: Rest,
}

enum Rest {
    /// `rm`, `rm:*`, `rm *`: any arguments, or none.
    Any,
    /// `git push:*`, `git push *`, `git push`: these leading words.
    Words(Vec<String>),
    /// `rm -rf /tmp/*`: a wildcard over the arguments joined by spaces.
    Glob(String),
}

impl CommandPattern {
    fn parse(p: &str) -> CommandPattern {
        let p = p.trim();
        let body = p.strip_suffix(":*").map_or(p, str::trim);
        let words: Vec<&str> = body.split_whitespace().collect();
        let Some(first) = words.first() else {
            return CommandPattern {
                program: None,
                rest: Rest::Glob("*".into()),
            };
        };
        if first.contains('*') {
            let glob = if body.len() < p.len() {
                format!("{body}*")
            } else {
                body.to_string()
            };
            return CommandPattern {
                program: None,
                rest: Rest::Glob(glob),
            };
        }
        let program = first.rsplit('/').next().unwrap_or(first).to_string();
        let mut rest: Vec<&str> = words[1..].to_vec();
        // A trailing lone `*` is "any arguments, including none".
        if rest.last() == Some(&"*") {
            rest.pop();
        }
        let rest = if rest.is_empty() {
            Rest::Any
        } else if rest.iter().any(|w| w.contains('*')) {
            Rest::Glob(rest.join(" "))
        } else {
            Rest::Words(rest.iter().map(|w| w.to_string()).collect())
        };
        CommandPattern {
            program: Some(program),
            rest,
        }
    }

    /// A full, literal match (allow rules).
    fn allows(&self, s: &Segment) -> bool {
        let Some(program) = &self.program else {
            let Rest::Glob(g) = &self.rest else {
                return false;
            };
            return !s.computed.iter().any(|c| *c)
                && (wildcard(g, &s.command_line()) || wildcard(g, &s.program));
        };
        if s.program != *program || !s.wrappers.iter().all(|w| TRANSPARENT.contains(&w.as_str())) {
            return false;
        }
        match &self.rest {
            Rest::Any => true,
            Rest::Words(w) => {
                s.args.len() >= w.len()
                    && w.iter()
                        .enumerate()
                        .all(|(i, w)| !s.arg_computed(i) && s.args[i] == *w)
            }
            Rest::Glob(g) => !s.computed.iter().any(|c| *c) && wildcard(g, &s.args.join(" ")),
        }
    }

    /// Fail-closed match (deny and ask rules).
    fn vetoes(&self, s: &Segment) -> bool {
        let Some(program) = &self.program else {
            let Rest::Glob(g) = &self.rest else {
                return true;
            };
            return wildcard(g, &s.command_line())
                || wildcard(g, &s.program)
                || s.wrappers.iter().any(|w| wildcard(g, w));
        };
        if s.wrappers.iter().any(|w| w == program) {
            return true;
        }
        if s.program != *program {
            return false;
        }
        let computed =
            |from: usize, n: usize| (from..(from + n).min(s.args.len())).any(|i| s.arg_computed(i));
        match &self.rest {
            Rest::Any => true,
            Rest::Words(w) => {
                let literal = |from: usize| {
                    s.args.len() >= from + w.len()
                        && w.iter().enumerate().all(|(i, w)| s.args[from + i] == *w)
                };
                if literal(0) || computed(0, w.len()) {
                    return true;
                }
                if w[0].starts_with('-') {
                    return false;
                }
                match skip_global_options(program, s) {
                    Some(k) => literal(k) || computed(k, w.len()),
                    None => true, // an option we cannot account for before the subcommand
                }
            }
            Rest::Glob(g) => {
                if s.computed.iter().any(|c| *c) || wildcard(g, &s.args.join(" ")) {
                    return true;
                }
                match skip_global_options(program, s) {
                    Some(k) => wildcard(g, &s.args[k..].join(" ")),
                    None => true,
                }
            }
        }
    }

    /// The program word in an undetermined line, read several ways: quotes and backslashes
    /// removed, ANSI-C `$'\x72m'` strings decoded, brace expansions flattened.
    fn vetoes_text(&self, cmd: &str) -> bool {
        let strip = |t: &str| -> String {
            t.chars()
                .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                .collect()
        };
        let plain = strip(cmd);
        let decoded = strip(&decode_ansi_c(cmd));
        let readings = [
            plain.clone(),
            decoded.clone(),
            plain.replace(['{', '}'], ""),
            plain.replace(['{', '}', ','], " "),
            decoded.replace(['{', '}'], ""),
        ];
        readings.iter().any(|t| self.word_in(t))
    }

    fn word_in(&self, text: &str) -> bool {
        let Some(program) = &self.program else {
            let Rest::Glob(g) = &self.rest else {
                return true;
            };
            return wildcard(&format!("*{}*", g.trim_matches('*')), text);
        };
        let word = |c: char| c.is_ascii_alphanumeric() || "_.+-".contains(c);
        let mut from = 0;
        while let Some(i) = text[from..].find(program.as_str()) {
            let at = from + i;
            let end = at + program.len();
            let before_ok = text[..at].chars().next_back().is_none_or(|c| !word(c));
            let after_ok = text[end..]
                .chars()
                .next()
                .is_none_or(|c| !word(c) && c != '/');
            if before_ok && after_ok {
                return true;
            }
            from = end;
        }
        false
    }
}

/// The character of up to `max` digits in `radix` at `k` (which advances past them).
fn escaped_number(chars: &[char], k: &mut usize, radix: u32, max: usize) -> Option<char> {
    let mut v = 0u32;
    let mut n = 0;
    while n < max && chars.get(*k).is_some_and(|c| c.is_digit(radix)) {
        v = v
            .saturating_mul(radix)
            .saturating_add(chars[*k].to_digit(radix).unwrap_or(0));
        *k += 1;
        n += 1;
    }
    char::from_u32(v)
}

/// `text` with each ANSI-C quoted string (`$'\x72m'`) replaced by its value.
fn decode_ansi_c(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut k = 0;
    while k < chars.len() {
        if chars[k] == '$' && chars.get(k + 1) == Some(&'\'') {
            k += 2;
            while k < chars.len() && chars[k] != '\'' {
                if chars[k] != '\\' {
                    out.push(chars[k]);
                    k += 1;
                    continue;
                }
                k += 1;
                let Some(&e) = chars.get(k) else { break };
                k += 1;
                let c = match e {
                    'x' => escaped_number(&chars, &mut k, 16, 2),
                    'u' => escaped_number(&chars, &mut k, 16, 4),
                    'U' => escaped_number(&chars, &mut k, 16, 8),
                    '0'..='7' => {
                        k -= 1;
                        escaped_number(&chars, &mut k, 8, 3)
                    }
                    'n' => Some('\n'),
                    't' => Some('\t'),
                    other => Some(other),
                };
                out.extend(c);
            }
            k += 1;
        } else {
            out.push(chars[k]);
            k += 1;
        }
    }
    out
}

/// Global options of programs with subcommands (options before the subcommand, those that
/// take a value, and the flags), so `git -C . --no-pager push` is seen as `git push`.
fn global_options(program: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    Some(match program {
        "git" => (
            &[
                "-C",
                "-c",
                "--git-dir",
                "--work-tree",
                "--namespace",
                "--super-prefix",
                "--config-env",
                "--list-cmds",
                "--attr-source",
            ],
            &[
                "--no-pager",
                "-p",
                "--paginate",
                "-P",
                "--bare",
                "--no-replace-objects",
                "--literal-pathspecs",
                "--glob-pathspecs",
                "--noglob-pathspecs",
                "--icase-pathspecs",
                "--no-optional-locks",
                "--no-lazy-fetch",
                "--no-advice",
                "--html-path",
                "--man-path",
                "--info-path",
                "--exec-path",
                "--version",
                "--help",
                "-v",
                "-h",
            ],
        ),
        "cargo" => (
            &["--color", "--config", "-Z", "-C", "--explain"],
            &[
                "-v",
                "-vv",
                "-q",
                "--verbose",
                "--quiet",
                "--frozen",
                "--locked",
                "--offline",
                "-V",
                "--version",
                "--list",
                "-h",
                "--help",
            ],
        ),
        "npm" | "pnpm" | "yarn" | "npx" | "bun" => (
            &[
                "--prefix",
                "-C",
                "--dir",
                "--cwd",
                "--userconfig",
                "--cache",
                "--registry",
                "--loglevel",
                "-w",
                "--workspace",
                "--filter",
            ],
            &[
                "-g",
                "--global",
                "-s",
                "--silent",
                "-q",
                "--quiet",
                "-d",
                "--verbose",
                "-ws",
                "--workspaces",
                "-y",
                "--yes",
                "--no-color",
                "-r",
                "--recursive",
            ],
        ),
        "docker" | "podman" => (
            &[
                "-H",
                "--host",
                "-c",
                "--context",
                "--config",
                "-l",
                "--log-level",
                "--tlscacert",
                "--tlscert",
                "--tlskey",
                "--url",
                "--connection",
            ],
            &["-D", "--debug", "--tls", "--tlsverify", "--remote"],
        ),
        "kubectl" | "oc" => (
            &[
                "-n",
                "--namespace",
                "--context",
                "--cluster",
                "--kubeconfig",
                "-s",
                "--server",
                "--user",
                "--token",
                "-v",
                "--request-timeout",
                "--as",
                "--as-group",
            ],
            &["--insecure-skip-tls-verify", "-A", "--all-namespaces"],
        ),
        "uv" => (
            &[
                "--directory",
                "--project",
                "--cache-dir",
                "--color",
                "--config-file",
            ],
            &[
                "-q",
                "-v",
                "--quiet",
                "--verbose",
                "--offline",
                "--no-cache",
                "--native-tls",
                "--no-progress",
                "--no-config",
                "--frozen",
                "--locked",
            ],
        ),
        "pip" | "pip3" => (
            &[
                "--python",
                "--log",
                "--proxy",
                "--cache-dir",
                "--timeout",
                "--retries",
            ],
            &[
                "-q",
                "-v",
                "--quiet",
                "--verbose",
                "--isolated",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "--no-color",
                "--require-virtualenv",
            ],
        ),
        "systemctl" | "journalctl" => (
            &["-H", "--host", "-M", "--machine"],
            &[
                "--user",
                "--system",
                "--no-pager",
                "-q",
                "--quiet",
                "--no-block",
                "--now",
            ],
        ),
        "gh" => (&["-R", "--repo"], &[]),
        _ => return None,
    })
}

/// The index of the first argument after the program's global options, or `None` when an
/// option that cannot be accounted for comes first (or an option's value is computed).
fn skip_global_options(program: &str, s: &Segment) -> Option<usize> {
    let (with_value, flags) = global_options(program).unwrap_or((&[], &[]));
    let mut k = 0;
    while k < s.args.len() {
        let a = s.args[k].as_str();
        if s.arg_computed(k) {
            return None;
        }
        if a == "--" {
            return Some(k + 1);
        }
        if program == "cargo" && k == 0 && a.starts_with('+') {
            k += 1;
            continue;
        }
        if !a.starts_with('-') {
            return Some(k);
        }
        let name = a.split_once('=').map_or(a, |(n, _)| n);
        if with_value.contains(&name) {
            k += if name.len() < a.len() { 1 } else { 2 };
        } else if flags.contains(&a) {
            k += 1;
        } else {
            return None;
        }
    }
    Some(k)
}

fn wildcard(p: &str, text: &str) -> bool {
    let parts: Vec<&str> = p.split('*').collect();
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(part) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(k) => rest = &rest[k + part.len()..],
                None => return false,
            }
        }
    }
    rest.is_empty()
}

// ----------------------------------------------------------------------------------------
// Exact command rules (seed 000 behaviour 11: an "always" answer grants exactly what was shown).

/// The segment as one unambiguous line: environment assignments, program and arguments, each
/// single-quoted when it holds a space or a shell character. An "always" answer for an
/// interpreter saves `Bash(<this>)`, which [`Rule::allows_segment`] matches exactly.
pub fn exact_command(s: &Segment) -> String {
    s.assignments
        .iter()
        .chain(std::iter::once(&s.program))
        .chain(s.args.iter())
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// A multi-word command pattern with no `*` outside quotes (and so no `:*`) is exact.
fn is_exact_pattern(p: &str) -> bool {
    let p = p.trim();
    let mut quoted = false;
    let mut star = false;
    for c in p.chars() {
        match c {
            '\'' => quoted = !quoted,
            '*' if !quoted => star = true,
            _ => {}
        }
    }
    p.contains(' ') && !star
}

impl Rule {
    /// Whether an allow rule permits this segment. A multi-word command pattern without `*`
    /// is exact (as in Claude Code): `Bash(python3 test_calc.py)` allows that command line
    /// only — not `python3 test_calc.py --evil`, not with other assignments, not with its
    /// output redirected to a file. Deny and ask rules keep the word-prefix reading of
    /// [`Rule::matches_segment`] (a veto fails closed).
    pub fn allows_segment(&self, s: &Segment) -> bool {
        match &self.pattern {
            Some(Pattern::Command(p)) if is_exact_pattern(p) => {
                !s.writes_file && p.trim() == exact_command(s)
            }
            _ => self.matches_segment(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::segments;

    fn seg(cmd: &str) -> Segment {
        segments(cmd).unwrap().pop().unwrap()
    }

    #[test]
    fn command_rules() {
        let r = Rule::parse("Bash(git log:*)").unwrap();
        assert!(r.matches_segment(&seg("git log --oneline")));
        assert!(!r.matches_segment(&seg("git push")));
        let r = Rule::parse("Bash(rm)").unwrap();
        assert!(r.matches_segment(&seg("/bin/rm -rf x")));
        let r = Rule::parse("Bash(npm run *)").unwrap();
        assert!(r.matches_segment(&seg("npm run build")));
        assert!(Rule::parse("Nope(x)").is_err());
    }

    #[test]
    fn exact_allow_rules() {
        let r = Rule::parse("Bash(python3 test_calc.py)").unwrap();
        assert!(r.allows_segment(&seg("python3 test_calc.py")));
        assert!(r.allows_segment(&seg("'python3' \"test_calc.py\"")));
        for other in [
            "python3 test_calc.py --evil",
            "python3 -c 'open(\"f\",\"w\")'",
            "python3",
            "python3 test_calc.py > out.txt",
            "PYTHONPATH=x python3 test_calc.py",
            "python3 test_calc.pyx",
        ] {
            assert!(!r.allows_segment(&seg(other)), "{other}");
        }
        // A deny rule with the same text still vetoes every longer line.
        assert!(r.matches_segment(&seg("python3 test_calc.py --evil")));
        // Arguments with spaces are quoted: one word is not two.
        let s = seg("python3 -c 'print(1) x'");
        assert_eq!(exact_command(&s), "python3 -c 'print(1) x'");
        let r = Rule::parse(&format!("Bash({})", exact_command(&s))).unwrap();
        assert!(r.allows_segment(&s));
        assert!(!r.allows_segment(&seg("python3 -c 'print(1)' x")));
        let s = seg("FOO=1 node a.js");
        assert_eq!(exact_command(&s), "FOO=1 node a.js");
        // Prefix and program rules behave as before for allow.
        let r = Rule::parse("Bash(cargo test:*)").unwrap();
        assert!(r.allows_segment(&seg("cargo test -p x")));
        let r = Rule::parse("Bash(mkdir)").unwrap();
        assert!(r.allows_segment(&seg("mkdir -p a")));
    }

    #[test]
    fn path_rules() {
        let root = Path::new("/p");
        let r = Rule::parse("Edit(/src/*)").unwrap();
        assert!(r.matches_path(Path::new("/p/src/a.rs"), root));
        assert!(!r.matches_path(Path::new("/p/lib/a.rs"), root));
        let r = Rule::parse(".env").unwrap();
        assert!(r.covers_tool("read"));
        assert!(r.matches_path(Path::new("/p/x/.env"), root));
    }
}
