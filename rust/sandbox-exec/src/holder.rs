//! A namespace holder (see `yuyao_policy::namespaces`): new PID and mount namespaces (and a
//! user namespace for unprivileged users) whose PID 1 builds the mounts of a plan once and
//! then only reaps orphans; every confined command of that plan joins them.
//!
//! [`HolderPlan::hold`] is the holder's `outer` process. It runs in the spawn helper (started
//! with `posix_spawn`, so creating a namespace does not fork yuyao either) or, on the fork
//! path, in a forked child of yuyao: system calls on prepared data only.
//!
//! It reports on `report` in 5-byte messages (tag, little-endian i32): `P` the PID 1's pid,
//! `R` the mounts are ready, `E` an `errno`; then it closes every descriptor, so EOF follows.

use crate::wire::{self, HOLD, Reader, put_bytes, put_list};
use std::ffi::{CStr, CString};
use std::os::fd::RawFd;

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: libc::c_uint = 0x8000;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// What the namespace looks like, prepared by yuyao (paths resolved, ordered).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HolderPlan {
    /// yuyao's pid: the holder dies with it and refuses to start if it is already gone.
    pub parent: i32,
    /// Mount namespace with read-only binds (only for file-system confinement).
    pub mounts: bool,
    /// Folders that stay writable, outermost first.
    pub writable: Vec<CString>,
    /// Bind mounts in order: the writable folders, then writable folders inside protected
    /// ones (bound again after the protection).
    pub binds: Vec<CString>,
    /// Paths inside writable folders that stay read-only (control files, `Edit` denies).
    pub protected: Vec<CString>,
    /// Files and folders masked for reading (`Read` denies): /dev/null or an empty tmpfs.
    pub masked_files: Vec<CString>,
    pub masked_dirs: Vec<CString>,
    /// Unprivileged users need a user namespace to own the others: `uid_map`, `gid_map`.
    pub user_maps: Option<(Vec<u8>, Vec<u8>)>,
}

impl HolderPlan {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = wire::begin(HOLD);
        out.extend_from_slice(&self.parent.to_le_bytes());
        out.push(self.mounts as u8);
        for list in [
            &self.writable,
            &self.binds,
            &self.protected,
            &self.masked_files,
            &self.masked_dirs,
        ] {
            put_list(&mut out, list);
        }
        match &self.user_maps {
            Some((u, g)) => {
                out.push(1);
                put_bytes(&mut out, u);
                put_bytes(&mut out, g);
            }
            None => out.push(0),
        }
        wire::finish(out)
    }

    pub fn decode(bytes: &[u8]) -> Option<HolderPlan> {
        let mut r = Reader::open(bytes, HOLD)?;
        let parent = i32::from_le_bytes(r.take(4)?.try_into().ok()?);
        let mounts = r.take(1)?[0] != 0;
        let writable = r.list()?;
        let binds = r.list()?;
        let protected = r.list()?;
        let masked_files = r.list()?;
        let masked_dirs = r.list()?;
        let user_maps = match r.take(1)?[0] {
            0 => None,
            _ => Some((r.bytes()?.to_vec(), r.bytes()?.to_vec())),
        };
        // The writable folders come first among the binds.
        if !r.done() || binds.len() < writable.len() {
            return None;
        }
        Some(HolderPlan {
            parent,
            mounts,
            writable,
            binds,
            protected,
            masked_files,
            masked_dirs,
            user_maps,
        })
    }

    /// Becomes the holder's `outer` process: new namespaces, a PID 1 that mounts and reaps,
    /// then waits for it (and dies with yuyao). Never returns.
    pub fn hold(&self, report: RawFd) -> ! {
        // SAFETY: system calls only, on prepared data.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != self.parent {
                libc::_exit(1);
            }
            for sig in 1..32 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            let fail = |w| -> ! {
                write_msg(
                    w,
                    b'E',
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                );
                libc::_exit(1)
            };
            let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
            if self.user_maps.is_some() {
                flags |= libc::CLONE_NEWUSER;
            }
            if libc::unshare(flags) != 0 {
                fail(report);
            }
            if let Some((uid_map, gid_map)) = &self.user_maps
                && (write_file(c"/proc/self/setgroups", b"deny").is_err()
                    || write_file(c"/proc/self/uid_map", uid_map).is_err()
                    || write_file(c"/proc/self/gid_map", gid_map).is_err())
            {
                fail(report);
            }
            let init = libc::fork();
            if init < 0 {
                fail(report);
            }
            if init == 0 {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if self.mount_all().is_err() {
                    fail(report);
                }
                write_msg(report, b'R', 0);
                libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
                // PID 1: commands that joined and left orphans behind are reaped here.
                let pause = libc::timespec {
                    tv_sec: 1,
                    tv_nsec: 0,
                };
                loop {
                    while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
            }
            write_msg(report, b'P', init);
            libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
            let mut status = 0;
            while libc::waitpid(init, &mut status, 0) < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            libc::_exit(0);
        }
    }

    fn mount_all(&self) -> std::io::Result<()> {
        // Nothing done here propagates back to the host's mounts.
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)?;
        // A /proc of this PID namespace only.
        mount(
            Some(c"proc"),
            c"/proc",
            Some(c"proc"),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        )?;
        if !self.mounts {
            return Ok(());
        }
        let first = self.writable.len();
        for w in &self.binds[..first] {
            bind(w, w)?;
        }
        for p in &self.protected {
            bind(p, p)?;
        }
        for w in &self.binds[first..] {
            bind(w, w)?;
        }
        for f in &self.masked_files {
            bind(c"/dev/null", f)?;
        }
        for d in &self.masked_dirs {
            mount(
                Some(c"tmpfs"),
                d,
                Some(c"tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
            )?;
        }
        // Everything read-only and without devices, then the writable folders opened again.
        setattr(c"/", true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV, 0)?;
        for w in &self.binds {
            setattr(
                w,
                false,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                MOUNT_ATTR_RDONLY,
            )?;
        }
        // Devices stay usable where they belong (/dev/null, /dev/tty); terminals (`script`,
        // Python's pty) allocate under /dev/pts.
        let _ = setattr(c"/dev", false, 0, MOUNT_ATTR_NODEV);
        let _ = setattr(c"/dev/pts", false, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV);
        // The working directory was entered before the binds: enter it again through them.
        let mut buf = [0u8; 4096];
        // SAFETY: getcwd writes at most buf.len() bytes into our stack buffer; chdir reads
        // the NUL-terminated result.
        unsafe {
            if !libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null() {
                libc::chdir(buf.as_ptr().cast());
            }
        }
        Ok(())
    }
}

