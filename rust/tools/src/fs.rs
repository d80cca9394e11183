//! File tools: read, write, edit, multi-edit. Read-before-write is enforced with the content
//! hash seen at read time, so an external change since the read is detected (not only mtime).

use crate::args::{opt_bool, opt_int, opt_string, string};
use crate::edit_engine::{EditSpec, apply_edits};
use crate::{Tool, ToolContext, ToolOutput, content_hash};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

const DEFAULT_LIMIT: usize = 2000;
const LINE_CAP: usize = 2000;
/// Largest slice of a file one read returns, in bytes; past it the read is paginated. It stays
/// under the result cap, so a page is never cut in the middle and its continuation hint is exact.
const READ_BYTES_CAP: usize = crate::RESULT_CAP - 1000;

pub struct Read;
pub struct Write;
pub struct Edit;
pub struct MultiEdit;

fn path_schema() -> Value {
    json!({"type": "string", "description": "Absolute path, or relative to the working directory"})
}

impl Tool for Read {
    fn name(&self) -> &'static str {
        "read"
    }
    fn description(&self) -> &'static str {
        "Read a file. Text comes with line numbers (N<TAB>line): the first 2000 lines by default; use offset (1-based line) and limit for more. Images (png, jpeg, gif, webp) are shown to you as images; PDFs are read by page range (pages: \"1-5\", at most 20 pages a call); notebooks (.ipynb) come with every cell and its outputs. Read a file before editing or overwriting it."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "offset": {"type": "integer", "description": "1-based line to start at"},
                "limit": {"type": "integer", "description": "Number of lines to read"},
                "pages": {"type": "string", "description": "PDF page range, e.g. \"1-5\" (at most 20 pages)"}
            },
            "required": ["file_path"]
        })
    }
    fn run(&self, args: &Value, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        read(args, ctx).unwrap_or_else(ToolOutput::err)
    }
}

fn read(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let raw = string(args, "file_path", &["path", "filePath"])?;
    let offset = opt_int(args, "offset")?;
    let limit = opt_int(args, "limit")?;
    let pages = opt_pages(args)?;
    if let Some(o) = offset
        && o < 1
    {
        return Err(format!(
            "offset must be 1 or more (a 1-based line number), got {o}"
        ));
    }
    if let Some(l) = limit
        && l < 1
    {
        return Err(format!("limit must be 1 or more, got {l}"));
    }
    let path = ctx.resolve(&raw);
    let bytes = read_file(&path)?;
    let ext = extension(&path);
    if pages.is_some() && ext != "pdf" {
        return Err(format!(
            "pages applies to PDF files only; {} is not a PDF. Use offset and limit for text files.",
            path.display()
        ));
    }
    if crate::media::is_image(&path, &bytes) {
        let out = crate::media::read_image(&path, &bytes)?;
        ctx.remember(&path, &bytes, true);
        return Ok(out);
    }
    if ext == "pdf" || bytes.starts_with(b"%PDF-") {
        let out = crate::media::read_pdf(&path, &bytes, pages.as_deref())?;
        ctx.remember(&path, &bytes, true);
        return Ok(out);
    }
    if ext == "ipynb" && offset.is_none() && limit.is_none() {
        let shown = path.display().to_string();
        let text = crate::notebook::render_notebook(&bytes, &shown)?;
        ctx.remember(&path, &bytes, true);
        return Ok(ToolOutput::ok(text));
    }
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err(format!(
            "{} is a binary file ({} bytes); its bytes are not text. Inspect it with bash (file, xxd | head) if needed.",
            path.display(),
            bytes.len()
        ));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    if total == 0 {
        ctx.remember(&path, &bytes, true);
        if let Some(o) = offset
            && o > 1
        {
            return Err(format!(
                "offset {o} is past the end: {} is empty (0 lines)",
                path.display()
            ));
        }
        return Ok(ToolOutput::ok(format!(
            "(file {} is empty: 0 lines)",
            path.display()
        )));
    }
    let start = offset.unwrap_or(1) as usize;
    if start > total {
        return Err(format!(
            "offset {start} is past the end: {} has {total} line{}",
            path.display(),
            if total == 1 { "" } else { "s" }
        ));
    }
    let want = limit.map(|l| l as usize).unwrap_or(DEFAULT_LIMIT);
    let mut out = String::new();
    let mut end = start - 1;
    for (i, line) in lines.iter().enumerate().skip(start - 1).take(want) {
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        let shown: String = if line.chars().count() > LINE_CAP {
            let cut: String = line.chars().take(LINE_CAP).collect();
            format!("{cut}… [line cut at {LINE_CAP} characters]")
        } else {
            line.to_string()
        };
        let row = format!("{}\t{shown}\n", i + 1);
        if out.len() + row.len() > READ_BYTES_CAP && end >= start {
            break;
        }
        out.push_str(&row);
        end = i + 1;
    }
    let full = start == 1 && end == total;
    ctx.remember(&path, &bytes, full);
    if end < total {
        out.push_str(&format!(
            "\n(lines {start}–{end} of {total}; continue with offset={})\n",
            end + 1
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// Reads a file with errors that say what to do.
pub fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(format!(
                "{} is a directory, not a file; list it with glob or bash ls",
                path.display()
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "{} does not exist.{}",
                path.display(),
                suggest_near(path)
            ));
        }
        Err(e) => return Err(format!("cannot access {}: {e}", path.display())),
    }
    std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            format!("permission denied reading {}", path.display())
        }
        _ => format!("cannot read {}: {e}", path.display()),
    })
}

