//! Verification by default (seed 000 #8) and `--auto-test`: after a turn's edits the
//! project's test/lint command runs (sandboxed, through the bash spawn path) and its output is
//! reported verbatim — head and tail, the whole of it in a file. A failure goes back to the
//! model once; with `--auto-test` the tests run after every edit batch and the model iterates
//! until they pass or `verification.max_rounds` is reached.

#[allow(unused_imports)]
use crate::session_ext::*;

pub mod detect;
pub(crate) mod run;

pub use detect::Detected;
use std::path::PathBuf;
use yuyao_core::Session;

/// Default of `verification.timeout_s`.
pub const DEFAULT_TIMEOUT_S: u64 = 600;
/// Default of `verification.max_rounds` (`--auto-test` iterations).
pub const DEFAULT_MAX_ROUNDS: u32 = 5;

/// One run of the verification command.
#[derive(Debug, Clone, PartialEq)]
pub struct VerificationResult {
    pub command: String,
    pub source: String,
    pub ok: bool,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The output as shown and given to the model: verbatim, head and tail when long.
    pub output: String,
    /// The whole output, when what is shown is cut.
    pub full_output: Option<PathBuf>,
    /// Why it did not run (refused by the policy, nobody to approve it): `ok` is false.
    pub not_run: Option<String>,
}

impl VerificationResult {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "command": self.command, "source": self.source, "ok": self.ok,
            "exit_code": self.exit_code, "timed_out": self.timed_out, "output": self.output,
            "full_output": self.full_output.as_ref().map(|p| p.display().to_string()),
            "not_run": self.not_run,
        })
    }

    /// `` `cmd` → exit 1 `` and the like.
    pub fn outcome(&self) -> String {
        if let Some(why) = &self.not_run {
            return format!("`{}` not run: {why}", self.command);
        }
        let how = if self.timed_out {
            "timed out".to_string()
        } else {
            match self.exit_code {
                Some(0) => "passed (exit 0)".to_string(),
                Some(c) => format!("FAILED (exit {c})"),
                None => "FAILED (killed by a signal)".to_string(),
            }
        };
        format!("`{}` {how}", self.command)
    }
}

pub(crate) trait VerificationExt {
    fn verification_int(&self, key: &str) -> Option<u64>;
    fn verification_enabled(&self) -> bool;
    fn verification_command(&self) -> Option<Detected>;
    fn verification_timeout_ms(&self) -> u64;
    fn verification_max_rounds(&self) -> u32;
}

impl VerificationExt for Session {
    fn verification_int(&self, key: &str) -> Option<u64> {
        self.config()
            .get(key)
            .and_then(|v| v.as_integer())
            .filter(|n| *n > 0)
            .map(|n| n as u64)
    }

    /// `verification.enabled` (default true); `--auto-test` or `--test-cmd` ask for it.
    fn verification_enabled(&self) -> bool {
        self.options().auto_test
            || self.options().test_cmd.is_some()
            || self
                .config()
                .get("verification.enabled")
                .and_then(|v| v.as_bool())
                .unwrap_or(true)
    }

    /// The command: `--test-cmd`, else `verification.command`, else detected in the project.
    fn verification_command(&self) -> Option<Detected> {
        if let Some(c) = self
            .options()
            .test_cmd
            .as_deref()
            .filter(|c| !c.trim().is_empty())
        {
            return Some(Detected {
                command: c.trim().to_string(),
                source: "--test-cmd".into(),
            });
        }
        if let Some(c) = self
            .config()
            .get("verification.command")
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|c| !c.trim().is_empty())
        {
            return Some(Detected {
                command: c.trim().to_string(),
                source: "verification.command".into(),
            });
        }
        let root = self.tool_context().roots.lock().ok()?.first().cloned()?;
        detect::detect(&root)
    }

    fn verification_timeout_ms(&self) -> u64 {
        self.verification_int("verification.timeout_s")
            .unwrap_or(DEFAULT_TIMEOUT_S)
            .saturating_mul(1000)
    }

    fn verification_max_rounds(&self) -> u32 {
        self.verification_int("verification.max_rounds")
            .map(|n| n.min(u32::MAX as u64) as u32)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
    }
}
