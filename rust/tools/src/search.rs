//! grep and glob on ripgrep's libraries (`ignore`, `grep-searcher`, `grep-regex`):
//! `.gitignore`/`.ignore`/`.git/info/exclude` honoured (also outside git), `.git` skipped,
//! binary files skipped, results ordered by modification time, newest first.

use crate::args::{GlobParams, GrepParams, ToolArgs};
use crate::grep_rows::KeptRows;
use crate::{Tool, ToolContext, ToolOutput};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde_json::{Value, json};
use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

const GLOB_CAP: usize = 100;
/// Content rows collected when the model gives no head_limit (the page ends there and says
/// how to continue; the result cap spills whatever of it exceeds the model's share).
const CONTENT_ROWS: usize = 1000;

pub struct Grep;
pub struct Glob;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Files,
    Content,
    Count,
}

struct GrepArgs {
    pattern: String,
    /// Paths are shown relative to the working directory (absolute outside it).
    cwd: PathBuf,
    root: PathBuf,
    glob: Option<String>,
    file_type: Option<String>,
    mode: Mode,
    case_insensitive: bool,
    line_numbers: bool,
    before: usize,
    after: usize,
    multiline: bool,
    head_limit: Option<usize>,
    offset: usize,
    /// Files no search may read (the policy's `Read(…)` denies).
    read_denies: yuyao_policy::read_denies::ReadDenies,
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }
    fn description(&self) -> &'static str {
        "Search file contents (ripgrep regex; path defaults to the working directory; honours .gitignore). output_mode: files_with_matches (default), content (line numbers, -A/-B/-C context) or count. Narrow with glob (\"*.rs\") or type (\"py\"); multiline spans lines; head_limit/offset page."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "glob": {"type": "string"},
                "type": {"type": "string"},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
                "-i": {"type": "boolean"},
                "-n": {"type": "boolean"},
                "-A": {"type": "integer"},
                "-B": {"type": "integer"},
                "-C": {"type": "integer"},
                "multiline": {"type": "boolean"},
                "head_limit": {"type": "integer"},
                "offset": {"type": "integer"}
            },
            "required": ["pattern"]
        })
    }
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let ToolArgs::Grep(args) = args else {
            return crate::fs::mismatched("grep", args);
        };
        parse_grep(args, ctx)
            .and_then(|a| grep(&a, cancel))
            .unwrap_or_else(ToolOutput::err)
    }
}

fn non_negative(v: Option<i64>, name: &str) -> Result<Option<usize>, String> {
    match v {
        Some(n) if n < 0 => Err(format!("{name} must be 0 or more, got {n}")),
        other => Ok(other.map(|n| n as usize)),
    }
}

fn parse_grep(args: &GrepParams, ctx: &ToolContext) -> Result<GrepArgs, String> {
    let pattern = args.pattern.clone();
    let root = match &args.path {
        Some(p) => ctx.resolve(p),
        None => ctx.cwd(),
    };
    if !root.exists() {
        return Err(format!("{} does not exist", root.display()));
    }
    let mode = match args.output_mode.as_deref() {
        None | Some("files_with_matches") | Some("files") => Mode::Files,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => {
            return Err(format!(
                "output_mode must be files_with_matches, content or count, got '{other}'"
            ));
        }
    };
    let context = non_negative(args.context, "-C")?.unwrap_or(0);
    let head_limit = match non_negative(args.head_limit, "head_limit")? {
        Some(0) => None,
        other => other,
    };
    Ok(GrepArgs {
        pattern,
        cwd: ctx.cwd(),
        root,
        glob: args.glob.clone(),
        file_type: args.file_type.clone(),
        mode,
        case_insensitive: args.case_insensitive.unwrap_or(false),
        line_numbers: args.line_numbers.unwrap_or(true),
        before: non_negative(args.before, "-B")?.unwrap_or(context),
        after: non_negative(args.after, "-A")?.unwrap_or(context),
        multiline: args.multiline.unwrap_or(false),
        head_limit,
        offset: non_negative(args.offset, "offset")?.unwrap_or(0),
        read_denies: ctx
            .read_denies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
    })
}

