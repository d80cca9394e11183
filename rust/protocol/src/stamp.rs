//! A file's identity and last change as `fstat` reports them — what read-before-write
//! (`yuyao-tools`' `freshness`) and the snapshot store compare instead of hashing content.
//!
//! Any content change through the file system updates ctime, which no unprivileged process
//! can set back; a change made within the same timestamp tick as a stamp was taken would keep
//! it, so a stamp whose ctime is that close to the moment it was taken is *racy* and never
//! vouches alone for unchanged content.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How close to the moment a stamp is taken its ctime may be before a change within the same
/// timestamp tick could go unseen (Linux file timestamps come from a clock that ticks every
/// 1–10 ms).
pub const RACY_WINDOW: Duration = Duration::from_millis(50);
/// The same for file systems with whole-second timestamps (FAT has 2 s).
const RACY_WINDOW_COARSE: Duration = Duration::from_secs(2);

/// A file's identity and last change, as `fstat` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Stamp {
    pub fn of(m: &std::fs::Metadata) -> Stamp {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        }
    }

    /// The stamp of `path` now (following nothing: the path is resolved).
    pub fn of_path(path: &Path) -> Option<Stamp> {
        std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// Whether a change right after `taken` could keep this stamp (see the module comment).
    pub fn racy_at(&self, taken: SystemTime) -> bool {
        let coarse = self.ctime_ns % 1_000_000_000 == 0 && self.mtime_ns % 1_000_000_000 == 0;
        let window = if coarse {
            RACY_WINDOW_COARSE
        } else {
            RACY_WINDOW
        };
        let taken_ns = taken
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i128)
            .unwrap_or(0);
        self.ctime_ns > taken_ns - window.as_nanos() as i128
    }
}
