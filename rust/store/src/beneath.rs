//! Files yuyao itself writes into folders the agent can write (the trace under the project,
//! `.git/info/exclude`, …) are opened beneath a trusted root without following any symbolic
//! link below it: each folder is opened with `openat(…, O_NOFOLLOW | O_DIRECTORY)` from the
//! previous one, and the file itself with `O_NOFOLLOW`. A link the agent planted (or a
//! repository committed) anywhere on the way is an error, never a write elsewhere; there is
//! no window between a check and the open, because the check is the open.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// How the last component is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Append, creating the file when missing.
    Append,
    /// Truncate, creating the file when missing.
    Truncate,
}

fn cstr(name: &std::ffi::OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// The error for a link (or other non-folder) found on the way.
fn link_error(root: &Path, upto: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is a symbolic link or not a folder (beneath {}): refused",
        root.join(upto).display(),
        root.display()
    ))
}

/// Opens `dir` (relative, no `..`) beneath `root` as a folder descriptor, creating missing
/// folders when `create`; any symbolic link on the way is refused.
fn open_dir_beneath(root: &Path, dir: &Path, create: bool) -> io::Result<OwnedFd> {
    if create {
        // The root is trusted (the project, an out-dir, `~/.yuyao`): made as usual.
        std::fs::create_dir_all(root)?;
    }
    let root_c = cstr(root.as_os_str())?;
    // SAFETY: a valid NUL-terminated path; the descriptor is owned below.
    let fd = unsafe {
        libc::open(
            root_c.as_ptr(),
            libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let mut cur = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut walked = std::path::PathBuf::new();
    for comp in dir.components() {
        let Component::Normal(name) = comp else {
            if matches!(comp, Component::CurDir) {
                continue;
            }
            return Err(io::Error::other(format!(
                "{} leaves {}: refused",
                dir.display(),
                root.display()
            )));
        };
        walked.push(name);
        let c = cstr(name)?;
        use std::os::fd::AsRawFd;
        if create {
            // SAFETY: valid descriptor and NUL-terminated name.
            let r = unsafe { libc::mkdirat(cur.as_raw_fd(), c.as_ptr(), 0o755) };
            if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::AlreadyExists {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: as above.
        let next = unsafe {
            libc::openat(
                cur.as_raw_fd(),
                c.as_ptr(),
                libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if next < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => link_error(root, &walked),
                _ => e,
            });
        }
        // SAFETY: freshly opened, owned here.
        cur = unsafe { OwnedFd::from_raw_fd(next) };
    }
    Ok(cur)
}

/// Opens `rel` beneath `root` for writing with no symbolic link followed below `root`
/// (missing folders are created when `create_dirs`). `rel` may also be an absolute path
/// inside `root`.
pub fn open(root: &Path, rel: &Path, mode: Mode, create_dirs: bool) -> io::Result<File> {
    let rel = rel.strip_prefix(root).unwrap_or(rel);
    if rel.is_absolute() {
        return Err(io::Error::other(format!(
            "{} is not beneath {}: refused",
            rel.display(),
            root.display()
        )));
    }
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let dir = open_dir_beneath(root, parent, create_dirs)?;
    let c = cstr(name)?;
    let extra = match mode {
        Mode::Append => libc::O_APPEND,
        Mode::Truncate => libc::O_TRUNC,
    };
    use std::os::fd::AsRawFd;
    // SAFETY: valid descriptor and NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC | extra,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other(format!(
                "{} is a symbolic link: refused",
                root.join(rel).display()
            )),
            _ => e,
        });
    }
    // SAFETY: freshly opened, owned by the File.
    let file = unsafe { File::from_raw_fd(fd) };
    // A FIFO or device would block or write elsewhere: only regular files.
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file: refused",
            root.join(rel).display()
        )));
    }
    Ok(file)
}

/// Creates `rel` (and missing folders) beneath `root` with no symbolic link followed.
pub fn create_dir_all(root: &Path, rel: &Path) -> io::Result<()> {
    let rel = rel.strip_prefix(root).unwrap_or(rel);
    open_dir_beneath(root, rel, true).map(drop)
}

/// Writes `path` atomically beneath the first of `roots` that holds it: a temporary file
/// made with `O_EXCL | O_NOFOLLOW` in the folder opened without following links, then
/// renamed over the name in that same folder (a link at the name is replaced, not followed).
pub fn write_atomic(roots: &[&Path], path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(roots, path, bytes, true)
}

/// [`write_atomic`] without the `fsync` of each file: for a restore of many files, which
/// makes them durable at once afterwards ([`sync_fs`]).
pub fn write_atomic_unsynced(roots: &[&Path], path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(roots, path, bytes, false)
}

