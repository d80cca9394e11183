//! The OS sandbox every tool process runs in (spec §3.3): Landlock confines writes
//! (`read-only`: nothing but `/dev/null`; `workspace-write`: the project roots, `/add-dir`
//! folders and the temp dir), `no_new_privs` stops setuid escalation, and a seccomp filter
//! refuses every socket family but `AF_UNIX` when the network is off.
//!
//! Everything that allocates or touches the file system is prepared in yuyao ([`prepare`]):
//! the Landlock ruleset is built there and only its file descriptor reaches the new process;
//! the seccomp program is a ready array. [`spawn`] (`spawner.rs`) starts the command through
//! the spawn helper, which receives the prepared steps and applies them to itself before it
//! execs the command, or on the fork path applies them in `pre_exec` ([`Prepared::apply`]).
//! Both run the same system calls (`yuyao_sandbox_exec::confine`) and nothing else.
//!
//! When the kernel cannot enforce the requested confinement, [`prepare`] fails with a message
//! that says so and points to `yuyao sandbox explain`; a restricted command is then refused,
//! never run unconfined.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use yuyao_protocol::{NetworkAccess, SandboxLevel};
use yuyao_sandbox_exec::confine::{Namespaces, Steps, confine_self};
use yuyao_sandbox_exec::wire::Request;

/// What a tool process is confined to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    pub level: SandboxLevel,
    pub network: NetworkAccess,
    /// Folders writable under `workspace-write` (project roots, `/add-dir` folders, the temp
    /// dir, the session's own scratch folder). Under `read-only`: the only exceptions (build
    /// output folders, the session's scratch and private temp folder).
    pub writable: Vec<PathBuf>,
    /// yuyao's own folder (`~/.yuyao`): read-only to tools even inside a writable folder.
    pub home: Option<PathBuf>,
    /// The session's private temp folder (read-only sessions: the shared `/tmp` is not
    /// writable; `TMPDIR` points here).
    pub private_tmp: Option<PathBuf>,
    /// Paths a deny rule forbids reading: masked (an empty file or folder) for tool processes.
    pub deny_read: Vec<PathBuf>,
    /// Paths a deny rule forbids writing: read-only for tool processes.
    pub deny_write: Vec<PathBuf>,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            level: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::Off,
            writable: Vec::new(),
            home: None,
            private_tmp: None,
            deny_read: Vec::new(),
            deny_write: Vec::new(),
        }
    }
}

impl Confinement {
    /// Whether anything at all is restricted (full access with the network on is not).
    pub fn is_restricted(&self) -> bool {
        self.level != SandboxLevel::FullAccess || self.network == NetworkAccess::Off
    }

    fn needs_landlock(&self) -> bool {
        self.level != SandboxLevel::FullAccess
    }

    fn needs_seccomp(&self) -> bool {
        self.network == NetworkAccess::Off
    }
}

/// What this machine can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// Landlock ABI version, or why it is unavailable.
    pub landlock: Result<u32, String>,
    /// Whether seccomp filters can be installed, or why not.
    pub seccomp: Result<(), String>,
    /// Mount and PID namespaces (read-only binds, a private `/proc`), or why not.
    pub namespaces: Result<(), String>,
    /// The spawn helper (commands start without forking yuyao), or why the fork path is used.
    pub helper: Result<(), String>,
    /// `uname -r`.
    pub kernel: String,
    /// Features switched off with `YUYAO_SANDBOX_DISABLE` (troubleshooting and tests).
    pub disabled: Vec<String>,
}

impl Support {
    /// Why `c` cannot be enforced here, if it cannot.
    pub fn cannot_enforce(&self, c: &Confinement) -> Option<String> {
        let mut why = Vec::new();
        if c.needs_landlock()
            && let Err(e) = &self.landlock
        {
            why.push(format!(
                "the {} sandbox needs Landlock, which is unavailable ({e})",
                c.level
            ));
        }
        if c.needs_seccomp()
            && let Err(e) = &self.seccomp
        {
            why.push(format!(
                "--network off needs seccomp, which is unavailable ({e})"
            ));
        }
        if why.is_empty() {
            None
        } else {
            Some(why.join("; "))
        }
    }

