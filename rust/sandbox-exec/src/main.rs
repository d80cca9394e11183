//! `yuyao-sandbox-exec`: started by yuyao with `posix_spawn`, an empty environment and a Unix
//! socket as stdin. Reads the request, confines itself and execs the command (see lib.rs).
//! Started any other way it refuses to do anything.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, RawFd};
use yuyao_sandbox_exec::channel;
use yuyao_sandbox_exec::confine::{Failure, Namespaces, Stage, Steps, confine_self};
use yuyao_sandbox_exec::holder::HolderPlan;
use yuyao_sandbox_exec::wire::{self, Request};

fn main() {
    let received = channel::receive(0).and_then(|(bytes, fds)| {
        if wire::kind(&bytes) == Some(wire::HOLD) {
            // A namespace holder: reports on the socket, never returns.
            let plan = HolderPlan::decode(&bytes).ok_or(libc::EINVAL)?;
            drop(fds);
            plan.hold(0);
        }
        channel::receive_exec(&bytes, &fds).map(|req| (req, fds))
    });
    let (req, fds) = match received {
        Ok(r) => r,
        Err(errno) => {
            channel::report(
                0,
                Failure {
                    stage: Stage::Request,
                    errno,
                },
            );
            eprintln!("yuyao-sandbox-exec: this helper is started by yuyao only");
            std::process::exit(126);
        }
    };
    // The socket leaves fd 0 (close-on-exec: the exec closes it, which tells yuyao the
    // command started) and the command's stdin takes its place: the descriptor that came
    // with the request, else /dev/null.
    // SAFETY: descriptor juggling on our own fds.
    let sock = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    let fail = |f: Failure| -> ! {
        channel::report(sock, f);
        // SAFETY: ends this process at once.
        unsafe { libc::_exit(127) }
    };
    let given_stdin = req
        .stdin
        .then(|| fds.last().map(|f| f.as_raw_fd()))
        .flatten();
    if sock < 0 || !set_stdin(given_stdin) {
        fail(last(Stage::Request));
    }
    // Rust's runtime ignores SIGPIPE; the command gets the default, as from a plain fork.
    // SAFETY: resetting one disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::chdir(req.cwd.as_ptr()) } != 0 {
        fail(last(Stage::Cwd));
    }
    let mut next = fds.iter().map(|f| f.as_raw_fd());
    let ruleset = if req.landlock { next.next() } else { None };
    let user = if req.user_ns { next.next() } else { None };
    let mnt = if req.mnt_ns { next.next() } else { None };
    let steps = Steps {
        parent: req.parent,
        namespaces: mnt.map(|mnt| Namespaces {
            user: user.unwrap_or(-1),
            mnt,
        }),
        no_new_privs: req.no_new_privs,
        // Every confined process sets no_new_privs (`Confinement::is_restricted`).
        drop_caps: req.no_new_privs,
        ruleset: ruleset.unwrap_or(-1),
        filter: &req.filter,
    };
    if let Err(f) = confine_self(&steps) {
        fail(f);
    }
    drop(fds);
    // Nothing of yuyao's but stdin, stdout and stderr reaches the command.
    // SAFETY: marks our descriptors from 3 up close-on-exec.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    let errno = exec(&req);
    fail(Failure {
        stage: Stage::Exec,
        errno,
    });
}

fn last(stage: Stage) -> Failure {
    Failure {
        stage,
        errno: std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    }
}

/// Makes `given` (or /dev/null) the standard input.
fn set_stdin(given: Option<RawFd>) -> bool {
    // SAFETY: open/dup2/close on our own descriptors.
    unsafe {
        if let Some(fd) = given {
            return libc::dup2(fd, 0) == 0;
        }
        let fd: RawFd = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let ok = libc::dup2(fd, 0) == 0;
        libc::close(fd);
        ok
    }
}

/// `execvp` with the command's own `PATH` (the helper's environment is empty). Returns the
/// `errno` when nothing could be executed.
fn exec(req: &Request) -> i32 {
    let mut argv: Vec<*const libc::c_char> = req.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = req.env.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    let run = |path: &CStr| {
        // SAFETY: NUL-terminated path and NULL-terminated arrays of live C strings.
        unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    let program = req.program.as_bytes();
    if program.contains(&b'/') {
        return run(&req.program);
    }
    let path = req
        .env
        .iter()
        .find_map(|e| e.as_bytes().strip_prefix(b"PATH="))
        .unwrap_or(b"/bin:/usr/bin");
    let mut denied = false;
    for dir in path.split(|b| *b == b':') {
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let mut full = dir.to_vec();
        full.push(b'/');
        full.extend_from_slice(program);
        let Ok(full) = CString::new(full) else {
            continue;
        };
        match run(&full) {
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            other => return other,
        }
    }
    if denied { libc::EACCES } else { libc::ENOENT }
}
