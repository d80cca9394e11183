//! Context management (seed 000 behaviour 10, spec `/context`): the request view of the
//! history (older tool results stubbed, the durable history untouched), the context window
//! and compaction threshold from the configuration, hot reload of hand-edited config files,
//! and the request's size (`/context` is a command of `cmd_session.rs`).

use crate::session::Session;
use std::collections::BTreeMap;
use yuyao_model::{ChatRequest, build_request_owned};
use yuyao_protocol::{Message, NoticeLevel};
use yuyao_store::Config;

pub use yuyao_model::view::{DEFAULT_COMPACTION_THRESHOLD, DEFAULT_CONTEXT_WINDOW};
pub use yuyao_model::view::{request_tokens, tokens};
pub use yuyao_model::{RequestCache, Stub, request_view, stub_batch_chars};

/// The configuration files flattened to `key -> displayed value`.
pub fn config_snapshot(config: &Config) -> BTreeMap<String, String> {
    config
        .entries()
        .into_iter()
        .map(|(k, v)| (k, yuyao_store::config::display(&v)))
        .collect()
}

/// Characters a message weighs in a request: its text plus its tool calls.
pub fn message_chars(m: &Message) -> usize {
    yuyao_model::message_chars(m)
}

impl Session {
    /// `model.context_window`, else the price catalog's window for the model, else 128000
    /// tokens (read at every use: hot reload).
    pub fn context_window(&self) -> u64 {
        self.config
            .get("model.context_window")
            .and_then(|v| v.as_integer())
            .filter(|n| *n > 0)
            .map(|n| n as u64)
            .or_else(|| {
                yuyao_model::catalog_lookup(&self.model_name().unwrap_or_default())
                    .and_then(|(_, e)| e.context_window)
            })
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    /// Prices in force (a call's cost the endpoint reports still wins, `Pricing::cost`).
    pub fn price(&self) -> yuyao_model::Pricing {
        self.price_origin().0
    }

    /// Prices in force and where they come from: `D2A_MODEL_COST` (or the `cost` option),
    /// else the `model.*_cost*` configuration keys (read at every call: hot reload), else
    /// the price catalog's entry for the model name, else none (`unknown`: free).
    pub(crate) fn price_origin(&self) -> (yuyao_model::Pricing, String) {
        if self.pricing.is_priced() {
            return (self.pricing, "D2A_MODEL_COST".into());
        }
        let f = |k: &str| {
            self.config
                .get(k)
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
                .filter(|x| x.is_finite() && *x >= 0.0)
        };
        let configured = yuyao_model::Pricing {
            input_cost_per_token: f("model.input_cost_per_token").unwrap_or(0.0),
            output_cost_per_token: f("model.output_cost_per_token").unwrap_or(0.0),
            cache_read_input_token_cost: f("model.cache_read_input_token_cost"),
            cache_creation_input_token_cost: f("model.cache_creation_input_token_cost"),
        };
        if configured.is_priced() {
            return (configured, "config".into());
        }
        match yuyao_model::catalog_lookup(&self.model_name().unwrap_or_default()) {
            Some((name, e)) => (e.pricing, format!("catalog ({name})")),
            None => (yuyao_model::Pricing::default(), "unknown".into()),
        }
    }

    /// Said once a spend ceiling is set while no price is known for the model: every call
    /// counts as $0 unless the endpoint reports its cost, so the ceiling cannot be enforced.
    pub(crate) fn unpriced_ceiling_warning(&self) -> Option<String> {
        let max = self.lock().max_cost_usd?;
        if self.price().is_priced() {
            return None;
        }
        Some(format!(
            "no price is known for model '{}' (not in the price catalog; set D2A_MODEL_COST or model.input_cost_per_token/model.output_cost_per_token): calls count as $0 unless the endpoint reports their cost (a litellm proxy does), so the spend ceiling of ${max:.4} cannot be enforced",
            self.model_name().unwrap_or_default()
        ))
    }

    /// The `pricing` record of the status: the prices, their source, what the endpoint
    /// reported, and the warnings (a bad `D2A_MODEL_COST`, an unenforceable ceiling).
    pub(crate) fn pricing_status(&self) -> serde_json::Value {
        let (p, source) = self.price_origin();
        let reported = self.lock().usage.reported_cost_usd;
        let raw = self
            .opts
            .model
            .cost
            .clone()
            .or_else(|| std::env::var("D2A_MODEL_COST").ok());
        serde_json::json!({
            "source": source,
            "input_cost_per_token": p.input_cost_per_token,
            "output_cost_per_token": p.output_cost_per_token,
            "cache_read_input_token_cost": p.cache_read_input_token_cost,
            "cache_creation_input_token_cost": p.cache_creation_input_token_cost,
            "reported_cost_usd": reported,
            "cost_from": match (reported, p.is_priced()) {
                (Some(_), true) => format!("proxy header ({}), else {source}", yuyao_model::COST_HEADER),
                (Some(_), false) => format!("proxy header ({})", yuyao_model::COST_HEADER),
                (None, _) => source.clone(),
            },
            "catalog": yuyao_model::catalog_source(),
            "cost_env_warning": yuyao_model::Pricing::parse(raw.as_deref()).1,
            "warning": self.unpriced_ceiling_warning(),
        })
    }

    /// `model.cache_hints` (read at every call): whether requests carry prompt-cache
    /// breakpoints for the model in force.
    pub(crate) fn cache_hints(&self) -> bool {
        let setting = self
            .config
            .get("model.cache_hints")
            .map(|v| yuyao_store::config::display(&v))
            .unwrap_or_else(|| "auto".into());
        yuyao_model::cache_hints::wanted(&setting, &self.model_name().unwrap_or_default())
    }

    /// Characters of old tool results stubbed together (a share of the compaction budget).
    pub fn stub_batch_chars(&self) -> usize {
        stub_batch_chars(self.context_window(), self.compaction_threshold())
    }

    /// `compaction.threshold`, default 0.8 of the window.
    pub fn compaction_threshold(&self) -> f64 {
        self.config
            .get("compaction.threshold")
            .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
            .filter(|f| *f > 0.0 && *f <= 1.0)
            .unwrap_or(DEFAULT_COMPACTION_THRESHOLD)
    }

    /// Applies what changed in the configuration files since they were last seen (a hand
    /// edit, or a write from another process), at the next model or tool call. A setting
    /// given explicitly for this session (a flag) keeps precedence over the files.
    pub(crate) fn reload_config(&self) {
        // In a turn the files are stat'ed once between two of these (`Config::hold_stats`).
        self.config.recheck();
        self.reload_config_files();
        // A memory file edited since it was last read reaches the model as a note.
        let notes: Vec<String> = crate::feature::hooks(|f| f.reload_notes)
            .flat_map(|notes| notes(self))
            .collect();
        if !notes.is_empty() {
            self.lock().pending_notes.extend(notes);
        }
        self.sync_confinement();
    }

    /// Tool processes follow the policy in force: its sandbox level and network, read-only
    /// whenever the mode or role is (plan mode, the ask role).
    pub fn sync_confinement(&self) {
        let (c, read_denies) = {
            let st = self.lock();
            (st.policy.confinement(), st.policy.read_denies())
        };
        if let Ok(mut mine) = self.ctx.read_denies.lock() {
            *mine = read_denies;
        }
        if let Ok(mut mine) = self.ctx.sandbox.lock() {
            mine.level = c.level;
            mine.network = c.network;
            mine.deny_read = c.deny_read;
            mine.deny_write = c.deny_write;
        }
        crate::web_settings::sync(self);
    }

    fn reload_config_files(&self) {
        let now = config_snapshot(&self.config);
        let changed: Vec<(String, Option<String>)> = {
            let mut st = self.lock();
            if st.config_seen == now {
                return;
            }
            let mut changed = Vec::new();
            for (k, v) in &now {
                if st.config_seen.get(k) != Some(v) {
                    changed.push((k.clone(), Some(v.clone())));
                }
            }
            for k in st.config_seen.keys() {
                if !now.contains_key(k) {
                    changed.push((k.clone(), None));
                }
            }
            st.config_seen = now;
            changed
        };
        for (key, value) in changed {
            if self.flag_pins(&key) {
                continue;
            }
            let Some(value) = value else {
                continue; // an unset key leaves the session as it is
            };
            let config_approved =
                yuyao_store::trust::is_approved(&self.paths, &self.paths.project_config());
            if (!self.lock().trusted || !config_approved)
                && yuyao_store::trust::widens(&key, &value)
                && self
                    .config
                    .get_in(&key, yuyao_store::Layer::Project)
                    .is_some()
            {
                self.notice(
                    yuyao_protocol::NoticeLevel::Warning,
                    format!(
                        "the project's configuration now asks for {key} = {value}; ignored, the project is not trusted"
                    ),
                );
                continue;
            }
            if let Err(e) = crate::settings::apply_live(self, &key, &value) {
                self.notice(
                    yuyao_protocol::NoticeLevel::Warning,
                    format!("configuration change of {key} not applied: {e}"),
                );
            }
        }
    }

    /// Whether a flag of this session fixes `key` (flags outrank the configuration files).
    fn flag_pins(&self, key: &str) -> bool {
        let o = &self.opts;
        match key {
            "mode" => o.mode.is_some(),
            "sandbox" => o.sandbox.is_some(),
            "network" => o.network.is_some(),
            "role" => o.role.is_some(),
            "ui.stream" => o.stream.is_some(),
            "ui.show_thinking" => o.show_thinking.is_some(),
            "thinking" => o.thinking.is_some(),
            "curiosity" => o.curiosity.is_some(),
            "model.name" => o.model.name.is_some(),
            "maxCostUsd" => o.max_cost_usd.is_some(),
            "max_steps" => o.max_steps.is_some(),
            _ => false,
        }
    }

    /// The request the next model call would send, with the stubs applied to build it.
    pub(crate) fn next_request(&self, history: &[Message]) -> (ChatRequest, Vec<Stub>) {
        let parts = self.request_parts();
        let st = self.lock();
        let (req, stubs) = assemble_request(&st, history, parts);
        drop(st);
        self.with_cache_hints(req, stubs)
    }

    /// The next request over the session's own history: the view is built from it under the
    /// state lock, with no copy of the whole history first.
    pub fn next_request_now(&self) -> (ChatRequest, Vec<Stub>) {
        let parts = self.request_parts();
        let st = self.lock();
        let (req, stubs) = assemble_request(&st, &st.history, parts);
        drop(st);
        self.with_cache_hints(req, stubs)
    }

    /// [`Session::next_request_now`] for the main loop (a long session's every step), built
    /// under the state lock from the session's [`RequestCache`]: only the messages added
    /// since the last request are viewed, sanitized and serialized. The same request, to the
    /// byte (its stubs are not listed: `/context detail` lists them).
    pub(crate) fn next_request_cached(&self) -> ChatRequest {
        let parts = self.request_parts();
        let mut req = {
            let mut guard = self.lock();
            let st = &mut *guard;
            let notes: Vec<(usize, &str)> = st
                .repo_maps
                .live(&st.history)
                .map(|n| (n.at, n.text.as_str()))
                .collect();
            let mut req = st.request_cache.request(
                &st.history,
                &notes,
                &parts.system,
                parts.batch_chars,
                (parts.sent, &parts.deferred),
            );
            req.stream = st.stream;
            req.reasoning_effort = crate::turn::effort(st.thinking);
            req
        };
        // After the lock: the model's name is read under it.
        req.cache_hints = self.cache_hints();
        req
    }

    /// What a request needs besides the history, gathered before the state is locked (each
    /// of these may lock it): the system prompt, the stub batch size, the tool schemas sent
    /// whole and those deferred.
    fn request_parts(&self) -> RequestParts {
        let system = self.system_prompt();
        for w in crate::instruction_files::take_warnings() {
            self.notice(NoticeLevel::Warning, w);
        }
        let (sent, deferred) = self.split_schemas();
        RequestParts {
            system,
            batch_chars: self.stub_batch_chars(),
            sent,
            deferred,
        }
    }

    fn with_cache_hints(&self, mut req: ChatRequest, stubs: Vec<Stub>) -> (ChatRequest, Vec<Stub>) {
        req.cache_hints = self.cache_hints();
        (req, stubs)
    }
}

/// See [`Session::request_parts`].
struct RequestParts {
    system: String,
    batch_chars: usize,
    sent: Vec<serde_json::Value>,
    deferred: Vec<serde_json::Value>,
}

/// The request from the history and its parts (called with the state locked: it locks
/// nothing).
fn assemble_request(
    st: &crate::session::State,
    history: &[Message],
    parts: RequestParts,
) -> (ChatRequest, Vec<Stub>) {
    let (view, stubs) = request_view(history, parts.batch_chars);
    // Repo maps are request-view notes beside the prompts they were made for.
    let view = st.repo_maps.insert_into(history, view);
    let tools = yuyao_model::tool_search::with_loaded(parts.sent, &parts.deferred, history);
    let req = build_request_owned(
        &parts.system,
        view,
        tools,
        st.stream,
        crate::turn::effort(st.thinking),
    );
    (req, stubs)
}
