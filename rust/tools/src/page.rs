//! One page of a text file, read in one streaming pass that stops after the page: the cost of
//! a read is the page's, not the file's (a 2 GB log, or one 2 GB line). Byte offsets of line
//! starts seen on the way are kept ([`LineMarks`]) while the file's stamp holds, so the next
//! page (`offset=2001`) starts reading where the last one ended.

use crate::freshness::Stamp;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Longest line shown, in characters; the rest of it is cut.
pub const LINE_CAP: usize = 2000;
/// After the page, the rest of the file is still scanned (to count its lines and hash it)
/// when no more than this many bytes are left.
pub const TAIL_SCAN: u64 = 256 * 1024;
/// A mark is kept every this many lines of a long scan.
const MARK_EVERY: usize = 10_000;
const MARKS_PER_FILE: usize = 4096;
const FILES_MARKED: usize = 64;

/// What to read: lines `start..start + want`, at most `byte_cap` bytes of output.
pub struct Request {
    pub start: usize,
    pub want: usize,
    pub byte_cap: usize,
    /// Where the reader is: the line starting at byte `at.1` is line `at.0`.
    pub at: (usize, u64),
    /// The file's size when it was opened.
    pub size: u64,
    /// Read to the end whatever it costs (hash and count the whole file).
    pub whole: bool,
}

pub struct Page {
    pub text: String,
    /// The last line shown (start - 1 when none).
    pub end: usize,
    /// Lines in the file (`split_inclusive('\n')` counting), when the scan reached the end.
    pub total: Option<usize>,
    /// SHA-256 of the whole content, when the scan started at byte 0 and reached the end.
    pub hash: Option<[u8; 32]>,
    /// Line starts seen: (line, byte offset).
    pub marks: Vec<(usize, u64)>,
    /// Lines that end before `bytes` (for an estimate of the total).
    pub lines_seen: usize,
    pub bytes: u64,
}

pub fn stream_page(r: &mut impl BufRead, q: &Request) -> std::io::Result<Page> {
    let (start, want) = (q.start, q.want);
    let line_bytes_cap = LINE_CAP * 4 + 4;
    let mut hasher = (q.at.1 == 0).then(Sha256::new);
    let mut text = String::new();
    let mut end = start.saturating_sub(1);
    let (mut line_no, mut pos) = q.at;
    let mut marks = Vec::new();
    // Where the line after the page starts: the next read's starting point.
    let mut next_page: Option<(usize, u64)> = None;
    let mut cur: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut page_full = false;
    let mut pending = false; // bytes of an unfinished line were seen
    let mut eof = false;
    let in_page = |line_no: usize, page_full: bool| {
        !page_full && line_no >= start && line_no < start.saturating_add(want)
    };
    loop {
        let done = page_full || line_no >= start.saturating_add(want);
        if done && !q.whole && q.size.saturating_sub(pos) > TAIL_SCAN {
            break;
        }
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            eof = true;
            break;
        }
        if let Some(h) = hasher.as_mut() {
            h.update(chunk);
        }
        let n = chunk.len();
        let mut rest = chunk;
        while !rest.is_empty() {
            let show = in_page(line_no, page_full);
            match memchr::memchr(b'\n', rest) {
                Some(i) => {
                    if show {
                        let room = line_bytes_cap.saturating_sub(cur.len());
                        cur.extend_from_slice(&rest[..i.min(room)]);
                        cut |= i > room;
                        let row = render(line_no, &cur, cut);
                        if text.len() + row.len() > q.byte_cap && end >= start {
                            page_full = true;
                        } else {
                            text.push_str(&row);
                            end = line_no;
                            next_page = Some((line_no + 1, pos + (i + 1) as u64));
                        }
                        cur.clear();
                        cut = false;
                    }
                    line_no += 1;
                    pos += (i + 1) as u64;
                    pending = false;
                    rest = &rest[i + 1..];
                    if line_no % MARK_EVERY == 0 {
                        marks.push((line_no, pos));
                    }
                }
                None => {
                    if show {
                        let room = line_bytes_cap.saturating_sub(cur.len());
                        cur.extend_from_slice(&rest[..rest.len().min(room)]);
                        cut |= rest.len() > room;
                    }
                    pos += rest.len() as u64;
                    pending = true;
                    rest = &[];
                }
            }
        }
        r.consume(n);
    }
    marks.extend(next_page);
    let lines_seen = line_no - 1;
    let total = eof.then(|| {
        if pending {
            if in_page(line_no, page_full) {
                let row = render(line_no, &cur, cut);
                if !(text.len() + row.len() > q.byte_cap && end >= start) {
                    text.push_str(&row);
                    end = line_no;
                }
            }
            line_no
        } else {
            line_no - 1
        }
    });
    Ok(Page {
        text,
        end,
        total,
        hash: if eof {
            hasher.map(|h| h.finalize().into())
        } else {
            None
        },
        marks,
        lines_seen,
        bytes: pos,
    })
}

/// `N<TAB>line`, cut at [`LINE_CAP`] characters.
fn render(line_no: usize, raw: &[u8], cut: bool) -> String {
    let s = String::from_utf8_lossy(raw);
    let line = s.trim_end_matches('\r');
    if cut || line.chars().count() > LINE_CAP {
        let c: String = line.chars().take(LINE_CAP).collect();
        format!("{line_no}\t{c}… [line cut at {LINE_CAP} characters]\n")
    } else {
        format!("{line_no}\t{line}\n")
    }
}

