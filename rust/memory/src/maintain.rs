//! Dreaming as periodic background consolidation (seed 002 §6.3): with `dreaming.enabled`, a
//! live session dreams every `dreaming.interval_minutes` (default 60) on a thread of its own,
//! only between turns; its model call goes through the session's runtime, so a turn starting
//! meanwhile waits for it, and it holds the memory files while it rewrites them, so a turn's
//! memory writes never interleave with it. A dream with nothing to promote or remove makes no
//! model call and writes nothing; one that does is one capped model call that counts against
//! the spend ceiling like every call (`side_call`), a `dream` record in the trace, and a
//! notice. The settings are read at every tick, so `/config set` applies at once.

#[allow(unused_imports)]
use crate::session_ext::*;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use yuyao_core::Session;

/// Minutes between dreams when `dreaming.interval_minutes` is not set.
pub(crate) const DEFAULT_INTERVAL_MINUTES: f64 = 60.0;

/// How often the thread looks at the clock and the settings.
const TICK: Duration = Duration::from_millis(500);

/// The interval now, or `None` when periodic dreaming is off (memory off, dreaming off, an
/// interval of 0).
fn interval(s: &Session) -> Option<Duration> {
    if !s.memory().enabled || !super::search::dreaming_enabled(s) {
        return None;
    }
    let minutes = s
        .config()
        .get("dreaming.interval_minutes")
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|n| n as f64)))
        .unwrap_or(DEFAULT_INTERVAL_MINUTES);
    (minutes.is_finite() && minutes > 0.0).then(|| Duration::from_secs_f64(minutes * 60.0))
}

/// Starts the session's dreaming thread (a top-level session of a front: the py binding
/// calls it once the session is shared). It holds the session only weakly and ends when the
/// session is closed or dropped.
fn start(session: &Arc<Session>) {
    if session.is_sub_agent() || session.options().no_memory {
        return;
    }
    let weak: Weak<Session> = Arc::downgrade(session);
    let spawned = std::thread::Builder::new()
        .name("yuyao-dream".into())
        .spawn(move || run(weak));
    if let Err(e) = spawned {
        session.notice(
            yuyao_protocol::NoticeLevel::Warning,
            format!("periodic dreaming is off in this session: cannot start its thread: {e}"),
        );
    }
}

fn run(weak: Weak<Session>) {
    // The interval counts from the session's start, then from each dream's end.
    let mut since = Instant::now();
    // A failure is said once, not at every interval (again only when it changes).
    let mut failed: Option<String> = None;
    loop {
        std::thread::sleep(TICK);
        let Some(s) = weak.upgrade() else {
            return;
        };
        // `close` sets it before its own dream: no periodic one after that.
        if s.memory().dreamed.load(Ordering::SeqCst) {
            return;
        }
        let Some(every) = interval(&s) else {
            since = Instant::now();
            continue;
        };
        // Between turns only, and once there was a conversation to dream about.
        if since.elapsed() < every || s.is_busy() || s.messages().is_empty() {
            continue;
        }
        dream(&s, every, &mut failed);
        since = Instant::now();
    }
}

fn dream(s: &Session, every: Duration, failed: &mut Option<String>) {
    match super::search::run_dream(s, super::search::Trigger::Periodic) {
        Ok(None) => *failed = None,
        Ok(Some(report)) => {
            *failed = None;
            let first = report.lines().nth(1).unwrap_or_default().to_string();
            s.notice(
                yuyao_protocol::NoticeLevel::Info,
                format!(
                    "dreaming (every {}): {first} Journal: {}",
                    every_text(every),
                    s.memory().layout.write.join("DREAMS.md").display()
                ),
            );
        }
        Err(e) => {
            let e = e.to_string();
            if failed.as_deref() != Some(e.as_str()) {
                s.notice(
                    yuyao_protocol::NoticeLevel::Warning,
                    format!("periodic dreaming failed: {e}"),
                );
                *failed = Some(e);
            }
        }
    }
}

fn every_text(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 60.0 && (secs / 60.0).fract() == 0.0 {
        format!("{} min", secs / 60.0)
    } else {
        format!("{secs:.0} s")
    }
}

pub(crate) trait MaintainExt {
    fn start_maintenance(self: &Arc<Self>);
}

impl MaintainExt for Session {
    /// Starts the session's background memory maintenance (periodic dreaming): called by a
    /// front once the session is shared.
    fn start_maintenance(self: &Arc<Self>) {
        start(self);
    }
}
