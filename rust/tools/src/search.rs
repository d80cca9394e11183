//! grep and glob on ripgrep's libraries (`ignore`, `grep-searcher`, `grep-regex`):
//! `.gitignore`/`.ignore`/`.git/info/exclude` honoured (also outside git), `.git` skipped,
//! binary files skipped, results ordered by modification time, newest first.

use crate::args::{opt_bool, opt_int, opt_string, string};
use crate::{Tool, ToolContext, ToolOutput};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;
use tokio_util::sync::CancellationToken;

const GLOB_CAP: usize = 100;

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
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }
    fn description(&self) -> &'static str {
        "Search file contents with a ripgrep regex. output_mode: files_with_matches (default), content (with line numbers; -A/-B/-C context), count. Filter with glob (e.g. \"*.rs\") or type (e.g. \"py\"). multiline lets patterns span lines. head_limit/offset page through results. Honours .gitignore."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (ripgrep syntax)"},
                "path": {"type": "string", "description": "File or folder to search (default: working directory)"},
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
    fn run(&self, args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput {
        parse_grep(args, ctx)
            .and_then(|a| grep(&a, cancel))
            .unwrap_or_else(ToolOutput::err)
    }
}

fn non_negative(args: &Value, name: &str) -> Result<Option<usize>, String> {
    match opt_int(args, name)? {
        Some(n) if n < 0 => Err(format!("{name} must be 0 or more, got {n}")),
        other => Ok(other.map(|n| n as usize)),
    }
}

fn parse_grep(args: &Value, ctx: &ToolContext) -> Result<GrepArgs, String> {
    let pattern = string(args, "pattern", &["regex", "query"])?;
    let root = match opt_string(args, "path", &["file_path"])? {
        Some(p) => ctx.resolve(&p),
        None => ctx.cwd(),
    };
    if !root.exists() {
        return Err(format!("{} does not exist", root.display()));
    }
    let mode = match opt_string(args, "output_mode", &[])?.as_deref() {
        None | Some("files_with_matches") | Some("files") => Mode::Files,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => {
            return Err(format!(
                "output_mode must be files_with_matches, content or count, got '{other}'"
            ));
        }
    };
    let context = non_negative(args, "-C")?
        .or(non_negative(args, "context")?)
        .unwrap_or(0);
    let head_limit = match non_negative(args, "head_limit")? {
        Some(0) => None,
        other => other,
    };
    Ok(GrepArgs {
        pattern,
        root,
        glob: opt_string(args, "glob", &[])?,
        file_type: opt_string(args, "type", &[])?,
        mode,
        case_insensitive: opt_bool(args, "-i")?.unwrap_or(false),
        line_numbers: opt_bool(args, "-n")?.unwrap_or(true),
        before: non_negative(args, "-B")?.unwrap_or(context),
        after: non_negative(args, "-A")?.unwrap_or(context),
        multiline: opt_bool(args, "multiline")?.unwrap_or(false),
        head_limit,
        offset: non_negative(args, "offset")?.unwrap_or(0),
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
        tb.select(t);
        let types = tb.build().map_err(|e| format!("invalid type '{t}': {e}"))?;
        if !tb.definitions().iter().any(|d| d.name() == t) {
            return Err(format!(
                "unknown file type '{t}' (ripgrep's type names, e.g. rust, py, js, ts, go, md)"
            ));
        }
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
    lines: Vec<String>,
    count: u64,
}

struct Collector<'a> {
    path: &'a str,
    numbers: bool,
    lines: Vec<String>,
    count: u64,
    keep_lines: bool,
    last_line: Option<u64>,
}

impl Collector<'_> {
    fn push(&mut self, line_number: Option<u64>, bytes: &[u8], sep: char) {
        if !self.keep_lines {
            return;
        }
        if let (Some(last), Some(n)) = (self.last_line, line_number)
            && n > last + 1
            && !self.lines.is_empty()
        {
            self.lines.push("--".into());
        }
        let text = String::from_utf8_lossy(bytes);
        for (k, line) in text.trim_end_matches('\n').split('\n').enumerate() {
            let line = line.trim_end_matches('\r');
            let n = line_number.map(|n| n + k as u64);
            let shown: String = line.chars().take(500).collect();
            self.lines.push(match (self.numbers, n) {
                (true, Some(n)) => format!("{}{sep}{n}{sep}{shown}", self.path),
                _ => format!("{}{sep}{shown}", self.path),
            });
            self.last_line = n;
        }
    }
}

