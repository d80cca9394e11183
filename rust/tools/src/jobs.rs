//! Background jobs: `bash` with `run_in_background`, and `monitor`. Each job is a shell in
//! its own process group (spawned by [`crate::exec::shell_command`]) whose interleaved
//! output goes to a log file. `bg-list` lists them, `bg-output` returns what is new since the
//! last read, `bg-stop` kills the group. Monitors also stream each line as an event and queue
//! the lines that matter (all lines, or those matching `notify`/`until`) for the conversation:
//! the core injects them at the next model call. Every job ends with the session.

use crate::args::ToolArgs;
use crate::exec::{group_alive, kill_group, start_dir, unique};
use crate::output::{cap_output, strip_ansi};
use crate::{Tool, ToolContext, ToolOutput};
use regex::Regex;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use yuyao_protocol::Event;

/// Lines of one job waiting for the next model call; older ones are counted, not kept.
const PENDING_CAP: usize = 40;
/// Longest line kept in a notification or event.
const LINE_CAP: usize = 500;
/// New output `bg-output` reads in one call; the rest stays in the log file.
const READ_CAP: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    Bash,
    Monitor,
}

impl JobKind {
    fn as_str(self) -> &'static str {
        match self {
            JobKind::Bash => "bash",
            JobKind::Monitor => "monitor",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    Running,
    /// The shell exited (code, or `None` when a signal ended it).
    Exited(Option<i32>),
    /// `bg-stop` or `/tasks stop` killed it.
    Stopped,
    /// A monitor whose `until` pattern matched.
    UntilMatched,
    /// The session ended while it ran.
    SessionEnded,
}

impl JobState {
    pub fn label(&self) -> String {
        match self {
            JobState::Running => "running".into(),
            JobState::Exited(Some(0)) => "completed".into(),
            JobState::Exited(Some(c)) => format!("failed (exit {c})"),
            JobState::Exited(None) => "killed by a signal".into(),
            JobState::Stopped => "stopped".into(),
            JobState::UntilMatched => "until matched".into(),
            JobState::SessionEnded => "ended with the session".into(),
        }
    }
}

/// A snapshot of one job, for listings.
#[derive(Debug, Clone)]
pub struct JobInfo {
    pub id: String,
    pub kind: JobKind,
    pub command: String,
    pub description: Option<String>,
    pub state: JobState,
    pub exit_code: Option<i32>,
    pub runtime: Duration,
    pub pid: u32,
    pub log: PathBuf,
    pub bytes: u64,
    pub unread: u64,
}

struct Job {
    id: String,
    kind: JobKind,
    command: String,
    description: Option<String>,
    pgid: i32,
    started: Instant,
    ended: Option<Instant>,
    state: JobState,
    exit_code: Option<i32>,
    log: PathBuf,
    /// Bytes written to the log so far.
    bytes: u64,
    /// Where the model's next `bg-output` starts.
    read_offset: u64,
    until: Option<Regex>,
    notify: Option<Regex>,
    /// Lines waiting for the next model call, and how many were dropped beyond the cap.
    pending: Vec<String>,
    dropped: usize,
    /// The reader has seen EOF (every process holding the output is gone).
    drained: bool,
}

impl Job {
    fn info(&self) -> JobInfo {
        JobInfo {
            id: self.id.clone(),
            kind: self.kind,
            command: self.command.clone(),
            description: self.description.clone(),
            state: self.state.clone(),
            exit_code: self.exit_code,
            runtime: self.ended.unwrap_or_else(Instant::now) - self.started,
            pid: self.pgid as u32,
            log: self.log.clone(),
            bytes: self.bytes,
            unread: self.bytes - self.read_offset,
        }
    }
}

type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

#[derive(Default)]
struct Shared {
    jobs: Mutex<Vec<Job>>,
    serial: Mutex<[u32; 2]>,
    listener: Mutex<Option<Listener>>,
    /// Job-level notices (a job ended) waiting for the next model call.
    notices: Mutex<Vec<String>>,
    /// A foreground command is running, and the user asked to move it to the background.
    foreground: AtomicBool,
    detach: AtomicBool,
}

impl Shared {
    fn jobs(&self) -> MutexGuard<'_, Vec<Job>> {
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn emit(&self, e: &Event) {
        let l = self
            .listener
            .lock()
            .ok()
            .and_then(|l| l.as_ref().map(Arc::clone));
        if let Some(l) = l {
            l(e);
        }
    }