/// A walker over `root` with ripgrep's ignore rules, optional glob and type filters.
fn walker(
    root: &Path,
    glob: Option<&str>,
    file_type: Option<&str>,
    hidden: bool,
) -> Result<WalkBuilder, String> {
    let mut wb = WalkBuilder::new(root);
    wb.hidden(!hidden)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .require_git(false)
        .parents(true)
        .filter_entry(|e| e.file_name() != ".git");
    if let Some(g) = glob {
        let mut ob = OverrideBuilder::new(root);
        for part in split_globs(g) {
            ob.add(&part)
                .map_err(|e| format!("invalid glob '{part}': {e}"))?;
        }
        wb.overrides(ob.build().map_err(|e| format!("invalid glob '{g}': {e}"))?);
    }
    if let Some(t) = file_type {
        let mut tb = TypesBuilder::new();
        tb.add_defaults();
        if !tb.definitions().iter().any(|d| d.name() == t) {
            return Err(format!(
                "unknown file type '{t}' (ripgrep's type names, e.g. rust, py, js, ts, go, md, c, cpp, java)"
            ));
        }
        tb.select(t);
        let types = tb.build().map_err(|e| format!("invalid type '{t}': {e}"))?;
        wb.types(types);
    }
    Ok(wb)
}

/// `*.{ts,tsx}` stays one glob; `*.rs *.toml` or `*.rs,*.toml` are several.
fn split_globs(g: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in g.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 && (c == ',' || c == ' ') {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct FileHits {
    path: PathBuf,
    mtime: SystemTime,
    count: u64,
}

struct Collector<'a> {
    /// The file searched and the folder its shown path is relative to.
    path: &'a Path,
    base: &'a Path,
    /// Its shown path and modification time, found at its first match: most files of a
    /// search match nothing, and ripgrep neither stats nor formats those.
    shown: Option<String>,
    mtime: Option<SystemTime>,
    /// Content mode: the rows of all files so far, asked at the first match whether this
    /// file's rows can still be on the page (`None` in the other modes).
    kept: Option<&'a Mutex<KeptRows>>,
    numbers: bool,
    /// The first `store_limit` content rows (a row beyond it is only counted).
    lines: Vec<String>,
    store_limit: usize,
    /// Content rows produced, stored or not.
    rows: u64,
    count: u64,
    /// files_with_matches: the first match is enough.
    first_only: bool,
    last_line: Option<u64>,
    /// A NUL byte was found: the file is binary and skipped entirely.
    binary: bool,
}

impl Collector<'_> {
    /// The shown path and the display-order key, computed once.
    fn key(&mut self) -> (&str, SystemTime) {
        let mtime = *self.mtime.get_or_insert_with(|| {
            std::fs::metadata(self.path)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        });
        let shown = self
            .shown
            .get_or_insert_with(|| shown_path(self.path, self.base));
        (shown, mtime)
    }

    fn push(&mut self, line_number: Option<u64>, bytes: &[u8], sep: char) {
        let Some(kept) = self.kept else {
            return;
        };
        if self.shown.is_none() {
            let (shown, mtime) = self.key();
            let key = (Reverse(mtime), PathBuf::from(shown));
            let wanted = kept.lock().is_ok_and(|k| k.wants(&key));
            if !wanted {
                self.store_limit = 0;
            }
        }
        let path = self.shown.as_deref().unwrap_or_default();
        // A gap between context groups: `--` rides on the next line, so paging counts lines.
        let gap = matches!((self.last_line, line_number), (Some(last), Some(n)) if n > last + 1)
            && self.rows > 0;
        let text = String::from_utf8_lossy(bytes);
        for (k, line) in text.trim_end_matches('\n').split('\n').enumerate() {
            let n = line_number.map(|n| n + k as u64);
            self.rows += 1;
            self.last_line = n;
            if self.lines.len() >= self.store_limit {
                continue;
            }
            let line = line.trim_end_matches('\r');
            let shown: String = line.chars().take(500).collect();
            let row = match (self.numbers, n) {
                (true, Some(n)) => format!("{path}{sep}{n}{sep}{shown}"),
                _ => format!("{path}{sep}{shown}"),
            };
            self.lines.push(if gap && k == 0 {
                format!("--\n{row}")
            } else {
                row
            });
        }
    }
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;
    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        self.push(m.line_number(), m.bytes(), ':');
        Ok(!self.first_only)
    }
    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
    fn context(&mut self, _s: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.push(c.line_number(), c.bytes(), '-');
        Ok(true)
    }
}