    /// A human summary, for `sandbox list`.
    pub fn describe(&self) -> String {
        let mut out = format!("kernel            {}\n", self.kernel);
        match &self.landlock {
            Ok(v) => out.push_str(&format!(
                "landlock          ABI {v} (file-system confinement{})\n",
                if *v >= 4 { ", TCP bind/connect" } else { "" }
            )),
            Err(e) => out.push_str(&format!("landlock          unavailable: {e}\n")),
        }
        match &self.seccomp {
            Ok(()) => {
                out.push_str("seccomp           available (socket filter for --network off)\n")
            }
            Err(e) => out.push_str(&format!("seccomp           unavailable: {e}\n")),
        }
        match &self.namespaces {
            Ok(()) => out.push_str(
                "namespaces        mount + PID (read-only binds outside writable folders, control files read-only, private /proc)\n",
            ),
            Err(e) => out.push_str(&format!("namespaces        unavailable: {e}\n")),
        }
        match &self.helper {
            Ok(()) => out.push_str(
                "spawn helper      in use (posix_spawn of yuyao-sandbox-exec from memory: the cost of a command does not grow with yuyao's size)\n",
            ),
            Err(e) => out.push_str(&format!(
                "spawn helper      not in use: {e}; commands start by forking yuyao\n"
            )),
        }
        out.push_str("no_new_privs      always set for confined processes\n");
        out.push_str(
            "capabilities      none in any set for confined processes (root included); a host name of their own (UTS namespace)\n",
        );
        if self.seccomp.is_ok() {
            out.push_str(
                "kernel surface    seccomp refuses bpf, perf_event_open, kexec, module loading and host/domain name changes\n",
            );
        }
        out.push_str("parent death      tool processes are killed when yuyao dies\n");
        if !self.disabled.is_empty() {
            out.push_str(&format!(
                "disabled          {} (YUYAO_SANDBOX_DISABLE)\n",
                self.disabled.join(", ")
            ));
        }
        out
    }
}

static SUPPORT: Mutex<Option<Support>> = Mutex::new(None);

/// What this machine enforces (probed once, see [`reprobe`]).
pub fn support() -> Support {
    let mut s = SUPPORT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(probe)
        .clone();
    if s.helper.is_ok() {
        // The helper may have failed to run since the probe.
        s.helper = crate::helper_exe::status();
    }
    s
}

/// Probes the kernel again (`sandbox recreate`).
pub fn reprobe() -> Support {
    let s = probe();
    *SUPPORT.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
    s
}

fn probe() -> Support {
    let disabled: Vec<String> = std::env::var("YUYAO_SANDBOX_DISABLE")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    let landlock = if disabled.iter().any(|d| d == "landlock") {
        Err("switched off by YUYAO_SANDBOX_DISABLE".into())
    } else {
        landlock_abi()
    };
    let seccomp = if disabled.iter().any(|d| d == "seccomp") {
        Err("switched off by YUYAO_SANDBOX_DISABLE".into())
    } else {
        seccomp_available()
    };
    let helper = if disabled.iter().any(|d| d == "helper") {
        Err("switched off by YUYAO_SANDBOX_DISABLE".into())
    } else {
        crate::helper_exe::status()
    };
    let namespaces = if disabled.iter().any(|d| d == "namespaces") {
        Err("switched off by YUYAO_SANDBOX_DISABLE".into())
    } else {
        crate::namespaces::probe(helper.is_ok())
    };
    Support {
        landlock,
        seccomp,
        namespaces,
        helper,
        kernel: kernel_release(),
        disabled,
    }
}

fn kernel_release() -> String {
    // SAFETY: uname fills the zeroed struct it is given.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return "unknown".into();
        }
        std::ffi::CStr::from_ptr(u.release.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

// ----------------------------------------------------------------------------------------
// Landlock (linux/landlock.h)

const SYS_LANDLOCK_CREATE_RULESET: libc::c_long = 444;
const SYS_LANDLOCK_ADD_RULE: libc::c_long = 445;
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
const LANDLOCK_RULE_PATH_BENEATH: u32 = 1;
const LANDLOCK_RULE_NET_PORT: u32 = 2;

const FS_WRITE_FILE: u64 = 1 << 1;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
const FS_REFER: u64 = 1 << 13; // ABI 2
const FS_TRUNCATE: u64 = 1 << 14; // ABI 3
const NET_BIND_TCP: u64 = 1 << 0; // ABI 4
const NET_CONNECT_TCP: u64 = 1 << 1; // ABI 4

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

const SCOPE_SIGNAL: u64 = 1 << 1; // ABI 6

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

fn landlock_abi() -> Result<u32, String> {
    // SAFETY: the documented way to ask for the ABI version: no attribute, size 0.
    let v = unsafe {
        libc::syscall(
            SYS_LANDLOCK_CREATE_RULESET,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel was built without Landlock".into(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is disabled at boot (add landlock to the lsm= kernel parameter)".into()
            }
            _ => format!("landlock_create_ruleset failed: {e}"),
        });
    }
    Ok(v as u32)
}

