//! The entry format. One entry = one top-level list item (with its indented continuation
//! lines) or one `###` block (up to the next heading). Its metadata is a compact comment a
//! person can read: `- Use bun, not npm. <!-- id:m7f3a when:2026-11-30 scope:project
//! why:"user said: use bun not npm" src:correction -->`. An entry written by hand without
//! metadata is valid too: its id is derived from its text, so it is stable across reads.

use sha2::{Digest, Sha256};

/// One memory entry as found in a file. Lines are 1-based and inclusive; `span` is the
/// entry's byte range in the file (whole lines, final newline included), so removing one
/// entry leaves every other byte of the file identical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub when: Option<String>,
    pub scope: Option<String>,
    pub why: Option<String>,
    /// remember, correction, natural-language, flush, dream, or hand (no metadata).
    pub src: String,
    /// The entry's text: marker and metadata comment removed, lines joined with `\n`.
    pub text: String,
    pub line_start: usize,
    pub line_end: usize,
    pub span: std::ops::Range<usize>,
}

/// The metadata written with a new entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub id: String,
    pub when: String,
    pub scope: String,
    pub why: String,
    pub src: String,
}

/// Every entry of a memory file, in file order. Fenced code blocks are skipped; `#`/`##`
/// headings and loose paragraphs are structure, not entries.
pub fn parse(text: &str) -> Vec<Entry> {
    let lines = split_lines(text);
    let mut out: Vec<Entry> = Vec::new();
    let mut i = 0;
    let mut fence = false;
    while i < lines.len() {
        let (start, line) = lines[i];
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed.trim_start().starts_with("```") || trimmed.trim_start().starts_with("~~~") {
            fence = !fence;
            i += 1;
            continue;
        }
        if fence {
            i += 1;
            continue;
        }
        let kind = if list_marker(trimmed).is_some() {
            Some(false)
        } else if is_block_heading(trimmed) {
            Some(true)
        } else {
            None
        };
        let Some(block) = kind else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < lines.len() {
            let l = lines[j].1.trim_end_matches(['\n', '\r']);
            let ends = if block {
                heading_level(l).is_some_and(|n| n <= 3) || l.trim_start().starts_with("```")
            } else {
                l.trim().is_empty() || !l.starts_with([' ', '\t'])
            };
            if ends {
                break;
            }
            j += 1;
        }
        // A `###` block does not own the blank lines before the next heading.
        let mut last = j;
        while block && last > i + 1 && lines[last - 1].1.trim().is_empty() {
            last -= 1;
        }
        let end_byte = lines.get(last).map_or(text.len(), |l| l.0);
        let raw = &text[start..end_byte];
        out.push(entry_from(raw, block, i + 1, last, start..end_byte));
        i = j;
    }
    dedupe_ids(&mut out);
    out
}

/// `- text <!-- id:… when:… scope:… why:"…" src:… -->` on one line (newline included).
pub fn render(text: &str, meta: &Meta) -> String {
    let text = one_line(text);
    format!(
        "- {text} <!-- id:{} when:{} scope:{} why:\"{}\" src:{} -->\n",
        meta.id,
        meta.when,
        meta.scope,
        one_line(&meta.why)
            .replace('\\', "\\\\")
            .replace('"', "\\\""),
        meta.src
    )
}

/// A fresh id for a new entry: `m` + 5 hex digits of its text and time, not among `taken`.
pub fn new_id(text: &str, when: &str, taken: &[String]) -> String {
    let mut salt = 0u32;
    loop {
        let h = Sha256::digest(format!("{when}\n{text}\n{salt}").as_bytes());
        let id = format!("m{}", &hex(&h)[..5]);
        if !taken.contains(&id) {
            return id;
        }
        salt += 1;
    }
}

/// The id of an entry written by hand: `h` + 5 hex digits of its normalized text.
pub fn derived_id(text: &str) -> String {
    let norm = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    format!("h{}", &hex(&Sha256::digest(norm.as_bytes()))[..5])
}