    fn with_job<T>(&self, id: &str, f: impl FnOnce(&mut Job) -> T) -> Option<T> {
        self.jobs().iter_mut().find(|j| j.id == id).map(f)
    }
}

/// The session's background jobs. Dropping it (the session ends) kills every running job.
#[derive(Default)]
pub struct Jobs {
    shared: Arc<Shared>,
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The output and end of a job that started as a foreground command.
#[derive(Clone)]
pub(crate) struct JobFeed {
    shared: Arc<Shared>,
    id: String,
    file: Arc<Mutex<std::fs::File>>,
}

impl JobFeed {
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn write(&self, data: &[u8]) {
        if let Ok(mut f) = self.file.lock() {
            let _ = f.write_all(data);
            let _ = f.flush();
        }
        self.shared
            .with_job(&self.id, |j| j.bytes += data.len() as u64);
    }

    /// Everything written so far was already shown (in the foreground result).
    pub(crate) fn mark_read(&self) {
        self.shared.with_job(&self.id, |j| j.read_offset = j.bytes);
    }

    pub(crate) fn drained(&self) {
        self.shared.with_job(&self.id, |j| j.drained = true);
    }

    pub(crate) fn finish(&self, code: Option<i32>) {
        finish(&self.shared, &self.id, code);
    }
}

/// How a job is started.
pub struct JobSpec<'a> {
    pub kind: JobKind,
    pub command: &'a str,
    pub description: Option<String>,
    pub until: Option<Regex>,
    pub notify: Option<Regex>,
}

impl Jobs {
    /// Where events (monitor lines, job ends) go: the session's handler.
    pub fn set_listener(&self, f: impl Fn(&Event) + Send + Sync + 'static) {
        if let Ok(mut l) = self.shared.listener.lock() {
            *l = Some(Arc::new(f));
        }
    }

    pub fn list(&self) -> Vec<JobInfo> {
        self.shared.jobs().iter().map(Job::info).collect()
    }

    pub fn running(&self) -> usize {
        self.shared
            .jobs()
            .iter()
            .filter(|j| j.state == JobState::Running)
            .count()
    }

    /// Starts a job in `cwd`; returns its id.
    pub fn start(
        &self,
        ctx: &ToolContext,
        spec: JobSpec<'_>,
        cwd: &Path,
    ) -> Result<String, String> {
        self.start_as(ctx, spec, cwd, crate::exec::Rights::Tool)
    }

    /// Starts a job with `rights`: the model's sandbox, or the user's own.
    pub fn start_as(
        &self,
        ctx: &ToolContext,
        spec: JobSpec<'_>,
        cwd: &Path,
        rights: crate::exec::Rights,
    ) -> Result<String, String> {
        self.start_confined(ctx, spec, cwd, &rights.confinement(ctx))
    }

