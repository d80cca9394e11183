//! apply-patch: the `*** Begin Patch` envelope (Add / Delete / Update with `@@` hunks / Move
//! to) and git-style unified diffs. Every file of one patch is computed in memory first; only
//! when all of them apply are they written (temp files, then renames, rolled back on failure),
//! so a patch applies whole or not at all. Context lines keep the file's own bytes (line
//! endings, trailing whitespace, a BOM), and new lines take the file's line ending.

use crate::args::ToolArgs;
use crate::fs::read_file;
use crate::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

pub struct ApplyPatch;

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Hunk {
    /// `@@ text` in the envelope: a line to find first; the hunk matches after it.
    anchor: Option<String>,
    lines: Vec<Line>,
    /// `*** End of File`: the hunk must end at the end of the file.
    at_eof: bool,
    /// Unified diffs: the 1-based old start line, used to pick among several matches.
    hint: Option<usize>,
    /// Unified diffs: `\ No newline at end of file` after the old / new side.
    old_no_eol: bool,
    new_no_eol: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum FileOp {
    Add {
        path: String,
        lines: Vec<String>,
        no_eol: bool,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl FileOp {
    fn paths(&self) -> Vec<&str> {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path } => vec![path],
            FileOp::Update { path, move_to, .. } => {
                let mut v = vec![path.as_str()];
                if let Some(m) = move_to {
                    v.push(m);
                }
                v
            }
        }
    }
}

impl Tool for ApplyPatch {
    fn name(&self) -> &'static str {
        "apply-patch"
    }
    fn description(&self) -> &'static str {
        "Apply a patch to one or more files, all or nothing. Accepts the envelope format:\n*** Begin Patch\n*** Add File: path\n+line\n*** Delete File: path\n*** Update File: path\n*** Move to: new/path (optional)\n@@ optional line to anchor on\n context line\n-removed line\n+added line\n*** End Patch\nand git-style unified diffs (--- a/x, +++ b/x, @@ -l,n +l,n @@). Context must match the file exactly (trailing whitespace is tolerated and reported). Paths are relative to the working directory."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "patch": {"type": "string", "description": "The full patch text"}
            },
            "required": ["patch"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        match args {
            ToolArgs::ApplyPatch(a) => {
                apply_patch_text(ctx, &a.patch).unwrap_or_else(ToolOutput::err)
            }
            other => crate::fs::mismatched("apply-patch", other),
        }
    }
}

/// The paths a patch touches (sources and move destinations) as written in it, parsed the
/// way the tool parses them when it applies the patch.
pub fn patch_raw_paths(text: &str) -> Result<Vec<String>, String> {
    let ops = parse(text)?;
    let mut out: Vec<String> = Vec::new();
    for op in &ops {
        for p in op.paths() {
            if !out.iter().any(|q| q == p) {
                out.push(p.to_string());
            }
        }
    }
    Ok(out)
}

/// The files a patch touches, resolved (symlinks included) as the tool will open them.
/// Used to snapshot them before the patch runs.
pub fn patch_paths(ctx: &ToolContext, text: &str) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in patch_raw_paths(text)? {
        let r = ctx.resolve(&p);
        if !out.contains(&r) {
            out.push(r);
        }
    }
    Ok(out)
}

fn parse(text: &str) -> Result<Vec<FileOp>, String> {
    let text = text.replace("\r\n", "\n");
    let ops = if text.lines().any(|l| l.trim() == "*** Begin Patch") {
        parse_envelope(&text)?
    } else if text
        .lines()
        .any(|l| l.starts_with("@@ -") || l.starts_with("--- "))
        && text.lines().any(|l| l.starts_with("+++ "))
    {
        parse_unified(&text)?
    } else {
        return Err("the patch is neither a '*** Begin Patch' envelope nor a unified diff (--- a/file, +++ b/file, @@ -l,n +l,n @@). Send one of those formats.".into());
    };
    if ops.is_empty() {
        return Err("the patch contains no file operations".into());
    }
    Ok(ops)
}

