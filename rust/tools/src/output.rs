//! Capping what reaches the model: the full text is spilled to a file whose path, head and
//! tail are in the result.

use std::path::Path;

/// Longest tool result the model receives, in characters.
pub const RESULT_CAP: usize = 30_000;

/// Caps `text`; when it is longer, writes it whole under `spill_dir` and returns a preview.
pub fn cap_output(text: &str, spill_dir: &Path, label: &str) -> String {
    if text.chars().count() <= RESULT_CAP {
        return text.to_string();
    }
    let head: String = text.chars().take(RESULT_CAP / 2).collect();
    let tail_rev: String = text.chars().rev().take(RESULT_CAP / 4).collect();
    let tail: String = tail_rev.chars().rev().collect();
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
        let text = "x".repeat(RESULT_CAP * 2);
        let capped = cap_output(&text, d.path(), "bash");
        assert!(capped.len() < text.len());
        assert!(capped.contains(d.path().to_str().unwrap()));
    }
}