    /// Starts a job confined as `confinement` says (a `/run` app's profile).
    pub fn start_confined(
        &self,
        ctx: &ToolContext,
        spec: JobSpec<'_>,
        cwd: &Path,
        confinement: &yuyao_policy::sandbox::Confinement,
    ) -> Result<String, String> {
        let id = {
            let mut s = self.shared.serial.lock().unwrap_or_else(|e| e.into_inner());
            let k = match spec.kind {
                JobKind::Bash => 0,
                JobKind::Monitor => 1,
            };
            s[k] += 1;
            format!("{}_{}", spec.kind.as_str(), s[k])
        };
        let dir = ctx.spill_dir.join("jobs");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let log = dir.join(format!("{id}-{}.log", unique("out")));
        let mut file = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let (mut child, reader) = crate::exec::spawn_piped_as(ctx, spec.command, cwd, confinement)?;
        let pgid = child.id() as i32;
        self.shared.jobs().push(Job {
            id: id.clone(),
            kind: spec.kind,
            command: spec.command.to_string(),
            description: spec.description,
            pgid,
            started: Instant::now(),
            ended: None,
            state: JobState::Running,
            exit_code: None,
            log: log.clone(),
            bytes: 0,
            read_offset: 0,
            until: spec.until,
            notify: spec.notify,
            pending: Vec::new(),
            dropped: 0,
            drained: false,
        });

        // Reader: log every byte; for monitors, handle each complete line.
        let shared = self.shared.clone();
        let rid = id.clone();
        let kind = spec.kind;
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(64 * 1024, reader);
            let mut line = Vec::new();
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                line.clear();
                let n = if kind == JobKind::Monitor {
                    // A line without an end is handled in pieces of at most 1 MiB.
                    (&mut reader).take(1 << 20).read_until(b'\n', &mut line)
                } else {
                    reader.read(&mut chunk)
                };
                let n = match n {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let data = if kind == JobKind::Monitor {
                    &line[..]
                } else {
                    &chunk[..n]
                };
                let _ = file.write_all(data);
                let _ = file.flush();
                let mut emit = None;
                shared.with_job(&rid, |j| {
                    j.bytes += n as u64;
                    if kind == JobKind::Monitor {
                        emit = monitor_line(j, &line);
                    }
                });
                if let Some((event, stop_group)) = emit {
                    shared.emit(&event);
                    if let Some(pgid) = stop_group {
                        terminate(pgid);
                    }
                }
            }
            shared.with_job(&rid, |j| j.drained = true);
        });

