//! Confining the calling process: the one implementation, run by the helper before it execs
//! the command and by yuyao's fork path between fork and exec. System calls on prepared data
//! only (no allocation, no lock): async-signal-safe in a forked child of a multi-threaded host.

use crate::wire::SockFilter;
use std::os::fd::RawFd;

/// Which step failed (reported to yuyao with the `errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// The request could not be read.
    Request = 1,
    /// yuyao was gone before the process could tie itself to it.
    Parent = 2,
    Cwd = 3,
    Namespaces = 4,
    NoNewPrivs = 5,
    Landlock = 6,
    Seccomp = 7,
    Exec = 8,
    Capabilities = 9,
}

impl Stage {
    pub fn from_u8(b: u8) -> Option<Stage> {
        use Stage::*;
        [
            Request,
            Parent,
            Cwd,
            Namespaces,
            NoNewPrivs,
            Landlock,
            Seccomp,
            Exec,
            Capabilities,
        ]
        .into_iter()
        .find(|s| *s as u8 == b)
    }

    /// What could not be done, for the error yuyao reports.
    pub fn what(self) -> &'static str {
        match self {
            Stage::Request => "the sandbox helper could not read its instructions",
            Stage::Parent => "yuyao ended before the command started",
            Stage::Cwd => "cannot enter the working directory",
            Stage::Namespaces => "cannot join the sandbox namespaces",
            Stage::NoNewPrivs => "cannot set no_new_privs",
            Stage::Landlock => "cannot apply the Landlock sandbox",
            Stage::Seccomp => "cannot install the seccomp filter",
            Stage::Exec => "cannot execute the command",
            Stage::Capabilities => "cannot drop the capabilities",
        }
    }
}

/// A step that failed and its `errno`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub stage: Stage,
    pub errno: i32,
}

impl Failure {
    fn last(stage: Stage) -> Failure {
        Failure {
            stage,
            errno: std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        }
    }

    /// The 5 bytes the helper writes back to yuyao.
    pub fn to_bytes(self) -> [u8; 5] {
        let mut m = [0u8; 5];
        m[0] = self.stage as u8;
        m[1..].copy_from_slice(&self.errno.to_le_bytes());
        m
    }

    pub fn from_bytes(b: &[u8]) -> Option<Failure> {
        if b.len() != 5 {
            return None;
        }
        Some(Failure {
            stage: Stage::from_u8(b[0])?,
            errno: i32::from_le_bytes([b[1], b[2], b[3], b[4]]),
        })
    }

    pub fn to_io_error(self) -> std::io::Error {
        let os = std::io::Error::from_raw_os_error(self.errno);
        std::io::Error::new(os.kind(), format!("{}: {os}", self.stage.what()))
    }
}

/// The namespaces a confined process joins (those of a holder yuyao keeps per plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Namespaces {
    /// The user namespace (unprivileged users), or -1.
    pub user: RawFd,
    /// The mount namespace; -1 means it was asked for but none was prepared, and the process
    /// refuses to run rather than run without it.
    pub mnt: RawFd,
}

/// Everything [`confine_self`] applies, in the order it applies it.
#[derive(Debug, Clone, Copy)]
pub struct Steps<'a> {
    /// yuyao's pid: checked after the parent-death signal is set, unless `namespaces` is
    /// given (born in a PID namespace, the parent is outside it and `getppid()` is 0; the
    /// namespace's PID 1 dies with yuyao and takes everything in it along).
    pub parent: libc::pid_t,
    pub namespaces: Option<Namespaces>,
    pub no_new_privs: bool,
    /// Confined: a UTS namespace of its own and no capability left in any set (DESIGN §5:
    /// root inside the sandbox is root without privileges).
    pub drop_caps: bool,
    /// The Landlock ruleset, or -1.
    pub ruleset: RawFd,
    pub filter: &'a [SockFilter],
}

const SYS_LANDLOCK_RESTRICT_SELF: libc::c_long = 446;

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