/// Flushes the file system holding `dir` (`syncfs`): one call after many unsynced writes.
pub fn sync_fs(dir: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let d = File::open(dir)?;
    // SAFETY: a valid descriptor.
    if unsafe { libc::syncfs(d.as_raw_fd()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn write_atomic_with(roots: &[&Path], path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let root = roots
        .iter()
        .find(|r| path.starts_with(r))
        .ok_or_else(|| io::Error::other(format!("{} is outside its folder", path.display())))?;
    let rel = path.strip_prefix(root).unwrap_or(path);
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let dir = open_dir_beneath(root, rel.parent().unwrap_or(Path::new("")), true)?;
    let tmp = cstr(std::ffi::OsStr::new(&format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        uuid::Uuid::new_v4().simple()
    )))?;
    let target = cstr(name)?;
    // SAFETY: valid descriptor and NUL-terminated name.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            tmp.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o644 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: freshly opened, owned by the File.
    let mut file = unsafe { File::from_raw_fd(fd) };
    let written = file
        .write_all(bytes)
        .and_then(|_| if sync { file.sync_all() } else { Ok(()) });
    // SAFETY: both names are relative to the same valid folder descriptor.
    let renamed = written.and_then(|_| {
        let r = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                tmp.as_ptr(),
                dir.as_raw_fd(),
                target.as_ptr(),
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    });
    if renamed.is_err() {
        // SAFETY: as above.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
    }
    renamed
}

/// A folder opened beneath a root with no link followed, for many operations on the files in
/// it (a restore of a large batch opens each folder once, not once per file).
pub struct Folder(OwnedFd);

impl Folder {
    /// Opens `dir` (absolute under `root`, or relative to it).
    pub fn open(root: &Path, dir: &Path) -> io::Result<Folder> {
        let rel = dir.strip_prefix(root).unwrap_or(dir);
        open_dir_beneath(root, rel, false).map(Folder)
    }

    /// The bytes of the file `name` in it, opened with `O_NOFOLLOW`: `Ok(None)` when it is
    /// absent, or is a link (not the file a batch wrote).
    pub fn read(&self, name: &std::ffi::OsStr) -> io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let c = cstr(name)?;
        // SAFETY: valid descriptor and NUL-terminated name; the result is owned below.
        let fd = unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ELOOP) => Ok(None),
                _ => Err(e),
            };
        }
        // SAFETY: freshly opened, owned by the File.
        let mut f = unsafe { File::from_raw_fd(fd) };
        let meta = f.metadata()?;
        if !meta.is_file() {
            return Ok(None);
        }
        // Sized by this fstat and read through `take`: `File::read_to_end` would stat the file
        // and seek again, two more calls per file of a thousand-file /undo.
        let mut out = Vec::with_capacity(meta.len() as usize + 1);
        (&mut f).take(u64::MAX).read_to_end(&mut out)?;
        Ok(Some(out))
    }

    /// Removes the file `name` in it (a link at the name is removed, not followed). A missing
    /// file is not an error.
    pub fn remove(&self, name: &std::ffi::OsStr) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let c = cstr(name)?;
        // SAFETY: valid descriptor and NUL-terminated name.
        if unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), 0) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::NotFound {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Removes the file `path` beneath `root` with no symbolic link followed on the way (a link
/// at the name itself is removed, not its target). A missing file or folder is not an error.
pub fn remove_file(root: &Path, path: &Path) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let rel = path.strip_prefix(root).unwrap_or(path);
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let dir = match open_dir_beneath(root, rel.parent().unwrap_or(Path::new("")), false) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    let c = cstr(name)?;
    // SAFETY: valid descriptor and NUL-terminated name.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::NotFound {
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_plain_path_is_created_and_appended() {
        let d = tempfile::tempdir().unwrap();
        let mut f = open(d.path(), Path::new("a/b/t.jsonl"), Mode::Append, true).unwrap();
        f.write_all(b"x\n").unwrap();
        let mut f = open(d.path(), &d.path().join("a/b/t.jsonl"), Mode::Append, true).unwrap();
        f.write_all(b"y\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("a/b/t.jsonl")).unwrap(),
            "x\ny\n"
        );
    }

    #[test]
    fn a_linked_folder_or_file_is_refused_and_nothing_is_written_through_it() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), d.path().join(".trajectory")).unwrap();
        let e = open(
            d.path(),
            Path::new(".trajectory/t.jsonl"),
            Mode::Append,
            true,
        )
        .unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::fs::write(outside.path().join("bashrc"), "safe\n").unwrap();
        symlink(outside.path().join("bashrc"), d.path().join("real/t.jsonl")).unwrap();
        let e = open(d.path(), Path::new("real/t.jsonl"), Mode::Append, true).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("bashrc")).unwrap(),
            "safe\n"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        assert!(create_dir_all(d.path(), Path::new(".trajectory/x")).is_err());
        assert!(!outside.path().join("x").exists());
    }

    #[test]
    fn an_atomic_write_under_a_linked_folder_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), d.path().join("memory")).unwrap();
        let e = write_atomic(&[d.path()], &d.path().join("memory/today.md"), b"x").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // A link at the name itself is replaced by the file, its target untouched.
        std::fs::write(outside.path().join("rc"), "rc\n").unwrap();
        symlink(outside.path().join("rc"), d.path().join("MEMORY.md")).unwrap();
        write_atomic(&[d.path()], &d.path().join("MEMORY.md"), b"mem\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("rc")).unwrap(),
            "rc\n"
        );
        assert!(!d.path().join("MEMORY.md").is_symlink());
    }
}
