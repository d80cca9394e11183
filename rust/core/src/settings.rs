//! How every known configuration key reaches a running session (spec §8: accepted means
//! effective). `yuyao_store::config` says for each key whether it applies live, on the
//! display, from the next session, or not in this build; this module holds the live half:
//! the setter of each key that changes session state, and the keys read at every use.
//! A change arrives here from `/config set`, `yuyao config set` in another process or a hand
//! edit (hot reload, before every model and tool call), or agent_api.

use crate::commands::{set_mode, set_role};
use crate::session::{CoreError, Session};
use std::str::FromStr;
use yuyao_protocol::{Curiosity, ShowThinking, ThinkingLevel, Usage};

type Setter = fn(&Session, &str) -> Result<(), CoreError>;

/// Live keys the session reads again at every use (request, cost, compaction, client): a
/// change needs no setter.
#[cfg(test)]
const READ_AT_USE: &[&str] = &[
    "model.context_window",
    "model.max_output_tokens",
    "model.input_cost_per_token",
    "model.output_cost_per_token",
    "model.cache_read_input_token_cost",
    "model.cache_creation_input_token_cost",
    "model.idle_timeout_s",
    "model.max_retries",
    "model.cache_hints",
    "model.response_format",
    "model.thinking_param",
    "git.auto_commit",
    "extension_sandbox.hooks",
    "extension_sandbox.hooks_network",
    "extension_sandbox.mcp",
    "extension_sandbox.mcp_network",
    "extension_sandbox.lsp",
    "extension_sandbox.lsp_network",
    "extension_sandbox.apps",
    "extension_sandbox.apps_network",
    "architect.model",
    "architect.editor_model",
    "compaction.threshold",
    "compaction.memoryFlush.enabled",
    "compaction.memoryFlush.model",
    "hooks.max_stop_blocks",
    "agents.max_parallel",
    "goal.max_rounds",
    "verification.enabled",
    "verification.command",
    "verification.timeout_s",
    "verification.max_rounds",
    "intent.remind",
    "completion.review",
    "completion.track_commands",
    "tools.max_consecutive_blocked_tool_calls_per_turn",
    "tools.max_tool_calls_per_turn",
    "tools.defer",
    "tools.preview_budget_kib",
    "planning.preview_budget_kib",
    "lsp.enabled",
    "lsp.diagnostics_timeout_ms",
    "features.hooks",
    "features.mcp",
    "features.skills",
    "features.plugins",
    "memorySearch.provider",
    "memorySearch.model",
    "dreaming.enabled",
    "dreaming.interval_minutes",
    "dreaming.stale_days",
    "memory.backend",
    "memory.mcp_server",
    "scope.guard",
    "ask_user.require_options",
    "ask_user.reuse_answers",
    // web_settings.rs: synced before every tool call.
    "search.provider",
    "search.api_key_env",
    "browser.executable",
];

/// The setter of a live key that changes the session's state.
fn setter(key: &str) -> Option<Setter> {
    Some(match key {
        "mode" => |s, v| set_mode(s, v).map(drop),
        "role" => |s, v| set_role(s, v).map(drop),
        "model.name" => |s, v| crate::commands::set_model(s, v).map(drop),
        "ui.stream" => |s, v| {
            s.lock().stream = parse_bool(v)?;
            Ok(())
        },
        "ui.show_thinking" => |s, v| {
            s.lock().show_thinking = parse::<ShowThinking>(v)?;
            Ok(())
        },
        "thinking" => |s, v| {
            s.lock().thinking = Some(parse::<ThinkingLevel>(v)?);
            Ok(())
        },
        "curiosity" => |s, v| {
            s.lock().curiosity = parse::<Curiosity>(v)?;
            Ok(())
        },
        "maxCostUsd" => |s, v| {
            s.lock().max_cost_usd = Some(parse::<f64>(v)?);
            s.warn_unenforceable_ceiling();
            Ok(())
        },
        "sandbox" => |s, v| {
            s.lock().policy.sandbox = parse(v)?;
            Ok(())
        },
        "network" => |s, v| {
            s.lock().policy.network = parse(v)?;
            Ok(())
        },
        "max_steps" => |s, v| {
            s.lock().max_steps = Some(parse::<u32>(v)?).filter(|n| *n > 0);
            Ok(())
        },
        "ui.usage" => |s, v| set_usage_display(s, v).map(drop),
        "ui.output_style" => set_output_style,
        "tools.bash.timeout_ms" => |s, v| {
            s.ctx.set_bash_timeout_ms(parse::<u64>(v)?);
            Ok(())
        },
        "tools.output_chars" => |s, v| {
            s.ctx.set_output_chars(parse::<usize>(v)?);
            Ok(())
        },
        _ => return None,
    })
}