fn suggest_near(path: &Path) -> String {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return String::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return format!(" (the folder {} does not exist either)", dir.display());
    };
    let lower = name.to_lowercase();
    let stem = lower.split('.').next().unwrap_or(&lower).to_string();
    let mut near: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| {
            let l = n.to_lowercase();
            (!stem.is_empty() && l.contains(&stem))
                || lower.contains(l.split('.').next().unwrap_or("\u{0}"))
        })
        .take(5)
        .collect();
    near.sort();
    if near.is_empty() {
        String::new()
    } else {
        format!(" Did you mean: {}?", near.join(", "))
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

/// `pages` as a string ("1-5", "3", "2,4-6") or a number.
fn opt_pages(args: &Value) -> Result<Option<String>, String> {
    match args.get("pages") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err("pages must be a page range such as \"1-5\" or \"3\"".into()),
    }
}

/// Refuses to change an existing file the session has not read, or that changed since.
pub(crate) fn check_fresh(ctx: &ToolContext, path: &Path, current: &[u8]) -> Result<(), String> {
    match ctx.knowledge(path) {
        None => Err(format!(
            "{} exists and has not been read in this session; read it first, then retry",
            path.display()
        )),
        Some(k) if k.hash != content_hash(current) => Err(format!(
            "{} changed on disk since it was last read (by the user or another process); read it again before changing it",
            path.display()
        )),
        Some(_) => Ok(()),
    }
}

/// Writes `bytes` to a new temporary file beside `path` (same folder, so a rename is atomic),
/// with `path`'s permissions when it exists. Returns the temporary file's path.
pub fn stage_temp(path: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let perms = std::fs::metadata(path).ok().map(|m| m.permissions());
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.yuyao-{}.tmp",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    ));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        // Replacing existing content: make the new bytes durable before the rename, so a
        // crash cannot leave an empty file where the old one was. New files skip the cost.
        if perms.is_some() {
            f.sync_all()?;
        }
        if let Some(p) = perms {
            std::fs::set_permissions(&tmp, p)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(format!(
                "cannot write {}: {e} (the file is unchanged)",
                path.display()
            ))
        }
    }
}

/// Writes atomically (temp file + rename in the same folder), keeping the permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = stage_temp(path, bytes)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!(
            "cannot write {}: {e} (the file is unchanged)",
            path.display()
        )
    })
}

impl Tool for Write {
    fn name(&self) -> &'static str {
        "write"
    }
    fn description(&self) -> &'static str {
        "Create a file or replace a file's whole content. An existing file must have been read first in this session. Prefer edit for changes to existing files."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["file_path", "content"]
        })
    }
    fn run(&self, args: &Value, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        write(args, ctx).unwrap_or_else(ToolOutput::err)
    }
}