/// Rights handled by the ruleset (everything that writes).
fn handled_rights(abi: u32) -> u64 {
    let mut r = FS_WRITE_FILE
        | FS_REMOVE_DIR
        | FS_REMOVE_FILE
        | FS_MAKE_CHAR
        | FS_MAKE_DIR
        | FS_MAKE_REG
        | FS_MAKE_SOCK
        | FS_MAKE_FIFO
        | FS_MAKE_BLOCK
        | FS_MAKE_SYM;
    if abi >= 2 {
        r |= FS_REFER;
    }
    if abi >= 3 {
        r |= FS_TRUNCATE;
    }
    r
}

/// Rights granted beneath a writable folder: everything but device nodes (`mknod` of a block
/// device in the workspace would reach a disk).
fn write_rights(abi: u32) -> u64 {
    handled_rights(abi) & !(FS_MAKE_CHAR | FS_MAKE_BLOCK)
}

fn os_err(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Builds the ruleset in the parent; only its descriptor crosses the fork.
fn landlock_ruleset(abi: u32, c: &Confinement) -> Result<OwnedFd, String> {
    let handled = handled_rights(abi);
    let fs = write_rights(abi);
    let net = if abi >= 4 && c.needs_seccomp() {
        NET_BIND_TCP | NET_CONNECT_TCP
    } else {
        0
    };
    let attr = RulesetAttr {
        handled_access_fs: handled,
        handled_access_net: net,
        // ABI 6: no signals to processes outside the sandbox (belt to the PID namespace).
        scoped: if abi >= 6 { SCOPE_SIGNAL } else { 0 },
    };
    let size = if abi >= 6 {
        std::mem::size_of::<RulesetAttr>()
    } else if abi >= 4 {
        2 * std::mem::size_of::<u64>()
    } else {
        std::mem::size_of::<u64>()
    };
    // SAFETY: attr outlives the call and `size` does not exceed it.
    let fd = unsafe {
        libc::syscall(
            SYS_LANDLOCK_CREATE_RULESET,
            &attr as *const RulesetAttr,
            size,
            0u32,
        )
    };
    if fd < 0 {
        return Err(os_err("landlock_create_ruleset"));
    }
    // SAFETY: the kernel returned a fresh descriptor (close-on-exec) that we now own.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    const FILE_RIGHTS: u64 = FS_WRITE_FILE | FS_TRUNCATE;
    let file_rights = FILE_RIGHTS & fs;
    add_path(&ruleset, Path::new("/dev/null"), file_rights)?;
    if c.level != SandboxLevel::FullAccess {
        // Shared memory is scratch space like the temp dir (Python's multiprocessing needs it).
        let shm = Path::new("/dev/shm");
        for dir in c.writable.iter().map(PathBuf::as_path).chain([shm]) {
            if dir.exists() {
                let rights = if dir.is_dir() { fs } else { file_rights };
                add_path(&ruleset, dir, rights)?;
            }
        }
    }
    let _ = LANDLOCK_RULE_NET_PORT; // no TCP port is ever allowed with the network off
    Ok(ruleset)
}

fn add_path(ruleset: &OwnedFd, path: &Path, rights: u64) -> Result<(), String> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte", path.display()))?;
    // SAFETY: a NUL-terminated path; O_PATH opens nothing for reading or writing.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_err(&format!("cannot open {}", path.display())));
    }
    // SAFETY: fd was just opened and is owned here.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let attr = PathBeneathAttr {
        allowed_access: rights,
        parent_fd: fd.as_raw_fd(),
    };
    // SAFETY: both descriptors are open; attr outlives the call.
    let r = unsafe {
        libc::syscall(
            SYS_LANDLOCK_ADD_RULE,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if r < 0 {
        return Err(os_err(&format!("landlock_add_rule {}", path.display())));
    }
    Ok(())
}

// ----------------------------------------------------------------------------------------
// seccomp (linux/filter.h, linux/seccomp.h)

use yuyao_sandbox_exec::wire::SockFilter;

const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS (0x20)
const BPF_JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

const fn stmt(code: u16, k: u32) -> SockFilter {
    SockFilter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> SockFilter {
    SockFilter { code, jt, jf, k }
}

/// System calls no tool needs that reach the kernel's most privileged surface (DESIGN §5):
/// loading BPF programs, performance counters (system-wide ones watch every process),
/// kernels and modules, the host and domain name. Refused with `EPERM` for every confined
/// process, whatever its network switch; capabilities are dropped as well, this is the belt.
const REFUSED_SYSCALLS: &[libc::c_long] = &[
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
];

const PTRACE_ATTACH: u32 = 16;
const PTRACE_SEIZE: u32 = 0x4206;

/// What the seccomp program refuses besides [`REFUSED_SYSCALLS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FilterPlan {
    /// Sockets of another family than `AF_UNIX` and `io_uring` (which can open sockets on its
    /// own): `--network off`.
    network_off: bool,
    /// Attaching to another process (`PTRACE_ATTACH`, `PTRACE_SEIZE`, `process_vm_*`): only
    /// when neither a PID namespace (yuyao is not visible) nor Landlock (no tracing out of
    /// the domain) keeps a command away from yuyao's memory.
    no_attach: bool,
}

/// Where a jump goes (classic BPF jumps only go forward).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The next instruction.
    Next,
    Allow,
    Eperm,
    Eacces,
    /// Past the `socket` argument check.
    NotSocket,
}