fn parse<T: FromStr>(v: &str) -> Result<T, CoreError>
where
    T::Err: std::fmt::Display,
{
    v.trim()
        .parse()
        .map_err(|e: T::Err| CoreError::Usage(format!("invalid value '{v}': {e}")))
}

fn parse_bool(v: &str) -> Result<bool, CoreError> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "on" => Ok(true),
        "false" | "off" => Ok(false),
        other => Err(CoreError::Usage(format!(
            "invalid value '{other}': expected on or off"
        ))),
    }
}

/// Applies a changed key to the running session. Keys that are not live (display,
/// next-session, not in this build) and unknown keys change nothing here.
pub(crate) fn apply_live(s: &Session, key: &str, value: &str) -> Result<(), CoreError> {
    match setter(yuyao_store::config::canonical_key(key)) {
        Some(set) => set(s, value),
        None => Ok(()),
    }
}

/// Every known key with how a change reaches a running session and its meaning, as JSON
/// (`[{"key", "applies", "help"}]`; `applies`: live, display, next-session, not-in-build).
pub fn config_keys_json() -> String {
    let keys: Vec<serde_json::Value> = yuyao_store::Config::known_keys()
        .zip(yuyao_store::Config::known_keys_applying())
        .map(|((key, help), (_, applies))| {
            serde_json::json!({"key": key, "applies": applies.label(), "help": help})
        })
        .collect();
    serde_json::Value::Array(keys).to_string()
}

/// What `config set` adds about when the value takes effect (restart-only keys, features
/// not in this build).
pub(crate) fn when_effective(key: &str) -> Option<String> {
    yuyao_store::config::applies(key).and_then(|a| a.note())
}

// ---------------------------------------------------------------------------------------------
// ui.usage

pub(crate) const USAGE_DISPLAYS: &[&str] = &["off", "tokens", "full"];

pub(crate) fn set_usage_display(s: &Session, v: &str) -> Result<String, CoreError> {
    let v = v.trim().to_ascii_lowercase();
    if !USAGE_DISPLAYS.contains(&v.as_str()) {
        return Err(CoreError::Usage("usage: /usage <off|tokens|full>".into()));
    }
    s.lock().usage_display = v.clone();
    Ok(format!("usage display: {v}"))
}

/// Share of the prompt tokens the provider served from its prompt cache, when it reported any.
pub fn cache_hit_percent(u: &Usage) -> Option<f64> {
    (u.prompt_tokens > 0 && u.cached_tokens > 0)
        .then(|| u.cached_tokens.min(u.prompt_tokens) as f64 * 100.0 / u.prompt_tokens as f64)
}

fn cache_hits(u: &Usage) -> String {
    cache_hit_percent(u)
        .map(|p| format!(" · {p:.0}% cache hits"))
        .unwrap_or_default()
}

/// One usage line as `ui.usage` asks: nothing with `off`, token counts (and the prompt-cache
/// hit rate, when the provider reports one) with `tokens`, and with `full` the cache and
/// reasoning counts, the cost and the session's cost too.
pub fn usage_line(display: &str, u: &Usage, cost: f64, session_cost: f64, priced: bool) -> String {
    match display {
        "off" => String::new(),
        "full" => {
            let cost = if priced {
                format!("${cost:.4} (session ${session_cost:.4})")
            } else {
                "cost unknown (no prices: D2A_MODEL_COST)".into()
            };
            format!(
                "{} in ({} cached, {} cache-written) / {} out ({} reasoning) tokens{} · {cost}",
                u.prompt_tokens,
                u.cached_tokens,
                u.cache_write_tokens,
                u.completion_tokens,
                u.reasoning_tokens,
                cache_hits(u),
            )
        }
        _ => format!(
            "{} in / {} out tokens{}",
            u.prompt_tokens,
            u.completion_tokens,
            cache_hits(u)
        ),
    }
}

/// The session's totals for `/usage` and `/status`: tokens, the prompt-cache hit rate, cost.
pub(crate) fn session_usage_text(u: &Usage, cost: f64, priced: bool) -> String {
    let hits = match cache_hit_percent(u) {
        Some(p) => format!("{p:.1}% of prompt tokens from the cache"),
        None => "no prompt-cache hits reported".into(),
    };
    let cost = if priced {
        format!("${cost:.4}")
    } else {
        "cost unknown (no prices)".into()
    };
    format!(
        "{} in ({} cached, {} cache-written) / {} out tokens · {hits} · {cost}",
        u.prompt_tokens, u.cached_tokens, u.cache_write_tokens, u.completion_tokens
    )
}