/// Line starts learnt by earlier reads, per file, valid while the file's stamp is the one
/// they were learnt under (a stamp that was racy is never used: see `freshness`).
#[derive(Default)]
pub struct LineMarks {
    files: HashMap<PathBuf, (Stamp, BTreeMap<usize, u64>)>,
}

impl LineMarks {
    /// The known line start at or before `line`: (line, byte offset); (1, 0) when none.
    pub fn nearest(&self, path: &Path, stamp: &Stamp, line: usize) -> (usize, u64) {
        match self.files.get(path) {
            Some((s, m)) if s == stamp => m
                .range(..=line)
                .next_back()
                .map(|(&l, &b)| (l, b))
                .unwrap_or((1, 0)),
            _ => (1, 0),
        }
    }

    pub fn add(&mut self, path: &Path, stamp: Stamp, marks: &[(usize, u64)]) {
        if marks.is_empty() {
            return;
        }
        if !self.files.contains_key(path) && self.files.len() >= FILES_MARKED {
            self.files.clear();
        }
        let entry = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| (stamp, BTreeMap::new()));
        if entry.0 != stamp {
            *entry = (stamp, BTreeMap::new());
        }
        entry.1.extend(marks.iter().copied());
        if entry.1.len() > MARKS_PER_FILE {
            // Keep every other mark: still spread over the whole file.
            let thinned: BTreeMap<usize, u64> =
                entry.1.iter().step_by(2).map(|(&l, &b)| (l, b)).collect();
            entry.1 = thinned;
        }
    }

    pub fn forget(&mut self, path: &Path) {
        self.files.remove(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content_hash;

    fn page_at(text: &[u8], start: usize, want: usize, at: (usize, u64), whole: bool) -> Page {
        // A tiny buffer, so lines cross chunk boundaries.
        let mut r = std::io::BufReader::with_capacity(7, &text[at.1 as usize..]);
        let q = Request {
            start,
            want,
            byte_cap: 100_000,
            at,
            size: text.len() as u64,
            whole,
        };
        stream_page(&mut r, &q).unwrap()
    }

    fn page(text: &[u8], start: usize, want: usize) -> Page {
        page_at(text, start, want, (1, 0), false)
    }

    #[test]
    fn streamed_pages_count_like_split_inclusive() {
        for text in ["", "a", "a\n", "a\nb", "a\nb\n", "\n\n", "x\r\ny\r\n"] {
            let p = page(text.as_bytes(), 1, 2000);
            assert_eq!(
                p.total,
                Some(text.split_inclusive('\n').count()),
                "{text:?}"
            );
            assert_eq!(p.hash, Some(content_hash(text.as_bytes())));
        }
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let p = page(text.as_bytes(), 10, 3);
        assert_eq!(p.text, "10\tline 10\n11\tline 11\n12\tline 12\n");
        assert_eq!((p.end, p.total), (12, Some(100)));
        let p = page(b"a\r\nb", 2, 5);
        assert_eq!((p.text.as_str(), p.end, p.total), ("2\tb\n", 2, Some(2)));
    }

    #[test]
    fn a_large_file_is_read_up_to_its_page_only() {
        let text: String = (1..=200_000).map(|i| format!("row {i}\n")).collect();
        let p = page(text.as_bytes(), 1, 5);
        assert_eq!(p.text, "1\trow 1\n2\trow 2\n3\trow 3\n4\trow 4\n5\trow 5\n");
        assert_eq!((p.total, p.hash), (None, None));
        assert!(p.bytes < 64, "read {} bytes", p.bytes);
        // The next page's first line start is marked, and reading from it gives that page.
        let at = *p.marks.iter().find(|m| m.0 == 6).unwrap();
        assert_eq!(&text[at.1 as usize..at.1 as usize + 6], "row 6\n");
        let q = page_at(text.as_bytes(), 6, 2, at, false);
        assert_eq!(q.text, "6\trow 6\n7\trow 7\n");
        // A whole read counts and hashes everything.
        let w = page_at(text.as_bytes(), 1, 5, (1, 0), true);
        assert_eq!(w.total, Some(200_000));
        assert_eq!(w.hash, Some(content_hash(text.as_bytes())));
        assert!(w.marks.iter().any(|m| m.0 == 100_000));
    }

    #[test]
    fn a_small_rest_is_scanned_for_an_exact_total() {
        let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
        let p = page(text.as_bytes(), 1, 2000);
        assert_eq!((p.end, p.total), (2000, Some(2500)));
        assert_eq!(p.hash, Some(content_hash(text.as_bytes())));
    }

    #[test]
    fn a_huge_line_is_cut_without_being_held() {
        let mut text = vec![b'x'; 1_000_000];
        text.extend_from_slice(b"\nsecond\n");
        let p = page_at(&text, 1, 5, (1, 0), true);
        assert!(p.text.contains("[line cut at 2000 characters]"));
        assert!(p.text.len() < 3000);
        assert!(p.text.ends_with("2\tsecond\n"));
        assert_eq!(p.total, Some(2));
    }

    #[test]
    fn marks_hold_only_for_the_same_stamp() {
        let s = Stamp {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
            ctime_ns: 5,
        };
        let mut m = LineMarks::default();
        let p = Path::new("/x");
        m.add(p, s, &[(2001, 90_000), (10_000, 500_000)]);
        assert_eq!(m.nearest(p, &s, 2001), (2001, 90_000));
        assert_eq!(m.nearest(p, &s, 9_999), (2001, 90_000));
        assert_eq!(m.nearest(p, &s, 2000), (1, 0));
        let changed = Stamp { ctime_ns: 6, ..s };
        assert_eq!(m.nearest(p, &changed, 2001), (1, 0));
    }
}