fn grep(a: &GrepArgs, cancel: &CancellationToken) -> Result<ToolOutput, String> {
    let mut mb = RegexMatcherBuilder::new();
    mb.case_insensitive(a.case_insensitive);
    if a.multiline {
        mb.multi_line(true).dot_matches_new_line(true);
    } else {
        mb.line_terminator(Some(b'\n'));
    }
    let matcher = mb.build(&a.pattern).map_err(|e| {
        format!(
            "invalid regex /{}/ (ripgrep syntax): {e}\nEscape literal special characters with a backslash (e.g. \\( \\[ \\. \\{{).",
            a.pattern
        )
    })?;
    let wb = walker(&a.root, a.glob.as_deref(), a.file_type.as_deref(), false)?;
    let results: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    // Content rows: only the page's end is ever stored; the rest is counted.
    let row_cap = a
        .offset
        .saturating_add(a.head_limit.unwrap_or(CONTENT_ROWS));
    let kept = Mutex::new(KeptRows::new(row_cap));
    let base = &a.cwd;
    wb.build_parallel().run(|| {
        let matcher = matcher.clone();
        // Line numbers are counted only for content rows: counting them costs a pass over
        // every buffer, and files and count modes never show one (nor does ripgrep count them).
        let mut searcher = SearcherBuilder::new()
            .line_number(a.mode == Mode::Content)
            .multi_line(a.multiline)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(if a.mode == Mode::Content { a.before } else { 0 })
            .after_context(if a.mode == Mode::Content { a.after } else { 0 })
            .build();
        let (results, kept) = (&results, &kept);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            let path = entry.path();
            // A `Read(glob)` deny keeps a file's contents out of every search that reaches it:
            // such a file is not even opened.
            if !a.read_denies.is_empty() && a.read_denies.denying(path).is_some() {
                return ignore::WalkState::Continue;
            }
            let mut sink = Collector {
                path,
                base,
                shown: None,
                mtime: None,
                kept: (a.mode == Mode::Content).then_some(kept),
                numbers: a.line_numbers,
                lines: Vec::new(),
                store_limit: row_cap,
                rows: 0,
                count: 0,
                first_only: a.mode == Mode::Files,
                last_line: None,
                binary: false,
            };
            // Exfiltration guard: a directory search never collects secrets (a file named
            // explicitly is the root, depth 0, and was adjudicated by the policy). Asked after
            // the search, of matching files only: the name test (allocations, a walk over the
            // path's components) is then paid by a few files instead of every file of the
            // tree, and a sensitive file's rows are dropped before anything is returned.
            if searcher.search_path(&matcher, path, &mut sink).is_ok()
                && sink.count > 0
                && !sink.binary
                && !(entry.depth() > 0 && yuyao_policy::sensitive::is_sensitive(path))
            {
                let (shown, mtime) = sink.key();
                let key = (Reverse(mtime), PathBuf::from(shown));
                if a.mode == Mode::Content {
                    if let Ok(mut k) = kept.lock() {
                        k.add(key, sink.lines, sink.rows);
                    }
                } else if let Ok(mut r) = results.lock() {
                    r.push(FileHits {
                        path: key.1,
                        mtime,
                        count: sink.count,
                    });
                }
            }
            ignore::WalkState::Continue
        })
    });
    let mut hits = results.into_inner().unwrap_or_default();
    hits.sort_by(|x, y| y.mtime.cmp(&x.mtime).then_with(|| x.path.cmp(&y.path)));
    let (rows, total) = match a.mode {
        Mode::Files => counted(hits.iter().map(|h| h.path.display().to_string()).collect()),
        Mode::Count => counted(
            hits.iter()
                .map(|h| format!("{}:{}", h.path.display(), h.count))
                .collect(),
        ),
        Mode::Content => kept.into_inner().map_or_else(
            |_| (Vec::new(), 0),
            |k| {
                let (rows, total) = k.into_rows();
                (rows, usize::try_from(total).unwrap_or(usize::MAX))
            },
        ),
    };
    if total == 0 {
        return Ok(ToolOutput::ok(format!(
            "No matches for /{}/ in {}",
            a.pattern,
            a.root.display()
        )));
    }
    // Without head_limit, a content page still ends at CONTENT_ROWS.
    let limit = match a.mode {
        Mode::Content => Some(a.head_limit.unwrap_or(CONTENT_ROWS)),
        _ => a.head_limit,
    };
    Ok(ToolOutput::ok(page(
        rows, total, a.offset, limit, "results",
    )))
}