fn parse_envelope(text: &str) -> Result<Vec<FileOp>, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == "*** Begin Patch")
        .ok_or("missing '*** Begin Patch'")?;
    let end = lines
        .iter()
        .rposition(|l| l.trim() == "*** End Patch")
        .ok_or("the patch has no '*** End Patch' line; end the envelope with it")?;
    if end <= start {
        return Err("'*** End Patch' comes before '*** Begin Patch'".into());
    }
    let body = &lines[start + 1..end];
    let mut ops = Vec::new();
    let mut i = 0;
    let header_err = |n: usize, l: &str| {
        format!(
            "patch line {}: expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>', got {:?}",
            start + n + 2,
            l
        )
    };
    while i < body.len() {
        let line = body[i];
        if line.trim().is_empty() {
            i += 1;
            continue;
        }
        if let Some(p) = line.strip_prefix("*** Add File:") {
            let path = nonempty_path(p, start + i + 2)?;
            i += 1;
            let mut content = Vec::new();
            while i < body.len() && !body[i].starts_with("*** ") {
                match body[i].strip_prefix('+') {
                    Some(c) => content.push(c.to_string()),
                    None if body[i].is_empty() && i + 1 == body.len() => {}
                    None => {
                        return Err(format!(
                            "patch line {}: every line of an added file starts with '+', got {:?}",
                            start + i + 2,
                            body[i]
                        ));
                    }
                }
                i += 1;
            }
            ops.push(FileOp::Add {
                path,
                lines: content,
                no_eol: false,
            });
        } else if let Some(p) = line.strip_prefix("*** Delete File:") {
            ops.push(FileOp::Delete {
                path: nonempty_path(p, start + i + 2)?,
            });
            i += 1;
        } else if let Some(p) = line.strip_prefix("*** Update File:") {
            let path = nonempty_path(p, start + i + 2)?;
            i += 1;
            let mut move_to = None;
            if i < body.len()
                && let Some(m) = body[i].strip_prefix("*** Move to:")
            {
                move_to = Some(nonempty_path(m, start + i + 2)?);
                i += 1;
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            let mut cur: Option<Hunk> = None;
            while i < body.len() {
                let l = body[i];
                if l.trim_end() == "*** End of File" {
                    let h = cur.get_or_insert_with(Hunk::default);
                    h.at_eof = true;
                    i += 1;
                    continue;
                }
                if l.starts_with("*** ") {
                    break;
                }
                if let Some(rest) = l.strip_prefix("@@") {
                    if let Some(h) = cur.take() {
                        hunks.push(h);
                    }
                    let anchor = rest.trim();
                    cur = Some(Hunk {
                        anchor: (!anchor.is_empty()).then(|| anchor.to_string()),
                        ..Hunk::default()
                    });
                    i += 1;
                    continue;
                }
                let h = cur.get_or_insert_with(Hunk::default);
                if h.at_eof {
                    return Err(format!(
                        "patch line {}: nothing may follow '*** End of File' in a hunk; start a new hunk with @@",
                        start + i + 2
                    ));
                }
                let parsed = match l.chars().next() {
                    Some(' ') => Line::Context(l[1..].to_string()),
                    Some('-') => Line::Remove(l[1..].to_string()),
                    Some('+') => Line::Add(l[1..].to_string()),
                    None => Line::Context(String::new()),
                    Some(_) => {
                        return Err(format!(
                            "patch line {}: a hunk line starts with ' ' (context), '-' (remove) or '+' (add), got {:?}",
                            start + i + 2,
                            l
                        ));
                    }
                };
                h.lines.push(parsed);
                i += 1;
            }
            if let Some(h) = cur.take() {
                hunks.push(h);
            }
            // A trailing blank line before the next header is separator noise.
            for h in &mut hunks {
                while matches!(h.lines.last(), Some(Line::Context(c)) if c.is_empty())
                    && h.lines.iter().any(|l| !matches!(l, Line::Context(_)))
                    && !h.at_eof
                {
                    h.lines.pop();
                }
            }
            hunks.retain(|h| !h.lines.is_empty());
            if hunks.is_empty() && move_to.is_none() {
                return Err(format!(
                    "'*** Update File: {path}' has no hunks; add @@ hunks with the change"
                ));
            }
            ops.push(FileOp::Update {
                path,
                move_to,
                hunks,
            });
        } else {
            return Err(header_err(i, line));
        }
    }
    Ok(ops)
}

fn nonempty_path(p: &str, line: usize) -> Result<String, String> {
    let p = p.trim();
    if p.is_empty() {
        Err(format!("patch line {line}: the file path is missing"))
    } else {
        Ok(p.to_string())
    }
}

/// `--- a/x\t2024-…` -> `x` (prefix stripped when `strip` is set).
fn diff_path(raw: &str, strip: bool) -> Option<String> {
    let p = raw.split('\t').next().unwrap_or("").trim();
    let p = p.trim_matches('"');
    if p == "/dev/null" || p.is_empty() {
        return None;
    }
    if strip && let Some(rest) = p.strip_prefix("a/").or_else(|| p.strip_prefix("b/")) {
        return Some(rest.to_string());
    }
    Some(p.to_string())
}