        // Waiter: the exit status, then one notice for the conversation and one event.
        let shared = self.shared.clone();
        let wid = id.clone();
        std::thread::spawn(move || {
            let status = child.wait();
            // Give the reader a moment to log the last lines.
            let until = Instant::now() + Duration::from_millis(500);
            while Instant::now() < until && shared.with_job(&wid, |j| !j.drained).unwrap_or(false) {
                std::thread::sleep(Duration::from_millis(5));
            }
            finish(&shared, &wid, status.ok().and_then(|s| s.code()));
        });
        Ok(id)
    }

    /// Moves the running foreground command to the background (`Ctrl+B`). False when no
    /// foreground command is running.
    pub fn request_detach(&self) -> bool {
        if self.shared.foreground.load(Ordering::SeqCst) {
            self.shared.detach.store(true, Ordering::SeqCst);
            true
        } else {
            false
        }
    }

    /// Marks a foreground command as running (or not); a stale request is dropped.
    pub(crate) fn set_foreground(&self, running: bool) {
        self.shared.detach.store(false, Ordering::SeqCst);
        self.shared.foreground.store(running, Ordering::SeqCst);
    }

    /// Whether the user asked to move the running foreground command to the background.
    pub(crate) fn take_detach(&self) -> bool {
        self.shared.detach.swap(false, Ordering::SeqCst)
    }

    /// Registers a running foreground command (its process group `pgid`) as a background
    /// job; the returned feed receives its output and its end.
    pub(crate) fn adopt(
        &self,
        ctx: &ToolContext,
        command: &str,
        pgid: i32,
        started: Instant,
    ) -> Result<JobFeed, String> {
        let id = {
            let mut s = self.shared.serial.lock().unwrap_or_else(|e| e.into_inner());
            s[0] += 1;
            format!("bash_{}", s[0])
        };
        let dir = ctx.spill_dir.join("jobs");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let log = dir.join(format!("{id}-{}.log", unique("out")));
        let file = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        self.shared.jobs().push(Job {
            id: id.clone(),
            kind: JobKind::Bash,
            command: command.to_string(),
            description: Some("moved to the background by the user".into()),
            pgid,
            started,
            ended: None,
            state: JobState::Running,
            exit_code: None,
            log,
            bytes: 0,
            read_offset: 0,
            until: None,
            notify: None,
            pending: Vec::new(),
            dropped: 0,
            drained: false,
        });
        Ok(JobFeed {
            shared: self.shared.clone(),
            id,
            file: Arc::new(Mutex::new(file)),
        })
    }

    /// What waits for the next model call (monitor lines, ended jobs), as one text per job.
    pub fn drain_notifications(&self) -> Vec<String> {
        let mut out = Vec::new();
        for j in self.shared.jobs().iter_mut() {
            if j.pending.is_empty() {
                continue;
            }
            let mut text = format!(
                "[background] monitor {} (`{}`) reported {} line{}:",
                j.id,
                one_line(&j.command),
                j.pending.len() + j.dropped,
                if j.pending.len() + j.dropped == 1 {
                    ""
                } else {
                    "s"
                }
            );
            if j.dropped > 0 {
                text.push_str(&format!(
                    "\n(… {} earlier lines not shown; bg-output {{\"id\": \"{}\"}} or the log {} has everything)",
                    j.dropped,
                    j.id,
                    j.log.display()
                ));
            }
            for l in j.pending.drain(..) {
                text.push('\n');
                text.push_str(&l);
            }
            j.dropped = 0;
            out.push(text);
        }
        if let Ok(mut n) = self.shared.notices.lock() {
            out.append(&mut n);
        }
        out
    }

    /// New output since the last read (optionally only lines matching `filter`); the read
    /// position moves to the end of what was returned.
    pub fn read_new(&self, id: &str, filter: Option<&Regex>) -> Result<(JobInfo, String), String> {
        let (info, from, drained) = self
            .shared
            .with_job(id, |j| (j.info(), j.read_offset, j.drained))
            .ok_or_else(|| self.unknown(id))?;
        let capped = info.bytes > from + READ_CAP;
        let mut to = info.bytes.min(from + READ_CAP);
        let mut bytes = read_range(&info.log, from, to)?;
        // Keep an unfinished last line for the next read while the job still writes.
        if !drained && let Some(p) = bytes.iter().rposition(|b| *b == b'\n') {
            to = from + p as u64 + 1;
            bytes.truncate(p + 1);
        } else if !drained && !bytes.is_empty() && info.state == JobState::Running {
            bytes.clear();
            to = from;
        }
        self.shared.with_job(id, |j| j.read_offset = to);
        let text = strip_ansi(&String::from_utf8_lossy(&bytes));
        let text = match filter {
            Some(re) => text
                .lines()
                .filter(|l| re.is_match(l))
                .collect::<Vec<_>>()
                .join("\n"),
            None => text.trim_end_matches('\n').to_string(),
        };
        let mut text = text;
        if capped {
            text.push_str(&format!(
                "\n[… {} more bytes; call bg-output again, or read/grep {}]",
                info.bytes - to,
                info.log.display()
            ));
        }
        Ok((info, text))
    }

    /// The last `lines` lines of a job's output, without moving the model's read position.
    pub fn tail(&self, id: &str, lines: usize) -> Result<(JobInfo, String), String> {
        let info = self
            .shared
            .with_job(id, |j| j.info())
            .ok_or_else(|| self.unknown(id))?;
        let from = info.bytes.saturating_sub(READ_CAP);
        let bytes = read_range(&info.log, from, info.bytes)?;
        let text = strip_ansi(&String::from_utf8_lossy(&bytes));
        let all: Vec<&str> = text.lines().collect();
        let shown = all[all.len().saturating_sub(lines)..].join("\n");
        Ok((info, shown))
    }

    /// Kills the job's process group (TERM, then KILL). Returns its state afterwards.
    pub fn stop(&self, id: &str) -> Result<JobInfo, String> {
        let (pgid, running, drained) = self
            .shared
            .with_job(id, |j| {
                let running = j.state == JobState::Running;
                if running {
                    j.state = JobState::Stopped;
                }
                (j.pgid, running, j.drained)
            })
            .ok_or_else(|| self.unknown(id))?;
        // Once the leader is reaped and the output closed, the group id may belong to someone
        // else: only signal while the job still runs or something still holds its output.
        if running || (!drained && group_alive(pgid)) {
            terminate(pgid);
            // Wait for the waiter to record the end (bounded).
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until
                && self
                    .shared
                    .with_job(id, |j| j.ended.is_none())
                    .unwrap_or(false)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        self.shared
            .with_job(id, |j| j.info())
            .ok_or_else(|| self.unknown(id))
    }

    /// Ends every running job (the session is over).
    pub fn shutdown(&self) {
        let groups: Vec<i32> = self
            .shared
            .jobs()
            .iter_mut()
            .filter(|j| j.state == JobState::Running || j.ended.is_none() || !j.drained)
            .map(|j| {
                if j.state == JobState::Running {
                    j.state = JobState::SessionEnded;
                }
                j.pgid
            })
            .collect();
        for g in &groups {
            kill_group(*g, libc::SIGTERM);
        }
        if !groups.is_empty() {
            let until = Instant::now() + Duration::from_millis(300);
            while Instant::now() < until && groups.iter().any(|g| group_alive(*g)) {
                std::thread::sleep(Duration::from_millis(5));
            }
            for g in groups {
                kill_group(g, libc::SIGKILL);
            }
        }
    }

    fn unknown(&self, id: &str) -> String {
        let ids: Vec<String> = self.shared.jobs().iter().map(|j| j.id.clone()).collect();
        if ids.is_empty() {
            format!("no background job '{id}': none has been started in this session")
        } else {
            format!(
                "no background job '{id}'; the jobs are: {} (bg-list shows them)",
                ids.join(", ")
            )
        }
    }
}

