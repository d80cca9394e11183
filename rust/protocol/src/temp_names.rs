//! The names of yuyao's atomic-write temporaries (`.<name>.yuyao-<12 hex>.tmp`, written next
//! to the file and renamed over it), shared by the file tools that make and sweep them and by
//! the git views that must never show one (the run's diff, its submission).

/// Whether `name` (a file name, no folder) is one of yuyao's temporary names.
pub fn is_temp_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|r| r.strip_suffix(".tmp")) else {
        return false;
    };
    match rest.rsplit_once(".yuyao-") {
        Some((base, hex)) => {
            !base.is_empty() && hex.len() == 12 && hex.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// Whether the last component of a `/`-separated path is one of yuyao's temporary names.
pub fn is_temp_path(path: &[u8]) -> bool {
    let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
    std::str::from_utf8(name).is_ok_and(is_temp_name)
}