enum Insn {
    Stmt(u16, u32),
    /// To the first target when the test holds, else to the second.
    Jump(u16, u32, Target, Target),
    /// Names the instruction that follows it.
    Label(Target),
}

/// Builds the seccomp program: foreign architectures and x32 numbers refused, then
/// [`REFUSED_SYSCALLS`], then what `plan` adds.
fn kernel_filter(plan: FilterPlan) -> Vec<SockFilter> {
    use Insn::*;
    use Target::*;
    let mut p = vec![
        Stmt(BPF_LD_W_ABS, 4),
        Jump(BPF_JEQ_K, AUDIT_ARCH, Next, Eacces),
        Stmt(BPF_LD_W_ABS, 0),
        Jump(BPF_JGE_K, 0x4000_0000, Eacces, Next),
    ];
    for nr in REFUSED_SYSCALLS {
        p.push(Jump(BPF_JEQ_K, *nr as u32, Eperm, Next));
    }
    if plan.network_off {
        p.push(Jump(
            BPF_JEQ_K,
            libc::SYS_io_uring_setup as u32,
            Eacces,
            Next,
        ));
        p.push(Jump(BPF_JEQ_K, libc::SYS_socket as u32, Next, NotSocket));
        // socket(domain, …): args[0], low 32 bits (little endian).
        p.push(Stmt(BPF_LD_W_ABS, 16));
        p.push(Jump(BPF_JEQ_K, libc::AF_UNIX as u32, Allow, Eacces));
        p.push(Label(NotSocket));
    }
    if plan.no_attach {
        for nr in [libc::SYS_process_vm_readv, libc::SYS_process_vm_writev] {
            p.push(Jump(BPF_JEQ_K, nr as u32, Eperm, Next));
        }
        p.push(Jump(BPF_JEQ_K, libc::SYS_ptrace as u32, Next, Allow));
        // ptrace(request, …): tracing one's own children (PTRACE_TRACEME, then requests on
        // the tracee) stays possible.
        p.push(Stmt(BPF_LD_W_ABS, 16));
        p.push(Jump(BPF_JEQ_K, PTRACE_ATTACH, Eperm, Next));
        p.push(Jump(BPF_JEQ_K, PTRACE_SEIZE, Eperm, Next));
    }
    p.extend([
        Label(Allow),
        Stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        Label(Eperm),
        Stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        Label(Eacces),
        Stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::EACCES as u32),
    ]);
    assemble(&p)
}

/// Resolves the targets into relative jump offsets.
fn assemble(p: &[Insn]) -> Vec<SockFilter> {
    // Position of each entry in the program (labels take no room).
    let mut at = Vec::with_capacity(p.len());
    let mut n = 0usize;
    for i in p {
        at.push(n);
        if !matches!(i, Insn::Label(_)) {
            n += 1;
        }
    }
    let offset = |from: usize, t: Target| -> u8 {
        if t == Target::Next {
            return 0;
        }
        let there = (from + 1..p.len())
            .find(|&j| matches!(p[j], Insn::Label(l) if l == t))
            .map(|j| at[j])
            .expect("every jump target is defined after the jump");
        u8::try_from(there - at[from] - 1).expect("the seccomp program is short")
    };
    p.iter()
        .enumerate()
        .filter_map(|(idx, i)| match *i {
            Insn::Stmt(code, k) => Some(stmt(code, k)),
            Insn::Jump(code, k, t, f) => Some(jump(code, k, offset(idx, t), offset(idx, f))),
            Insn::Label(_) => None,
        })
        .collect()
}

