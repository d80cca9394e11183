//! `/run [command]`: start the project the way it starts, as a background job (listed in
//! `/tasks`), wait until it is ready — a port from its output accepts connections, or it
//! printed that it is ready — and report the URL and its output. The command is detected
//! from the project (package.json `dev`/`start`, Procfile `web`, Makefile `run`, `cargo run`,
//! a Python `__main__`) or given. Either runs under the `/run` apps' profile
//! (`process_profile`: the agent's sandbox level with the network on, a server must listen);
//! only the user's own configuration (`extension_sandbox.apps*`) changes it, and only for a
//! command the user typed.

use crate::process_profile::{Origin, ProcessKind};
use crate::session::{CoreError, Session};
use regex::Regex;
use std::path::Path;
use std::time::{Duration, Instant};
use yuyao_tools::jobs::{JobKind, JobSpec, JobState};

/// How long `/run` waits for readiness before reporting that the app is still starting.
const READY_WAIT: Duration = Duration::from_secs(20);
/// Output lines shown in the report.
const SHOWN_LINES: usize = 15;

/// The start command of the project in `dir`, and where it was found.
pub(crate) fn detect(dir: &Path) -> Option<(String, String)> {
    if let Ok(text) = std::fs::read_to_string(dir.join("package.json"))
        && let Ok(pkg) = serde_json::from_str::<serde_json::Value>(&text)
    {
        for script in ["dev", "start"] {
            if pkg.pointer(&format!("/scripts/{script}")).is_some() {
                let runner = if dir.join("pnpm-lock.yaml").exists() {
                    "pnpm"
                } else if dir.join("yarn.lock").exists() {
                    "yarn"
                } else if dir.join("bun.lockb").exists() || dir.join("bun.lock").exists() {
                    "bun"
                } else {
                    "npm"
                };
                return Some((
                    format!("{runner} run {script}"),
                    format!("package.json script \"{script}\""),
                ));
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("Procfile")) {
        let entries: Vec<(&str, &str)> = text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        if let Some((name, cmd)) = entries
            .iter()
            .find(|(k, _)| *k == "web")
            .or(entries.first())
        {
            return Some((cmd.to_string(), format!("Procfile \"{name}\"")));
        }
    }
    for makefile in ["Makefile", "makefile", "GNUmakefile"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(makefile))
            && text.lines().any(|l| l.starts_with("run:"))
        {
            return Some(("make run".into(), format!("{makefile} target \"run\"")));
        }
    }
    if dir.join("Cargo.toml").exists() {
        return Some(("cargo run".into(), "Cargo.toml".into()));
    }
    if dir.join("__main__.py").exists() {
        return Some(("python3 .".into(), "__main__.py".into()));
    }
    for file in ["main.py", "app.py", "server.py", "manage.py"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(file))
            && text.contains("__main__")
        {
            let cmd = if file == "manage.py" {
                "python3 manage.py runserver".to_string()
            } else {
                format!("python3 {file}")
            };
            return Some((cmd, format!("{file} (__main__)")));
        }
    }
    // A package with a __main__.py (pkg/ or src/pkg/).
    for base in [dir.to_path_buf(), dir.join("src")] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        let mut found: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().join("__main__.py").is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        found.sort();
        if let Some(pkg) = found.first() {
            let cmd = if base == dir {
                format!("python3 -m {pkg}")
            } else {
                format!("PYTHONPATH=src python3 -m {pkg}")
            };
            return Some((cmd, format!("{pkg}/__main__.py")));
        }
    }
    None
}