fn parse_unified(text: &str) -> Result<Vec<FileOp>, String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut ops = Vec::new();
    let mut i = 0;
    // Per file: (old path, new path, rename from/to, deleted, created, hunks)
    while i < lines.len() {
        let mut git = false;
        let mut rename_from: Option<String> = None;
        let mut rename_to: Option<String> = None;
        let mut deleted = false;
        let mut created = false;
        let mut old_path: Option<Option<String>> = None;
        let mut new_path: Option<Option<String>> = None;
        // Headers of one file.
        while i < lines.len() && !lines[i].starts_with("@@ -") {
            let l = lines[i];
            if l.starts_with("diff --git ") {
                if git || old_path.is_some() {
                    break;
                }
                git = true;
            } else if let Some(r) = l.strip_prefix("rename from ") {
                rename_from = Some(r.trim().to_string());
            } else if let Some(r) = l.strip_prefix("rename to ") {
                rename_to = Some(r.trim().to_string());
            } else if l.starts_with("deleted file mode") {
                deleted = true;
            } else if l.starts_with("new file mode") {
                created = true;
            } else if l.starts_with("Binary files ") || l.starts_with("GIT binary patch") {
                return Err(
                    "binary patches are not supported; change binary files with bash".into(),
                );
            } else if let Some(p) = l.strip_prefix("--- ") {
                old_path = Some(Some(p.to_string()));
            } else if let Some(p) = l.strip_prefix("+++ ") {
                new_path = Some(Some(p.to_string()));
                i += 1;
                break;
            }
            i += 1;
        }
        let file_started = git || old_path.is_some() || new_path.is_some();
        if !file_started {
            break;
        }
        let strip_old = old_path
            .as_ref()
            .and_then(|p| p.as_deref())
            .is_some_and(|p| p.starts_with("a/"));
        let strip_new = new_path
            .as_ref()
            .and_then(|p| p.as_deref())
            .is_some_and(|p| p.starts_with("b/"));
        let strip = git || (strip_old && strip_new) || (strip_old && new_path.is_none());
        let old = old_path.flatten().and_then(|p| diff_path(&p, strip));
        let new = new_path.flatten().and_then(|p| diff_path(&p, strip));
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@ -") {
            let (h, next) = parse_unified_hunk(&lines, i)?;
            hunks.push(h);
            i = next;
        }
        // Skip anything between files (index lines, trailing blank lines).
        while i < lines.len()
            && !lines[i].starts_with("diff --git ")
            && !lines[i].starts_with("--- ")
        {
            i += 1;
        }
        let source = rename_from.clone().or(old.clone());
        let target = rename_to.clone().or(new.clone());
        let op = match (source, target) {
            (None, Some(t)) => {
                let mut content = Vec::new();
                let mut no_eol = false;
                for h in &hunks {
                    for l in &h.lines {
                        match l {
                            Line::Add(s) => content.push(s.clone()),
                            _ => {
                                return Err(format!(
                                    "the diff creates {t} but its hunk has lines that are not additions"
                                ));
                            }
                        }
                    }
                    no_eol |= h.new_no_eol;
                }
                FileOp::Add {
                    path: t,
                    lines: content,
                    no_eol,
                }
            }
            (Some(s), None) => FileOp::Delete { path: s },
            (Some(s), Some(t)) if deleted => {
                let _ = t;
                FileOp::Delete { path: s }
            }
            (Some(s), Some(t)) => {
                if created && hunks.is_empty() {
                    FileOp::Add {
                        path: t,
                        lines: Vec::new(),
                        no_eol: false,
                    }
                } else {
                    if hunks.is_empty() && s == t {
                        return Err(format!(
                            "the diff for {s} has no @@ hunks; include the changed lines"
                        ));
                    }
                    FileOp::Update {
                        move_to: (s != t).then_some(t),
                        path: s,
                        hunks,
                    }
                }
            }
            (None, None) => {
                return Err("a file in the diff has no usable path (--- and +++ lines)".into());
            }
        };
        ops.push(op);
    }
    Ok(ops)
}

