//! Running the verification command: adjudicated like a bash call (a refusal or nobody to
//! approve it is reported, never bypassed), spawned through `yuyao_tools::exec` (the one
//! spawn path, where the OS sandbox applies), output kept verbatim.

#[allow(unused_imports)]
use crate::session_ext::*;

use super::{Detected, VerificationResult};
use crate::Facts;
use tokio_util::sync::CancellationToken;
use yuyao_core::Session;
use yuyao_policy::{Action, Verdict};
use yuyao_protocol::{Event, Message};

/// Lines shown from the start and from the end of a long output.
const HEAD_LINES: usize = 40;
const TAIL_LINES: usize = 60;

/// The output as shown: whole when short, else head and tail with the full text in a file.
fn head_tail(text: &str, spill_dir: &std::path::Path) -> (String, Option<std::path::PathBuf>) {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= HEAD_LINES + TAIL_LINES {
        return (text.to_string(), None);
    }
    let name = format!(
        "verification-{}.txt",
        chrono::Local::now().format("%Y%m%d-%H%M%S%.3f")
    );
    let path = spill_dir.join(name);
    let saved = std::fs::create_dir_all(spill_dir)
        .and_then(|_| std::fs::write(&path, text))
        .is_ok();
    let cut = lines.len() - HEAD_LINES - TAIL_LINES;
    let note = if saved {
        format!(
            "[… {cut} lines not shown; the full output is in {} …]",
            path.display()
        )
    } else {
        format!("[… {cut} lines not shown …]")
    };
    let shown = format!(
        "{}\n{note}\n{}",
        lines[..HEAD_LINES].join("\n"),
        lines[lines.len() - TAIL_LINES..].join("\n")
    );
    (shown, saved.then_some(path))
}

pub(crate) trait RunExt {
    fn run_verification(&self, found: &Detected, token: &CancellationToken) -> VerificationResult;
    fn record_verification(&self, r: &VerificationResult);
    fn verify_before_final(&self, token: &CancellationToken) -> bool;
    fn auto_test_after_batch(&self, token: &CancellationToken);
    fn run_and_mark(&self, found: &Detected, token: &CancellationToken) -> VerificationResult;
}