fn seccomp_available() -> Result<(), String> {
    if AUDIT_ARCH == 0 {
        return Err("no seccomp filter for this CPU architecture".into());
    }
    // SAFETY: PR_GET_SECCOMP only reads the calling thread's mode.
    let r = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if r < 0 {
        return Err(os_err("prctl(PR_GET_SECCOMP)"));
    }
    // Filter mode needs CONFIG_SECCOMP_FILTER: asking for an invalid filter tells EFAULT
    // (supported) from EINVAL (not built in) without installing anything.
    // SAFETY: a null program is rejected by the kernel before anything is installed.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            std::ptr::null::<u8>(),
            0,
            0,
        )
    };
    let e = std::io::Error::last_os_error();
    if r == 0 {
        return Err("unexpected: a null seccomp program was accepted".into());
    }
    match e.raw_os_error() {
        Some(libc::EFAULT) | Some(libc::EACCES) => Ok(()),
        Some(libc::EINVAL) => Err("the kernel was built without seccomp filters".into()),
        _ => Err(format!("seccomp probe failed: {e}")),
    }
}

// ----------------------------------------------------------------------------------------
// Preparing in the parent, applying in the child

/// A confinement ready to be applied between fork and exec.
pub struct Prepared {
    no_new_privs: bool,
    ruleset: Option<OwnedFd>,
    filter: Vec<SockFilter>,
    /// Mount and PID namespaces, when the machine has them: the plan (for the spawner, which
    /// keeps one namespace per plan) and the slot the child reads the namespace from.
    ns: Option<NsRequest>,
    /// yuyao's pid: the process dies with it (`PR_SET_PDEATHSIG`).
    parent: libc::pid_t,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("no_new_privs", &self.no_new_privs)
            .field("landlock", &self.ruleset.is_some())
            .field("seccomp", &!self.filter.is_empty())
            .field("namespaces", &self.ns.is_some())
            .finish()
    }
}

/// Prepares the confinement in the parent. `Err` says why it cannot be enforced here (the
/// caller refuses the command).
pub fn prepare(c: &Confinement) -> Result<Prepared, String> {
    let mut p = Prepared {
        no_new_privs: c.is_restricted(),
        ruleset: None,
        filter: Vec::new(),
        ns: None,
        parent: std::process::id() as libc::pid_t,
    };
    if !c.is_restricted() {
        return Ok(p);
    }
    let sup = support();
    if sup.namespaces.is_ok() {
        p.ns = Some((
            std::sync::Arc::new(crate::namespaces::NsPlan::new(
                c.needs_landlock(),
                &c.writable,
                c.home.as_deref(),
                &c.deny_read,
                &c.deny_write,
            )),
            std::sync::Arc::new(crate::namespaces::NsSlot::default()),
        ));
    }
    if let Some(why) = sup.cannot_enforce(c) {
        return Err(format!(
            "the OS sandbox cannot be enforced on this machine: {why}. The command was not run. \
             See `yuyao sandbox list` and `yuyao sandbox explain`; --sandbox full-access --network on \
             runs commands without confinement"
        ));
    }
    if c.needs_landlock() {
        let abi = sup.landlock.clone().unwrap_or(1);
        p.ruleset = Some(
            landlock_ruleset(abi, c)
                .map_err(|e| format!("cannot build the Landlock sandbox: {e}"))?,
        );
    }
    if sup.seccomp.is_ok() {
        p.filter = kernel_filter(FilterPlan {
            network_off: c.needs_seccomp(),
            no_attach: p.ns.is_none() && !c.needs_landlock(),
        });
    }
    Ok(p)
}