fn parse_unified_hunk(lines: &[&str], at: usize) -> Result<(Hunk, usize), String> {
    let head = lines[at];
    let bad = || {
        format!(
            "patch line {}: malformed hunk header {head:?}; expected '@@ -start,count +start,count @@'",
            at + 1
        )
    };
    let inner = head
        .strip_prefix("@@ -")
        .and_then(|r| {
            r.split_once(" @@")
                .map(|(a, _)| a)
                .or(r.strip_suffix(" @@"))
        })
        .ok_or_else(bad)?;
    let (old, new) = inner.split_once(" +").ok_or_else(bad)?;
    let range = |s: &str| -> Result<(usize, usize), String> {
        let (a, b) = s.split_once(',').unwrap_or((s, "1"));
        Ok((
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        ))
    };
    let (old_start, mut old_left) = range(old)?;
    let (_, mut new_left) = range(new)?;
    let mut h = Hunk {
        hint: Some(old_start.max(1)),
        ..Hunk::default()
    };
    let mut i = at + 1;
    let mut last_side = ' ';
    while i < lines.len() && (old_left > 0 || new_left > 0) {
        let l = lines[i];
        match l.chars().next() {
            Some(' ') | None => {
                if old_left == 0 || new_left == 0 {
                    break;
                }
                h.lines
                    .push(Line::Context(l.get(1..).unwrap_or("").to_string()));
                old_left -= 1;
                new_left -= 1;
                last_side = ' ';
            }
            Some('-') if old_left > 0 => {
                h.lines.push(Line::Remove(l[1..].to_string()));
                old_left -= 1;
                last_side = '-';
            }
            Some('+') if new_left > 0 => {
                h.lines.push(Line::Add(l[1..].to_string()));
                new_left -= 1;
                last_side = '+';
            }
            Some('\\') => match last_side {
                '-' => h.old_no_eol = true,
                '+' => h.new_no_eol = true,
                _ => {
                    h.old_no_eol = true;
                    h.new_no_eol = true;
                }
            },
            _ => {
                return Err(format!(
                    "patch line {}: the hunk starting at line {} has fewer lines than its header says ({} old and {} new lines missing)",
                    i + 1,
                    at + 1,
                    old_left,
                    new_left
                ));
            }
        }
        i += 1;
    }
    if old_left > 0 || new_left > 0 {
        return Err(format!(
            "the hunk at patch line {} ends early: {old_left} old and {new_left} new lines are missing",
            at + 1
        ));
    }
    if i < lines.len() && lines[i].starts_with('\\') {
        match last_side {
            '-' => h.old_no_eol = true,
            '+' => h.new_no_eol = true,
            _ => {
                h.old_no_eol = true;
                h.new_no_eol = true;
            }
        }
        i += 1;
        // A second marker for the other side (`-x`, `\`, `+y`, `\`).
        if i < lines.len() && lines[i].starts_with('\\') {
            h.new_no_eol = true;
            i += 1;
        }
    }
    // A marker right after a '-' line that is followed by '+' lines was handled in the loop.
    Ok((h, i))
}

