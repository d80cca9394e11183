//! Capping what reaches the model: the full text is spilled to a file whose path, head and
//! tail are in the result.

use std::path::Path;

/// What the model sees of one tool result by default, in characters (`tools.output_chars`):
/// past it, a head and a tail and the path of a spill file with the whole output. 10 000 is
/// what Codex (10 KiB) and the peer harness pinned in benches/bench_harness.py show; every
/// character more is paid again in each later request until the result is stubbed.
pub const DEFAULT_OUTPUT_CHARS: usize = 10_000;
/// The smallest cap a setting may ask for (below it the notice would be most of the result).
pub const MIN_OUTPUT_CHARS: usize = 1_000;
/// Part of the cap left for the truncation notice and a closing status line, so a capped
/// result stays under the cap and the core's final cap never cuts it a second time.
const NOTICE_RESERVE: usize = 400;

/// Characters of the head and of the tail a result capped at `cap` keeps.
pub fn preview_half(cap: usize) -> usize {
    cap.max(MIN_OUTPUT_CHARS).saturating_sub(NOTICE_RESERVE) / 2
}

/// Caps `text` at `cap` characters; when it is longer, writes it whole under `spill_dir` and
/// returns its head and tail with the spill file's path between them.
pub fn cap_output(text: &str, spill_dir: &Path, label: &str, cap: usize) -> String {
    if text.chars().count() <= cap.max(MIN_OUTPUT_CHARS) {
        return text.to_string();
    }
    let head = head_cut(text, preview_half(cap));
    let tail = tail_cut(text, preview_half(cap));
    let total_lines = text.lines().count();
    let name = format!("{label}-{}.txt", uuid_like());
    let path = spill_dir.join(name);
    let saved = std::fs::create_dir_all(spill_dir).and_then(|_| std::fs::write(&path, text));
    let where_ = match saved {
        Ok(()) => format!(
            "the full output ({} characters, {total_lines} lines) is in {}; read it with offset/limit or grep it",
            text.chars().count(),
            path.display()
        ),
        Err(e) => format!("the full output could not be saved ({e})"),
    };
    format!("{head}\n\n[… output truncated: {where_} …]\n\n{tail}")
}

/// How far a cut may move to land on a line boundary.
const LINE_SLACK: usize = 2048;

/// At most `n` characters from the start, cut after a newline when one is near the cut: a
/// secret on one line is then either whole (and redacted) or absent, never half shown.
pub fn head_cut(text: &str, n: usize) -> &str {
    let end = text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
    if end == text.len() {
        return text;
    }
    match text[..end].rfind('\n') {
        Some(nl) if end - nl <= LINE_SLACK => &text[..=nl],
        _ => &text[..end],
    }
}

/// At most `n` characters from the end, starting after a newline when one is near the cut.
pub fn tail_cut(text: &str, n: usize) -> &str {
    let count = text.chars().count();
    if count <= n {
        return text;
    }
    let start = text
        .char_indices()
        .nth(count - n)
        .map_or(text.len(), |(i, _)| i);
    match text[start..].find('\n') {
        Some(nl) if nl < LINE_SLACK => &text[start + nl + 1..],
        _ => &text[start..],
    }
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let n = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{n:x}-{}", std::process::id())
}

/// Removes ANSI escape sequences (colours, cursor moves, OSC titles).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            if c != '\r' || chars.peek() == Some(&'\n') {
                out.push(c);
            } else {
                out.push('\n');
            }
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                while let Some(d) = chars.next() {
                    if d == '\u{7}' {
                        break;
                    }
                    if d == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_is_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[31mred\u{1b}[0m \u{1b}]0;t\u{7}x"),
            "red x"
        );
    }

    #[test]
    fn long_output_is_spilled() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..5000).map(|i| format!("line {i:05}\n")).collect();
        let capped = cap_output(&text, d.path(), "bash", DEFAULT_OUTPUT_CHARS);
        assert!(
            capped.chars().count() <= DEFAULT_OUTPUT_CHARS,
            "{}",
            capped.len()
        );
        assert!(capped.starts_with("line 00000\n") && capped.ends_with("line 04999\n"));
        let spilled = capped
            .split(" is in ")
            .nth(1)
            .unwrap()
            .split(';')
            .next()
            .unwrap();
        assert!(spilled.starts_with(d.path().to_str().unwrap()));
        assert_eq!(std::fs::read_to_string(spilled).unwrap(), text);
        // A larger cap shows more of it; a short text is never touched.
        let wide = cap_output(&text, d.path(), "bash", 40_000);
        assert!(wide.len() > capped.len() + 20_000);
        assert_eq!(cap_output("short", d.path(), "bash", 1), "short");
    }
}

#[cfg(test)]
mod cut_tests {
    use super::*;

    #[test]
    fn cuts_land_on_line_boundaries_so_no_line_is_half_shown() {
        let line = |i: usize| format!("VAR_{i}=s3cr3t-{i:06}-value\n");
        let text: String = (0..5000).map(line).collect();
        let head = head_cut(&text, 15_000);
        assert!(head.ends_with('\n') && head.chars().count() <= 15_000);
        let tail = tail_cut(&text, 7_500);
        assert!(text.ends_with(tail) && tail.starts_with("VAR_"));
        for part in [head, tail] {
            for l in part.lines() {
                assert!(l.starts_with("VAR_") && l.ends_with("-value"), "{l}");
            }
        }
        // One huge line: the cut stays a character cut.
        let big = "x".repeat(100_000);
        assert_eq!(head_cut(&big, 10).len(), 10);
        assert_eq!(tail_cut(&big, 10).len(), 10);
    }
}
