//! Starting tool processes: the one place a command begins to run (called by
//! `yuyao_tools::exec::spawn_piped` and the sandbox self-test).
//!
//! All spawns happen on one long-lived thread. `PR_SET_PDEATHSIG` fires when the *thread* that
//! started a process dies, and the threads that run tools come and go (a TUI turn, a blocking
//! pool): starting from a thread that lives as long as yuyao ties tool processes to yuyao
//! itself. That thread also keeps one namespace per plan (`namespaces::Holders`) and starts
//! each confined process inside it, so a command costs a `setns`, not a new namespace.
//!
//! Two ways to start, same confinement:
//! - through the spawn helper (the default): `posix_spawn` of `yuyao-sandbox-exec` (no
//!   `pre_exec`, so the standard library neither forks nor copies yuyao's page tables), which
//!   receives the request on its stdin and confines itself before it execs the command. The
//!   cost does not grow with yuyao's memory (a Python host may hold gigabytes);
//! - the fork path, when the helper cannot run (or `YUYAO_SANDBOX_DISABLE=helper`): a `fork`
//!   whose child applies the same steps from `pre_exec`.

use crate::helper_exe::{self, HelperExe};
use crate::sandbox::Prepared;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use yuyao_sandbox_exec::channel;

/// A command to start.
#[derive(Debug)]
pub struct Launch {
    /// Run as given when it contains a `/`, else looked up in `PATH`.
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Set (`Some`) or removed (`None`) on top of yuyao's environment. The model's
    /// credential (`D2A_MODEL_API_KEY`) is always removed.
    pub env: Vec<(OsString, Option<OsString>)>,
    pub cwd: PathBuf,
    /// `None`: /dev/null (a tool never reads yuyao's own input). Hooks, MCP and language
    /// servers get the read end of a pipe.
    pub stdin: Option<OwnedFd>,
    /// `None`: inherited from yuyao.
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
    /// A process group of its own (its pid is the group id).
    pub process_group: bool,
}

impl Launch {
    /// `program` with `args`, in `cwd`, output inherited.
    pub fn new(program: &str, args: &[&str], cwd: impl Into<PathBuf>) -> Launch {
        Launch {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            env: Vec::new(),
            cwd: cwd.into(),
            stdin: None,
            stdout: None,
            stderr: None,
            process_group: false,
        }
    }
}

/// The agent's own model credential is not the tools' business (exfiltration guard).
const HIDDEN: &str = yuyao_protocol::MODEL_KEY_VAR;

type Started = io::Result<(Child, Option<OwnedFd>)>;
/// What to start, whether the helper may be used, where to answer.
type Job = (Launch, Prepared, bool, mpsc::Sender<Started>);

/// Starts `launch` confined as `prepared` says (see [`crate::sandbox::prepare`]). Returns
/// once the command runs, or with the reason it could not be started confined.
pub fn spawn(launch: Launch, prepared: Prepared) -> io::Result<Child> {
    spawn_with(launch, prepared, true)
}

/// [`spawn`], on the fork path when `helper` is false (tests compare both paths).
pub(crate) fn spawn_with(launch: Launch, prepared: Prepared, helper: bool) -> io::Result<Child> {
    static SPAWNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);
    let (tx, rx) = mpsc::channel();
    let mut job = Some((launch, prepared, helper, tx));
    {
        let mut g = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = g.as_ref()
            && let Err(back) = s.send(job.take().expect("job present"))
        {
            job = Some(back.0);
        }
        if let Some(j) = job.take() {
            let (stx, srx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("yuyao-spawner".into())
                .spawn(move || {
                    let mut holders = crate::namespaces::Holders::new();
                    for (launch, prepared, helper, reply) in srx {
                        let _ = reply.send(start(&mut holders, launch, prepared, helper));
                    }
                })?;
            stx.send(j)
                .map_err(|_| io::Error::other("the spawner thread is gone"))?;
            *g = Some(stx);
        }
    }
    let (mut child, report) = rx
        .recv()
        .map_err(|_| io::Error::other("the spawner thread is gone"))??;
    let Some(sock) = report else {
        return Ok(child);
    };
    // The helper execs the command (the socket closes) or says what failed first.
    match channel::read_report(sock.as_fd()) {
        Ok(None) => Ok(child),
        Ok(Some(failure)) => {
            let _ = child.wait();
            Err(failure.to_io_error())
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// On the spawner thread: into the plan's namespace (if any), start, back out.
fn start(
    holders: &mut crate::namespaces::Holders,
    launch: Launch,
    prepared: Prepared,
    helper: bool,
) -> Started {
    let helper = helper && crate::sandbox::support().helper.is_ok();
    let joins = prepared.namespaces().cloned();
    if let Some((plan, slot)) = &joins {
        holders.enter(plan, slot, helper).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot prepare the sandbox namespaces: {e}"),
            )
        })?;
    }
    let r = start_here(launch, prepared, helper);
    if joins.is_some() {
        holders.leave();
    }
    r
}

