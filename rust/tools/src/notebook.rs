//! Jupyter notebooks: reading every cell with its outputs, and notebook-edit (replace, insert,
//! delete one cell). The edit works on the file's bytes: only the target cell's text is
//! rewritten (in the file's own indentation); every other cell, the metadata, the key order
//! and the trailing newline stay byte-for-byte identical.

use crate::args::{NotebookEditParams, ToolArgs};
use crate::fs::{check_fresh, read_file_stamped, write_known};
use crate::{Tool, ToolContext, ToolOutput, strip_ansi};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub struct NotebookEdit;

// ---------------------------------------------------------------------------------------------
// A tiny JSON span scanner: where each value sits in the bytes.

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

fn string_end(b: &[u8], mut i: usize) -> Result<usize, String> {
    // b[i] == '"'
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Ok(i + 1),
            _ => i += 1,
        }
    }
    Err("unterminated string".into())
}

/// The end (exclusive) of the JSON value starting at `i`.
fn value_end(b: &[u8], i: usize) -> Result<usize, String> {
    match b.get(i) {
        Some(b'"') => string_end(b, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0i32;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            Err("unbalanced brackets".into())
        }
        Some(_) => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            {
                j += 1;
            }
            Ok(j)
        }
        None => Err("unexpected end of file".into()),
    }
}

/// One member of an object: key text and the value's span.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_start: usize,
    value: (usize, usize),
}

/// Members of the object spanning `start..`; returns them and the index of the closing '}'.
fn object_members(b: &[u8], start: usize) -> Result<(Vec<Member>, usize), String> {
    if b.get(start) != Some(&b'{') {
        return Err("expected an object".into());
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, start + 1);
    if b.get(i) == Some(&b'}') {
        return Ok((out, i));
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return Err("expected a key".into());
        }
        let kend = string_end(b, i)?;
        let key: String = serde_json::from_slice(&b[i..kend]).map_err(|e| e.to_string())?;
        let mut j = skip_ws(b, kend);
        if b.get(j) != Some(&b':') {
            return Err("expected ':'".into());
        }
        j = skip_ws(b, j + 1);
        let vend = value_end(b, j)?;
        out.push(Member {
            key,
            key_start: i,
            value: (j, vend),
        });
        i = skip_ws(b, vend);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Ok((out, i)),
            _ => return Err("expected ',' or '}'".into()),
        }
    }
}

/// Element spans of the array starting at `start`, and the index of its ']'.
fn array_elements(b: &[u8], start: usize) -> Result<(Vec<(usize, usize)>, usize), String> {
    if b.get(start) != Some(&b'[') {
        return Err("expected an array".into());
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, start + 1);
    if b.get(i) == Some(&b']') {
        return Ok((out, i));
    }
    loop {
        let end = value_end(b, i)?;
        out.push((i, end));
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b']') => return Ok((out, i)),
            _ => return Err("expected ',' or ']'".into()),
        }
    }
}

/// The text after the last newline of `ws` (the indentation), or None for one-line JSON.
fn indent_of(ws: &[u8]) -> Option<String> {
    let pos = ws.iter().rposition(|&c| c == b'\n')?;
    Some(String::from_utf8_lossy(&ws[pos + 1..]).into_owned())
}

/// Serializes `v` pretty with `unit` indentation, continuation lines prefixed by `base`.
fn render(v: &Value, unit: Option<&str>, base: &str) -> String {
    let Some(unit) = unit else {
        return serde_json::to_string(v).unwrap_or_default();
    };
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    use serde::Serialize;
    let _ = v.serialize(&mut ser);
    let text = String::from_utf8(buf).unwrap_or_default();
    text.replace('\n', &format!("\n{base}"))
}

// ---------------------------------------------------------------------------------------------
// Reading

