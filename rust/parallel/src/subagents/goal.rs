//! `/goal <condition>` and `/loop <prompt> [--interval s] [--max n] [--until cond]`: turns
//! run one after another from dispatch (every front), each round announced; after a round a
//! judge call — one request through the same builder, under the same spend ceiling — decides
//! whether the condition is met. A limit (steps, cost, `goal.max_rounds`), an error or Esc
//! stops them; the verdict and its reason are said.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use yuyao_core::SideCallError;
use yuyao_core::{CoreError, Session};
use yuyao_model::build_request;
use yuyao_protocol::{Message, MessageRole, NoticeLevel};

const DEFAULT_MAX_ROUNDS: u32 = 10;
const JUDGE_SYSTEM: &str = "You judge whether a condition holds, from a coding agent's conversation. Judge from the evidence in the conversation (tool results, command output), not from the agent's claims alone. Answer on the first line exactly MET or NOT MET, and on the second line the reason in one sentence.";

/// How a round ended, when it ends the goal or loop.
fn stopped(round: u32, status: &str, error: Option<&str>) -> String {
    format!(
        "stopped in round {round}: {status}{}",
        error.map(|e| format!(" ({e})")).unwrap_or_default()
    )
}

pub(crate) trait GoalExt {
    fn max_rounds(&self) -> u32;
    fn arm_cancel(&self) -> CancellationToken;
    fn goal_round(&self, round: u32, prompt: &str) -> Result<(), String>;
    fn judge(&self, condition: &str) -> Result<(bool, String), String>;
}

impl GoalExt for Session {
    fn max_rounds(&self) -> u32 {
        self.config()
            .get("goal.max_rounds")
            .and_then(|v| v.as_integer())
            .filter(|n| *n > 0)
            .map(|n| n as u32)
            .unwrap_or(DEFAULT_MAX_ROUNDS)
    }

    /// A token Esc cancels outside a turn (the judge call, a loop's wait).
    fn arm_cancel(&self) -> CancellationToken {
        let token = CancellationToken::new();
        self.set_interrupt_token(&token);
        token
    }

    /// One turn of a goal or loop: `Err(why)` when it ends the run (a limit, Esc, an error).
    fn goal_round(&self, round: u32, prompt: &str) -> Result<(), String> {
        let result = self.chat(prompt);
        let last = self.lock().last_turn.clone();
        match (result, last.status) {
            (Ok(_), "completed") => Ok(()),
            (Err(e), _) => Err(stopped(round, "error", Some(&e.to_string()))),
            (Ok(_), status) => Err(stopped(round, status, last.error.as_deref())),
        }
    }

    /// The judge: is `condition` met by the conversation so far? `(met, reason)`.
    fn judge(&self, condition: &str) -> Result<(bool, String), String> {
        let history = self.messages();
        let start = history.len().saturating_sub(40);
        let start = (start..history.len())
            .find(|&i| history[i].role != MessageRole::Tool)
            .unwrap_or(history.len());
        let (mut view, _) = yuyao_core::request_view(&history[start..], self.stub_batch_chars());
        view.push(Message::user(format!(
            "Condition: {condition}\nIs the condition met now? First line MET or NOT MET; second line the reason."
        )));
        let mut req = build_request(JUDGE_SYSTEM, &view, Vec::new(), false, None);
        let (reply, cost) = self
            .side_call(&mut req, None, &self.arm_cancel(), true)
            .map_err(|e| match e {
                SideCallError::Model(why) => format!("the judge call failed: {why}"),
                other => other.to_string(),
            })?;
        let (met, reason) = verdict(&reply.text);
        self.lock().trajectory.record(
            "judge",
            json!({"condition": condition, "met": met, "reason": reason, "text": reply.text, "cost_usd": cost}),
        );
        Ok((met, reason))
    }
}

/// `MET` / `NOT MET` on the first line (markdown and punctuation aside), the reason after.
fn verdict(text: &str) -> (bool, String) {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let head = first
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_uppercase();
    let met = head.starts_with("MET") || head == "YES";
    let inline = first
        .split_once([':', '-', '—'])
        .map(|(_, r)| r.trim().to_string())
        .filter(|r| !r.is_empty());
    let reason = inline
        .or_else(|| lines.next().map(str::to_string))
        .unwrap_or_else(|| "(the judge gave no reason)".into());
    if !met && !head.starts_with("NOT") && head != "NO" {
        return (false, format!("the judge's answer was unclear: {first}"));
    }
    (met, reason)
}