/// The file without the entry `id` (its lines removed, every other byte kept), or `None`.
pub fn remove(file: &str, id: &str) -> Option<String> {
    let e = parse(file).into_iter().find(|e| e.id == id)?;
    Some(format!("{}{}", &file[..e.span.start], &file[e.span.end..]))
}

/// The file with entry `id`'s text replaced (metadata kept; a hand entry gains none).
pub fn replace_text(file: &str, id: &str, new_text: &str) -> Option<String> {
    let e = parse(file).into_iter().find(|e| e.id == id)?;
    let line = if e.src == "hand" && e.when.is_none() {
        format!("- {}\n", one_line(new_text))
    } else {
        render(
            new_text,
            &Meta {
                id: e.id.clone(),
                when: e.when.clone().unwrap_or_default(),
                scope: e.scope.clone().unwrap_or_default(),
                why: e.why.clone().unwrap_or_default(),
                src: e.src.clone(),
            },
        )
    };
    Some(format!(
        "{}{line}{}",
        &file[..e.span.start],
        &file[e.span.end..]
    ))
}

/// `file` with `entry_line` appended, on its own line.
pub fn append(file: &str, entry_line: &str) -> String {
    let mut out = file.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(entry_line);
    out
}

fn entry_from(
    raw: &str,
    block: bool,
    line_start: usize,
    line_end: usize,
    span: std::ops::Range<usize>,
) -> Entry {
    let (body, meta) = take_meta(raw);
    let mut lines: Vec<String> = Vec::new();
    for (n, l) in body.lines().enumerate() {
        let l = l.trim_end();
        let l = if n == 0 {
            if block {
                l.trim_start_matches('#').trim().to_string()
            } else {
                list_marker(l).map_or(l, |m| &l[m..]).trim().to_string()
            }
        } else {
            l.trim_start().to_string()
        };
        lines.push(l);
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let text = lines.join("\n").trim().to_string();
    let get = |k: &str| {
        meta.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let id = get("id")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| derived_id(&text));
    Entry {
        src: get("src").unwrap_or_else(|| "hand".into()),
        when: get("when"),
        scope: get("scope"),
        why: get("why"),
        id,
        text,
        line_start,
        line_end,
        span,
    }
}

/// Splits off the last `<!-- … -->` comment that carries `key:value` metadata.
fn take_meta(raw: &str) -> (String, Vec<(String, String)>) {
    let mut search = raw.len();
    while let Some(open) = raw[..search].rfind("<!--") {
        if let Some(close) = raw[open..].find("-->") {
            let inner = &raw[open + 4..open + close];
            let kv = parse_meta(inner);
            if kv.iter().any(|(k, _)| k == "id" || k == "src") {
                let body = format!("{}{}", &raw[..open], &raw[open + close + 3..]);
                return (body, kv);
            }
        }
        search = open;
    }
    (raw.to_string(), Vec::new())
}

/// `key:value` tokens; a value may be `"quoted"` with `\"` and `\\` escapes.
fn parse_meta(inner: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = inner.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == ':' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() {
            break;
        }
        if chars.peek() != Some(&':') {
            continue;
        }
        chars.next();
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key, value));
    }
    out
}

/// Two entries with the same derived id (a hand entry written twice) get `-2`, `-3`, ….
fn dedupe_ids(entries: &mut [Entry]) {
    let mut seen: Vec<String> = Vec::new();
    for e in entries.iter_mut() {
        let base = e.id.clone();
        let mut n = 1;
        while seen.contains(&e.id) {
            n += 1;
            e.id = format!("{base}-{n}");
        }
        seen.push(e.id.clone());
    }
}

/// Byte offset where a top-level list item's text starts (`- `, `* `, `+ `, `1. `).
fn list_marker(line: &str) -> Option<usize> {
    if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        return (rest.starts_with(' ') && !rest.trim().is_empty() && !is_rule(line)).then_some(2);
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && line[digits..].starts_with(". ")).then_some(digits + 2)
}