// ---------------------------------------------------------------------------------------------
// ui.output_style

pub(crate) const OUTPUT_STYLES: &[&str] = &["default", "concise", "explanatory"];

/// The answer-style section of the system prompt.
pub(crate) fn output_style_text(style: &str) -> &'static str {
    match style {
        "concise" => {
            "Concise: keep answers short. Lead with the result; no preamble, no recap of what the user said, no closing summary beyond what changed and how it was verified."
        }
        "explanatory" => {
            "Explanatory: explain as you go. Say why you chose an approach, what the relevant code does and what trade-offs you considered, so the user learns the codebase while the work gets done."
        }
        _ => "Default: answer as long as the task needs.",
    }
}

/// A style change mid-session: the system prompt keeps the style the conversation opened
/// with (requests stay append-only, DESIGN §4); the new style reaches the model in the
/// settings note appended before its next call (`state_notes.rs`).
fn set_output_style(s: &Session, v: &str) -> Result<(), CoreError> {
    let v = v.trim().to_ascii_lowercase();
    if !OUTPUT_STYLES.contains(&v.as_str()) {
        return Err(CoreError::Usage(format!(
            "invalid value '{v}' for ui.output_style: expected one of {}",
            OUTPUT_STYLES.join(", ")
        )));
    }
    s.lock().output_style = v;
    Ok(())
}

impl Session {
    /// A spend ceiling with no prices cannot be enforced: say so once per session.
    pub(crate) fn warn_unenforceable_ceiling(&self) {
        let Some(text) = self.unpriced_ceiling_warning() else {
            return;
        };
        let warn = {
            let mut st = self.lock();
            let warn = !st.warned_unpriced_ceiling;
            st.warned_unpriced_ceiling = true;
            warn
        };
        if warn {
            self.notice(yuyao_protocol::NoticeLevel::Warning, text);
        }
    }
}

/// Whether a kind of extension is on (`/features`, `features.<kind>`).
impl Session {
    pub fn feature_enabled(&self, kind: &str) -> bool {
        self.config
            .get(&format!("features.{kind}"))
            .and_then(|v| v.as_bool())
            != Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yuyao_store::config::Applies;

    /// Every known key says how it applies, and every live key is handled here: a key
    /// added to the table without a way to reach a running session fails this test.
    #[test]
    fn every_live_key_has_a_setter_or_is_read_at_use() {
        let mut live = 0;
        for (key, applies) in yuyao_store::Config::known_keys_applying() {
            let handled = setter(key).is_some() || READ_AT_USE.contains(&key);
            match applies {
                Applies::Live => {
                    live += 1;
                    assert!(handled, "{key} is live but nothing applies it");
                }
                _ => assert!(!handled, "{key} is applied live but not declared live"),
            }
        }
        assert!(live > 20);
        for key in READ_AT_USE {
            assert_eq!(
                yuyao_store::config::applies(key),
                Some(Applies::Live),
                "{key}"
            );
        }
    }

    #[test]
    fn usage_lines_follow_the_display() {
        let u = Usage {
            prompt_tokens: 1200,
            completion_tokens: 34,
            cached_tokens: 1000,
            cache_write_tokens: 0,
            reasoning_tokens: 5,
            reported_cost_usd: None,
        };
        assert_eq!(usage_line("off", &u, 0.5, 1.0, true), "");
        let t = usage_line("tokens", &u, 0.5, 1.0, true);
        assert_eq!(t, "1200 in / 34 out tokens · 83% cache hits");
        let none = Usage {
            cached_tokens: 0,
            ..u
        };
        assert_eq!(
            usage_line("tokens", &none, 0.5, 1.0, true),
            "1200 in / 34 out tokens"
        );
        let f = usage_line("full", &u, 0.5, 1.0, true);
        assert!(f.contains("1000 cached") && f.contains("$0.5000") && f.contains("$1.0000"));
        assert!(f.contains("83% cache hits"), "{f}");
        let s = session_usage_text(&u, 1.0, true);
        assert!(s.contains("83.3% of prompt tokens from the cache"), "{s}");
        assert!(usage_line("full", &u, 0.0, 0.0, false).contains("cost unknown"));
    }
}
