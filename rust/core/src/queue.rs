//! `/queue steer|followup|collect|interrupt [text]`: what happens to a message typed while a
//! turn runs (it runs at once, even mid-turn).
//! - `steer`: injected at the next model call of the running turn (the same as Ctrl+S);
//! - `followup`: run as its own turn after the running one;
//! - `collect`: gathered with the other collected messages and sent as one turn after the
//!   running one (idle: joined to the next prompt);
//! - `interrupt`: the running turn stops now and the text runs as the next turn.
//!
//! Idle, `followup` and `interrupt` simply run the text as a turn. `/queue` alone lists what is
//! waiting.

use crate::session::{CoreError, Session};
use std::collections::VecDeque;
use yuyao_protocol::NoticeLevel;

#[derive(Default)]
pub(crate) struct Queued {
    followups: VecDeque<String>,
    collected: Vec<String>,
}

impl Session {
    fn queued(&self) -> std::sync::MutexGuard<'_, Queued> {
        self.part::<std::sync::Mutex<Queued>>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The turn to run after the one that just ended: a follow-up (an interrupt's text
    /// first), else the collected messages as one.
    pub(crate) fn next_queued_turn(&self) -> Option<String> {
        let mut q = self.queued();
        if let Some(t) = q.followups.pop_front() {
            return Some(t);
        }
        (!q.collected.is_empty()).then(|| std::mem::take(&mut q.collected).join("\n\n"))
    }

    /// A prompt typed while idle carries the collected messages before it.
    pub(crate) fn with_collected(&self, text: &str) -> String {
        let collected = std::mem::take(&mut self.queued().collected);
        if collected.is_empty() {
            text.to_string()
        } else {
            format!("{}\n\n{text}", collected.join("\n\n"))
        }
    }
}

/// Idle: the text runs as a turn now. The fronts with a handler rendered it from its events.
fn run_now(s: &Session, text: &str) -> Result<String, CoreError> {
    let answer = s.chat(text)?;
    Ok(if s.handler.is_some() {
        String::new()
    } else {
        answer
    })
}

pub(crate) fn queue_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let usage = || CoreError::Usage("usage: /queue steer|followup|collect|interrupt [text]".into());
    let Some(kind) = args.first() else {
        let q = s.queued();
        let steer = s.steer.lock().map(|v| v.len()).unwrap_or(0);
        return Ok(format!(
            "queued: {steer} steering message(s), {} follow-up turn(s), {} collected message(s)",
            q.followups.len(),
            q.collected.len()
        ));
    };
    let text = args[1..].join(" ");
    let busy = s.is_busy();
    let need_text = || {
        if text.trim().is_empty() {
            Err(CoreError::Usage(format!("/queue {kind} needs a text")))
        } else {
            Ok(())
        }
    };
    match kind.as_str() {
        "steer" => {
            need_text()?;
            s.steer(&text);
            Ok(if busy {
                "steering message queued: the model gets it at its next call".into()
            } else {
                "steering message queued: it joins the next turn".into()
            })
        }
        "followup" | "follow-up" => {
            need_text()?;
            if !busy {
                return run_now(s, &text);
            }
            s.queued().followups.push_back(text);
            Ok("follow-up queued: it runs as the next turn when this one ends".into())
        }
        "collect" => {
            need_text()?;
            let n = {
                let mut q = s.queued();
                q.collected.push(text);
                q.collected.len()
            };
            Ok(format!(
                "collected ({n} message{}): sent as one turn {}",
                if n == 1 { "" } else { "s" },
                if busy {
                    "when this turn ends"
                } else {
                    "with your next prompt"
                }
            ))
        }
        "interrupt" => {
            if !busy {
                need_text()?;
                return run_now(s, &text);
            }
            if !text.trim().is_empty() {
                s.queued().followups.push_front(text);
            }
            s.interrupt();
            s.notice(NoticeLevel::Info, "interrupted by /queue interrupt");
            Ok("the running turn stops now; the text runs next".into())
        }
        _ => Err(usage()),
    }
}

/// The slash commands of this feature (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "queue",
    state: Some(|_| Box::new(std::sync::Mutex::new(Queued::default()))),
    // A prompt typed while idle carries the messages collected before it.
    prompt_in: Some(|s, text| s.with_collected(&text)),
    // `/queue followup|collect|interrupt` typed during the turn run after it, in order.
    next_turn: Some(|s| s.next_queued_turn()),
    commands: &[crate::cmd!(
        "queue",
        [],
        "<steer|followup|collect|interrupt> [text]",
        "queue or steer mid-turn",
        Some(crate::queue::queue_command)
    )],
    ..crate::feature::Feature::NONE
};