/// `/goal <condition>`.
pub(crate) fn goal_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        return Err(CoreError::Usage("usage: /goal <condition>".into()));
    }
    let condition = args.join(" ");
    let max = s.max_rounds();
    let mut prompt = format!(
        "Goal: {condition}\nWork toward this goal now. When you believe it holds, say so and show the evidence."
    );
    let mut last_reason = String::new();
    for round in 1..=max {
        s.notice(
            NoticeLevel::Info,
            format!("goal round {round}/{max}: {condition}"),
        );
        if let Err(why) = s.goal_round(round, &prompt) {
            let msg = format!("goal not met: {why}");
            s.notice(NoticeLevel::Warning, msg.clone());
            return Ok(msg);
        }
        let (met, reason) = match s.judge(&condition) {
            Ok(v) => v,
            Err(e) => {
                let msg = format!("goal not met: stopped in round {round}: {e}");
                s.notice(NoticeLevel::Warning, msg.clone());
                return Ok(msg);
            }
        };
        if met {
            let msg = format!(
                "goal met after {round} round{}: {reason}",
                if round == 1 { "" } else { "s" }
            );
            s.notice(NoticeLevel::Info, msg.clone());
            return Ok(msg);
        }
        s.notice(
            NoticeLevel::Info,
            format!("goal round {round}: not met yet — {reason}"),
        );
        prompt = format!("The goal is not met yet: {reason}\nContinue working toward: {condition}");
        last_reason = reason;
    }
    let msg = format!("goal not met after {max} rounds (goal.max_rounds): {last_reason}");
    s.notice(NoticeLevel::Warning, msg.clone());
    Ok(msg)
}

struct LoopArgs {
    prompt: String,
    interval: f64,
    max: Option<u32>,
    until: Option<String>,
}

fn loop_args(args: &[String]) -> Result<LoopArgs, CoreError> {
    let usage =
        || CoreError::Usage("usage: /loop <prompt> [--interval s] [--max n] [--until cond]".into());
    let mut out = LoopArgs {
        prompt: String::new(),
        interval: 0.0,
        max: None,
        until: None,
    };
    let mut words = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (args[i].as_str(), None),
        };
        let value = |i: &mut usize| -> Result<String, CoreError> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            *i += 1;
            args.get(*i).cloned().ok_or_else(usage)
        };
        match flag {
            "--interval" => {
                out.interval = value(&mut i)?
                    .trim_end_matches('s')
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| CoreError::Usage("/loop: --interval takes seconds".into()))?
            }
            "--max" => {
                out.max = Some(
                    value(&mut i)?
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            CoreError::Usage("/loop: --max takes a positive number".into())
                        })?,
                )
            }
            "--until" => out.until = Some(value(&mut i)?),
            _ => words.push(args[i].clone()),
        }
        i += 1;
    }
    out.prompt = words.join(" ");
    if out.prompt.trim().is_empty() {
        return Err(usage());
    }
    Ok(out)
}

/// `/loop <prompt> [--interval s] [--max n] [--until cond]`. Without `--max`, at most
/// `goal.max_rounds` rounds.
pub(crate) fn loop_cmd(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let a = loop_args(args)?;
    let max = a.max.unwrap_or_else(|| s.max_rounds());
    for round in 1..=max {
        s.notice(NoticeLevel::Info, format!("loop round {round}/{max}"));
        if let Err(why) = s.goal_round(round, &a.prompt) {
            let msg = format!("loop ended after {} round(s): {why}", round - 1);
            s.notice(NoticeLevel::Warning, msg.clone());
            return Ok(msg);
        }
        if let Some(cond) = &a.until {
            match s.judge(cond) {
                Ok((true, reason)) => {
                    let msg = format!("loop ended after {round} round(s): condition met: {reason}");
                    s.notice(NoticeLevel::Info, msg.clone());
                    return Ok(msg);
                }
                Ok((false, reason)) => s.notice(
                    NoticeLevel::Info,
                    format!("loop round {round}: condition not met — {reason}"),
                ),
                Err(e) => {
                    let msg = format!("loop ended after {round} round(s): {e}");
                    s.notice(NoticeLevel::Warning, msg.clone());
                    return Ok(msg);
                }
            }
        }
        if round < max && a.interval > 0.0 {
            // Esc during the wait ends the loop.
            let token = s.arm_cancel();
            let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(a.interval);
            while std::time::Instant::now() < until {
                if token.is_cancelled() {
                    let msg = format!("loop ended after {round} round(s): interrupted");
                    s.notice(NoticeLevel::Warning, msg.clone());
                    return Ok(msg);
                }
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
        }
    }
    let msg = format!(
        "loop ended after {max} round{} (--max {max})",
        if max == 1 { "" } else { "s" }
    );
    s.notice(NoticeLevel::Info, msg.clone());
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(
            verdict("MET\nthe tests pass"),
            (true, "the tests pass".into())
        );
        assert_eq!(
            verdict("**NOT MET**: no file yet"),
            (false, "no file yet".into())
        );
        assert!(!verdict("maybe").0);
        assert!(verdict("maybe").1.contains("unclear"));
    }

    #[test]
    fn loop_flags_anywhere() {
        let w: Vec<String> = [
            "run",
            "tests",
            "--max",
            "3",
            "--until=green",
            "--interval",
            "0.5s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let a = loop_args(&w).unwrap();
        assert_eq!(a.prompt, "run tests");
        assert_eq!(a.max, Some(3));
        assert_eq!(a.until.as_deref(), Some("green"));
        assert_eq!(a.interval, 0.5);
        assert!(loop_args(&["--max".into(), "0".into(), "x".into()]).is_err());
    }
}
