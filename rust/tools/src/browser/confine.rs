//! Who Chromium runs as, where its profile lives, and what environment it sees.
//!
//! Started by root, Chromium refuses its own sandbox, and `--no-sandbox` would leave a page
//! that exploits a renderer bug running as root on the host. So under root the browser runs
//! as an unprivileged user (`nobody`, 65534) from a profile folder that user owns, with
//! Chromium's own sandbox on (user namespaces and seccomp-bpf for renderers). Only where that
//! sandbox cannot start (no user namespaces) is it relaunched without it, still unprivileged,
//! and the model is told. Either way the browser starts with a small fixed environment: the
//! model's key and whatever secrets yuyao's environment holds never reach it.

use std::ffi::OsString;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// The unprivileged user (and group) the browser runs as when yuyao is root.
pub(super) const NOBODY: u32 = 65534;

/// Chromium's words when its sandbox cannot start: the cue to relaunch without it.
pub(super) const NO_SANDBOX_CUE: &str = "No usable sandbox";

/// The uid/gid the browser is switched to before exec, or `None` to keep yuyao's own.
pub(super) fn run_as() -> Option<(u32, u32)> {
    (unsafe { libc::geteuid() } == 0).then_some((NOBODY, NOBODY))
}

/// A fresh profile folder the browser's user can write. Under `run_as` it cannot be in
/// yuyao's scratch (inside `~/.yuyao`, closed to others), so it is made in the world-writable
/// sticky `/tmp`: created new (an existing name or a planted symlink fails `mkdir`), mode
/// 0700, then given to that user.
pub(super) fn profile_dir(
    scratch: &Path,
    stamp: &str,
    run_as: Option<(u32, u32)>,
) -> Result<PathBuf, String> {
    let Some((uid, gid)) = run_as else {
        let dir = scratch.join(format!("browser-profile-{stamp}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        return Ok(dir);
    };
    let dir = shared_tmp()?.join(format!("yuyao-browser-{stamp}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Err(e) = std::os::unix::fs::chown(&dir, Some(uid), Some(gid)) {
        let _ = std::fs::remove_dir(&dir);
        return Err(format!("cannot give {} to uid {uid}: {e}", dir.display()));
    }
    Ok(dir)
}

/// `/tmp` when it is what it should be (a directory, world-writable with the sticky bit).
fn shared_tmp() -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = PathBuf::from("/tmp");
    match std::fs::symlink_metadata(&tmp) {
        Ok(m) if m.is_dir() && m.permissions().mode() & 0o1777 == 0o1777 => Ok(tmp),
        _ => Err(
            "the browser needs a world-writable sticky /tmp for its unprivileged profile".into(),
        ),
    }
}

/// The browser's whole environment: a few locale and path variables from yuyao's, and a
/// home inside the profile (the unprivileged user cannot write root's).
pub(super) fn environment(profile: &Path) -> Vec<(OsString, OsString)> {
    environment_from(profile, |k| std::env::var_os(k))
}

fn environment_from(
    profile: &Path,
    get: impl Fn(&str) -> Option<OsString>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"]
        .into_iter()
        .filter_map(|k| get(k).map(|v| (OsString::from(k), v)))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    for k in ["HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"] {
        env.push((k.into(), profile.as_os_str().to_owned()));
    }
    env
}

/// In the child, before exec: drop every group and switch to `uid`/`gid` (order matters:
/// groups and gid while still root). Async-signal-safe calls only.
pub(super) fn switch_user(uid: u32, gid: u32) -> std::io::Result<()> {
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setgid(gid) != 0
            || libc::setuid(uid) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_carries_no_secret() {
        let outer = |k: &str| match k {
            "D2A_MODEL_API_KEY" | "AWS_SECRET_ACCESS_KEY" | "HOME" => Some("secret".into()),
            "LANG" => Some("C.UTF-8".into()),
            _ => None,
        };
        let env = environment_from(Path::new("/tmp/p"), outer);
        let keys: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(
            keys.iter()
                .all(|k| !k.contains("KEY") && !k.contains("SECRET"))
        );
        assert!(keys.contains(&"PATH".to_string()) && keys.contains(&"LANG".to_string()));
        assert!(env.iter().all(|(_, v)| v != "secret"));
        let home = env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.clone());
        assert_eq!(home, Some(OsString::from("/tmp/p")));
    }

    #[test]
    fn an_unprivileged_profile_never_reuses_an_existing_path() {
        if run_as().is_none() {
            return; // only root makes profiles in /tmp
        }
        let stamp = format!("test-{}", std::process::id());
        let planted = PathBuf::from(format!("/tmp/yuyao-browser-{stamp}"));
        let _ = std::fs::remove_file(&planted);
        std::os::unix::fs::symlink("/etc", &planted).unwrap();
        let got = profile_dir(Path::new("/nonexistent"), &stamp, Some((NOBODY, NOBODY)));
        std::fs::remove_file(&planted).unwrap();
        assert!(
            got.is_err(),
            "a planted symlink must not become the profile: {got:?}"
        );
        let stamp = format!("test2-{}", std::process::id());
        let dir = profile_dir(Path::new("/nonexistent"), &stamp, Some((NOBODY, NOBODY))).unwrap();
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(&dir).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o777), (NOBODY, 0o700));
    }
}