/// `- - -` / `* * *`: a thematic break, not a list item.
fn is_rule(line: &str) -> bool {
    let t: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3 && (t.chars().all(|c| c == '-') || t.chars().all(|c| c == '*'))
}

fn heading_level(line: &str) -> Option<usize> {
    let n = line.bytes().take_while(|&b| b == b'#').count();
    (n > 0 && n <= 6 && line[n..].starts_with(' ')).then_some(n)
}

fn is_block_heading(line: &str) -> bool {
    heading_level(line) == Some(3)
}

fn split_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            out.push((start, &text[start..=i]));
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push((start, &text[start..]));
    }
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("-->", "->")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# Memory\n\n- Use bun, not npm. <!-- id:m7f3a when:2026-11-30 scope:project why:\"user said: \\\"use bun\\\" not npm\" src:correction -->\n- The API lives in src/api\n  (since the 2025 refactor)\n* alphabet soup is a fixture\n\n### Deploys\nRun `make deploy` from main only.\n\n## Other\n```\n- not an entry\n```\n1. numbered item\n";

    #[test]
    fn parses_list_items_blocks_and_metadata() {
        let e = parse(FILE);
        let texts: Vec<&str> = e.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Use bun, not npm.",
                "The API lives in src/api\n(since the 2025 refactor)",
                "alphabet soup is a fixture",
                "Deploys\nRun `make deploy` from main only.",
                "numbered item"
            ]
        );
        assert_eq!(e[0].id, "m7f3a");
        assert_eq!(e[0].when.as_deref(), Some("2026-11-30"));
        assert_eq!(e[0].why.as_deref(), Some("user said: \"use bun\" not npm"));
        assert_eq!(e[0].src, "correction");
        assert_eq!(e[1].src, "hand");
        assert_eq!((e[1].line_start, e[1].line_end), (4, 5));
        assert_eq!((e[3].line_start, e[3].line_end), (8, 9));
        assert!(e[1].id.starts_with('h'));
        // Content-derived ids are stable across reads and whitespace changes.
        assert_eq!(e[1].id, parse(FILE)[1].id);
        assert_eq!(derived_id("a  b"), derived_id("A b"));
    }

    #[test]
    fn render_parses_back() {
        let meta = Meta {
            id: "m00001".into(),
            when: "2026-01-02".into(),
            scope: "global".into(),
            why: "user said: \"x\" --> y".into(),
            src: "remember".into(),
        };
        let line = render("keep\n it  short", &meta);
        let e = &parse(&line)[0];
        assert_eq!(e.text, "keep it short");
        assert_eq!(e.why.as_deref(), Some("user said: \"x\" -> y"));
        assert_eq!(e.scope.as_deref(), Some("global"));
    }

    #[test]
    fn remove_keeps_other_bytes() {
        let ids: Vec<String> = parse(FILE).into_iter().map(|e| e.id).collect();
        let out = remove(FILE, &ids[1]).unwrap();
        assert_eq!(
            out,
            FILE.replace(
                "- The API lives in src/api\n  (since the 2025 refactor)\n",
                ""
            )
        );
        let out = remove(FILE, &ids[3]).unwrap();
        assert!(out.contains("* alphabet soup is a fixture\n\n\n## Other"));
        assert!(remove(FILE, "nope").is_none());
        let edited = replace_text(FILE, "m7f3a", "Use pnpm").unwrap();
        assert_eq!(parse(&edited)[0].text, "Use pnpm");
        assert_eq!(parse(&edited)[0].when.as_deref(), Some("2026-11-30"));
    }

    #[test]
    fn duplicate_hand_entries_get_distinct_ids() {
        let e = parse("- same\n- same\n");
        assert_ne!(e[0].id, e[1].id);
        let id = new_id("x", "t", &[]);
        assert_ne!(new_id("x", "t", std::slice::from_ref(&id)), id);
    }
}
