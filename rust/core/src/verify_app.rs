//! `/verify [what to check]`: check the change at runtime, not by its tests. The app is
//! started the way `/run` starts it (the app `/run` already started is reused), then a turn
//! under the session's own mode and permissions drives it and reports the observed
//! behaviour against the request — the argument, or else the session's last user request:
//! a web app (a port from its output accepts connections) is opened with the browser tool,
//! acted on and screenshotted; a command-line app (it ended by itself, or runs without a
//! port) is run with sample input through bash. Nothing to start: a message naming what
//! was looked for.

use crate::run_app::{self, LOOKED_FOR, Started};
use crate::session::{CoreError, Session};
use yuyao_protocol::{MessageRole, NoticeLevel};
use yuyao_tools::jobs::JobState;

const REPORT_FORMAT: &str = "End with `Verdict: works`, `Verdict: broken` or `Verdict: partly`, then one line per requested behaviour: `expected — observed`. Report only what you observed yourself at runtime; test results alone are not a verification. Do not change any file unless that is needed to run the app.";

/// The last request the user typed (notes and command turns begin with `[`).
fn last_request(s: &Session) -> Option<String> {
    let st = s.lock();
    st.history
        .iter()
        .rev()
        .filter(|m| m.role == MessageRole::User)
        .map(|m| m.text())
        .find(|t| !t.trim().is_empty() && !t.trim_start().starts_with('['))
}

fn web_prompt(request: &str, url: &str, command: &str) -> String {
    format!(
        "[/verify] Verify at runtime that this works: {request}\nThe app runs (`{command}`) at {url}. With the browser tool: open {url}, act as a user would to exercise the requested behaviour (click, type, submit, follow links), read the console for errors, and take a screenshot of the result. Then report what you observed against the request.\n{REPORT_FORMAT}"
    )
}

fn cli_prompt(request: &str, command: &str, source: &str, started: &Started) -> String {
    let how = match &started.state {
        JobState::Running => format!(
            "It is running as background job {} with no open port seen (it may still be starting; check with bash, stop the job when done).",
            started.id
        ),
        other => format!("Started without input it {}.", other.label()),
    };
    let output = if started.output.trim().is_empty() {
        "(no output)".to_string()
    } else {
        started.output.clone()
    };
    format!(
        "[/verify] Verify at runtime that this works: {request}\nThe project starts with `{command}` ({source}); it has no web address, so treat it as a command-line program. {how} Its output:\n```\n{output}\n```\nWith bash, run it (build it first if needed) with sample input and arguments that exercise the requested behaviour, including one edge case, and compare what it prints and its exit status with the request.\n{REPORT_FORMAT}"
    )
}

pub(crate) fn verify_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let request = if args.is_empty() {
        last_request(s).unwrap_or_else(|| "the changes made in this session".into())
    } else {
        args.join(" ")
    };
    let (started, command, source) = match run_app::running_app(s) {
        Some((started, command)) => (started, command, "started with /run".to_string()),
        None => {
            let (command, source) = run_app::detect_in(s).ok_or_else(|| {
                CoreError::Usage(format!(
                    "/verify: nothing to run: cannot tell how this project starts ({LOOKED_FOR}); start it with /run <command>, then /verify"
                ))
            })?;
            run_app::allow_project_command(s, "verify", &command, &source)?;
            let started = run_app::start_app(s, &command, &source)?;
            (started, command, source)
        }
    };
    let prompt = match &started.url {
        Some(url) if started.state == JobState::Running => web_prompt(&request, url, &command),
        _ => cli_prompt(&request, &command, &source, &started),
    };
    let said = format!("/verify: {}", started.report);
    // Fronts with a handler show the start line now and render the turn themselves.
    s.notice(NoticeLevel::Info, said.clone());
    let answer = s.chat(&prompt)?;
    Ok(if s.handler.is_some() {
        s.turn_answer(answer)
    } else {
        format!("{said}\n\n{answer}")
    })
}

/// The slash commands of this feature (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "verify_app",
    commands: &[crate::cmd!(
        "verify",
        [],
        "[what to check]",
        "build, run and observe the change",
        Some(crate::verify_app::verify_command)
    )],
    ..crate::feature::Feature::NONE
};