fn counted(rows: Vec<String>) -> (Vec<String>, usize) {
    let n = rows.len();
    (rows, n)
}

/// `path` relative to `base` when it is under it, else absolute; quoted when it holds a
/// newline or another control character, so one name never reads as two lines.
pub(crate) fn shown_path(path: &Path, base: &Path) -> String {
    let s = match path.strip_prefix(base) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().to_string(),
        _ => path.to_string_lossy().to_string(),
    };
    quote_name(s)
}

/// A name with control characters as a JSON string literal (`"a\nb.txt"`); others unchanged.
pub(crate) fn quote_name(s: String) -> String {
    if s.chars().any(char::is_control) {
        serde_json::to_string(&s).unwrap_or(s)
    } else {
        s
    }
}

/// Applies offset/limit and says how many more there are. `rows` holds at least the rows up
/// to the page's end; `total` counts them all.
fn page(
    rows: Vec<String>,
    total: usize,
    offset: usize,
    limit: Option<usize>,
    what: &str,
) -> String {
    let end = limit.map_or(total, |l| offset.saturating_add(l).min(total));
    if offset >= total {
        return format!("offset {offset} is past the end: there are {total} {what}");
    }
    let end_stored = end.min(rows.len());
    let mut out = rows[offset.min(end_stored)..end_stored].join("\n");
    if let Some(rest) = out.strip_prefix("--\n") {
        out = rest.to_string();
    }
    if end < total {
        out.push_str(&format!(
            "\n[showing {what} {}–{end} of {total}; continue with offset={end}]",
            offset + 1
        ));
    }
    out
}

impl Tool for Glob {
    fn name(&self) -> &'static str {
        "glob"
    }
    fn description(&self) -> &'static str {
        "Find files by glob (**, *, ?, [..], {a,b}) under path (default: the working directory), newest first, at most 100. Without '/' a pattern matches names at any depth (\"*.rs\"); with '/' paths (\"src/**/*.rs\"). Honours .gitignore; hidden files only when named."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"}
            },
            "required": ["pattern"]
        })
    }
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let ToolArgs::Glob(args) = args else {
            return crate::fs::mismatched("glob", args);
        };
        glob(args, ctx, cancel).unwrap_or_else(ToolOutput::err)
    }
}

/// Splits a glob into the literal folder it starts with and the rest (`src/**/*.rs` ->
/// `src`, `**/*.rs`), so the walk starts as deep as it can.
fn literal_prefix(pattern: &str) -> (PathBuf, String) {
    let is_meta = |c: char| matches!(c, '*' | '?' | '[' | '{' | ']' | '}' | '\\');
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut prefix = PathBuf::new();
    if pattern.starts_with('/') {
        prefix.push("/");
    }
    let mut k = 0;
    while k + 1 < parts.len() && !parts[k].chars().any(is_meta) {
        if !parts[k].is_empty() && parts[k] != "." {
            prefix.push(parts[k]);
        }
        k += 1;
    }
    (prefix, parts[k..].join("/"))
}