impl Prepared {
    /// Applies the confinement to the calling process (the fork path, from `pre_exec`).
    /// Async-signal-safe: only system calls, no allocation.
    pub fn apply(&self) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        let namespaces = self.ns.as_ref().map(|(_, slot)| Namespaces {
            user: slot.user.load(Ordering::SeqCst),
            mnt: slot.mnt.load(Ordering::SeqCst),
        });
        confine_self(&Steps {
            parent: self.parent,
            namespaces,
            no_new_privs: self.no_new_privs,
            drop_caps: self.no_new_privs,
            ruleset: self.ruleset.as_ref().map_or(-1, |f| f.as_raw_fd()),
            filter: &self.filter,
        })
        .map_err(|f| std::io::Error::from_raw_os_error(f.errno))
    }

    /// The request the spawn helper applies: the same steps, sent over its socket with the
    /// descriptors they need (listed in the request's order).
    pub(crate) fn request(&self) -> (Request, Vec<std::os::fd::RawFd>) {
        use std::sync::atomic::Ordering;
        let mut fds = Vec::new();
        let mut req = Request {
            parent: self.parent,
            no_new_privs: self.no_new_privs,
            filter: self.filter.clone(),
            ..Default::default()
        };
        if let Some(r) = &self.ruleset {
            req.landlock = true;
            fds.push(r.as_raw_fd());
        }
        if let Some((_, slot)) = &self.ns {
            let user = slot.user.load(Ordering::SeqCst);
            if user >= 0 {
                req.user_ns = true;
                fds.push(user);
            }
            // Never -1 once the spawner entered the holder; if it were, sending the request
            // fails (EBADF) and the command is refused, never run without its namespaces.
            req.mnt_ns = true;
            fds.push(slot.mnt.load(Ordering::SeqCst));
        }
        (req, fds)
    }

    /// Whether the process joins namespaces (the spawner enters their holder first).
    pub(crate) fn namespaces(&self) -> Option<&NsRequest> {
        self.ns.as_ref()
    }
}

pub(crate) type NsRequest = (
    std::sync::Arc<crate::namespaces::NsPlan>,
    std::sync::Arc<crate::namespaces::NsSlot>,
);

pub use crate::spawner::{Launch, spawn};