/// A file as lines, each with its own line ending, so untouched lines keep their bytes.
struct Doc {
    bom: bool,
    lines: Vec<(Vec<u8>, &'static [u8])>,
    /// The ending new lines get: CRLF when the file uses CRLF throughout.
    eol: &'static [u8],
}

impl Doc {
    fn parse(bytes: &[u8]) -> Doc {
        let (bom, body) = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
            Some(rest) => (true, rest),
            None => (false, bytes),
        };
        let mut lines = Vec::new();
        let (mut lf, mut crlf) = (0usize, 0usize);
        for chunk in body.split_inclusive(|&b| b == b'\n') {
            if let Some(c) = chunk.strip_suffix(b"\r\n") {
                crlf += 1;
                lf += 1;
                lines.push((c.to_vec(), b"\r\n" as &[u8]));
            } else if let Some(c) = chunk.strip_suffix(b"\n") {
                lf += 1;
                lines.push((c.to_vec(), b"\n" as &[u8]));
            } else {
                lines.push((chunk.to_vec(), b"" as &[u8]));
            }
        }
        Doc {
            bom,
            lines,
            eol: if lf > 0 && lf == crlf { b"\r\n" } else { b"\n" },
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.bom {
            out.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for (c, e) in &self.lines {
            out.extend_from_slice(c);
            out.extend_from_slice(e);
        }
        out
    }

    fn ends_without_newline(&self) -> bool {
        self.lines.last().is_some_and(|(_, e)| e.is_empty())
    }
}

fn trim_end_ws(b: &[u8]) -> &[u8] {
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b' ' | b'\t' | b'\r') {
        end -= 1;
    }
    &b[..end]
}

/// Where `old` matches in `doc` at or after `from`: exact first, then ignoring trailing
/// whitespace. Returns the candidates and whether the match was lenient.
fn find_block(doc: &Doc, old: &[&[u8]], from: usize, at_eof: bool) -> (Vec<usize>, bool) {
    let n = doc.lines.len();
    for lenient in [false, true] {
        let mut hits = Vec::new();
        if old.len() <= n {
            for s in from..=n - old.len() {
                if at_eof && s + old.len() != n {
                    continue;
                }
                let ok = old.iter().enumerate().all(|(k, want)| {
                    let have = doc.lines[s + k].0.as_slice();
                    if lenient {
                        trim_end_ws(have) == trim_end_ws(want)
                    } else {
                        have == *want
                    }
                });
                if ok {
                    hits.push(s);
                }
            }
        }
        if !hits.is_empty() {
            return (hits, lenient);
        }
    }
    (Vec::new(), false)
}

/// Applies the hunks of one file. Returns the new bytes and notes on lenient matches.
fn apply_hunks(
    bytes: &[u8],
    hunks: &[Hunk],
    shown: &str,
) -> Result<(Vec<u8>, Vec<String>), String> {
    let mut doc = Doc::parse(bytes);
    let mut notes = Vec::new();
    let mut cursor = 0usize;
    let total = hunks.len();
    for (k, h) in hunks.iter().enumerate() {
        let which = if total > 1 {
            format!("{shown}: hunk {} of {total}", k + 1)
        } else {
            format!("{shown}: the hunk")
        };
        if let Some(anchor) = &h.anchor {
            let a = anchor.as_bytes();
            let found = (cursor..doc.lines.len())
                .find(|&i| doc.lines[i].0 == a)
                .or_else(|| {
                    (cursor..doc.lines.len()).find(|&i| {
                        trim_end_ws(&doc.lines[i].0).trim_ascii_start() == a.trim_ascii()
                    })
                })
                .or_else(|| (0..cursor).find(|&i| doc.lines[i].0 == a));
            match found {
                Some(i) => cursor = i + 1,
                None => {
                    return Err(format!(
                        "{which}: the @@ anchor line {anchor:?} was not found. Read the file again and use a line that exists."
                    ));
                }
            }
        }
        let old: Vec<&[u8]> = h
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(s) | Line::Remove(s) => Some(s.as_bytes()),
                Line::Add(_) => None,
            })
            .collect();
        let start = if old.is_empty() {
            // A pure insertion: at the hinted line (unified), else at the end of the file.
            match h.hint {
                Some(line) => line.min(doc.lines.len()),
                None => doc.lines.len(),
            }
        } else {
            let (mut hits, mut lenient) = find_block(&doc, &old, cursor, h.at_eof);
            if hits.is_empty() && cursor > 0 {
                (hits, lenient) = find_block(&doc, &old, 0, h.at_eof);
            }
            if hits.is_empty() {
                return Err(format!(
                    "{which} does not match the file: its context and removed lines were not found{}. Nothing was changed. Read the file again and rebuild the hunk from its current content.{}",
                    if h.at_eof {
                        " at the end of the file"
                    } else {
                        ""
                    },
                    near_line(&doc, old[0])
                ));
            }
            let pick = match h.hint {
                Some(line) => *hits
                    .iter()
                    .min_by_key(|&&s| (s + 1).abs_diff(line))
                    .expect("hits is not empty"),
                None => {
                    let after: Vec<usize> = hits.iter().copied().filter(|&s| s >= cursor).collect();
                    if after.len() > 1 && h.anchor.is_none() && h.hint.is_none() && k == 0 {
                        // Ambiguous without a position: refuse rather than guess.
                        let shown_lines: Vec<String> =
                            after.iter().take(5).map(|s| (s + 1).to_string()).collect();
                        return Err(format!(
                            "{which} matches {} places (lines {}); add more context lines or an @@ line naming the enclosing function or class",
                            after.len(),
                            shown_lines.join(", ")
                        ));
                    }
                    after.first().copied().unwrap_or(hits[0])
                }
            };
            if lenient {
                notes.push(format!(
                    "{which} matched at line {} only when trailing whitespace is ignored",
                    pick + 1
                ));
            }
            pick
        };
        let had_final_newline = !doc.ends_without_newline();
        let reaches_end = start + old.len() == doc.lines.len();
        let mut replaced: Vec<(Vec<u8>, &'static [u8])> = Vec::new();
        let mut orig = start;
        for l in &h.lines {
            match l {
                Line::Context(_) => {
                    replaced.push(doc.lines[orig].clone());
                    orig += 1;
                }
                Line::Remove(_) => orig += 1,
                Line::Add(s) => replaced.push((s.as_bytes().to_vec(), doc.eol)),
            }
        }
        let new_len = replaced.len();
        doc.lines.splice(start..start + old.len(), replaced);
        // Every line but the last ends with a newline.
        let n = doc.lines.len();
        for i in 0..n.saturating_sub(1) {
            if doc.lines[i].1.is_empty() {
                doc.lines[i].1 = doc.eol;
            }
        }
        if reaches_end && n > 0 {
            let want_final = if h.new_no_eol {
                false
            } else if h.old_no_eol {
                true
            } else {
                had_final_newline
            };
            doc.lines[n - 1].1 = if want_final { doc.eol } else { b"" };
            if want_final && doc.lines[n - 1].1.is_empty() {
                doc.lines[n - 1].1 = doc.eol;
            }
        }
        cursor = start + new_len;
    }
    Ok((doc.to_bytes(), notes))
}