fn glob(
    args: &GlobParams,
    ctx: &ToolContext,
    cancel: &CancellationToken,
) -> Result<ToolOutput, String> {
    let pattern = args.pattern.trim().to_string();
    if pattern.is_empty() {
        return Err("pattern is empty; e.g. \"**/*.rs\"".into());
    }
    let root = match &args.path {
        Some(p) => ctx.resolve(p),
        None => ctx.cwd(),
    };
    if !root.is_dir() {
        return Err(format!("{} is not a folder", root.display()));
    }
    let (prefix, rest) = literal_prefix(&pattern);
    let walk_root = crate::normalize(&root.join(&prefix));
    // A pattern without `/` matches file names at any depth (as in .gitignore and rg -g).
    let by_name = !pattern.contains('/');
    let matcher = globset::GlobBuilder::new(&rest)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob '{pattern}': {e}"))?
        .compile_matcher();
    let cwd = ctx.cwd();
    if !walk_root.is_dir() {
        return Ok(ToolOutput::ok(format!(
            "No files match {pattern} under {} ({} does not exist)",
            root.display(),
            walk_root.display()
        )));
    }
    let hidden = pattern
        .split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..");
    let found: Mutex<Vec<(SystemTime, String)>> = Mutex::new(Vec::new());
    walker(&walk_root, None, None, hidden)?
        .build_parallel()
        .run(|| {
            let (found, matcher, walk_root, cwd) = (&found, &matcher, &walk_root, &cwd);
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return ignore::WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                if entry.depth() == 0 || entry.file_type().is_some_and(|t| t.is_dir()) {
                    return ignore::WalkState::Continue;
                }
                let hit = if by_name {
                    matcher.is_match(entry.file_name())
                } else {
                    matcher.is_match(entry.path().strip_prefix(walk_root).unwrap_or(entry.path()))
                };
                if hit {
                    let mtime = entry
                        .metadata()
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .unwrap_or(SystemTime::UNIX_EPOCH);
                    let shown = shown_path(entry.path(), cwd);
                    if let Ok(mut f) = found.lock() {
                        f.push((mtime, shown));
                    }
                }
                ignore::WalkState::Continue
            })
        });
    if cancel.is_cancelled() {
        return Err("interrupted".into());
    }
    let mut found = found.into_inner().unwrap_or_default();
    if found.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No files match {pattern} under {}",
            root.display()
        )));
    }
    let total = found.len();
    // Newest first; only the shown ones need a full sort.
    let cmp = |a: &(SystemTime, String), b: &(SystemTime, String)| {
        b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))
    };
    if total > GLOB_CAP {
        found.select_nth_unstable_by(GLOB_CAP - 1, cmp);
        found.truncate(GLOB_CAP);
    }
    found.sort_by(cmp);
    let mut out: Vec<String> = found.into_iter().map(|(_, p)| p).collect();
    if total > GLOB_CAP {
        out.push(format!(
            "[showing {GLOB_CAP} of {total} matches; narrow the pattern]"
        ));
    }
    Ok(ToolOutput::ok(out.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), dir.to_path_buf(), dir.join(".spill"))
    }

    fn run_grep(c: &ToolContext, args: Value) -> ToolOutput {
        Grep.run(&args, c, &CancellationToken::new())
    }

    /// A directory search never returns a secret file's lines, names or counts, in any
    /// mode; the same file named as the search's root (the policy adjudicated it) is searched.
    #[test]
    fn a_directory_search_skips_sensitive_files_in_every_mode() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("conf")).unwrap();
        for name in ["prod.env", "credentials.json", "conf/server.pem", "id_rsa"] {
            std::fs::write(root.join(name), "TOKEN=hunter2\n").unwrap();
        }
        std::fs::write(root.join("app.py"), "TOKEN = read()\n").unwrap();
        let c = ctx(&root);
        for mode in ["files_with_matches", "content", "count"] {
            let out = run_grep(
                &c,
                serde_json::json!({"pattern": "TOKEN", "output_mode": mode, "-C": 1}),
            );
            assert!(out.ok, "{}", out.text);
            assert!(out.text.contains("app.py"), "{mode}: {}", out.text);
            for secret in ["hunter2", "prod.env", "credentials", "server.pem", "id_rsa"] {
                assert!(!out.text.contains(secret), "{mode}: {}", out.text);
            }
        }
        let named = run_grep(
            &c,
            serde_json::json!({"pattern": "TOKEN", "path": "prod.env", "output_mode": "content"}),
        );
        assert!(named.text.contains("hunter2"), "{}", named.text);
    }

    #[test]
    fn glob_quotes_names_with_control_characters() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join("evil\nREADME.md"), "x").unwrap();
        std::fs::write(root.join("plain.md"), "x").unwrap();
        let out = run_glob(&ctx(&root), serde_json::json!({"pattern": "*.md"}));
        assert!(out.ok, "{}", out.text);
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(lines.len(), 2, "{}", out.text);
        assert!(lines.contains(&"\"evil\\nREADME.md\""), "{}", out.text);
        assert!(lines.contains(&"plain.md"));
        let out = run_grep(&ctx(&root), serde_json::json!({"pattern": "x"}));
        assert_eq!(out.text.lines().count(), 2, "{}", out.text);
    }

    fn run_glob(c: &ToolContext, args: Value) -> ToolOutput {
        Glob.run(&args, c, &CancellationToken::new())
    }

    fn touch(path: &Path, text: &[u8], age_s: u64) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        let t = SystemTime::now() - std::time::Duration::from_secs(age_s);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn modes_binary_ignore_and_order() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        touch(&r.join("old.txt"), b"needle one\n", 100);
        touch(
            &r.join("src/new.rs"),
            b"a\nneedle two\nb\nneedle three\n",
            10,
        );
        touch(&r.join("bin.dat"), b"needle\0\x01\x02", 5);
        touch(&r.join(".gitignore"), b"ignored/\n", 50);
        touch(&r.join("ignored/x.txt"), b"needle\n", 1);
        touch(&r.join(".hidden/y.txt"), b"needle\n", 1);
        let c = ctx(r);
        let files = run_grep(&c, json!({"pattern": "needle"}));
        assert_eq!(files.text, "src/new.rs\nold.txt");
        let count = run_grep(&c, json!({"pattern": "needle", "output_mode": "count"}));
        assert_eq!(count.text, "src/new.rs:2\nold.txt:1");
        let content = run_grep(
            &c,
            json!({"pattern": "three", "output_mode": "content", "-B": 1, "path": "src"}),
        );
        assert_eq!(content.text, "src/new.rs-3-b\nsrc/new.rs:4:needle three");
        let paged = run_grep(
            &c,
            json!({"pattern": "needle", "output_mode": "content", "head_limit": 1, "offset": 1}),
        );
        assert!(
            paged.text.starts_with(
                "src/new.rs:4:needle three\n[showing results 2–2 of 3; continue with offset=2]"
            ),
            "{}",
            paged.text
        );
        let multi = run_grep(
            &c,
            json!({"pattern": "two.b", "multiline": true, "output_mode": "content"}),
        );
        assert_eq!(multi.text, "src/new.rs:2:needle two\nsrc/new.rs:3:b");
        let typed = run_grep(&c, json!({"pattern": "needle", "type": "rust"}));
        assert_eq!(typed.text, "src/new.rs");
        let bad = run_grep(&c, json!({"pattern": "a(b"}));
        assert!(
            !bad.ok && bad.text.contains("invalid regex /a(b/"),
            "{}",
            bad.text
        );
    }

    /// Content mode stores only the page; the footer still gives the true total, and pages
    /// taken across file boundaries (with context rows) match one full listing.
    #[test]
    fn content_mode_pages_a_big_tree_with_the_true_total() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let body: String = (0..1000).map(|k| format!("hit {k}\n")).collect();
        for f in 0..200u64 {
            touch(
                &r.join(format!("d{}/f{f:03}.txt", f % 10)),
                body.as_bytes(),
                10 + f,
            );
        }
        let c = ctx(r);
        let first = run_grep(&c, json!({"pattern": "hit", "output_mode": "content"}));
        let lines: Vec<&str> = first.text.lines().collect();
        assert_eq!(lines.len(), 1001, "{}", &first.text[..200]);
        assert_eq!(lines[0], "d0/f000.txt:1:hit 0");
        assert_eq!(lines[999], "d0/f000.txt:1000:hit 999");
        assert_eq!(
            lines[1000],
            "[showing results 1–1000 of 200000; continue with offset=1000]"
        );
        let far = run_grep(
            &c,
            json!({"pattern": "hit", "output_mode": "content", "offset": 150_999, "head_limit": 2}),
        );
        assert!(
            far.text
                .starts_with("d0/f150.txt:1000:hit 999\nd1/f151.txt:1:hit 0\n[showing results 151000–151001 of 200000"),
            "{}",
            far.text
        );
        // Context rows and `--` gaps are counted the same stored or not.
        let small: String = (0..50)
            .map(|k| format!("{}\n", if k % 10 == 0 { "hit" } else { "x" }))
            .collect();
        for f in 0..30u64 {
            touch(&r.join(format!("ctx/g{f:02}.txt")), small.as_bytes(), f);
        }
        let args = |offset: usize, limit: usize| {
            json!({"pattern": "hit", "path": "ctx", "output_mode": "content", "-A": 1,
                   "offset": offset, "head_limit": limit})
        };
        let all = run_grep(&c, args(0, 100_000));
        let all: Vec<&str> = all.text.lines().collect();
        let total = all.iter().filter(|l| !l.starts_with("--")).count();
        assert_eq!(total, 30 * 5 * 2);
        let mut paged = Vec::new();
        for start in (0..total).step_by(7) {
            let out = run_grep(&c, args(start, 7));
            let rows: Vec<String> = out
                .text
                .lines()
                .filter(|l| !l.starts_with("[showing"))
                .map(str::to_string)
                .collect();
            if start + 7 < total {
                assert!(out.text.contains(&format!("of {total};")), "{}", out.text);
            }
            paged.extend(rows);
        }
        let strip = |v: Vec<&str>| -> Vec<String> {
            v.into_iter()
                .filter(|l| *l != "--")
                .map(str::to_string)
                .collect()
        };
        let paged: Vec<String> = paged.into_iter().filter(|l| l != "--").collect();
        assert_eq!(paged, strip(all));
    }

    #[test]
    fn literal_prefix_splits_at_the_first_wildcard() {
        let p = |s: &str| {
            let (a, b) = literal_prefix(s);
            (a.to_string_lossy().to_string(), b)
        };
        assert_eq!(p("*.rs"), ("".into(), "*.rs".into()));
        assert_eq!(p("src/**/*.rs"), ("src".into(), "**/*.rs".into()));
        assert_eq!(p("./src/a/*.rs"), ("src/a".into(), "*.rs".into()));
        assert_eq!(p("src/main.rs"), ("src".into(), "main.rs".into()));
        assert_eq!(p("/abs/x/{a,b}/*.c"), ("/abs/x".into(), "{a,b}/*.c".into()));
    }

    #[test]
    fn glob_semantics_cap_and_order() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        for k in 0..120u64 {
            touch(&r.join(format!("deep/d{}/f{k}.rs", k % 7)), b"x", 1000 - k);
        }
        touch(&r.join("top.rs"), b"x", 1);
        touch(&r.join("src/main.rs"), b"x", 2);
        touch(&r.join("src/a/b.rs"), b"x", 3);
        touch(&r.join(".git/config.rs"), b"x", 1);
        let c = ctx(r);
        let all = run_glob(&c, json!({"pattern": "*.rs"}));
        let lines: Vec<&str> = all.text.lines().collect();
        assert_eq!(lines.len(), 101);
        assert_eq!(&lines[..3], ["top.rs", "src/main.rs", "src/a/b.rs"]);
        assert_eq!(
            lines[100],
            "[showing 100 of 123 matches; narrow the pattern]"
        );
        let direct = run_glob(&c, json!({"pattern": "src/*.rs"}));
        assert_eq!(direct.text, "src/main.rs");
        let deep = run_glob(&c, json!({"pattern": "src/**/*.rs"}));
        assert_eq!(deep.text, "src/main.rs\nsrc/a/b.rs");
        let braces = run_glob(&c, json!({"pattern": "{top,main}.r?", "path": "."}));
        assert_eq!(braces.text, "top.rs\nsrc/main.rs");
    }
}
