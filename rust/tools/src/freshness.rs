//! Read-before-write freshness: what the session knows about a file it read or wrote, and the
//! check an edit makes before changing it.
//!
//! A read records the file's [`Stamp`] — device, inode, size, mtime and ctime with their
//! nanoseconds — taken with `fstat` on the descriptor it reads from, before reading. The
//! whole content is hashed (SHA-256) only when the bytes pass by anyway: a read that covered
//! the file, the session's own writes (it holds the bytes), a racy stamp (below). A page read
//! of a large file therefore costs the page, not the file.
//!
//! An edit compares the file's stamp now with the one recorded:
//! - equal, and the stamp was not racy → fresh, no hashing;
//! - different (or racy) → the content is hashed and compared with the recorded hash; with no
//!   recorded hash (a page read) the edit is refused: a metadata mismatch never lets a stale
//!   edit through, it either proves the content equal or asks for a new read.
//!
//! What is detected: any content change through the file system updates ctime, which no
//! unprivileged process can set back (`touch -d` and `utimensat` restore mtime, not ctime,
//! and themselves bump ctime); a replacement (rename over, delete and recreate) changes the
//! inode or ctime. So an out-of-band change with the same size and a restored mtime is caught.
//! What is not: a change made within the same timestamp tick as the stamp was taken would keep
//! ctime. A stamp whose ctime is within [`RACY_WINDOW`] of the moment it was taken (2 s on
//! file systems whose timestamps have whole seconds) is therefore *racy*: it is never trusted
//! alone, the content hash decides. Setting the system clock back (root) is out of scope.

use sha2::{Digest, Sha256};
use std::time::SystemTime;

pub use yuyao_protocol::stamp::{RACY_WINDOW, Stamp};

/// What the session knows about a file it has read or written (for read-before-write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileKnowledge {
    pub stamp: Stamp,
    /// The stamp alone does not prove the content unchanged (taken too close to a change).
    pub racy: bool,
    /// SHA-256 of the whole content seen, when it was seen whole.
    pub hash: Option<[u8; 32]>,
    pub read_in_full: bool,
}

impl FileKnowledge {
    /// Knowledge from a stamp taken now.
    pub fn new(stamp: Stamp, hash: Option<[u8; 32]>, read_in_full: bool) -> FileKnowledge {
        FileKnowledge {
            stamp,
            racy: stamp.racy_at(SystemTime::now()),
            hash,
            read_in_full,
        }
    }
}

/// SHA-256 of `bytes`.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Whether a file now stamped `now` and holding `current` is the one `known` describes:
/// `Ok(())`, or why not.
pub fn verify(known: &FileKnowledge, now: &Stamp, current: &[u8]) -> Result<(), Stale> {
    verify_hashed(known, now, || content_hash(current))
}

/// [`verify`] with the current content given by its hash, computed only when the stamp does
/// not decide (the caller may already hold it: the snapshot hashed the same bytes).
pub fn verify_hashed(
    known: &FileKnowledge,
    now: &Stamp,
    current: impl FnOnce() -> [u8; 32],
) -> Result<(), Stale> {
    if *now == known.stamp && !known.racy {
        return Ok(());
    }
    match known.hash {
        Some(h) if h == current() => Ok(()),
        Some(_) => Err(Stale::Content),
        None => Err(Stale::Metadata),
    }
}

/// Why an edit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stale {
    /// The content differs from what was read.
    Content,
    /// The metadata differs and only part of the file was read, so nothing proves the content
    /// the same.
    Metadata,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

    fn stamp_of(p: &Path) -> Stamp {
        Stamp::of_path(p).unwrap()
    }

    #[test]
    fn a_restored_mtime_with_the_same_size_is_still_a_change() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.txt");
        std::fs::write(&p, "aaaa\n").unwrap();
        let old = std::fs::metadata(&p).unwrap().modified().unwrap();
        // A page read: no hash; taken well after the change.
        let known = FileKnowledge {
            stamp: stamp_of(&p),
            racy: false,
            hash: None,
            read_in_full: false,
        };
        std::thread::sleep(Duration::from_millis(20));
        // Same size, in place (same inode), mtime set back to what it was.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"bbbb\n"))
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let now = stamp_of(&p);
        assert_eq!(
            (now.ino, now.size, now.mtime_ns),
            (known.stamp.ino, 5, known.stamp.mtime_ns)
        );
        assert_eq!(verify(&known, &now, b"bbbb\n"), Err(Stale::Metadata));
        // With the hash of what was read, the content decides.
        let hashed = FileKnowledge {
            hash: Some(content_hash(b"aaaa\n")),
            ..known.clone()
        };
        assert_eq!(verify(&hashed, &now, b"bbbb\n"), Err(Stale::Content));
        assert_eq!(verify(&hashed, &now, b"aaaa\n"), Ok(()));
    }

    #[test]
    fn a_racy_stamp_is_not_trusted_alone() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.txt");
        std::fs::write(&p, "x").unwrap();
        let s = stamp_of(&p);
        assert!(s.racy_at(SystemTime::now()));
        assert!(!s.racy_at(SystemTime::now() + Duration::from_secs(3)));
        let known = FileKnowledge {
            stamp: s,
            racy: true,
            hash: Some(content_hash(b"x")),
            read_in_full: true,
        };
        // Same stamp, other bytes (a change in the same tick): the hash catches it.
        assert_eq!(verify(&known, &s, b"y"), Err(Stale::Content));
        assert_eq!(verify(&known, &s, b"x"), Ok(()));
        let untrusted = FileKnowledge {
            hash: None,
            ..known
        };
        assert_eq!(verify(&untrusted, &s, b"x"), Err(Stale::Metadata));
    }
}