fn start_here(launch: Launch, prepared: Prepared, helper: bool) -> Started {
    if helper && let Some(helper) = helper_exe::get() {
        match via_helper(&helper, &launch, &prepared) {
            Ok(started) => return Ok(started),
            // The helper itself could not be executed: the fork path from now on.
            Err(HelperError::Exec(e)) => helper_exe::broken(format!("it cannot be executed: {e}")),
            Err(HelperError::Other(e)) => return Err(e),
        }
    }
    fork_path(launch, prepared).map(|c| (c, None))
}

/// Whether starting the helper failed because of the helper itself (not executable here),
/// rather than for a reason any spawn would fail for (no memory, too many processes).
pub(crate) fn helper_cannot_run(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES | libc::ENOEXEC | libc::EPERM | libc::ENOENT | libc::ELIBBAD)
    )
}

enum HelperError {
    Exec(io::Error),
    Other(io::Error),
}

fn cstring(s: &[u8]) -> io::Result<CString> {
    CString::new(s).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

fn dup(fd: &Option<OwnedFd>) -> io::Result<Stdio> {
    Ok(match fd {
        Some(fd) => Stdio::from(fd.try_clone()?),
        None => Stdio::inherit(),
    })
}

fn via_helper(
    helper: &HelperExe,
    launch: &Launch,
    prepared: &Prepared,
) -> Result<(Child, Option<OwnedFd>), HelperError> {
    let other = HelperError::Other;
    // The command's environment, computed here: the helper itself starts with none (no
    // LD_PRELOAD or other loader variable reaches it).
    let mut env: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (k, v) in &launch.env {
        match v {
            Some(v) => env.insert(k.clone(), v.clone()),
            None => env.remove(k),
        };
    }
    env.remove(std::ffi::OsStr::new(HIDDEN));
    let (mut req, mut fds) = prepared.request();
    if let Some(stdin) = &launch.stdin {
        // Last among the descriptors that come with the request (see `wire::Request`).
        req.stdin = true;
        fds.push(std::os::fd::AsRawFd::as_raw_fd(stdin));
    }
    req.cwd = cstring(launch.cwd.as_os_str().as_bytes()).map_err(other)?;
    req.program = cstring(launch.program.as_bytes()).map_err(other)?;
    req.argv = std::iter::once(&launch.program)
        .chain(&launch.args)
        .map(|a| cstring(a.as_bytes()))
        .collect::<io::Result<_>>()
        .map_err(other)?;
    req.env = env
        .into_iter()
        .map(|(mut k, v)| {
            k.push("=");
            k.push(v);
            cstring(&k.into_vec())
        })
        .collect::<io::Result<_>>()
        .map_err(other)?;
    let bytes = req.encode();

    let (ours, theirs) = channel::pair().map_err(other)?;
    let mut cmd = Command::new(std::ffi::OsStr::from_bytes(helper.path.as_bytes()));
    cmd.arg0("yuyao-sandbox-exec")
        .env_clear()
        .stdin(Stdio::from(theirs))
        .stdout(dup(&launch.stdout).map_err(other)?)
        .stderr(dup(&launch.stderr).map_err(other)?);
    if launch.process_group {
        cmd.process_group(0);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EACCES | libc::ENOEXEC | libc::EPERM | libc::ENOENT | libc::ELIBBAD)
            ) =>
        {
            return Err(HelperError::Exec(e));
        }
        Err(e) => return Err(other(e)),
    };
    // Our copies of the helper's stdin and output close here, so EOF means what it says.
    drop(cmd);
    // Sent from this thread, which owns the namespace descriptors while it sends them.
    if let Err(e) = channel::send(ours.as_fd(), &bytes, &fds) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(other(io::Error::new(
            e.kind(),
            format!("cannot hand the command to the sandbox helper: {e}"),
        )));
    }
    Ok((child, Some(ours)))
}