fn near_line(doc: &Doc, first: &[u8]) -> String {
    let want: Vec<u8> = first.trim_ascii().to_vec();
    if want.is_empty() {
        return String::new();
    }
    let hits: Vec<String> = doc
        .lines
        .iter()
        .enumerate()
        .filter(|(_, (c, _))| {
            let c = c.trim_ascii();
            !c.is_empty() && (c == want.as_slice() || c.windows(want.len()).any(|w| w == want))
        })
        .take(3)
        .map(|(i, (c, _))| format!("  line {}: {}", i + 1, String::from_utf8_lossy(c)))
        .collect();
    if hits.is_empty() {
        String::new()
    } else {
        format!(
            "\nLines resembling the hunk's first line:\n{}",
            hits.join("\n")
        )
    }
}

/// The final content of every touched path (`None`: deleted), computed in memory.
type Plan = BTreeMap<PathBuf, Option<Vec<u8>>>;

/// One file of [`patch_preview`]: its path, bytes before and bytes after.
pub type PreviewedFile = (PathBuf, Option<Vec<u8>>, Option<Vec<u8>>);

/// What a patch would do, computed without writing: per file (sorted by path) its bytes
/// before (`None`: absent) and after (`None`: deleted, or the source of a move). The scope
/// guard judges a patch from this before it runs.
pub fn patch_preview(ctx: &ToolContext, text: &str) -> Result<Vec<PreviewedFile>, String> {
    let planned = plan_patch(ctx, text)?;
    Ok(planned
        .plan
        .into_iter()
        .map(|(p, after)| {
            let before = planned.originals.get(&p).cloned().flatten();
            (p, before, after)
        })
        .collect())
}

struct Planned {
    plan: Plan,
    originals: BTreeMap<PathBuf, Option<Vec<u8>>>,
    summary: Vec<String>,
    notes: Vec<String>,
}

fn apply_patch_text(ctx: &ToolContext, text: &str) -> Result<ToolOutput, String> {
    let Planned {
        plan,
        originals,
        summary,
        notes,
    } = plan_patch(ctx, text)?;
    commit_plan(&plan, &originals)?;
    for (p, v) in &plan {
        match v {
            Some(b) => ctx.remember(p, b, true),
            None => ctx.forget(p),
        }
    }
    let mut out = format!("Applied the patch:\n{}", summary.join("\n"));
    if !notes.is_empty() {
        out.push_str("\nLenient matches (check these places):\n");
        out.push_str(&notes.join("\n"));
    }
    Ok(ToolOutput::ok(out))
}