fn source_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Every cell with its source and outputs, for `read`.
pub fn render_notebook(bytes: &[u8], shown: &str) -> Result<String, String> {
    let nb: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!("{shown} is not a valid notebook (invalid JSON: {e}); read it as text with offset/limit or fix the JSON")
    })?;
    let cells = nb.get("cells").and_then(Value::as_array).ok_or_else(|| {
        format!("{shown} has no \"cells\" list; it is not an nbformat 4 notebook")
    })?;
    let lang = nb
        .pointer("/metadata/kernelspec/language")
        .or_else(|| nb.pointer("/metadata/language_info/name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = format!(
        "Notebook {shown}: {} cell{} (nbformat {}.{}{})\n",
        cells.len(),
        if cells.len() == 1 { "" } else { "s" },
        nb.get("nbformat").and_then(Value::as_i64).unwrap_or(4),
        nb.get("nbformat_minor")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        if lang.is_empty() {
            String::new()
        } else {
            format!(", {lang}")
        }
    );
    for (i, cell) in cells.iter().enumerate() {
        let kind = cell.get("cell_type").and_then(Value::as_str).unwrap_or("?");
        let id = cell
            .get("id")
            .and_then(Value::as_str)
            .map(|s| format!(" id={s}"))
            .unwrap_or_default();
        let count = match cell.get("execution_count") {
            Some(Value::Number(n)) => format!(" execution_count={n}"),
            _ => String::new(),
        };
        out.push_str(&format!("\n--- cell {i} [{kind}]{id}{count} ---\n"));
        let src = source_text(cell.get("source"));
        out.push_str(&src);
        if !src.ends_with('\n') {
            out.push('\n');
        }
        if let Some(outputs) = cell.get("outputs").and_then(Value::as_array) {
            for (k, o) in outputs.iter().enumerate() {
                out.push_str(&format!("--- output {k} ---\n"));
                out.push_str(&render_output(o));
            }
        }
    }
    Ok(out)
}

