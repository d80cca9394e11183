//! Mount and PID namespaces for tool processes (DESIGN §5, the second layer under Landlock).
//!
//! A confined command runs in a PID namespace of its own with a private `/proc` (no other process
//! of the machine is visible: not yuyao, whose memory holds the model key, nor anything a
//! tool could `kill`) and a mount namespace in which every mount is read-only except
//! the writable roots. Inside the writable roots yuyao's control files and the repository's
//! `.git/config`, `.git/hooks` and `.git/info` stay read-only (bind mounts over themselves),
//! so a tool cannot widen the next session's permissions or plant a hook the host would run.
//! Device nodes are inert everywhere (`nodev`), so `mknod` cannot reach a disk.
//!
//! The plan is built in the parent ([`NsPlan::new`]). The spawner thread keeps one namespace
//! per plan ([`Holders`]): a holder's PID 1 builds the mounts once ([`NsPlan::mount_all`]) and
//! then only reaps; each command is forked straight into the holder's PID namespace and joins
//! its mount namespace in `pre_exec` ([`NsSlot::join`], system calls on prepared data only).
//! The holder dies with yuyao (`PR_SET_PDEATHSIG`), and with its PID 1 everything inside.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

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

/// What the namespace looks like, prepared in the parent.
#[derive(Debug)]
pub struct NsPlan {
    /// Mount namespace with read-only binds (only for file-system confinement).
    mounts: bool,
    /// Folders that stay writable, outermost first.
    writable: Vec<CString>,
    /// Bind mounts in order: the writable folders, then writable folders inside protected
    /// ones (bound again after the protection).
    binds: Vec<CString>,
    /// Paths inside writable folders that stay read-only (control files, `Edit` denies).
    protected: Vec<CString>,
    /// Files and folders masked for reading (`Read` denies): /dev/null or an empty tmpfs.
    masked_files: Vec<CString>,
    masked_dirs: Vec<CString>,
    /// Unprivileged users need a user namespace to own the others.
    user_ns: Option<UserMaps>,
}

#[derive(Debug)]
struct UserMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

fn cstr(p: &Path) -> Option<CString> {
    CString::new(p.as_os_str().as_bytes()).ok()
}

/// Paths under `root` that a tool must not write even though `root` is writable.
pub fn protected_within(root: &Path) -> Vec<PathBuf> {
    [
        ".yuyao",
        ".git/config",
        ".git/hooks",
        ".git/info",
        ".mcp.json",
        // Hooks run with the user's rights; Claude Code's permission lists are rules.
        "hooks.json",
        ".claude/settings.json",
        ".claude/settings.local.json",
    ]
    .iter()
    .map(|rel| root.join(rel))
    .filter(|p| p.symlink_metadata().is_ok())
    .collect()
}