/// The patch planned in memory: every file's new bytes, or the first error.
fn plan_patch(ctx: &ToolContext, text: &str) -> Result<Planned, String> {
    let ops = parse(text)?;
    let mut plan: Plan = BTreeMap::new();
    let mut originals: BTreeMap<PathBuf, Option<Vec<u8>>> = BTreeMap::new();
    let mut summary = Vec::new();
    let mut notes = Vec::new();
    // Each path is resolved once and read from disk once (its original); later reads of it
    // come from the plan or the originals — a batch may add thousands of files.
    let mut resolved: BTreeMap<&str, PathBuf> = BTreeMap::new();
    let on_disk = |p: &Path| -> Result<Option<Vec<u8>>, String> {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => Err(format!("{} is a directory", p.display())),
            Ok(_) => read_file(p).map(Some),
            Err(_) => Ok(None),
        }
    };
    let current = |plan: &Plan,
                   originals: &BTreeMap<PathBuf, Option<Vec<u8>>>,
                   p: &Path|
     -> Result<Option<Vec<u8>>, String> {
        match plan.get(p).or_else(|| originals.get(p)) {
            Some(v) => Ok(v.clone()),
            None => on_disk(p),
        }
    };
    for op in &ops {
        for p in op.paths() {
            if !resolved.contains_key(p) {
                resolved.insert(p, ctx.resolve_for_write(p)?);
            }
            let r = resolved[p].clone();
            if let std::collections::btree_map::Entry::Vacant(slot) = originals.entry(r) {
                let v = match plan.get(slot.key()) {
                    Some(v) => v.clone(),
                    None => on_disk(slot.key())?,
                };
                slot.insert(v);
            }
        }
        let resolve = |p: &str| -> Result<PathBuf, String> {
            match resolved.get(p) {
                Some(r) => Ok(r.clone()),
                None => ctx.resolve_for_write(p),
            }
        };
        let current = |plan: &Plan, p: &Path| current(plan, &originals, p);
        match op {
            FileOp::Add {
                path,
                lines,
                no_eol,
            } => {
                let p = resolve(path)?;
                if current(&plan, &p)?.is_some_and(|b| !b.is_empty()) {
                    return Err(format!(
                        "cannot add {}: it already exists. Use '*** Update File:' to change it. Nothing was changed.",
                        p.display()
                    ));
                }
                let mut body = lines.join("\n").into_bytes();
                if !lines.is_empty() && !no_eol {
                    body.push(b'\n');
                }
                summary.push(format!("A {}", p.display()));
                plan.insert(p, Some(body));
            }
            FileOp::Delete { path } => {
                let p = resolve(path)?;
                if current(&plan, &p)?.is_none() {
                    return Err(format!(
                        "cannot delete {}: it does not exist. Nothing was changed.",
                        p.display()
                    ));
                }
                summary.push(format!("D {}", p.display()));
                plan.insert(p, None);
            }
            FileOp::Update {
                path,
                move_to,
                hunks,
            } => {
                let p = resolve(path)?;
                let Some(bytes) = current(&plan, &p)? else {
                    return Err(format!(
                        "cannot update {}: it does not exist.{} Nothing was changed.",
                        p.display(),
                        if p.exists() {
                            ""
                        } else {
                            " Use '*** Add File:' to create it."
                        }
                    ));
                };
                if bytes.iter().take(8192).any(|&b| b == 0) {
                    return Err(format!(
                        "{} is a binary file; patches apply to text files. Nothing was changed.",
                        p.display()
                    ));
                }
                let shown = path.to_string();
                let (next, mut n) = apply_hunks(&bytes, hunks, &shown).map_err(|e| {
                    format!("{e}\n(The patch was not applied: no file was changed.)")
                })?;
                notes.append(&mut n);
                match move_to {
                    Some(dest) => {
                        let d = resolve(dest)?;
                        if d != p && current(&plan, &d)?.is_some() {
                            return Err(format!(
                                "cannot move {} to {}: the destination exists. Nothing was changed.",
                                p.display(),
                                d.display()
                            ));
                        }
                        summary.push(format!("R {} -> {}", p.display(), d.display()));
                        plan.insert(p, None);
                        plan.insert(d, Some(next));
                    }
                    None => {
                        summary.push(format!("M {}", p.display()));
                        plan.insert(p, Some(next));
                    }
                }
            }
        }
    }
    Ok(Planned {
        plan,
        originals,
        summary,
        notes,
    })
}