/// Records the end of a job: its state, one notice for the conversation and one event.
fn finish(shared: &Arc<Shared>, id: &str, code: Option<i32>) {
    let ended = shared.with_job(id, |j| {
        j.ended = Some(Instant::now());
        j.exit_code = code;
        if j.state == JobState::Running {
            j.state = JobState::Exited(code);
        }
        (j.info(), j.kind)
    });
    if let Some((info, kind)) = ended {
        if !matches!(
            info.state,
            JobState::SessionEnded | JobState::Stopped | JobState::UntilMatched
        ) {
            let text = format!(
                "[background] {} {} ended: {} after {:.1} s (`{}`). {}",
                kind.as_str(),
                info.id,
                info.state.label(),
                info.runtime.as_secs_f64(),
                one_line(&info.command),
                if info.unread > 0 {
                    format!(
                        "It has {} bytes of unread output: bg-output {{\"id\": \"{}\"}}.",
                        info.unread, info.id
                    )
                } else {
                    "All its output has been read.".into()
                }
            );
            if let Ok(mut n) = shared.notices.lock() {
                n.push(text);
            }
        }
        shared.emit(&Event::JobEnd {
            id: info.id,
            kind: kind.as_str().into(),
            state: info.state.label(),
            exit_code: code,
        });
    }
}

/// TERM the group, then KILL whatever is left shortly after (from another thread).
fn terminate(pgid: i32) {
    kill_group(pgid, libc::SIGTERM);
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until && group_alive(pgid) {
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_group(pgid, libc::SIGKILL);
    });
}

/// One complete output line of a monitor: the event to stream, and the group to stop when
/// the `until` pattern matched.
fn monitor_line(j: &mut Job, raw: &[u8]) -> Option<(Event, Option<i32>)> {
    let text = strip_ansi(&String::from_utf8_lossy(raw));
    let line: String = text
        .trim_end_matches(['\n', '\r'])
        .chars()
        .take(LINE_CAP)
        .collect();
    let until = j.until.as_ref().is_some_and(|re| re.is_match(&line));
    let notify = j.notify.as_ref().is_some_and(|re| re.is_match(&line));
    let every = j.until.is_none() && j.notify.is_none();
    let matched = if until {
        Some("until".to_string())
    } else if notify {
        Some("notify".to_string())
    } else {
        None
    };
    if until || notify || every {
        if j.pending.len() >= PENDING_CAP {
            j.pending.remove(0);
            j.dropped += 1;
        }
        j.pending.push(if until {
            format!("{line}    ← matched `until`; the monitor was stopped")
        } else {
            line.clone()
        });
    }
    let stop = if until && j.state == JobState::Running {
        j.state = JobState::UntilMatched;
        Some(j.pgid)
    } else {
        None
    };
    Some((
        Event::JobLine {
            id: j.id.clone(),
            line,
            matched,
        },
        stop,
    ))
}