/// Ports the output names (`http://localhost:8000`, `port 5173`, `0.0.0.0:3000`).
fn ports_in(text: &str) -> Vec<u16> {
    let re = Regex::new(r"(?i)(?:https?://[^\s:/]+:(\d{2,5}))|(?:\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::\]|\[::1\]):(\d{2,5}))|(?:\bport\s*:?\s*(\d{2,5}))").expect("valid regex");
    let mut out = Vec::new();
    for c in re.captures_iter(text) {
        if let Some(p) = (1..=3)
            .filter_map(|i| c.get(i))
            .find_map(|m| m.as_str().parse::<u16>().ok())
            && p > 0
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

fn port_open(port: u16) -> bool {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn project_trusted(s: &Session) -> bool {
    s.opts
        .trust_project
        .unwrap_or_else(|| yuyao_store::trust::is_trusted(&s.paths))
        || s.opts.project_extensions == Some(true)
}

/// Asks the user (interactive fronts only) to run a command the project names.
fn confirmed(s: &Session, command: &str, source: &str) -> bool {
    let Some(h) = s.handler.as_ref().filter(|_| !s.opts.headless) else {
        return false;
    };
    let answer = h.request(&yuyao_protocol::Request::Permission {
        tool: "run".into(),
        summary: format!("/run {command}"),
        detail: format!(
            "`{command}` comes from this project ({source}) and would run in the agent's sandbox (its level and network switch)."
        ),
        reason: "a start command named by an untrusted project".into(),
        rules: Vec::new(),
    });
    matches!(
        answer
            .as_deref()
            .map(str::trim)
            .and_then(|a| serde_json::from_value(serde_json::Value::String(a.to_string())).ok()),
        Some(
            yuyao_protocol::PermissionAnswer::Allow
                | yuyao_protocol::PermissionAnswer::AllowSession
                | yuyao_protocol::PermissionAnswer::AllowProject
                | yuyao_protocol::PermissionAnswer::AllowAlways
        )
    )
}

/// What `/run` looks for, named in the messages when nothing is found.
pub(crate) const LOOKED_FOR: &str =
    "no package.json dev/start, Procfile, Makefile run, Cargo.toml or Python __main__";

/// The start command of the session's project (its working directory first).
pub(crate) fn detect_in(s: &Session) -> Option<(String, String)> {
    detect(&s.ctx.cwd()).or_else(|| detect(&s.paths.project))
}

/// A started app: its job, how it stands after the readiness wait, its URL if a port opened.
pub(crate) struct Started {
    pub id: String,
    pub state: JobState,
    pub url: Option<String>,
    /// The last output lines.
    pub output: String,
    pub report: String,
}

/// The app `/run` (or `/verify`) started that still runs, with its command: its URL if a
/// port from its output accepts connections.
pub(crate) fn running_app(s: &Session) -> Option<(Started, String)> {
    s.ctx
        .jobs
        .list()
        .into_iter()
        .filter(|j| j.state == JobState::Running)
        .filter(|j| {
            j.description
                .as_deref()
                .is_some_and(|d| d.starts_with(JOB_MARK))
        })
        .find_map(|j| {
            let (_, text) = s.ctx.jobs.tail(&j.id, 400).ok()?;
            let url = ports_in(&text)
                .into_iter()
                .find(|p| port_open(*p))
                .map(|p| format!("http://127.0.0.1:{p}"));
            let report = format!(
                "reusing the app already running as job {}{}",
                j.id,
                url.as_deref()
                    .map(|u| format!(" at {u}"))
                    .unwrap_or_default()
            );
            let started = Started {
                id: j.id,
                state: JobState::Running,
                url,
                output: last_lines(&text, SHOWN_LINES),
                report,
            };
            Some((started, j.command))
        })
}

/// How the jobs of started apps are described (and found again).
const JOB_MARK: &str = "/run (";

/// A project-named command runs with the user's rights: in an untrusted project the user
/// sees it and says yes first (as with project hooks). `cmd` names the command in the error.
pub(crate) fn allow_project_command(
    s: &Session,
    cmd: &str,
    command: &str,
    source: &str,
) -> Result<(), CoreError> {
    if project_trusted(s) || confirmed(s, command, source) {
        return Ok(());
    }
    Err(CoreError::Usage(format!(
        "/{cmd}: not started: `{command}` ({source}) comes from a project you have not trusted; run /trust, or give the command: /run <command>"
    )))
}

pub(crate) fn run_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let (command, source) = if args.is_empty() {
        detect_in(s).ok_or_else(|| {
            CoreError::Usage(format!(
                "/run: cannot tell how this project starts ({LOOKED_FOR}); give the command: /run <command>"
            ))
        })?
    } else {
        (args.join(" "), "given".to_string())
    };
    if args.is_empty() {
        allow_project_command(s, "run", &command, &source)?;
    }
    Ok(start_app(s, &command, &source)?.report)
}

/// Starts `command` as a background job under the `/run` apps' profile and waits for
/// readiness (`process_profile`: the agent's sandbox level with the network on; a command the
/// user typed, `source` "given", is user-level: `extension_sandbox.apps*` can change it).
pub(crate) fn start_app(s: &Session, command: &str, source: &str) -> Result<Started, CoreError> {
    let cwd = s.ctx.cwd();
    let origin = if source == "given" {
        Origin::User
    } else {
        Origin::Project
    };
    let confinement = s.process_confinement(ProcessKind::App, origin);
    let id = s
        .ctx
        .jobs
        .start_confined(
            &s.ctx,
            JobSpec {
                kind: JobKind::Bash,
                command,
                description: Some(format!("{JOB_MARK}{source})")),
                until: None,
                notify: None,
            },
            &cwd,
            &confinement,
        )
        .map_err(CoreError::Failed)?;
    let ready =
        Regex::new(r"(?i)\b(ready|listening|serving|started|running on|compiled successfully)\b")
            .expect("valid regex");
    let start = Instant::now();
    let mut settled = 0u32;
    let (state, text, url) = loop {
        let (info, text) = s.ctx.jobs.tail(&id, 400).map_err(CoreError::Failed)?;
        if info.state != JobState::Running {
            break (info.state, text, None);
        }
        if let Some(port) = ports_in(&text).into_iter().find(|p| port_open(*p)) {
            break (info.state, text, Some(format!("http://127.0.0.1:{port}")));
        }
        // A ready line without a port: give it a moment to print one, then report.
        if ready.is_match(&text) {
            settled += 1;
            if settled > 10 {
                break (info.state, text, None);
            }
        }
        if start.elapsed() >= READY_WAIT {
            break (info.state, text, None);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let shown = last_lines(&text, SHOWN_LINES);
    let head = format!("/run started `{command}` ({source}) as job {id}");
    let report = match (&state, &url) {
        (JobState::Running, Some(url)) => {
            format!("{head}: ready at {url} (in /tasks; stop it with /tasks stop {id})")
        }
        (JobState::Running, None) if ready.is_match(&text) => {
            format!("{head}: it reports ready (no port seen; in /tasks)")
        }
        (JobState::Running, None) => format!(
            "{head}: still starting after {} s, no open port seen yet (in /tasks: /tasks show {id})",
            READY_WAIT.as_secs()
        ),
        (other, _) => format!("{head}: it ended ({})", other.label()),
    };
    let report = if shown.trim().is_empty() {
        report
    } else {
        format!("{report}\noutput:\n{shown}")
    };
    // The model knows the app runs (and where) for the next turn.
    let mut st = s.lock();
    st.pending_notes.push(format!(
        "[settings] The user started the app in the background: `{command}` (job {id}){}.",
        url.as_deref()
            .map(|u| format!(", ready at {u}"))
            .unwrap_or_default()
    ));
    st.trajectory.record(
        "run_app",
        serde_json::json!({"command": command, "source": source, "job": id, "url": url}),
    );
    Ok(Started {
        id,
        state,
        url,
        output: shown,
        report,
    })
}

/// The slash commands of this feature (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "run_app",
    commands: &[crate::cmd!(
        "run",
        [],
        "[command]",
        "start the app, wait until it is ready, report its URL",
        Some(crate::run_app::run_command)
    )],
    ..crate::feature::Feature::NONE
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_from_common_lines() {
        assert_eq!(
            ports_in("Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/)"),
            vec![8000]
        );
        assert_eq!(ports_in("  ➜  Local:   http://localhost:5173/"), vec![5173]);
        assert_eq!(ports_in("listening on 127.0.0.1:3000"), vec![3000]);
        assert!(ports_in("nothing here 2024").is_empty());
    }

    #[test]
    fn detection_order() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(detect(d.path()), None);
        std::fs::write(d.path().join("Cargo.toml"), "[package]").unwrap();
        assert_eq!(detect(d.path()).unwrap().0, "cargo run");
        std::fs::write(d.path().join("Makefile"), "run:\n\techo hi\n").unwrap();
        assert_eq!(detect(d.path()).unwrap().0, "make run");
        std::fs::write(
            d.path().join("Procfile"),
            "worker: x\nweb: python3 app.py\n",
        )
        .unwrap();
        assert_eq!(detect(d.path()).unwrap().0, "python3 app.py");
        std::fs::write(
            d.path().join("package.json"),
            r#"{"scripts": {"start": "node s.js", "dev": "vite"}}"#,
        )
        .unwrap();
        assert_eq!(detect(d.path()).unwrap().0, "npm run dev");
    }
}