/// What the confinement means, in words (for `sandbox explain` and the system prompt).
pub fn describe(c: &Confinement) -> String {
    let fs = match c.level {
        SandboxLevel::ReadOnly if c.writable.is_empty() => {
            "no writes anywhere except /dev/null".to_string()
        }
        SandboxLevel::ReadOnly => format!(
            "no writes anywhere except /dev/null, a private temp folder and build outputs ({})",
            c.writable
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        SandboxLevel::WorkspaceWrite => format!(
            "writes only under /dev/shm, {}",
            if c.writable.is_empty() {
                "(nothing)".to_string()
            } else {
                c.writable
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        SandboxLevel::FullAccess => "no file-system confinement".to_string(),
    };
    let net = match c.network {
        NetworkAccess::Off => "no network sockets (only AF_UNIX)",
        NetworkAccess::On => "network allowed",
    };
    let privs = if c.is_restricted() {
        "; no privilege escalation (no_new_privs) and no capabilities"
    } else {
        ""
    };
    format!(
        "sandbox {}: {fs}; network {}: {net}{privs}",
        c.level, c.network
    )
}

/// The marker every OS-sandbox note starts with (the core records such results for
/// `sandbox explain`).
pub const BLOCKED_MARKER: &str = "the OS sandbox may have blocked this";

/// A note for a failed command whose output shows a refusal the sandbox would cause.
pub fn blocked_note(c: &Confinement, exit_code: Option<i32>, output: &str) -> Option<String> {
    if !c.is_restricted() || exit_code == Some(0) {
        return None;
    }
    const SIGNS: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "PermissionError",
    ];
    if !SIGNS.iter().any(|s| output.contains(s)) {
        return None;
    }
    Some(format!(
        "{BLOCKED_MARKER} ({}). Do not try to work around it; if the user needs it, they can \
         change --sandbox/--network (`yuyao sandbox explain` says why)",
        describe(c)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` through the spawn helper and on the fork path: both must agree. The
    /// output is the helper's, then the fork path's.
    fn run(c: &Confinement, script: &str) -> (bool, String) {
        let once = |helper: bool| {
            let (reader, writer) = std::io::pipe().unwrap();
            let mut launch = Launch::new("bash", &["-c", script], std::env::current_dir().unwrap());
            launch.stderr = Some(writer.try_clone().unwrap().into());
            launch.stdout = Some(writer.into());
            let mut child =
                crate::spawner::spawn_with(launch, prepare(c).unwrap(), helper).unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut { reader }, &mut text).unwrap();
            (child.wait().unwrap().success(), text)
        };
        let (ok, out) = once(true);
        let (fork_ok, fork_out) = once(false);
        assert_eq!(ok, fork_ok, "helper: {out}\nfork path: {fork_out}");
        (ok, out + &fork_out)
    }

    fn enforced() -> bool {
        let s = support();
        s.landlock.is_ok() && s.seccomp.is_ok()
    }

    #[test]
    fn workspace_write_confines_writes() {
        if !enforced() {
            eprintln!("skipped: {}", support().describe());
            return;
        }
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let c = Confinement {
            level: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::On,
            writable: vec![inside.path().to_path_buf()],
            ..Default::default()
        };
        let a = inside.path().join("a");
        let b = outside.path().join("b");
        let (ok, out) = run(
            &c,
            &format!("echo x > {} && echo y > /dev/null", a.display()),
        );
        assert!(ok, "{out}");
        let (ok, _) = run(&c, &format!("echo x > {}", b.display()));
        assert!(!ok);
        assert!(!b.exists());
        let (ok, out) = run(&c, "grep NoNewPrivs /proc/self/status");
        assert!(ok && out.contains('1'), "{out}");
        let (ok, out) = run(
            &c,
            "command -v python3 >/dev/null || exit 0; python3 -c 'import multiprocessing as m; m.Lock()'",
        );
        assert!(ok, "shared memory must stay usable: {out}");
    }

    #[test]
    fn read_only_allows_only_dev_null_and_the_listed_exceptions() {
        if !enforced() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path().join("target");
        std::fs::create_dir(&build).unwrap();
        let mut c = Confinement {
            level: SandboxLevel::ReadOnly,
            network: NetworkAccess::On,
            ..Default::default()
        };
        let (ok, out) = run(&c, "echo hi > /dev/null && echo visible");
        assert!(ok && out.contains("visible"), "{out}");
        let (ok, _) = run(&c, &format!("touch {}/x", dir.path().display()));
        assert!(!ok);
        assert!(!dir.path().join("x").exists());
        // Build outputs listed as exceptions stay writable; their parent does not.
        c.writable = vec![build.clone()];
        let (ok, out) = run(&c, &format!("touch {}/o", build.display()));
        assert!(ok, "{out}");
        let (ok, _) = run(&c, &format!("touch {}/y", dir.path().display()));
        assert!(!ok);
        assert!(!dir.path().join("y").exists());
    }

    #[test]
    fn namespaces_hide_host_processes_and_protect_control_files() {
        if !enforced() || support().namespaces.is_err() {
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
        std::fs::write(ws.path().join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(ws.path().join(".yuyao")).unwrap();
        let c = Confinement {
            level: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::Off,
            writable: vec![ws.path().to_path_buf()],
            ..Default::default()
        };
        let me = std::process::id();
        let (ok, out) = run(
            &c,
            &format!("test -e /proc/{me} && echo VISIBLE; ls /proc | grep -c '^[0-9]'"),
        );
        let visible: usize = out
            .trim()
            .lines()
            .last()
            .unwrap_or("")
            .parse()
            .unwrap_or(999);
        assert!(ok && !out.contains("VISIBLE") && visible < 20, "{out}");
        let d = ws.path().display();
        for (script, victim) in [
            (format!("echo x >> {d}/.git/config"), ".git/config"),
            (
                format!("echo x > {d}/.git/hooks/pre-commit"),
                ".git/hooks/pre-commit",
            ),
            (
                format!("echo 'sandbox = 1' > {d}/.yuyao/config.toml"),
                ".yuyao/config.toml",
            ),
        ] {
            let _ = run(&c, &script);
            let p = ws.path().join(victim);
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            assert!(
                !text.contains('x') && !text.contains("sandbox"),
                "{victim} written"
            );
        }
        let (ok, out) = run(&c, &format!("echo ok > {d}/fine && mknod {d}/dev b 7 0"));
        assert!(!ok, "{out}");
        assert!(ws.path().join("fine").exists());
        assert!(!ws.path().join("dev").exists());
    }

    #[test]
    fn deny_rules_hold_for_paths_the_lexer_cannot_see() {
        if !enforced() || support().namespaces.is_err() {
            return;
        }
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "a\n").unwrap();
        std::fs::write(root.join("key.txt"), "SECRET\n").unwrap();
        std::fs::create_dir_all(root.join("vault")).unwrap();
        std::fs::write(root.join("vault/v.txt"), "VAULT\n").unwrap();
        let c = Confinement {
            level: SandboxLevel::WorkspaceWrite,
            network: NetworkAccess::Off,
            writable: vec![root.clone()],
            deny_read: vec![root.join("key.txt"), root.join("vault")],
            deny_write: vec![root.join("src")],
            ..Default::default()
        };
        let d = root.display();
        let (_, out) = run(
            &c,
            &format!(
                "f=$(echo {d}/key.txt); cat $f; cat {d}/vault/*; python3 -c \"open('{d}/src/a.py','w').write('x')\"; echo ok > {d}/other"
            ),
        );
        assert!(!out.contains("SECRET") && !out.contains("VAULT"), "{out}");
        assert_eq!(
            std::fs::read_to_string(root.join("src/a.py")).unwrap(),
            "a\n"
        );
        assert!(
            root.join("other").exists(),
            "the rest stays writable: {out}"
        );
    }

    #[test]
    fn network_off_blocks_inet_sockets_only() {
        if !enforced() {
            return;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let mut c = Confinement {
            level: SandboxLevel::FullAccess,
            network: NetworkAccess::On,
            writable: vec![],
            ..Default::default()
        };
        let (ok, out) = run(&c, &connect);
        assert!(ok && out.contains("connected"), "{out}");
        c.network = NetworkAccess::Off;
        let (ok, out) = run(&c, &connect);
        assert!(!ok && !out.contains("connected"), "{out}");
        c.level = SandboxLevel::WorkspaceWrite;
        let (ok, _) = run(&c, &connect);
        assert!(!ok);
        // AF_UNIX still works (pipes, unix sockets), and so does writing to a pipe by name.
        let (ok, out) = run(&c, "echo a | cat; echo b > /dev/stdout");
        assert!(ok && out.contains('a') && out.contains('b'), "{out}");
    }

    /// What a confined process can do with privileges and the kernel's privileged surface.
    const PRIVILEGE_PROBE: &str = r#"grep -E '^Cap(Eff|Prm|Inh|Bnd|Amb)' /proc/self/status
hostname "$(hostname)" 2>/dev/null && echo HOSTNAME-SET
command -v python3 >/dev/null || exit 0
python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
nr = {"x86_64": (321, 298, 101), "aarch64": (280, 241, 117)}[os.uname().machine]
buf = ctypes.create_string_buffer(128)
for name, args in [("bpf", (nr[0], 5, buf, 48)), ("perf", (nr[1], buf, -1, 0, -1, 0)),
                   ("attach", (nr[2], 16, int(os.environ["HOST_PID"]), 0, 0))]:
    ctypes.set_errno(0)
    r = libc.syscall(*[a if not isinstance(a, int) else ctypes.c_long(a) for a in args])
    print(name, "refused", os.strerror(ctypes.get_errno()) if r < 0 else "NOT REFUSED")
PY"#;

    #[test]
    fn confined_processes_hold_no_privileges() {
        if !enforced() {
            return;
        }
        let before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        for level in [SandboxLevel::WorkspaceWrite, SandboxLevel::FullAccess] {
            let c = Confinement {
                level,
                network: NetworkAccess::Off,
                writable: vec![std::env::temp_dir()],
                ..Default::default()
            };
            let probe = format!("export HOST_PID={}\n{PRIVILEGE_PROBE}", std::process::id());
            let (_, out) = run(&c, &probe);
            let caps: Vec<&str> = out.lines().filter(|l| l.starts_with("Cap")).collect();
            assert_eq!(caps.len(), 10, "{out}");
            assert!(
                caps.iter().all(|l| l.ends_with("0000000000000000")),
                "{level}: {out}"
            );
            assert!(!out.contains("HOSTNAME-SET"), "{level}: {out}");
            if out.contains("bpf") {
                assert!(!out.contains("NOT REFUSED"), "{level}: {out}");
                let eperm = out.lines().filter(|l| l.contains("not permitted"));
                // bpf and perf_event_open, by the helper and on the fork path.
                assert!(eperm.count() >= 4, "{level}: {out}");
            }
        }
        let after = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        assert_eq!(before, after);
    }

    #[test]
    fn the_seccomp_program_jumps_inside_itself() {
        for network_off in [false, true] {
            for no_attach in [false, true] {
                let f = kernel_filter(FilterPlan {
                    network_off,
                    no_attach,
                });
                for (i, insn) in f.iter().enumerate().filter(|(_, i)| i.code != BPF_RET_K) {
                    let last = i + 1 + insn.jt.max(insn.jf) as usize;
                    assert!(last < f.len(), "{i}: {insn:?}");
                }
                assert_eq!(f.last().map(|i| i.code), Some(BPF_RET_K));
            }
        }
    }

    #[test]
    fn unsupported_is_explicit() {
        let s = Support {
            landlock: Err("x".into()),
            seccomp: Ok(()),
            namespaces: Ok(()),
            helper: Ok(()),
            kernel: "k".into(),
            disabled: vec![],
        };
        assert!(s.cannot_enforce(&Confinement::default()).is_some());
        let full = Confinement {
            level: SandboxLevel::FullAccess,
            network: NetworkAccess::Off,
            writable: vec![],
            ..Default::default()
        };
        assert!(s.cannot_enforce(&full).is_none());
    }
}
