//! The spawn helper as an executable: the bytes the build embedded (see build.rs), written
//! once per process into a sealed, anonymous memory file (`memfd`), run as
//! `/proc/self/fd/<n>`.
//!
//! Nothing is looked up on disk: no PATH, no working directory, no folder someone could plant
//! a look-alike in or make writable, no file to verify before each use. The memory file is
//! sealed (no write, resize or mode change), readable and executable by its owner only, and
//! close-on-exec: no command inherits it. If the kernel refuses to execute memory files
//! (`vm.memfd_noexec = 2`) or the helper cannot run for another reason, commands go back to
//! the fork path with a one-time warning (`yuyao sandbox list` says which path is in use).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

static BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/yuyao-sandbox-exec"));

/// The helper ready to run.
#[derive(Debug)]
pub(crate) struct HelperExe {
    /// Never closed by us: if the host closes descriptors it does not own (some daemons close
    /// everything), the number may be someone else's by the time we would close it.
    fd: std::mem::ManuallyDrop<OwnedFd>,
    /// What `fd` was when we made it (device, inode).
    id: (u64, u64),
    /// `/proc/self/fd/<n>`.
    pub path: CString,
}

impl HelperExe {
    /// Whether `fd` still is our memory file: never execute whatever a host put at that
    /// number after closing ours.
    fn intact(&self) -> bool {
        file_id(self.fd.as_raw_fd()) == Some(self.id)
    }
}

fn file_id(fd: std::os::fd::RawFd) -> Option<(u64, u64)> {
    // SAFETY: fstat fills the zeroed struct it is given.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev, st.st_ino))
    }
}

/// `None`: not tried yet; `Some(Err)`: unavailable, and why.
static STATE: Mutex<Option<Result<Arc<HelperExe>, String>>> = Mutex::new(None);

const MFD_EXEC: libc::c_uint = 0x10; // Linux 6.3: say that the file is meant to be executed
const F_SEAL_EXEC: libc::c_int = 0x20; // Linux 6.3: the mode cannot change either

/// The helper, made on first use; `None` when it cannot be used (see [`status`]).
pub(crate) fn get() -> Option<Arc<HelperExe>> {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(Ok(h)) = g.as_ref()
        && !h.intact()
    {
        *g = None; // made again below
    }
    if g.is_none() {
        let made = make();
        if let Err(e) = &made {
            warn(e);
        }
        *g = Some(made.map(Arc::new));
    }
    g.as_ref().and_then(|r| r.as_ref().ok().cloned())
}

/// Whether the helper is in use, or why not.
pub(crate) fn status() -> Result<(), String> {
    let _ = get();
    match STATE.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        Some(Err(e)) => Err(e.clone()),
        _ => Ok(()),
    }
}

/// The helper could not be started: later commands take the fork path.
pub(crate) fn broken(why: String) {
    warn(&why);
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Err(why));
}

fn warn(why: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        eprintln!(
            "yuyao: warning: the sandbox spawn helper is unavailable ({why}); tool commands \
             start by forking yuyao instead, which is slower when yuyao's process is large"
        )
    });
}

fn make() -> Result<HelperExe, String> {
    let name = c"yuyao-sandbox-exec";
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // SAFETY: a NUL-terminated name; the descriptor is ours.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), base | MFD_EXEC) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // Before Linux 6.3 every memory file is executable and MFD_EXEC is unknown.
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), base) };
    }
    if fd < 0 {
        return Err(format!(
            "cannot create its memory file: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, BYTES)
        .map_err(|e| format!("cannot write its memory file: {e}"))?;
    let fd = OwnedFd::from(file);
    let raw = fd.as_raw_fd();
    // SAFETY: fchmod/fcntl on our descriptor.
    unsafe {
        if libc::fchmod(raw, 0o500) != 0 {
            return Err(format!(
                "cannot set its mode: {}",
                std::io::Error::last_os_error()
            ));
        }
        let seals =
            libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
        if libc::fcntl(raw, libc::F_ADD_SEALS, seals | F_SEAL_EXEC) != 0
            && libc::fcntl(raw, libc::F_ADD_SEALS, seals) != 0
        {
            return Err(format!(
                "cannot seal its memory file: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    let path = CString::new(format!("/proc/self/fd/{raw}")).expect("no NUL in a number");
    let id = file_id(raw).ok_or_else(|| "cannot stat its memory file".to_string())?;
    Ok(HelperExe {
        fd: std::mem::ManuallyDrop::new(fd),
        id,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_descriptor_reused_by_the_host_is_never_executed() {
        let h = get().expect("helper available");
        let forged = HelperExe {
            fd: std::mem::ManuallyDrop::new(std::fs::File::open("/dev/null").unwrap().into()),
            id: h.id,
            path: h.path.clone(),
        };
        assert!(h.intact());
        assert!(
            !forged.intact(),
            "another file at a descriptor is not the helper"
        );
        drop(std::mem::ManuallyDrop::into_inner(forged.fd));
    }

    #[test]
    fn the_memory_file_is_sealed_and_private() {
        let h = get().expect("helper available");
        let path = h.path.to_str().unwrap();
        let meta = std::fs::metadata(path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o500);
        assert_eq!(meta.len() as usize, BYTES.len());
        // Sealed: not even its owner can change it. (Checked on a read-only descriptor: a
        // writable one, even briefly, would make a concurrent exec fail with ETXTBSY.)
        let f = std::fs::File::open(path).unwrap();
        // SAFETY: F_GET_SEALS on a live descriptor.
        let seals = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GET_SEALS) };
        for seal in [libc::F_SEAL_WRITE, libc::F_SEAL_GROW, libc::F_SEAL_SEAL] {
            assert!(seals >= 0 && seals & seal != 0, "seals {seals:#x}");
        }
    }
}