fn read_range(path: &Path, from: u64, to: u64) -> Result<Vec<u8>, String> {
    if to <= from {
        return Ok(Vec::new());
    }
    let mut f =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    f.seek(SeekFrom::Start(from))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut buf = Vec::with_capacity((to - from) as usize);
    f.take(to - from)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(buf)
}

fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    let short: String = first.chars().take(80).collect();
    if short.len() < s.len() {
        format!("{short}…")
    } else {
        short
    }
}

fn compile(pattern: Option<&str>, name: &str) -> Result<Option<Regex>, String> {
    match pattern {
        None | Some("") => Ok(None),
        Some(p) => Regex::new(p)
            .map(Some)
            .map_err(|e| format!("invalid {name} regex /{p}/: {e}")),
    }
}

/// `bash` with `run_in_background: true`.
pub(crate) fn start_bash_job(
    ctx: &ToolContext,
    command: &str,
    description: Option<String>,
) -> Result<ToolOutput, String> {
    let cwd = start_dir(ctx);
    let id = ctx.jobs.start(
        ctx,
        JobSpec {
            kind: JobKind::Bash,
            command,
            description,
            until: None,
            notify: None,
        },
        &cwd,
    )?;
    Ok(ToolOutput::ok(format!(
        "Started background job {id} in {} (it keeps running; the session is not blocked).\nRead its new output with bg-output {{\"id\": \"{id}\"}} (optional \"filter\" regex), list jobs with bg-list, stop it with bg-stop {{\"id\": \"{id}\"}}. You will be told when it ends.",
        cwd.display()
    )))
}

fn runtime(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s as u64) % 60)
    } else {
        format!("{}h{:02}m", (s / 3600.0) as u64, ((s as u64) % 3600) / 60)
    }
}

/// The table `bg-list` and `/tasks` show.
pub fn format_list(jobs: &[JobInfo]) -> String {
    if jobs.is_empty() {
        return "No background jobs in this session.".into();
    }
    let mut out = format!(
        "{:<11} {:<8} {:<24} {:>8} {:>5}  command\n",
        "id", "kind", "state", "runtime", "exit"
    );
    for j in jobs {
        out.push_str(&format!(
            "{:<11} {:<8} {:<24} {:>8} {:>5}  {}{}\n",
            j.id,
            j.kind.as_str(),
            j.state.label(),
            runtime(j.runtime),
            j.exit_code.map_or("-".into(), |c| c.to_string()),
            one_line(&j.command),
            if j.unread > 0 {
                format!("  ({} bytes unread)", j.unread)
            } else {
                String::new()
            }
        ));
    }
    out.trim_end().to_string()
}

fn header(info: &JobInfo) -> String {
    let exit = info
        .exit_code
        .map(|c| format!(", exit code {c}"))
        .unwrap_or_default();
    format!(
        "{} {}: {}{exit}, {} — `{}` (full log: {})",
        info.kind.as_str(),
        info.id,
        info.state.label(),
        runtime(info.runtime),
        one_line(&info.command),
        info.log.display()
    )
}

pub struct BgList;
pub struct BgOutput;
pub struct BgStop;
pub struct Monitor;

impl Tool for BgList {
    fn name(&self) -> &'static str {
        "bg-list"
    }
    fn description(&self) -> &'static str {
        "List the background jobs of this session (bash run_in_background and monitors): id, kind, state, runtime, exit code, command."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn run_args(&self, _args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        ToolOutput::ok(format_list(&ctx.jobs.list()))
    }
}