fn render_output(o: &Value) -> String {
    let kind = o.get("output_type").and_then(Value::as_str).unwrap_or("");
    let mut out = String::new();
    match kind {
        "stream" => {
            let name = o.get("name").and_then(Value::as_str).unwrap_or("stdout");
            out.push_str(&format!("[{name}]\n"));
            out.push_str(&strip_ansi(&source_text(o.get("text"))));
        }
        "error" => {
            let ename = o.get("ename").and_then(Value::as_str).unwrap_or("Error");
            let evalue = o.get("evalue").and_then(Value::as_str).unwrap_or("");
            out.push_str(&format!("[error] {ename}: {evalue}\n"));
            if let Some(tb) = o.get("traceback").and_then(Value::as_array) {
                for l in tb.iter().filter_map(Value::as_str) {
                    out.push_str(&strip_ansi(l));
                    out.push('\n');
                }
            }
        }
        "execute_result" | "display_data" => {
            let data = o.get("data").and_then(Value::as_object);
            let mut shown_text = false;
            if let Some(data) = data {
                for (mime, v) in data {
                    if mime == "text/plain" {
                        out.push_str(&source_text(Some(v)));
                        shown_text = true;
                    } else if mime.starts_with("image/") {
                        let size = source_text(Some(v)).len();
                        out.push_str(&format!("[{mime} output, {size} base64 characters]\n"));
                    } else if mime == "text/html" && !data.contains_key("text/plain") {
                        out.push_str(&source_text(Some(v)));
                        shown_text = true;
                    } else {
                        out.push_str(&format!("[{mime} output]\n"));
                    }
                    if shown_text && !out.ends_with('\n') {
                        out.push('\n');
                    }
                }
            }
        }
        other => out.push_str(&format!("[{other} output]\n")),
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Editing

impl Tool for NotebookEdit {
    fn name(&self) -> &'static str {
        "notebook-edit"
    }
    fn description(&self) -> &'static str {
        "Edit one cell of a Jupyter notebook (.ipynb): edit_mode replace (default), insert or delete. Target the cell with cell_id (its id) or cell_index (0-based). insert puts the new cell after cell_id, or at cell_index, or first when neither is given. Replacing a code cell clears its outputs. Other cells are not touched. Read the notebook first."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "notebook_path": {"type": "string", "description": "Path of the .ipynb file"},
                "cell_id": {"type": "string", "description": "The id of the target cell"},
                "cell_index": {"type": "integer", "description": "0-based index of the target cell"},
                "new_source": {"type": "string", "description": "The new source of the cell"},
                "cell_type": {"type": "string", "enum": ["code", "markdown", "raw"]},
                "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]}
            },
            "required": ["notebook_path"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        match args {
            ToolArgs::NotebookEdit(a) => edit(a, ctx).unwrap_or_else(ToolOutput::err),
            other => crate::fs::mismatched("notebook-edit", other),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EditMode {
    Replace,
    Insert,
    Delete,
}

/// The arguments of one notebook-edit call.
struct Request {
    mode: EditMode,
    cell_type: Option<String>,
    new_source: Option<String>,
    cell_id: Option<String>,
    cell_index: Option<i64>,
}

fn request(args: &NotebookEditParams) -> Result<Request, String> {
    let mode = match args.edit_mode.as_deref() {
        None | Some("replace") => EditMode::Replace,
        Some("insert") => EditMode::Insert,
        Some("delete") => EditMode::Delete,
        Some(o) => {
            return Err(format!(
                "edit_mode must be replace, insert or delete, got {o:?}"
            ));
        }
    };
    let cell_type = args.cell_type.clone();
    if let Some(t) = &cell_type
        && !matches!(t.as_str(), "code" | "markdown" | "raw")
    {
        return Err(format!(
            "cell_type must be code, markdown or raw, got {t:?}"
        ));
    }
    let new_source = args.new_source.clone();
    if mode != EditMode::Delete && new_source.is_none() {
        return Err("missing required argument 'new_source' (the cell's new source)".into());
    }
    let cell_id = args.cell_id.clone();
    let cell_index = args.cell_index;
    if let Some(i) = cell_index
        && i < 0
    {
        return Err(format!("cell_index must be 0 or more, got {i}"));
    }
    Ok(Request {
        mode,
        cell_type,
        new_source,
        cell_id,
        cell_index,
    })
}

impl Request {
    fn apply(&self, bytes: &[u8]) -> Result<Edited, String> {
        edit_bytes(
            bytes,
            self.mode,
            self.cell_id.as_deref(),
            self.cell_index.map(|i| i as usize),
            self.new_source.as_deref().unwrap_or(""),
            self.cell_type.as_deref(),
        )
    }
}

/// The notebook's bytes after this call (for a permission prompt's diff); nothing is written.
pub fn preview(args: &NotebookEditParams, current: &[u8]) -> Result<Vec<u8>, String> {
    Ok(request(args)?.apply(current)?.bytes)
}

fn edit(args: &NotebookEditParams, ctx: &ToolContext) -> Result<ToolOutput, String> {
    let req = request(args)?;
    let path = ctx.resolve_for_write(&args.notebook_path)?;
    if path.extension().and_then(|e| e.to_str()) != Some("ipynb") {
        return Err(format!(
            "{} is not a .ipynb notebook; use edit for other files",
            path.display()
        ));
    }
    let (bytes, stamp) = read_file_stamped(&path)?;
    check_fresh(ctx, &path, &stamp, &bytes)?;
    let next = req.apply(&bytes)?;
    write_known(ctx, &path, &next.bytes)?;
    Ok(ToolOutput::ok(format!(
        "{} in {}",
        next.summary,
        path.display()
    )))
}

pub struct Edited {
    pub bytes: Vec<u8>,
    pub summary: String,
}

fn cell_lines(src: &str) -> Value {
    Value::Array(
        src.split_inclusive('\n')
            .map(|l| Value::String(l.to_string()))
            .collect(),
    )
}

fn new_cell_id(existing: &[String]) -> String {
    loop {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        if !existing.contains(&id) {
            return id;
        }
    }
}

/// The byte-level edit (pure: bytes in, bytes out).
pub(crate) fn edit_bytes(
    b: &[u8],
    mode: EditMode,
    cell_id: Option<&str>,
    cell_index: Option<usize>,
    new_source: &str,
    cell_type: Option<&str>,
) -> Result<Edited, String> {
    let bad = |e: String| format!("the notebook is not valid JSON ({e}); it was not changed");
    let nb: Value = serde_json::from_slice(b).map_err(|e| bad(e.to_string()))?;
    let cells = nb
        .get("cells")
        .and_then(Value::as_array)
        .ok_or("the notebook has no \"cells\" list (not nbformat 4); it was not changed")?;
    let minor = nb
        .get("nbformat_minor")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let major = nb.get("nbformat").and_then(Value::as_i64).unwrap_or(4);
    let with_ids = major > 4 || (major == 4 && minor >= 5);
    let ids: Vec<String> = cells
        .iter()
        .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();

    let top_start = skip_ws(b, 0);
    let (top, top_close) = object_members(b, top_start).map_err(bad)?;
    let cells_member = top
        .iter()
        .find(|m| m.key == "cells")
        .ok_or("no cells member")?;
    let (elems, arr_close) = array_elements(b, cells_member.value.0).map_err(bad)?;
    if elems.len() != cells.len() {
        return Err(bad("cell count mismatch".into()));
    }
    // Indentation: the unit from the top object, the cells' own from the array.
    let unit = top
        .first()
        .and_then(|m| indent_of(&b[top_start + 1..m.key_start]));
    let _ = top_close;
    let cell_indent = match elems.first() {
        Some((s, _)) => indent_of(&b[cells_member.value.0 + 1..*s]),
        None => unit.as_ref().map(|u| u.repeat(2)),
    };
    let unit_ref = unit.as_deref();

    let find_by_id = |id: &str| -> Result<usize, String> {
        if let Some(i) = cells
            .iter()
            .position(|c| c.get("id").and_then(Value::as_str) == Some(id))
        {
            return Ok(i);
        }
        let numeric = id.strip_prefix("cell-").unwrap_or(id).parse::<usize>().ok();
        match numeric {
            Some(i) if i < cells.len() => Ok(i),
            _ => Err(format!(
                "no cell has id {id:?}; the notebook's cell ids are: {}. Read the notebook to see them, or use cell_index.",
                if ids.is_empty() {
                    "(none; use cell_index)".to_string()
                } else {
                    ids.join(", ")
                }
            )),
        }
    };
    let n = cells.len();
    let target = match (cell_id, cell_index) {
        (Some(id), _) => Some(find_by_id(id)?),
        (None, Some(i)) => Some(i),
        (None, None) => None,
    };
    let mut out = Vec::with_capacity(b.len() + new_source.len() + 256);
    let summary;
    match mode {
        EditMode::Replace | EditMode::Delete => {
            let Some(t) = target else {
                return Err("give cell_id or cell_index to choose the cell".into());
            };
            if t >= n {
                return Err(format!(
                    "cell_index {t} is out of range: the notebook has {n} cell{} (0–{}){}",
                    if n == 1 { "" } else { "s" },
                    n.saturating_sub(1),
                    if mode == EditMode::Replace {
                        "; use edit_mode insert to add a cell"
                    } else {
                        ""
                    }
                ));
            }
            let (s, e) = elems[t];
            if mode == EditMode::Delete {
                // Remove the element and one separator next to it.
                let (cut_s, cut_e) = if t + 1 < n {
                    (s, elems[t + 1].0)
                } else if t > 0 {
                    (elems[t - 1].1, e)
                } else {
                    (s, e)
                };
                out.extend_from_slice(&b[..cut_s]);
                out.extend_from_slice(&b[cut_e..]);
                summary = format!("Deleted cell {t}");
            } else {
                let cell = &cells[t];
                let old_type = cell
                    .get("cell_type")
                    .and_then(Value::as_str)
                    .unwrap_or("code");
                let new_type = cell_type.unwrap_or(old_type);
                let text = replace_cell(b, s, new_source, old_type, new_type, unit_ref)?;
                out.extend_from_slice(&b[..s]);
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(&b[e..]);
                summary = format!(
                    "Replaced the source of cell {t} ({new_type}){}",
                    if new_type == "code" {
                        "; its outputs were cleared"
                    } else {
                        ""
                    }
                );
            }
        }
        EditMode::Insert => {
            let at = match (cell_id, target) {
                (Some(_), Some(t)) => t + 1,
                (None, Some(i)) => i,
                _ => 0,
            };
            if at > n {
                return Err(format!(
                    "cell_index {at} is out of range for insert: the notebook has {n} cells, so use 0–{n}"
                ));
            }
            let kind = cell_type.unwrap_or("code");
            let mut cell = Map::new();
            cell.insert("cell_type".into(), json!(kind));
            if kind == "code" {
                cell.insert("execution_count".into(), Value::Null);
            }
            let mut id = None;
            if with_ids {
                let fresh = new_cell_id(&ids);
                cell.insert("id".into(), json!(fresh));
                id = Some(fresh);
            }
            cell.insert("metadata".into(), json!({}));
            if kind == "code" {
                cell.insert("outputs".into(), json!([]));
            }
            cell.insert("source".into(), cell_lines(new_source));
            let base = cell_indent.clone().unwrap_or_default();
            let text = render(&Value::Object(cell), unit_ref, &base);
            let arr_open = cells_member.value.0;
            if n == 0 {
                out.extend_from_slice(&b[..arr_open + 1]);
                match (&cell_indent, unit_ref) {
                    (Some(ci), Some(u)) => {
                        let closing = ci.strip_suffix(u).unwrap_or("");
                        out.extend_from_slice(format!("\n{ci}{text}\n{closing}").as_bytes());
                    }
                    _ => out.extend_from_slice(text.as_bytes()),
                }
                out.extend_from_slice(&b[arr_close..]);
            } else if at < n {
                // Before element `at`: new cell, then the same separator the array uses.
                let s = elems[at].0;
                let sep = match n {
                    1 => match &cell_indent {
                        Some(ci) => format!(",\n{ci}"),
                        None => ",".to_string(),
                    },
                    _ => String::from_utf8_lossy(&b[elems[0].1..elems[1].0]).into_owned(),
                };
                out.extend_from_slice(&b[..s]);
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(sep.as_bytes());
                out.extend_from_slice(&b[s..]);
            } else {
                let e = elems[n - 1].1;
                let sep = match n {
                    1 => match &cell_indent {
                        Some(ci) => format!(",\n{ci}"),
                        None => ",".to_string(),
                    },
                    _ => String::from_utf8_lossy(&b[elems[0].1..elems[1].0]).into_owned(),
                };
                out.extend_from_slice(&b[..e]);
                out.extend_from_slice(sep.as_bytes());
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(&b[e..]);
            }
            summary = format!(
                "Inserted a {kind} cell at index {at}{}",
                id.map(|i| format!(" (id {i})")).unwrap_or_default()
            );
        }
    }
    // Fail closed: the result must still be a notebook.
    let check: Value = serde_json::from_slice(&out).map_err(|e| {
        format!(
            "internal error: the edited notebook would not be valid JSON ({e}); nothing was written"
        )
    })?;
    let count = check
        .get("cells")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    let expected = match mode {
        EditMode::Replace => n,
        EditMode::Insert => n + 1,
        EditMode::Delete => n - 1,
    };
    if count != expected {
        return Err("internal error: the edited notebook has the wrong number of cells; nothing was written".into());
    }
    Ok(Edited {
        bytes: out,
        summary,
    })
}

/// The cell at `s` rewritten: source replaced, outputs and execution count cleared for code,
/// every other member kept as written.
fn replace_cell(
    b: &[u8],
    s: usize,
    new_source: &str,
    old_type: &str,
    new_type: &str,
    unit: Option<&str>,
) -> Result<String, String> {
    let (members, close) = object_members(b, s)?;
    let text = |a: usize, e: usize| String::from_utf8_lossy(&b[a..e]).into_owned();
    let (open_ws, member_indent) = match members.first() {
        Some(m) => {
            let ws = text(s + 1, m.key_start);
            let ind = indent_of(ws.as_bytes());
            (ws, ind)
        }
        None => (String::new(), None),
    };
    let colon = match members.first() {
        Some(m) => {
            let kend = string_end(b, m.key_start)?;
            text(kend, m.value.0)
        }
        None => (if unit.is_some() { ": " } else { ":" }).to_string(),
    };
    let close_ws = match members.last() {
        Some(m) => text(m.value.1, close),
        None => String::new(),
    };
    let sep = if members.len() > 1 {
        text(members[0].value.1, members[1].key_start)
    } else {
        match &member_indent {
            Some(i) => format!(",\n{i}"),
            None => ",".to_string(),
        }
    };
    let base = member_indent.clone().unwrap_or_default();
    let was_string_source = members
        .iter()
        .find(|m| m.key == "source")
        .is_some_and(|m| b[m.value.0] == b'"');
    let source_value = if was_string_source {
        Value::String(new_source.to_string())
    } else {
        cell_lines(new_source)
    };
    let mut entries: Vec<(String, String)> = Vec::new();
    for m in &members {
        let raw = text(m.value.0, m.value.1);
        let v = match m.key.as_str() {
            "source" => render(&source_value, unit, &base),
            "cell_type" => render(&json!(new_type), unit, &base),
            "outputs" | "execution_count" if new_type != "code" => continue,
            "outputs" => "[]".to_string(),
            "execution_count" => "null".to_string(),
            _ => raw,
        };
        entries.push((m.key.clone(), v));
    }
    if new_type == "code" && old_type != "code" {
        for (k, v) in [("execution_count", "null"), ("outputs", "[]")] {
            if !entries.iter().any(|(key, _)| key == k) {
                let pos = entries
                    .iter()
                    .position(|(key, _)| key.as_str() > k)
                    .unwrap_or(entries.len());
                entries.insert(pos, (k.to_string(), v.to_string()));
            }
        }
    }
    if !entries.iter().any(|(k, _)| k == "source") {
        entries.push(("source".into(), render(&source_value, unit, &base)));
    }
    let body: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}{colon}{v}", serde_json::to_string(k).unwrap_or_default()))
        .collect();
    Ok(format!("{{{open_ws}{}{close_ws}}}", body.join(&sep)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NB: &str = "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"m1\",\n   \"metadata\": {},\n   \"source\": [\n    \"# Title \u{e9}\\n\",\n    \"text\"\n   ]\n  },\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 3,\n   \"id\": \"c1\",\n   \"metadata\": {\"tags\": [\"x\"]},\n   \"outputs\": [\n    {\n     \"name\": \"stdout\",\n     \"output_type\": \"stream\",\n     \"text\": [\n      \"hi\\n\"\n     ]\n    }\n   ],\n   \"source\": [\n    \"print('hi')\"\n   ]\n  }\n ],\n \"metadata\": {\"zeta\": 1, \"alpha\": 2},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";

    fn cell_text(b: &[u8], i: usize) -> String {
        let (top, _) = object_members(b, 0).unwrap();
        let c = top.iter().find(|m| m.key == "cells").unwrap();
        let (el, _) = array_elements(b, c.value.0).unwrap();
        String::from_utf8_lossy(&b[el[i].0..el[i].1]).into_owned()
    }

    #[test]
    fn replace_keeps_other_cells_and_clears_outputs() {
        let out = edit_bytes(
            NB.as_bytes(),
            EditMode::Replace,
            Some("c1"),
            None,
            "x = 1\ny = 2",
            None,
        )
        .unwrap();
        let text = String::from_utf8(out.bytes.clone()).unwrap();
        assert_eq!(cell_text(&out.bytes, 0), cell_text(NB.as_bytes(), 0));
        assert!(text.ends_with("\"nbformat_minor\": 5\n}\n"));
        assert!(text.contains("\"metadata\": {\"zeta\": 1, \"alpha\": 2}"));
        let v: Value = serde_json::from_slice(&out.bytes).unwrap();
        let c = &v["cells"][1];
        assert_eq!(c["outputs"], json!([]));
        assert_eq!(c["execution_count"], Value::Null);
        assert_eq!(c["source"], json!(["x = 1\n", "y = 2"]));
        assert_eq!(c["metadata"], json!({"tags": ["x"]}));
        assert!(
            text.contains("   \"source\": [\n    \"x = 1\\n\",\n    \"y = 2\"\n   ]\n  }"),
            "{text}"
        );
    }

    #[test]
    fn insert_and_delete() {
        let out = edit_bytes(
            NB.as_bytes(),
            EditMode::Insert,
            Some("m1"),
            None,
            "z",
            Some("code"),
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&out.bytes).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), 3);
        assert_eq!(v["cells"][1]["source"], json!(["z"]));
        assert_eq!(v["cells"][1]["id"].as_str().unwrap().len(), 8);
        assert_eq!(cell_text(&out.bytes, 2), cell_text(NB.as_bytes(), 1));
        let back = edit_bytes(&out.bytes, EditMode::Delete, None, Some(1), "", None).unwrap();
        assert_eq!(back.bytes, NB.as_bytes());
        let first = edit_bytes(
            NB.as_bytes(),
            EditMode::Insert,
            None,
            None,
            "top",
            Some("markdown"),
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&first.bytes).unwrap();
        assert_eq!(v["cells"][0]["cell_type"], "markdown");
        let end = edit_bytes(NB.as_bytes(), EditMode::Insert, None, Some(2), "end", None).unwrap();
        let v: Value = serde_json::from_slice(&end.bytes).unwrap();
        assert_eq!(v["cells"][2]["source"], json!(["end"]));
        let del = edit_bytes(NB.as_bytes(), EditMode::Delete, None, Some(1), "", None).unwrap();
        let v: Value = serde_json::from_slice(&del.bytes).unwrap();
        assert_eq!(v["cells"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn bad_targets_fail() {
        assert!(
            edit_bytes(
                NB.as_bytes(),
                EditMode::Replace,
                Some("nope"),
                None,
                "x",
                None
            )
            .is_err()
        );
        assert!(edit_bytes(NB.as_bytes(), EditMode::Replace, None, Some(5), "x", None).is_err());
        assert!(edit_bytes(b"{", EditMode::Replace, None, Some(0), "x", None).is_err());
    }

    #[test]
    fn renders_outputs() {
        let text = render_notebook(NB.as_bytes(), "nb.ipynb").unwrap();
        assert!(text.contains("--- cell 1 [code] id=c1 execution_count=3 ---"));
        assert!(text.contains("[stdout]\nhi"));
    }
}
