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
//! then only reaps; each command is started straight into the holder's PID namespace and joins
//! its mount namespace before exec (`yuyao_sandbox_exec::confine`, system calls on prepared
//! data only, run by the spawn helper or in `pre_exec` on the fork path).
//! The holder dies with yuyao (`PR_SET_PDEATHSIG`), and with its PID 1 everything inside.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use yuyao_sandbox_exec::holder::HolderPlan;

/// What the namespace looks like, prepared in the parent (see `HolderPlan`).
#[derive(Debug)]
pub struct NsPlan {
    plan: HolderPlan,
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
        let user_maps = (uid != 0).then(|| {
            (
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            )
        });
        NsPlan {
            plan: HolderPlan {
                parent: std::process::id() as i32,
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
                user_maps,
            },
        }
    }
}

/// Whether this machine lets us build the namespaces: a throwaway holder is made and
/// dropped (probed once).
pub fn probe(helper: bool) -> Result<(), String> {
    let plan = NsPlan::new(true, &[std::env::temp_dir()], None, &[], &[]);
    let key = plan.key();
    create_holder(&plan, key, helper)
        .map(drop)
        .map_err(|e| format!("cannot create mount/PID namespaces: {e}"))
}

// ----------------------------------------------------------------------------------------
// Namespace holders: one namespace per plan, joined by every command (no per-spawn cost)

/// Where a confined process finds the namespace it joins: set by the spawner thread right
/// before the spawn (a forked child reads its copy after the fork; the helper path sends the
/// descriptors with the request).
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
    /// `helper`: create it through the spawn helper (no fork of yuyao).
    pub fn enter(&mut self, plan: &NsPlan, slot: &NsSlot, helper: bool) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering;
        let key = plan.key();
        let at = match self.list.iter().position(|h| h.key == key) {
            Some(i) => i,
            None => {
                if self.list.len() >= MAX_HOLDERS {
                    self.list.remove(0);
                }
                self.list.push(create_holder(plan, key, helper)?);
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
        let p = &self.plan;
        let mut k = format!("{}|{}|", p.mounts, p.user_maps.is_some());
        for (tag, list) in [
            ("w", &p.writable),
            ("b", &p.binds),
            ("p", &p.protected),
            ("mf", &p.masked_files),
            ("md", &p.masked_dirs),
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

/// Starts the holder: its `outer` process (outside, dies with yuyao) makes the namespaces and
/// their PID 1, which builds the mounts and then only reaps (`HolderPlan::hold`). Runs on the
/// spawner thread, so the parent-death signal is tied to yuyao's life. Through the spawn
/// helper when `helper` (and it can run), else by forking yuyao.
fn create_holder(plan: &NsPlan, key: String, helper: bool) -> std::io::Result<Holder> {
    let started = match helper.then(crate::helper_exe::get).flatten() {
        Some(h) => match hold_via_helper(&h, plan) {
            Err(e) if crate::spawner::helper_cannot_run(&e) => {
                crate::helper_exe::broken(format!("it cannot be executed: {e}"));
                hold_via_fork(plan)
            }
            r => r,
        },
        None => hold_via_fork(plan),
    }?;
    let (outer, report) = started;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64];
    loop {
        // SAFETY: reading into our buffer.
        let n = unsafe { libc::read(report.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
        if n > 0 {
            buf.extend_from_slice(&chunk[..n as usize]);
        } else if n == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    drop(report);
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
    let user = if plan.plan.user_maps.is_some() {
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

/// The holder's `outer` is the spawn helper: `posix_spawn`, the plan over its stdin socket,
/// the reports back on it.
fn hold_via_helper(
    h: &crate::helper_exe::HelperExe,
    plan: &NsPlan,
) -> std::io::Result<(libc::pid_t, OwnedFd)> {
    use std::os::fd::AsFd;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let (ours, theirs) = yuyao_sandbox_exec::channel::pair()?;
    let child = std::process::Command::new(std::ffi::OsStr::from_bytes(h.path.as_bytes()))
        .arg0("yuyao-sandbox-exec")
        .env_clear()
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let outer = child.id() as libc::pid_t;
    if let Err(e) = yuyao_sandbox_exec::channel::send(ours.as_fd(), &plan.plan.encode(), &[]) {
        // SAFETY: our own child.
        unsafe {
            libc::kill(outer, libc::SIGKILL);
            libc::waitpid(outer, std::ptr::null_mut(), 0);
        }
        return Err(e);
    }
    Ok((outer, ours))
}

/// The holder's `outer` is a forked child of yuyao (the fallback).
fn hold_via_fork(plan: &NsPlan) -> std::io::Result<(libc::pid_t, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: two fresh descriptors we own.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child only makes system calls on prepared data and _exits (hold).
    let outer = unsafe { libc::fork() };
    if outer < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if outer == 0 {
        plan.plan.hold(w.as_raw_fd());
    }
    drop(w);
    Ok((outer, r))
}