fn fork_path(launch: Launch, prepared: Prepared) -> io::Result<Child> {
    let mut cmd = Command::new(&launch.program);
    cmd.args(&launch.args)
        .current_dir(&launch.cwd)
        .stdin(launch.stdin.map_or_else(Stdio::null, Stdio::from))
        .stdout(launch.stdout.map_or_else(Stdio::inherit, Stdio::from))
        .stderr(launch.stderr.map_or_else(Stdio::inherit, Stdio::from));
    for (k, v) in &launch.env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.env_remove(HIDDEN);
    if launch.process_group {
        cmd.process_group(0);
    }
    // SAFETY: the closure only makes system calls on prepared data (Prepared::apply).
    unsafe {
        cmd.pre_exec(move || prepared.apply());
    }
    // The command (with its copies of pipe ends) is dropped before the caller reads, so
    // the caller sees EOF when the child closes its ends.
    cmd.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{Confinement, prepare};
    use std::os::fd::AsRawFd;

    fn output(launch: Launch, c: &Confinement, helper: bool) -> io::Result<(bool, String)> {
        let (reader, writer) = std::io::pipe()?;
        let mut launch = launch;
        launch.stderr = Some(writer.try_clone()?.into());
        launch.stdout = Some(writer.into());
        let mut child = spawn_with(launch, prepare(c).unwrap(), helper)?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut { reader }, &mut text)?;
        Ok((child.wait()?.success(), text))
    }

    fn confined() -> Confinement {
        Confinement {
            writable: vec![std::env::temp_dir()],
            ..Default::default()
        }
    }

    fn usable() -> bool {
        let s = crate::sandbox::support();
        s.helper.is_ok() && s.landlock.is_ok() && s.seccomp.is_ok()
    }

    #[test]
    fn only_stdio_reaches_the_command() {
        if !usable() {
            return;
        }
        // An inheritable descriptor of the host (Python code opens such things).
        let file = std::fs::File::open("/dev/null").unwrap();
        let raw = file.as_raw_fd();
        // SAFETY: clearing FD_CLOEXEC on our own descriptor.
        unsafe { libc::fcntl(raw, libc::F_SETFD, 0) };
        let list = "ls /proc/self/fd | tr '\\n' ' '";
        let (ok, out) = output(Launch::new("bash", &["-c", list], "/"), &confined(), true).unwrap();
        let fds: Vec<i32> = out
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        assert!(ok, "{out}");
        // 0, 1, 2 and the descriptor `ls` opened to list the folder.
        assert!(!fds.contains(&raw) && fds.len() <= 4, "{out}");
        // The fork path hands it down (what the helper fixes).
        let (_, out) = output(Launch::new("bash", &["-c", list], "/"), &confined(), false).unwrap();
        let fds: Vec<i32> = out
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        assert!(fds.contains(&raw), "{out}");
    }

    #[test]
    fn stdin_is_dev_null_or_the_given_pipe() {
        if !usable() {
            return;
        }
        for helper in [true, false] {
            let (ok, out) = output(Launch::new("cat", &[], "/"), &confined(), helper).unwrap();
            assert!(ok && out.is_empty(), "helper {helper}: {out}");
            let (reader, mut writer) = std::io::pipe().unwrap();
            let mut l = Launch::new("bash", &["-c", "read -r line; echo \"got $line\""], "/");
            l.stdin = Some(reader.into());
            std::io::Write::write_all(&mut writer, b"{\"event\": 1}\n").unwrap();
            drop(writer);
            let (ok, out) = output(l, &confined(), helper).unwrap();
            assert!(ok, "helper {helper}: {out}");
            assert_eq!(out.trim(), "got {\"event\": 1}", "helper {helper}");
        }
    }

    #[test]
    fn failures_before_exec_are_errors_not_runs() {
        if !usable() {
            return;
        }
        for helper in [true, false] {
            let gone = Launch::new("bash", &["-c", "true"], "/nonexistent/dir");
            let e = output(gone, &confined(), helper).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
            let missing = Launch::new("no-such-program-yuyao", &[], "/");
            let e = output(missing, &confined(), helper).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        }
        let e = output(Launch::new("bash", &[], "/nonexistent"), &confined(), true).unwrap_err();
        assert!(e.to_string().contains("working directory"), "{e}");
    }

    #[test]
    fn environment_changes_apply_and_the_model_key_never_does() {
        if !usable() {
            return;
        }
        for helper in [true, false] {
            let mut l = Launch::new(
                "bash",
                &[
                    "-c",
                    "echo \"[$A|${HOME:+home}|${PATH:+path}|$D2A_MODEL_API_KEY]\"",
                ],
                "/",
            );
            l.env.push(("A".into(), Some("a b".into())));
            l.env.push(("HOME".into(), None));
            l.env
                .push(("D2A_MODEL_API_KEY".into(), Some("sk-secret".into())));
            let (ok, out) = output(l, &confined(), helper).unwrap();
            assert!(ok, "{out}");
            assert_eq!(out.trim(), "[a b||path|]", "helper: {helper}");
        }
    }
}