/// One 5-byte report message.
pub fn write_msg(fd: RawFd, tag: u8, value: i32) {
    let mut m = [0u8; 5];
    m[0] = tag;
    m[1..].copy_from_slice(&value.to_le_bytes());
    // SAFETY: a write of our stack buffer (atomic: under PIPE_BUF).
    unsafe { libc::write(fd, m.as_ptr().cast(), m.len()) };
}

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn mount(
    src: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let p = |c: Option<&CStr>| c.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: NUL-terminated strings (or null) that outlive the call.
    check(unsafe { libc::mount(p(src), target.as_ptr(), p(fstype), flags, std::ptr::null()) })
}

fn bind(src: &CStr, target: &CStr) -> std::io::Result<()> {
    mount(Some(src), target, None, libc::MS_BIND | libc::MS_REC)
}

fn setattr(path: &CStr, recursive: bool, set: u64, clr: u64) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clr,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: attr outlives the call; size is its size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn write_file(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_round_trip_and_refuse_garbage() {
        let c = |s: &str| CString::new(s).unwrap();
        let plan = HolderPlan {
            parent: 7,
            mounts: true,
            writable: vec![c("/w")],
            binds: vec![c("/w"), c("/w/.yuyao/tmp")],
            protected: vec![c("/w/.yuyao")],
            masked_files: vec![c("/w/key")],
            masked_dirs: vec![],
            user_maps: Some((b"1000 1000 1\n".to_vec(), b"1000 1000 1\n".to_vec())),
        };
        let bytes = plan.encode();
        assert_eq!(HolderPlan::decode(&bytes), Some(plan.clone()));
        assert_eq!(wire::kind(&bytes), Some(HOLD));
        // An exec request is not a plan, nor the reverse.
        assert_eq!(crate::wire::Request::decode(&bytes), None);
        for cut in 0..bytes.len() {
            assert_eq!(HolderPlan::decode(&bytes[..cut]), None);
        }
        let fewer_binds = HolderPlan {
            binds: vec![],
            ..plan
        };
        assert_eq!(HolderPlan::decode(&fewer_binds.encode()), None);
    }
}