fn write(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let raw = string(args, "file_path", &["path", "filePath"])?;
    let content = string(args, "content", &["contents", "text"])?;
    let path = ctx.resolve(&raw);
    if path.is_dir() {
        return Err(format!(
            "{} is a directory; give a file path",
            path.display()
        ));
    }
    let existed = path.exists();
    if existed {
        let current = read_file(&path)?;
        check_fresh(ctx, &path, &current)?;
    }
    write_atomic(&path, content.as_bytes())?;
    ctx.remember(&path, content.as_bytes(), true);
    let lines = content.lines().count();
    Ok(ToolOutput::ok(format!(
        "{} {} ({lines} line{}, {} bytes)",
        if existed { "Overwrote" } else { "Created" },
        path.display(),
        if lines == 1 { "" } else { "s" },
        content.len()
    )))
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }
    fn description(&self) -> &'static str {
        "Replace an exact string in a file. old_string must match exactly (whitespace included) and uniquely, unless replace_all is true. Read the file first. An empty old_string creates a missing or empty file."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean", "default": false}
            },
            "required": ["file_path", "old_string", "new_string"]
        })
    }
    fn run(&self, args: &Value, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        (|| {
            let path = string(args, "file_path", &["path", "filePath"])?;
            let spec = edit_spec(args)?;
            edit_file(ctx, &path, vec![spec])
        })()
        .unwrap_or_else(ToolOutput::err)
    }
}

fn edit_spec(v: &Value) -> Result<EditSpec, String> {
    Ok(EditSpec {
        old: string(v, "old_string", &["old_str", "oldString"])?,
        new: string(v, "new_string", &["new_str", "newString"])?,
        replace_all: opt_bool(v, "replace_all")?.unwrap_or(false),
    })
}

impl Tool for MultiEdit {
    fn name(&self) -> &'static str {
        "multi-edit"
    }
    fn description(&self) -> &'static str {
        "Several exact replacements in one file, applied in order as one atomic operation: if any edit fails, nothing is written."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": path_schema(),
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_string": {"type": "string"},
                            "new_string": {"type": "string"},
                            "replace_all": {"type": "boolean", "default": false}
                        },
                        "required": ["old_string", "new_string"]
                    }
                }
            },
            "required": ["file_path", "edits"]
        })
    }
    fn run(&self, args: &Value, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        (|| {
            let path = string(args, "file_path", &["path", "filePath"])?;
            let edits =
                match args.get("edits") {
                    Some(Value::Array(a)) if !a.is_empty() => a,
                    Some(Value::Array(_)) => {
                        return Err("edits is empty; give at least one edit".to_string());
                    }
                    _ => return Err(
                        "missing required argument 'edits' (an array of {old_string, new_string})"
                            .to_string(),
                    ),
                };
            let specs = edits
                .iter()
                .enumerate()
                .map(|(i, e)| edit_spec(e).map_err(|m| format!("edit {}: {m}", i + 1)))
                .collect::<Result<Vec<_>, _>>()?;
            edit_file(ctx, &path, specs)
        })()
        .unwrap_or_else(ToolOutput::err)
    }
}

/// Validates every edit against the current content, then writes once.
fn edit_file(ctx: &ToolContext, raw: &str, specs: Vec<EditSpec>) -> Result<ToolOutput, String> {
    let path = ctx.resolve(raw);
    let exists = path.exists();
    // An empty old_string creates a missing or empty file.
    if specs.len() == 1 && specs[0].old.is_empty() {
        if specs[0].new.is_empty() {
            return Err(
                "old_string and new_string are both empty; nothing would change".to_string(),
            );
        }
        let current = if exists {
            read_file(&path)?
        } else {
            Vec::new()
        };
        if !current.is_empty() {
            return Err(format!(
                "{} is not empty; an empty old_string only creates a missing or empty file. Give the exact text to replace.",
                path.display()
            ));
        }
        write_atomic(&path, specs[0].new.as_bytes())?;
        ctx.remember(&path, specs[0].new.as_bytes(), true);
        return Ok(ToolOutput::ok(format!("Created {}", path.display())));
    }
    if !exists {
        return Err(format!(
            "{} does not exist; create it with write (or edit with an empty old_string)",
            path.display()
        ));
    }
    let current = read_file(&path)?;
    check_fresh(ctx, &path, &current)?;
    let (next, counts) = apply_edits(&current, &specs)?;
    write_atomic(&path, &next)?;
    ctx.remember(&path, &next, true);
    let total: usize = counts.iter().sum();
    Ok(ToolOutput::ok(format!(
        "Edited {}: {} edit{} applied, {total} replacement{}",
        path.display(),
        counts.len(),
        if counts.len() == 1 { "" } else { "s" },
        if total == 1 { "" } else { "s" }
    )))
}

/// The optional string argument helper is used by the registry for intent lines.
pub fn describe_path(args: &Value) -> Option<String> {
    opt_string(args, "file_path", &["path", "filePath", "notebook_path"])
        .ok()
        .flatten()
}