impl NsPlan {
    /// `mounts`: confine the file system (read-only outside `writable`); `home`: yuyao's own
    /// folder, read-only even when it lies inside a writable folder (writable folders inside
    /// it, the session's scratch, stay writable).
    pub fn new(
        mounts: bool,
        writable: &[PathBuf],
        home: Option<&Path>,
        deny_read: &[PathBuf],
        deny_write: &[PathBuf],
    ) -> NsPlan {
        // Shared memory is scratch space like a temp folder (Python's multiprocessing needs it).
        let shm = PathBuf::from("/dev/shm");
        let mut w: Vec<PathBuf> = writable
            .iter()
            .chain([&shm])
            .filter(|p| p.is_dir() && p.as_path() != Path::new("/"))
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        w.sort_by_key(|p| p.components().count());
        w.dedup();
        let mut protected: Vec<PathBuf> = Vec::new();
        for root in &w {
            protected.extend(protected_within(root));
        }
        if let Some(h) = home.and_then(|h| h.canonicalize().ok())
            && w.iter().any(|root| h.starts_with(root))
        {
            protected.push(h);
        }
        protected.extend(deny_write.iter().filter(|p| p.exists()).cloned());
        protected.sort_by_key(|p| p.components().count());
        protected.dedup();
        // Writable folders inside a protected one are bound again after the protection.
        let again: Vec<PathBuf> = w
            .iter()
            .filter(|p| protected.iter().any(|q| p.starts_with(q)))
            .cloned()
            .collect();
        let mut binds = w.clone();
        binds.extend(again);
        // SAFETY: geteuid/getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let user_ns = (uid != 0).then(|| UserMaps {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        });
        NsPlan {
            mounts,
            writable: w.iter().filter_map(|p| cstr(p)).collect(),
            binds: binds.iter().filter_map(|p| cstr(p)).collect(),
            protected: protected.iter().filter_map(|p| cstr(p)).collect(),
            masked_files: deny_read
                .iter()
                .filter(|p| p.is_file())
                .filter_map(|p| cstr(p))
                .collect(),
            masked_dirs: deny_read
                .iter()
                .filter(|p| p.is_dir())
                .filter_map(|p| cstr(p))
                .collect(),
            user_ns,
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

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn mount(
    src: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    fstype: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let p = |c: Option<&std::ffi::CStr>| c.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: NUL-terminated strings (or null) that outlive the call.
    check(unsafe { libc::mount(p(src), target.as_ptr(), p(fstype), flags, std::ptr::null()) })
}

fn bind(src: &std::ffi::CStr, target: &std::ffi::CStr) -> std::io::Result<()> {
    mount(Some(src), target, None, libc::MS_BIND | libc::MS_REC)
}

fn setattr(path: &std::ffi::CStr, recursive: bool, set: u64, clr: u64) -> std::io::Result<()> {
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

fn write_file(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
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

/// Whether this machine lets us build the namespaces: a throwaway holder is made and
/// dropped (probed once).
pub fn probe() -> Result<(), String> {
    let plan = NsPlan::new(true, &[std::env::temp_dir()], None, &[], &[]);
    let key = plan.key();
    create_holder(&plan, key)
        .map(drop)
        .map_err(|e| format!("cannot create mount/PID namespaces: {e}"))
}

// ----------------------------------------------------------------------------------------
// Namespace holders: one namespace per plan, joined by every command (no per-spawn cost)

/// Where a confined child finds the namespace it joins: set by the spawner thread right
/// before the fork (the child reads its copy after it).
#[derive(Debug)]
pub struct NsSlot {
    pub mnt: std::sync::atomic::AtomicI32,
    pub user: std::sync::atomic::AtomicI32,
}

impl Default for NsSlot {
    fn default() -> Self {
        NsSlot {
            mnt: std::sync::atomic::AtomicI32::new(-1),
            user: std::sync::atomic::AtomicI32::new(-1),
        }
    }
}

impl NsSlot {
    /// In the child, before exec: joins the holder's mount (and user) namespace and enters
    /// the working directory again through its mounts. Async-signal-safe.
    pub fn join(&self) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        let mnt = self.mnt.load(Ordering::SeqCst);
        if mnt < 0 {
            // Namespaces were asked for but none was prepared: never run unconfined.
            return Err(std::io::Error::from_raw_os_error(libc::ENOTSUP));
        }
        let mut buf = [0u8; 4096];
        // SAFETY: getcwd writes into our stack buffer; setns/chdir take live descriptors and
        // a NUL-terminated path.
        unsafe {
            let have_cwd = !libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null();
            let user = self.user.load(Ordering::SeqCst);
            if user >= 0 && libc::setns(user, libc::CLONE_NEWUSER) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::setns(mnt, libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if have_cwd && libc::chdir(buf.as_ptr().cast()) != 0 {
                libc::chdir(c"/".as_ptr());
            }
        }
        Ok(())
    }
}

/// A namespace kept alive for a plan: its PID 1 (`init`) sleeps and reaps orphans; `outer`
/// waits for it outside and dies with yuyao, which ends the namespace and all in it.
struct Holder {
    key: String,
    outer: libc::pid_t,
    pidns: std::os::fd::OwnedFd,
    mnt: std::os::fd::OwnedFd,
    user: Option<std::os::fd::OwnedFd>,
}

impl Drop for Holder {
    fn drop(&mut self) {
        // SAFETY: our own child; reaped right after.
        unsafe {
            libc::kill(self.outer, libc::SIGKILL);
            libc::waitpid(self.outer, std::ptr::null_mut(), 0);
        }
    }
}

/// Namespaces kept at once; the least recently used goes first (with what runs in it: only
/// plans of closed sessions get that old).
const MAX_HOLDERS: usize = 16;

/// The spawner thread's namespace state (only ever touched from that thread).
pub struct Holders {
    host_pidns: Option<std::os::fd::OwnedFd>,
    list: Vec<Holder>,
}

fn open_ns(path: &str) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let c = CString::new(path).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a NUL-terminated path; the descriptor is ours.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

impl Holders {
    pub fn new() -> Holders {
        Holders {
            host_pidns: open_ns("/proc/thread-self/ns/pid_for_children")
                .or_else(|_| open_ns("/proc/self/ns/pid"))
                .ok(),
            list: Vec::new(),
        }
    }

    /// Makes this thread's next child start in `plan`'s namespace (created on first use) and
    /// tells the child, through `slot`, which mount namespace to join.
    pub fn enter(&mut self, plan: &NsPlan, slot: &NsSlot) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering;
        let key = plan.key();
        let at = match self.list.iter().position(|h| h.key == key) {
            Some(i) => i,
            None => {
                if self.list.len() >= MAX_HOLDERS {
                    self.list.remove(0);
                }
                self.list.push(create_holder(plan, key)?);
                self.list.len() - 1
            }
        };
        // Most recently used last.
        let h = self.list.remove(at);
        self.list.push(h);
        let h = self.list.last().expect("just pushed");
        // SAFETY: setns on this thread with a live namespace descriptor.
        if unsafe { libc::setns(h.pidns.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        slot.mnt.store(h.mnt.as_raw_fd(), Ordering::SeqCst);
        slot.user.store(
            h.user.as_ref().map_or(-1, |u| u.as_raw_fd()),
            Ordering::SeqCst,
        );
        Ok(())
    }

    /// Back to the host's PID namespace for the next child.
    pub fn leave(&mut self) {
        use std::os::fd::AsRawFd;
        if let Some(host) = &self.host_pidns {
            // SAFETY: setns on this thread with a live descriptor of its own namespace.
            unsafe { libc::setns(host.as_raw_fd(), libc::CLONE_NEWPID) };
        }
    }
}

impl Default for Holders {
    fn default() -> Self {
        Holders::new()
    }
}

impl NsPlan {
    /// Identifies the namespace this plan needs (same plan, same namespace).
    fn key(&self) -> String {
        let mut k = format!("{}|{}|", self.mounts, self.user_ns.is_some());
        for (tag, list) in [
            ("w", &self.writable),
            ("b", &self.binds),
            ("p", &self.protected),
            ("mf", &self.masked_files),
            ("md", &self.masked_dirs),
        ] {
            k.push_str(tag);
            for c in list {
                k.push_str(&c.to_string_lossy());
                k.push('\0');
            }
        }
        k
    }
}

fn write_msg(fd: libc::c_int, tag: u8, value: i32) {
    let mut m = [0u8; 5];
    m[0] = tag;
    m[1..].copy_from_slice(&value.to_le_bytes());
    // SAFETY: a write of our stack buffer (atomic: under PIPE_BUF).
    unsafe { libc::write(fd, m.as_ptr().cast(), m.len()) };
}

/// Forks the holder: `outer` (outside, dies with this thread's process) and `init` (PID 1 of
/// the new namespaces, which builds the mounts and then only reaps). Runs on the spawner
/// thread, so the parent-death signal is tied to yuyao's life.
fn create_holder(plan: &NsPlan, key: String) -> std::io::Result<Holder> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (r, w) = (fds[0], fds[1]);
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if plan.user_ns.is_some() {
        flags |= libc::CLONE_NEWUSER;
    }
    // SAFETY: the child only makes system calls on prepared data and _exits.
    let outer = unsafe { libc::fork() };
    if outer < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if outer == 0 {
        // SAFETY: system calls only, in the forked child.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != me {
                libc::_exit(1);
            }
            for sig in 1..32 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            libc::close(r);
            let fail = |w| {
                write_msg(
                    w,
                    b'E',
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                );
                libc::_exit(1)
            };
            if libc::unshare(flags) != 0 {
                fail(w);
            }
            if let Some(maps) = &plan.user_ns
                && (write_file(c"/proc/self/setgroups", b"deny").is_err()
                    || write_file(c"/proc/self/uid_map", &maps.uid_map).is_err()
                    || write_file(c"/proc/self/gid_map", &maps.gid_map).is_err())
            {
                fail(w);
            }
            let init = libc::fork();
            if init < 0 {
                fail(w);
            }
            if init == 0 {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if plan.mount_all().is_err() {
                    fail(w);
                }
                write_msg(w, b'R', 0);
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
            write_msg(w, b'P', init);
            libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32);
            let mut status = 0;
            while libc::waitpid(init, &mut status, 0) < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
            libc::_exit(0);
        }
    }
    // SAFETY: our copy of the write end.
    unsafe { libc::close(w) };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64];
    loop {
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(r, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n > 0 {
            buf.extend_from_slice(&chunk[..n as usize]);
        } else if n == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    // SAFETY: our read end.
    unsafe { libc::close(r) };
    let (mut init, mut ready, mut err) = (0, false, None);
    for m in buf.chunks(5).filter(|m| m.len() == 5) {
        let v = i32::from_le_bytes([m[1], m[2], m[3], m[4]]);
        match m[0] {
            b'P' => init = v,
            b'R' => ready = true,
            _ => err = Some(v),
        }
    }
    let give_up = |e: std::io::Error| {
        // SAFETY: our own child.
        unsafe {
            libc::kill(outer, libc::SIGKILL);
            libc::waitpid(outer, std::ptr::null_mut(), 0);
        }
        Err(e)
    };
    if let Some(e) = err {
        return give_up(std::io::Error::from_raw_os_error(e));
    }
    if !ready || init <= 0 {
        return give_up(std::io::Error::other("the namespace holder did not start"));
    }
    let ns = |what: &str| open_ns(&format!("/proc/{init}/ns/{what}"));
    let (pidns, mnt) = match (ns("pid"), ns("mnt")) {
        (Ok(p), Ok(m)) => (p, m),
        (Err(e), _) | (_, Err(e)) => return give_up(e),
    };
    let user = if plan.user_ns.is_some() {
        match ns("user") {
            Ok(u) => Some(u),
            Err(e) => return give_up(e),
        }
    } else {
        None
    };
    Ok(Holder {
        key,
        outer,
        pidns,
        mnt,
        user,
    })
}