impl RunExt for Session {
    /// Runs the verification command once: the policy decides as for a bash call.
    fn run_verification(&self, found: &Detected, token: &CancellationToken) -> VerificationResult {
        let mut result = VerificationResult {
            command: found.command.clone(),
            source: found.source.clone(),
            ok: false,
            exit_code: None,
            timed_out: false,
            output: String::new(),
            full_output: None,
            not_run: None,
        };
        let action = Action {
            tool: "bash".into(),
            command: Some(found.command.clone()),
            paths: Vec::new(),
        };
        // A remembered preference ("use bun, not npm") forbids it as it would a bash call.
        if let Some(rule) = yuyao_extension_files::preference_rules::violation(
            &self.preference_rules(),
            &found.command,
        ) {
            result.not_run = Some(rule);
            self.record_verification(&result);
            return result;
        }
        let decision = self.lock().policy.decide(&action);
        let approved = match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(format!("refused: {}", decision.reason)),
            // The user sees the exact command before it runs; with nobody there it does not.
            Verdict::Ask | Verdict::Review => self
                .ask_permission("bash", &found.command, &action, &decision.reason)
                .map_err(|e| e.trim_start_matches("Refused: ").to_string()),
        };
        if let Err(why) = approved {
            result.not_run = Some(why);
            self.record_verification(&result);
            return result;
        }
        let ran = yuyao_tools::exec::run_foreground(
            self.tool_context(),
            &found.command,
            self.verification_timeout_ms(),
            token,
        );
        match ran {
            Ok(run) => {
                let text = {
                    let st = self.lock();
                    yuyao_core::redact(self, &st.policy, &run.text).into_owned()
                };
                let (shown, full) = head_tail(&text, &self.tool_context().spill_dir);
                // A runner that is not installed says nothing about the change.
                if run.interrupted {
                    result.not_run = Some("interrupted".into());
                } else if run.exit_code == Some(127) || text.contains("No module named pytest") {
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    result.not_run = Some(format!(
                        "the command is not available here ({})",
                        first.trim()
                    ));
                }
                result.ok = run.ok;
                result.exit_code = run.exit_code;
                result.timed_out = run.timed_out;
                result.output = shown;
                result.full_output = full;
            }
            Err(e) => result.not_run = Some(format!("could not start: {e}")),
        }
        self.record_verification(&result);
        result
    }

    fn record_verification(&self, r: &VerificationResult) {
        self.lock().trajectory.record("verification", r.to_json());
        self.emit(Event::Verification {
            command: r.command.clone(),
            ok: r.ok,
            exit_code: r.exit_code,
            output: match &r.not_run {
                Some(why) => format!("(not run: {why})"),
                None => r.output.clone(),
            },
        });
        self.lock().facts().completion.verification = Some(r.clone());
    }

    /// Before the final answer: when the turn edited files since the last verification and
    /// a command is known, run it. A failure goes back to the model once (with `--auto-test`,
    /// until `verification.max_rounds`); returns whether the turn continues.
    fn verify_before_final(&self, token: &CancellationToken) -> bool {
        let (edited, fed_back) = {
            let mut st = self.lock();
            let f = &st.facts().completion;
            (f.edits_since_verification(), f.verification_feedback)
        };
        if !edited || !self.verification_enabled() {
            return false;
        }
        let Some(found) = self.verification_command() else {
            return false;
        };
        let r = self.run_and_mark(&found, token);
        let limit = if self.options().auto_test {
            self.verification_max_rounds()
        } else {
            1
        };
        if r.ok || r.not_run.is_some() || fed_back >= limit || token.is_cancelled() {
            return false;
        }
        let mut st = self.lock();
        st.facts().completion.verification_feedback += 1;
        st.push(Message::user(feedback(&r, "before your final answer")));
        true
    }

    /// `--auto-test`: after an edit batch, run the tests and hand the result to the model
    /// (a failure asks it to fix; the last allowed round tells it to stop and report).
    fn auto_test_after_batch(&self, token: &CancellationToken) {
        if !self.options().auto_test || token.is_cancelled() {
            return;
        }
        let (edited, rounds) = {
            let mut st = self.lock();
            (
                st.facts().completion.edits_since_verification(),
                st.facts().completion.auto_test_rounds,
            )
        };
        if !edited || self.lock().facts().completion.auto_test_unavailable {
            return;
        }
        let max = self.verification_max_rounds();
        let Some(found) = self.verification_command() else {
            {
                self.notice(
                    yuyao_protocol::NoticeLevel::Warning,
                    "--auto-test: no test command found (AGENTS.md, package.json, Makefile, Cargo.toml, Python, go.mod); pass --test-cmd",
                );
                self.lock().facts().completion.auto_test_unavailable = true;
            }
            return;
        };
        if rounds >= max {
            return;
        }
        let r = self.run_and_mark(&found, token);
        if let Some(why) = &r.not_run {
            self.notice(
                yuyao_protocol::NoticeLevel::Warning,
                format!("--auto-test: `{}` not run: {why}", r.command),
            );
            self.lock().facts().completion.auto_test_unavailable = true;
            return;
        }
        let mut st = self.lock();
        st.facts().completion.auto_test_rounds += 1;
        let round = st.facts().completion.auto_test_rounds;
        if r.ok {
            st.facts().completion.auto_test_passed_at = Some(round);
            st.push(Message::user(format!(
                "[auto-test round {round}/{max}] `{}` passed.",
                r.command
            )));
            return;
        }
        st.facts().completion.verification_feedback =
            st.facts().completion.verification_feedback.max(round);
        let what = if round >= max {
            format!(
                "auto-test round {round}/{max}, the last one: stop editing and give your final answer, stating plainly what still fails"
            )
        } else {
            format!(
                "auto-test round {round}/{max}: fix the failure; the tests run again after your next edit"
            )
        };
        st.push(Message::user(feedback(&r, &what)));
    }

    fn run_and_mark(&self, found: &Detected, token: &CancellationToken) -> VerificationResult {
        let r = self.run_verification(found, token);
        let mut st = self.lock();
        st.facts().completion.verified_at_edits = Some(st.facts().completion.edits);
        r
    }
}

/// The message that hands a failed verification to the model.
fn feedback(r: &VerificationResult, when: &str) -> String {
    let mut m = format!(
        "[verification] {} ({} from {}), {when}. Its output, verbatim:\n{}",
        r.outcome(),
        r.command,
        r.source,
        r.output
    );
    if let Some(p) = &r.full_output {
        m.push_str(&format!("\n(full output: {})", p.display()));
    }
    m.push_str("\nFix what fails if it is within the task. If you cannot, say plainly in your final answer what fails, what you skipped and what is unverified — do not call the work done.");
    m
}
