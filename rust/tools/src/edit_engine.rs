//! The edit engine: exact, byte-faithful replacement. Works on bytes so CRLF endings, a
//! UTF-8 BOM and invalid UTF-8 outside the matched region stay byte-for-byte identical.
//! All edits of one call are validated and applied in memory; any failure writes nothing.

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditSpec {
    pub old: String,
    pub new: String,
    pub replace_all: bool,
}

/// Applies `edits` in order to `bytes`. On success returns the new bytes and, per edit, the
/// number of replacements; on failure a message naming the edit and what to do next.
pub fn apply_edits(bytes: &[u8], edits: &[EditSpec]) -> Result<(Vec<u8>, Vec<usize>), String> {
    let crlf = uses_crlf_throughout(bytes);
    // Borrowed until the first replacement: a large file is copied once, not twice.
    let mut buf = std::borrow::Cow::Borrowed(bytes);
    let mut counts = Vec::with_capacity(edits.len());
    for (k, e) in edits.iter().enumerate() {
        let which = if edits.len() > 1 {
            format!("edit {} of {}: ", k + 1, edits.len())
        } else {
            String::new()
        };
        if e.old == e.new {
            return Err(format!(
                "{which}old_string and new_string are identical; nothing would change"
            ));
        }
        if e.old.is_empty() {
            return Err(format!(
                "{which}old_string is empty; an empty old_string only creates a missing or empty file"
            ));
        }
        let (old, new) = if crlf {
            (to_crlf(&e.old), to_crlf(&e.new))
        } else {
            (e.old.as_bytes().to_vec(), e.new.as_bytes().to_vec())
        };
        let hits = find_all(&buf, &old);
        match hits.len() {
            0 => {
                return Err(format!(
                    "{which}old_string was not found in the file. It must match exactly, including whitespace and indentation.{}",
                    near_misses(&buf, &e.old)
                ));
            }
            n if n > 1 && !e.replace_all => {
                let lines: Vec<String> = hits
                    .iter()
                    .take(5)
                    .map(|&h| (line_of(&buf, h)).to_string())
                    .collect();
                return Err(format!(
                    "{which}old_string matches {n} places (lines {}); add surrounding lines to make it unique, or set replace_all to true",
                    lines.join(", ")
                ));
            }
            _ => {}
        }
        buf = std::borrow::Cow::Owned(replace_at(&buf, &hits, old.len(), &new));
        counts.push(hits.len());
    }
    Ok((buf.into_owned(), counts))
}

/// True when the file has line breaks and every one of them is CRLF.
fn uses_crlf_throughout(b: &[u8]) -> bool {
    let mut any = false;
    for i in memchr::memchr_iter(b'\n', b) {
        if i == 0 || b[i - 1] != b'\r' {
            return false;
        }
        any = true;
    }
    any
}

/// A model writes `\n`; in a CRLF file that means `\r\n`. Existing `\r\n` are kept.
fn to_crlf(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 8);
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' && (i == 0 || b[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(c);
    }
    out
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    // Non-overlapping occurrences, left to right.
    let mut hits = Vec::new();
    let finder = memchr::memmem::Finder::new(needle);
    let mut from = 0;
    while let Some(i) = finder.find(&hay[from..]) {
        hits.push(from + i);
        from += i + needle.len();
    }
    hits
}

fn replace_at(buf: &[u8], hits: &[usize], len: usize, new: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(buf.len() + hits.len() * new.len());
    let mut last = 0;
    for &h in hits {
        out.extend_from_slice(&buf[last..h]);
        out.extend_from_slice(new);
        last = h + len;
    }
    out.extend_from_slice(&buf[last..]);
    out
}

fn line_of(buf: &[u8], pos: usize) -> usize {
    buf[..pos].iter().filter(|&&c| c == b'\n').count() + 1
}

/// Lines that resemble the first line of `old` (whitespace-insensitive), to show the model
/// what is really there.
fn near_misses(buf: &[u8], old: &str) -> String {
    let first = old
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if first.is_empty() {
        return String::new();
    }
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    let want = squash(first);
    let text = String::from_utf8_lossy(buf);
    let hits: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = squash(l);
            !l.is_empty()
                && (l.contains(&want)
                    || (want.len() > 8 && want.contains(&l) && l.len() > want.len() / 2))
        })
        .take(3)
        .map(|(i, l)| format!("  line {}: {}", i + 1, l.trim_end()))
        .collect();
    if hits.is_empty() {
        " Read the file again to see its current content.".into()
    } else {
        format!(
            " Similar lines in the file (check whitespace and exact text):\n{}",
            hits.join("\n")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn e(old: &str, new: &str) -> EditSpec {
        EditSpec {
            old: old.into(),
            new: new.into(),
            replace_all: false,
        }
    }

    #[test]
    fn crlf_bom_and_latin1_survive() {
        let file = b"\xEF\xBB\xBFa\r\nb\xE9\r\nc\r\n".to_vec();
        let (out, _) = apply_edits(&file, &[e("a\nb", "x\ny")]).unwrap();
        assert_eq!(out, b"\xEF\xBB\xBFx\r\ny\xE9\r\nc\r\n");
    }

    #[test]
    fn ambiguity_and_absence_fail_with_guidance() {
        let err = apply_edits(b"a a", &[e("a", "b")]).unwrap_err();
        assert!(err.contains("replace_all"));
        let err = apply_edits(b"  foo(1)\n", &[e("foo(2)", "x")]).unwrap_err();
        assert!(err.contains("not found"));
        let err = apply_edits(b"x", &[e("x", "y"), e("nope", "z")]).unwrap_err();
        assert!(err.starts_with("edit 2 of 2"));
    }

    proptest! {
        #[test]
        fn bytes_outside_the_match_never_change(
            prefix in proptest::collection::vec(any::<u8>(), 0..64),
            suffix in proptest::collection::vec(any::<u8>(), 0..64),
            new in "[a-z\n]{0,10}",
        ) {
            let marker = "\u{2603}MARK\u{2603}";
            prop_assume!(!prefix.windows(3).any(|w| w == [0xE2, 0x98, 0x83]));
            prop_assume!(!suffix.windows(3).any(|w| w == [0xE2, 0x98, 0x83]));
            let mut file = prefix.clone();
            file.extend_from_slice(marker.as_bytes());
            file.extend_from_slice(&suffix);
            let crlf = uses_crlf_throughout(&file);
            let (out, _) = apply_edits(&file, &[e(marker, &new)]).unwrap();
            let new_bytes = if crlf { to_crlf(&new) } else { new.as_bytes().to_vec() };
            prop_assert_eq!(&out[..prefix.len()], &prefix[..]);
            prop_assert_eq!(&out[prefix.len()..prefix.len() + new_bytes.len()], &new_bytes[..]);
            prop_assert_eq!(&out[prefix.len() + new_bytes.len()..], &suffix[..]);
        }
    }
}