impl Sink for Collector<'_> {
    type Error = std::io::Error;
    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        self.push(m.line_number(), m.bytes(), ':');
        Ok(true)
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
    let matcher = mb
        .build(&a.pattern)
        .map_err(|e| format!("invalid regex: {e}"))?;
    let wb = walker(&a.root, a.glob.as_deref(), a.file_type.as_deref(), false)?;
    let results: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    let base = if a.root.is_file() {
        a.root.parent().unwrap_or(&a.root).to_path_buf()
    } else {
        a.root.clone()
    };
    wb.build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .multi_line(a.multiline)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(if a.mode == Mode::Content { a.before } else { 0 })
            .after_context(if a.mode == Mode::Content { a.after } else { 0 })
            .build();
        let results = &results;
        let base = &base;
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
            // Exfiltration guard: a directory search never collects secrets (a file named
            // explicitly is the root, depth 0, and was adjudicated by the policy).
            if entry.depth() > 0 && yuyao_policy::sensitive::is_sensitive(path) {
                return ignore::WalkState::Continue;
            }
            let shown = path
                .strip_prefix(base)
                .unwrap_or(path)
                .to_string_lossy()
                .to_string();
            let mut sink = Collector {
                path: &shown,
                numbers: a.line_numbers,
                lines: Vec::new(),
                count: 0,
                keep_lines: a.mode == Mode::Content,
                last_line: None,
            };
            if searcher.search_path(&matcher, path, &mut sink).is_ok() && sink.count > 0 {
                let mtime = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let hit = FileHits {
                    path: PathBuf::from(&shown),
                    mtime,
                    lines: sink.lines,
                    count: sink.count,
                };
                if let Ok(mut r) = results.lock() {
                    r.push(hit);
                }
            }
            ignore::WalkState::Continue
        })
    });
    let mut hits = results.into_inner().unwrap_or_default();
    hits.sort_by(|x, y| y.mtime.cmp(&x.mtime).then_with(|| x.path.cmp(&y.path)));
    let rows: Vec<String> = match a.mode {
        Mode::Files => hits.iter().map(|h| h.path.display().to_string()).collect(),
        Mode::Count => hits
            .iter()
            .map(|h| format!("{}:{}", h.path.display(), h.count))
            .collect(),
        Mode::Content => hits.into_iter().flat_map(|h| h.lines).collect(),
    };
    if rows.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No matches for /{}/ in {}",
            a.pattern,
            a.root.display()
        )));
    }
    Ok(ToolOutput::ok(page(
        rows,
        a.offset,
        a.head_limit,
        "results",
    )))
}

/// Applies offset/limit and says how many more there are.
fn page(rows: Vec<String>, offset: usize, limit: Option<usize>, what: &str) -> String {
    let total = rows.len();
    let end = limit.map_or(total, |l| (offset + l).min(total));
    if offset >= total {
        return format!("offset {offset} is past the end: there are {total} {what}");
    }
    let mut out = rows[offset..end].join("\n");
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
        "Find files by glob pattern (**, *, ?, [..], {a,b}), newest first, capped at 100 with a truncation line. Honours .gitignore; never enters .git."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "e.g. \"**/*.rs\" or \"src/**/test_*.py\""},
                "path": {"type": "string", "description": "Folder to search under (default: working directory)"}
            },
            "required": ["pattern"]
        })
    }
    fn run(&self, args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> ToolOutput {
        glob(args, ctx, cancel).unwrap_or_else(ToolOutput::err)
    }
}

fn glob(args: &Value, ctx: &ToolContext, cancel: &CancellationToken) -> Result<ToolOutput, String> {
    let pattern = string(args, "pattern", &["glob"])?;
    let root = match opt_string(args, "path", &[])? {
        Some(p) => ctx.resolve(&p),
        None => ctx.cwd(),
    };
    if !root.is_dir() {
        return Err(format!("{} is not a folder", root.display()));
    }
    let matcher = globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob '{pattern}': {e}"))?
        .compile_matcher();
    let hidden = pattern.split('/').any(|part| part.starts_with('.'));
    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in walker(&root, None, None, hidden)?.build() {
        if cancel.is_cancelled() {
            return Err("interrupted".into());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        if matcher.is_match(rel) {
            let mtime = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((mtime, rel.to_string_lossy().to_string()));
        }
    }
    if found.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "No files match {pattern} under {}",
            root.display()
        )));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let mut out: Vec<String> = found.into_iter().take(GLOB_CAP).map(|(_, p)| p).collect();
    if total > GLOB_CAP {
        out.push(format!(
            "[showing {GLOB_CAP} of {total} matches; narrow the pattern]"
        ));
    }
    Ok(ToolOutput::ok(out.join("\n")))
}