/// Confines the calling process: parent-death signal, namespaces (the working directory is
/// entered again through the new mounts), a UTS namespace and no capabilities,
/// `no_new_privs`, Landlock, seccomp.
pub fn confine_self(s: &Steps) -> Result<(), Failure> {
    // Dies with yuyao: the parent-death signal follows the thread that started this process,
    // which is yuyao's long-lived spawner thread.
    // SAFETY: prctl on the calling process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    match s.namespaces {
        Some(ns) => join(ns)?,
        // SAFETY: getppid cannot fail.
        None if unsafe { libc::getppid() } != s.parent => {
            return Err(Failure {
                stage: Stage::Parent,
                errno: libc::ESRCH,
            });
        }
        None => {}
    }
    if s.drop_caps {
        own_uts_namespace();
        drop_capabilities()?;
    }
    if s.no_new_privs {
        // SAFETY: plain prctl on the calling thread.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(Failure::last(Stage::NoNewPrivs));
        }
    }
    if s.ruleset >= 0 {
        // SAFETY: a Landlock ruleset descriptor held by the caller.
        let r = unsafe { libc::syscall(SYS_LANDLOCK_RESTRICT_SELF, s.ruleset, 0u32) };
        if r != 0 {
            return Err(Failure::last(Stage::Landlock));
        }
    }
    if !s.filter.is_empty() {
        let prog = SockFprog {
            len: s.filter.len() as u16,
            filter: s.filter.as_ptr(),
        };
        // SAFETY: prog points at the caller's filter, alive for the call; no_new_privs is set.
        let r = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const SockFprog,
                0,
                0,
            )
        };
        if r != 0 {
            return Err(Failure::last(Stage::Seccomp));
        }
    }
    Ok(())
}

/// A host name of its own: `sethostname` inside changes nothing outside. Best effort: it
/// fails only without `CAP_SYS_ADMIN`, and then (as after [`drop_capabilities`]) the process
/// cannot change the host name at all.
fn own_uts_namespace() {
    // SAFETY: unshare of the calling process.
    unsafe { libc::unshare(libc::CLONE_NEWUTS) };
}

const CAP_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Empties the bounding, ambient, effective, permitted and inheritable capability sets, so
/// neither this process nor anything it execs holds a capability (root included: `execve`
/// grants root only what the bounding set still has).
fn drop_capabilities() -> Result<(), Failure> {
    // SAFETY: prctl and capset on the calling thread, with our stack structures.
    unsafe {
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 {
                continue;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                // Past the kernel's last capability.
                Some(libc::EINVAL) => break,
                // No CAP_SETPCAP: a process that is not root gains nothing at exec (and
                // no_new_privs stops file capabilities); root without it would.
                Some(libc::EPERM) if libc::geteuid() != 0 => break,
                _ => return Err(Failure::last(Stage::Capabilities)),
            }
        }
        // Fails only on kernels without ambient capabilities (< 4.3), which have none.
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        let none = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()) != 0 {
            return Err(Failure::last(Stage::Capabilities));
        }
    }
    Ok(())
}

/// Joins the holder's user (if any) and mount namespace, and enters the working directory
/// again through its mounts (the root when it is not there).
fn join(ns: Namespaces) -> Result<(), Failure> {
    if ns.mnt < 0 {
        // Namespaces were asked for but none was prepared: never run unconfined.
        return Err(Failure {
            stage: Stage::Namespaces,
            errno: libc::ENOTSUP,
        });
    }
    let mut buf = [0u8; 4096];
    // SAFETY: getcwd writes into our stack buffer; setns/chdir take live descriptors and a
    // NUL-terminated path.
    unsafe {
        let have_cwd = !libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null();
        if ns.user >= 0 && libc::setns(ns.user, libc::CLONE_NEWUSER) != 0 {
            return Err(Failure::last(Stage::Namespaces));
        }
        if libc::setns(ns.mnt, libc::CLONE_NEWNS) != 0 {
            return Err(Failure::last(Stage::Namespaces));
        }
        if have_cwd && libc::chdir(buf.as_ptr().cast()) != 0 {
            libc::chdir(c"/".as_ptr());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_round_trip() {
        let f = Failure {
            stage: Stage::Landlock,
            errno: libc::EPERM,
        };
        assert_eq!(Failure::from_bytes(&f.to_bytes()), Some(f));
        assert_eq!(Failure::from_bytes(&[99, 0, 0, 0, 0]), None);
        assert_eq!(Failure::from_bytes(&[1, 0]), None);
        let e = f.to_io_error().to_string();
        assert!(e.contains("Landlock") && e.contains("not permitted"), "{e}");
    }
}