impl Tool for BgOutput {
    fn name(&self) -> &'static str {
        "bg-output"
    }
    fn description(&self) -> &'static str {
        "Read the output of a background job that is new since the last read, with its state and exit code. Optional filter: a regex; only matching lines are returned (the others are consumed too)."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Job id from bash run_in_background, monitor or bg-list (e.g. bash_1)"},
                "filter": {"type": "string", "description": "Regex; return only the new lines that match"}
            },
            "required": ["id"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        let ToolArgs::BgOutput(a) = args else {
            return crate::fs::mismatched("bg-output", args);
        };
        let run = || -> Result<ToolOutput, String> {
            let id = a.id.trim().to_string();
            let filter = compile(a.filter.as_deref(), "filter")?;
            let (info, text) = ctx.jobs.read_new(&id, filter.as_ref())?;
            let body = if text.trim().is_empty() {
                if filter.is_some() {
                    "(no new lines match the filter)".to_string()
                } else {
                    "(no new output)".to_string()
                }
            } else {
                cap_output(&text, &ctx.spill_dir, "bg-output", ctx.output_chars())
            };
            Ok(ToolOutput::ok(format!("{}\n{body}", header(&info))))
        };
        run().unwrap_or_else(ToolOutput::err)
    }
}

impl Tool for BgStop {
    fn name(&self) -> &'static str {
        "bg-stop"
    }
    fn description(&self) -> &'static str {
        "Stop a background job (bash or monitor): its whole process group is killed."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"id": {"type": "string", "description": "Job id (e.g. bash_1, monitor_1)"}},
            "required": ["id"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        let ToolArgs::BgStop(a) = args else {
            return crate::fs::mismatched("bg-stop", args);
        };
        let run = || -> Result<ToolOutput, String> {
            let id = a.id.trim().to_string();
            let before = ctx
                .jobs
                .list()
                .into_iter()
                .find(|j| j.id == id)
                .map(|j| j.state);
            let info = ctx.jobs.stop(&id)?;
            Ok(ToolOutput::ok(match before {
                Some(JobState::Running) => format!(
                    "Stopped {id}: process group {} killed after {}.",
                    info.pid,
                    runtime(info.runtime)
                ),
                _ => format!("{id} had already ended: {}.", info.state.label()),
            }))
        };
        run().unwrap_or_else(ToolOutput::err)
    }
}