/// Writes every planned file or none: temp files first, then renames and deletions; on a
/// failure the files already replaced get their original bytes back.
fn commit_plan(plan: &Plan, originals: &BTreeMap<PathBuf, Option<Vec<u8>>>) -> Result<(), String> {
    let mut temps: Vec<crate::fs::Staged> = Vec::new();
    let cleanup = |temps: &[crate::fs::Staged]| {
        for t in temps {
            t.discard();
        }
    };
    let mut dirs = crate::fs::StageDirs::default();
    for (p, v) in plan {
        if let Some(bytes) = v {
            match crate::fs::stage_temp_in(&mut dirs, p, bytes) {
                Ok(t) => temps.push(t),
                Err(e) => {
                    cleanup(&temps);
                    return Err(format!("{e}; the patch was not applied, no file changed"));
                }
            }
        }
    }
    let mut done: Vec<PathBuf> = Vec::new();
    let mut failure = None;
    for t in &temps {
        if let Err(e) = t.commit() {
            failure = Some(e);
            break;
        }
        done.push(t.path.clone());
    }
    if failure.is_none() {
        for (p, v) in plan {
            if v.is_none()
                && p.exists()
                && let Err(e) = crate::fs::remove_file(p)
            {
                failure = Some(e);
                break;
            }
        }
    }
    if let Some(f) = failure {
        cleanup(&temps);
        for p in plan.keys() {
            match originals.get(p).cloned().flatten() {
                Some(b) => {
                    let _ = crate::fs::write_atomic(p, &b);
                }
                None => {
                    if done.contains(p) {
                        let _ = crate::fs::remove_file(p);
                    }
                }
            }
        }
        return Err(format!(
            "{f}; the files already written were restored, the patch was not applied"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), dir.to_path_buf(), dir.join(".spill"))
    }

    fn run(dir: &Path, patch: &str) -> ToolOutput {
        ApplyPatch.run(
            &json!({ "patch": patch }),
            &ctx(dir),
            &CancellationToken::new(),
        )
    }

    #[test]
    fn envelope_add_update_delete_move() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(d.path().join("gone.txt"), "x\n").unwrap();
        std::fs::write(d.path().join("m.txt"), "keep\nold\n").unwrap();
        let out = run(
            d.path(),
            "*** Begin Patch\n*** Add File: new/b.txt\n+hello\n+world\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n three\n*** Delete File: gone.txt\n*** Update File: m.txt\n*** Move to: moved.txt\n@@\n keep\n-old\n+new\n*** End Patch",
        );
        assert!(out.ok, "{}", out.text);
        assert_eq!(
            std::fs::read_to_string(d.path().join("new/b.txt")).unwrap(),
            "hello\nworld\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.txt")).unwrap(),
            "one\nTWO\nthree\n"
        );
        assert!(!d.path().join("gone.txt").exists());
        assert!(!d.path().join("m.txt").exists());
        assert_eq!(
            std::fs::read_to_string(d.path().join("moved.txt")).unwrap(),
            "keep\nnew\n"
        );
    }

    #[test]
    fn all_or_nothing_across_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "a\n").unwrap();
        std::fs::write(d.path().join("b.txt"), "b\n").unwrap();
        let out = run(
            d.path(),
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-nope\n+B\n*** End Patch",
        );
        assert!(!out.ok);
        assert!(out.text.contains("b.txt"), "{}", out.text);
        assert_eq!(std::fs::read(d.path().join("a.txt")).unwrap(), b"a\n");
    }

    #[test]
    fn crlf_bom_and_trailing_whitespace_leniency() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("w.txt");
        std::fs::write(&p, b"\xEF\xBB\xBFfirst  \r\nsecond\r\nthird\xE9\r\nlast").unwrap();
        let out = run(
            d.path(),
            "*** Begin Patch\n*** Update File: w.txt\n first\n-second\n+SECOND\n+extra\n*** End Patch",
        );
        assert!(out.ok, "{}", out.text);
        assert!(out.text.contains("trailing whitespace"), "{}", out.text);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"\xEF\xBB\xBFfirst  \r\nSECOND\r\nextra\r\nthird\xE9\r\nlast"
        );
    }

    #[test]
    fn unified_diff_with_git_headers() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("x.py"), "a\nb\nc\nd\n").unwrap();
        let out = run(
            d.path(),
            "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -2,2 +2,2 @@\n b\n-c\n+C\ndiff --git a/y.txt b/y.txt\nnew file mode 100644\n--- /dev/null\n+++ b/y.txt\n@@ -0,0 +1 @@\n+y\n\\ No newline at end of file\n",
        );
        assert!(out.ok, "{}", out.text);
        assert_eq!(
            std::fs::read_to_string(d.path().join("x.py")).unwrap(),
            "a\nb\nC\nd\n"
        );
        assert_eq!(std::fs::read(d.path().join("y.txt")).unwrap(), b"y");
    }

    #[test]
    fn no_final_newline_is_kept_and_added_when_asked() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("n.txt");
        std::fs::write(&p, "a\nb").unwrap();
        let out = run(
            d.path(),
            "*** Begin Patch\n*** Update File: n.txt\n a\n-b\n+B\n*** End Patch",
        );
        assert!(out.ok, "{}", out.text);
        assert_eq!(std::fs::read(&p).unwrap(), b"a\nB");
        let out = run(
            d.path(),
            "--- a/n.txt\n+++ b/n.txt\n@@ -2 +2 @@\n-B\n\\ No newline at end of file\n+B\n",
        );
        assert!(out.ok, "{}", out.text);
        assert_eq!(std::fs::read(&p).unwrap(), b"a\nB\n");
    }

    #[test]
    fn malformed_patches_fail_cleanly() {
        let d = tempfile::tempdir().unwrap();
        for bad in [
            "",
            "hello",
            "*** Begin Patch\n*** Frobnicate: x\n*** End Patch",
            "*** Begin Patch\n*** Update File: missing.txt\n-a\n+b\n*** End Patch",
            "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
        ] {
            let out = run(d.path(), bad);
            assert!(!out.ok, "{bad:?} -> {}", out.text);
        }
    }

    proptest! {
        #[test]
        fn untouched_lines_keep_their_bytes(
            before in proptest::collection::vec("[a-z \t]{0,8}(\r\n|\n)", 0..10),
            after in proptest::collection::vec("[a-z \t]{0,8}(\r\n|\n)", 0..10),
            new in "[a-z]{1,8}",
        ) {
            let mut file = before.concat().into_bytes();
            file.extend_from_slice(b"@@MARK@@\n");
            let tail = after.concat().into_bytes();
            file.extend_from_slice(&tail);
            let hunk = Hunk { lines: vec![Line::Remove("@@MARK@@".into()), Line::Add(new.clone())], ..Hunk::default() };
            let (out, _) = apply_hunks(&file, &[hunk], "f").unwrap();
            let head = before.concat().into_bytes();
            prop_assert_eq!(&out[..head.len()], &head[..]);
            prop_assert_eq!(&out[out.len() - tail.len()..], &tail[..]);
        }
    }
}