impl Tool for Monitor {
    fn name(&self) -> &'static str {
        "monitor"
    }
    fn description(&self) -> &'static str {
        "Run a command in the background and watch its output line by line without blocking (tail a log, poll CI, watch a folder). Lines are shown to you at your next step: every line, or with notify (regex) only matching lines; with until (regex) the monitor stops at the first matching line. List with bg-list, read everything with bg-output, stop with bg-stop."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Shell command whose output lines are watched, e.g. \"tail -F app.log\""},
                "notify": {"type": "string", "description": "Regex: only matching lines are reported to you"},
                "until": {"type": "string", "description": "Regex: stop the monitor when a line matches (that line is reported)"},
                "description": {"type": "string"}
            },
            "required": ["command"]
        })
    }
    fn run_args(&self, args: &ToolArgs, ctx: &ToolContext, _c: &CancellationToken) -> ToolOutput {
        let ToolArgs::Monitor(a) = args else {
            return crate::fs::mismatched("monitor", args);
        };
        let run = || -> Result<ToolOutput, String> {
            let command = &a.command;
            if command.trim().is_empty() {
                return Err("command is empty".into());
            }
            let until = compile(a.until.as_deref(), "until")?;
            let notify = compile(a.notify.as_deref(), "notify")?;
            let what = match (&until, &notify) {
                (None, None) => "every output line will be shown to you at your next step".into(),
                (u, n) => {
                    let mut parts = Vec::new();
                    if let Some(n) = n {
                        parts.push(format!(
                            "lines matching /{n}/ will be shown to you at your next step"
                        ));
                    }
                    if let Some(u) = u {
                        parts.push(format!("the monitor stops at the first line matching /{u}/ (that line is shown to you)"));
                    }
                    parts.join("; ")
                }
            };
            let cwd = start_dir(ctx);
            let id = ctx.jobs.start(
                ctx,
                JobSpec {
                    kind: JobKind::Monitor,
                    command,
                    description: a.description.clone(),
                    until,
                    notify,
                },
                &cwd,
            )?;
            Ok(ToolOutput::ok(format!(
                "Started monitor {id} on `{}` in {}: {what}. It runs until it ends or you stop it with bg-stop {{\"id\": \"{id}\"}}; bg-output returns all its output.",
                one_line(command),
                cwd.display()
            )))
        };
        run().unwrap_or_else(ToolOutput::err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), dir.to_path_buf(), dir.join(".spill"))
    }

    fn wait_for(mut f: impl FnMut() -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < until, "timed out waiting");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn job_lifecycle_and_incremental_reads() {
        let d = tempfile::tempdir().unwrap();
        let c = ctx(d.path());
        let id = c
            .jobs
            .start(
                &c,
                JobSpec {
                    kind: JobKind::Bash,
                    command: "echo one; echo two; sleep 0.3; echo three",
                    description: None,
                    until: None,
                    notify: None,
                },
                d.path(),
            )
            .unwrap();
        assert_eq!(id, "bash_1");
        wait_for(|| c.jobs.list()[0].bytes >= 8);
        let (_, first) = c.jobs.read_new(&id, None).unwrap();
        assert_eq!(first, "one\ntwo");
        wait_for(|| c.jobs.list()[0].state != JobState::Running);
        let (info, rest) = c.jobs.read_new(&id, None).unwrap();
        assert_eq!(rest, "three");
        assert_eq!(info.exit_code, Some(0));
        let notes = c.jobs.drain_notifications();
        assert!(
            notes.iter().any(|n| n.contains("bash_1 ended: completed")),
            "{notes:?}"
        );
    }

    #[test]
    fn stop_kills_the_group_and_shutdown_ends_everything() {
        let d = tempfile::tempdir().unwrap();
        let c = ctx(d.path());
        let spec = |cmd| JobSpec {
            kind: JobKind::Bash,
            command: cmd,
            description: None,
            until: None,
            notify: None,
        };
        let a = c
            .jobs
            .start(&c, spec("sleep 60 & sleep 60"), d.path())
            .unwrap();
        let b = c.jobs.start(&c, spec("sleep 61"), d.path()).unwrap();
        let pg = c.jobs.list()[0].pid as i32;
        let info = c.jobs.stop(&a).unwrap();
        assert_eq!(info.state, JobState::Stopped);
        wait_for(|| !group_alive(pg));
        let pg_b = c.jobs.list()[1].pid as i32;
        c.jobs.shutdown();
        wait_for(|| !group_alive(pg_b));
        assert_eq!(c.jobs.list()[1].state, JobState::SessionEnded);
        assert!(c.jobs.stop("nope").unwrap_err().contains(&b));
    }

    #[test]
    fn monitor_notify_and_until() {
        let d = tempfile::tempdir().unwrap();
        let c = ctx(d.path());
        let id = c
            .jobs
            .start(
                &c,
                JobSpec {
                    kind: JobKind::Monitor,
                    command: "echo ok 1; echo ERROR a; echo ok 2; echo DONE; sleep 30",
                    description: None,
                    until: Some(Regex::new("DONE").unwrap()),
                    notify: Some(Regex::new("ERROR").unwrap()),
                },
                d.path(),
            )
            .unwrap();
        wait_for(|| {
            let j = &c.jobs.list()[0];
            j.state != JobState::Running && !group_alive(j.pid as i32)
        });
        std::thread::sleep(Duration::from_millis(100));
        let notes = c.jobs.drain_notifications().join("\n");
        assert!(notes.contains("ERROR a"), "{notes}");
        assert!(notes.contains("DONE"), "{notes}");
        assert!(!notes.contains("\nok 1"), "{notes}");
        let (info, all) = c
            .jobs
            .read_new(&id, Some(&Regex::new("ok").unwrap()))
            .unwrap();
        assert_eq!(all, "ok 1\nok 2");
        assert_eq!(info.state, JobState::UntilMatched);
    }
}
