//! Context management (seed 000 behaviour 10, spec `/context`): the request view of the
//! history (older tool results stubbed, the durable history untouched), the context window
//! and compaction threshold from the configuration, hot reload of hand-edited config files,
//! and `/context list|detail`.

use crate::session::{CoreError, History, HistoryStamp, Session};
use std::collections::{BTreeMap, HashMap, VecDeque};
use yuyao_model::{ChatRequest, build_request_owned};
use yuyao_protocol::{Message, MessageRole, NoticeLevel};
use yuyao_store::Config;

pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;
/// Tool results of the last `RECENT_TURNS` user turns are kept whole…
const RECENT_TURNS: usize = 2;
/// …and so are the `RECENT_RESULTS` most recent ones; older results are stubbed.
const RECENT_RESULTS: usize = 10;
/// A result this short is cheaper to keep than to stub.
const STUB_MIN_CHARS: usize = 600;
const STUB_HEAD_CHARS: usize = 200;
/// Old results are stubbed in one batch once they add up to this share of the compaction
/// budget: the request's prefix changes at these few points only (a provider's prompt cache
/// then reuses everything before the newest messages), not at every step.
const STUB_BATCH_SHARE: f64 = 0.25;
/// The batch threshold never falls below this (a tiny configured window).
const STUB_BATCH_MIN_CHARS: usize = 16_000;

/// One tool result replaced by a stub in the request view.
#[derive(Debug, Clone)]
pub struct Stub {
    pub tool: String,
    pub call_id: String,
    pub raw_chars: usize,
    pub stub_chars: usize,
}

/// Characters of old, unstubbed results that make the next stub batch.
pub fn stub_batch_chars(context_window: u64, threshold: f64) -> usize {
    let budget_chars = context_window as f64 * threshold * 4.0;
    ((budget_chars * STUB_BATCH_SHARE) as usize).max(STUB_BATCH_MIN_CHARS)
}

fn stubbable(m: &Message) -> Option<usize> {
    (m.role == MessageRole::Tool)
        .then(|| text_chars(m))
        .filter(|n| *n > STUB_MIN_CHARS)
}

/// Characters of a message's text (`m.text()`), without a copy of it.
fn text_chars(m: &Message) -> usize {
    match &m.content {
        Some(yuyao_protocol::Content::Text(t)) => t.chars().count(),
        Some(c) => c.text().chars().count(),
        None => 0,
    }
}

/// Does `history[p]` start a turn? Notes the core appends ([settings], [intent],
/// [verification], rule files, hook context, …) are user messages too, but they arrive
/// mid-turn (after a tool result) or right beside the prompt; counting them as turns would
/// age the recent results early. So: the first user message of a run of user messages that
/// follows a final answer (or opens the history); after a tool result, only a message that
/// does not read like a note (a prompt typed after an interrupted turn).
fn is_prompt(history: &[Message], p: usize) -> bool {
    let m = &history[p];
    if m.role != MessageRole::User {
        return false;
    }
    match history[..p]
        .iter()
        .rev()
        .find(|x| x.role != MessageRole::System)
    {
        None => true,
        Some(prev) => match prev.role {
            MessageRole::User => false,
            MessageRole::Assistant => prev.tool_calls.is_empty(),
            _ => !m.text().trim_start().starts_with('['),
        },
    }
}

/// Where stubbing stops: results before this index are stubbed. A pure function of the
/// history, replayed message by message as the history grew: a result becomes "old" once it
/// is outside the last `RECENT_TURNS` turns or the `RECENT_RESULTS` most recent results, and
/// once the old, unstubbed ones exceed `batch_chars`, everything before the latest step's
/// results is stubbed at once — so the mark only moves at those points, and a longer history
/// never un-stubs anything. Stubbing the recent results too at a batch is what makes the
/// batch cheap for a prompt cache: the request diverges at the first new stub, and whatever
/// stays whole after it is sent again uncached (10 × 14 KB outputs cost 140 KB per batch);
/// the model has already seen and acted on those results, and each stub says how to get its
/// result back. Between batches the recent results grow back to whole ones.
fn stub_mark(history: &[Message], batch_chars: usize) -> usize {
    let mut replay = StubReplay::default();
    replay.run(history, history.len(), batch_chars);
    replay.mark
}

/// [`stub_mark`]'s replay after `next` messages of the history: what it needs of them (the
/// last turns' prompts, the last results, the old results not counted yet), so a growing
/// history is replayed from where the last request left off.
#[derive(Debug, Clone, Default, PartialEq)]
struct StubReplay {
    next: usize,
    /// The last `RECENT_TURNS` prompts.
    prompts: VecDeque<usize>,
    /// The last `RECENT_RESULTS` results.
    results: VecDeque<usize>,
    /// Stubbable results not counted yet: (position, characters).
    sizes: VecDeque<(usize, usize)>,
    mark: usize,
    counted: usize,
    pending: usize,
    /// Just after the latest assistant message that called tools: where the latest step's
    /// results begin.
    step_start: usize,
}

impl StubReplay {
    /// Replays `history[self.next..to]`.
    fn run(&mut self, history: &[Message], to: usize, batch_chars: usize) {
        while self.next < to.min(history.len()) {
            self.step(history, batch_chars);
        }
    }

    fn step(&mut self, history: &[Message], batch_chars: usize) {
        let p = self.next;
        let m = &history[p];
        if is_prompt(history, p) {
            self.prompts.push_back(p);
            if self.prompts.len() > RECENT_TURNS {
                self.prompts.pop_front();
            }
        }
        if m.role == MessageRole::Assistant && !m.tool_calls.is_empty() {
            self.step_start = p + 1;
        }
        if let Some(n) = stubbable(m) {
            self.sizes.push_back((p, n));
        }
        if m.role == MessageRole::Tool {
            self.results.push_back(p);
            if self.results.len() > RECENT_RESULTS {
                self.results.pop_front();
            }
        }
        let turn_start = if self.prompts.len() == RECENT_TURNS {
            self.prompts[0]
        } else {
            0
        };
        let recent_from = if self.results.len() == RECENT_RESULTS {
            self.results[0]
        } else {
            0
        };
        let old_before = turn_start.max(recent_from);
        if old_before > self.counted {
            while let Some(&(q, n)) = self.sizes.front()
                && q < old_before
            {
                if q >= self.mark {
                    self.pending += n;
                }
                self.sizes.pop_front();
            }
            self.counted = old_before;
        }
        if self.pending > batch_chars {
            self.mark = old_before.max(self.step_start);
            self.pending = 0;
        }
        self.next += 1;
    }
}

/// `history[i]` as the request view sends it: a stub when it is an old result (`i < mark`).
/// `names` holds the tool names of the calls in `history[from..i]` (the latest call of an id
/// wins); a result whose call came before `from` finds it by a walk back.
fn view_message<'h>(
    history: &'h [Message],
    i: usize,
    mark: usize,
    from: usize,
    names: &mut HashMap<&'h str, &'h str>,
) -> (Message, Option<Stub>) {
    let m = &history[i];
    if i >= mark {
        return (m.clone(), None);
    }
    for c in &m.tool_calls {
        names.insert(c.id.as_str(), c.name.as_str());
    }
    let Some(chars) = stubbable(m) else {
        return (m.clone(), None);
    };
    let text = m.text();
    let id = m.tool_call_id.clone().unwrap_or_default();
    let tool = names
        .get(id.as_str())
        .copied()
        .or_else(|| {
            history[..from]
                .iter()
                .rev()
                .find_map(|x| x.tool_calls.iter().rev().find(|c| c.id == id))
                .map(|c| c.name.as_str())
        })
        .unwrap_or("tool")
        .to_string();
    let head: String = text.chars().take(STUB_HEAD_CHARS).collect();
    let stub = format!(
        "[older {tool} result shortened to save context ({chars} characters); it began:\n{head}\n… run the tool again if you need the rest]"
    );
    let record = Stub {
        tool,
        call_id: id.clone(),
        raw_chars: chars,
        stub_chars: stub.chars().count(),
    };
    (Message::tool(id, stub), Some(record))
}

/// The history as it is sent: tool results older than the recent turns become short stubs,
/// in batches (see [`stub_mark`]). The durable history is untouched.
pub fn request_view(history: &[Message], batch_chars: usize) -> (Vec<Message>, Vec<Stub>) {
    let mark = stub_mark(history, batch_chars);
    // Tool names by call id, borrowed, and only where a stub can need them (a result refers
    // to a call before it).
    let mut names = HashMap::new();
    let mut stubs = Vec::new();
    let mut out = Vec::with_capacity(history.len());
    for i in 0..history.len() {
        let (m, stub) = view_message(history, i, mark, 0, &mut names);
        stubs.extend(stub);
        out.push(m);
    }
    (out, stubs)
}

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

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
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
            let mut req = st.request_cache.request(
                &st.history,
                &st.repo_maps,
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
    let tools = crate::tool_defer::with_loaded(parts.sent, &parts.deferred, history);
    let req = build_request_owned(
        &parts.system,
        view,
        tools,
        st.stream,
        crate::turn::effort(st.thinking),
    );
    (req, stubs)
}

/// The session's requests as they grow (`Session::next_request_cached`): the history's messages
/// up to a checkpoint, viewed (stubs, repo maps) and sanitized and serialized once
/// (`yuyao_model::Incremental`). The checkpoint is a [`HistoryStamp`]: any rewrite of the
/// history (compaction, /undo, a rewind, a resume, a clear) gives it a new identity, which
/// starts the cache over, and so do a stub batch and a change of the repo-map notes; an
/// unchanged identity means only appends happened, so only the new tail is looked at.
#[derive(Default)]
pub struct RequestCache {
    /// The history at the checkpoint: its first `seen.len` messages are settled.
    seen: Option<HistoryStamp>,
    batch_chars: usize,
    /// The live repo-map notes it was built with (where, text).
    notes: Vec<(usize, String)>,
    /// The stub mark's replay of the settled messages.
    replay: StubReplay,
    /// The stub mark the settled messages were viewed with.
    mark: usize,
    sanitized: yuyao_model::Incremental,
    /// The `tool-search` calls of the settled messages, in order: the deferred schemas they
    /// loaded go with every request (`tool_defer.rs`).
    searches: Vec<yuyao_protocol::ToolCall>,
}

impl RequestCache {
    /// The request for `history` with the tool schemas `(sent, deferred)` (all but its
    /// stream and effort, which the caller sets): equal to `assemble_request`'s.
    fn request(
        &mut self,
        history: &History,
        maps: &yuyao_repomap::Maps,
        system: &str,
        batch_chars: usize,
        (sent, deferred): (Vec<serde_json::Value>, &[serde_json::Value]),
    ) -> ChatRequest {
        let notes: Vec<(usize, &str)> = maps
            .live(history)
            .map(|n| (n.at, n.text.as_str()))
            .collect();
        let valid = self.batch_chars == batch_chars
            && self.notes.len() == notes.len()
            && self
                .notes
                .iter()
                .zip(&notes)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
            && self
                .seen
                .is_some_and(|seen| history.appended_since(seen).is_some());
        if !valid {
            self.start_over(history, batch_chars, &notes);
        }
        let mut replay = self.replay.clone();
        replay.run(history, history.len(), batch_chars);
        if replay.mark != self.mark && self.seen.is_some_and(|s| s.count() > 0) {
            // A stub batch: the settled view changed.
            self.start_over(history, batch_chars, &notes);
            replay = self.replay.clone();
            replay.run(history, history.len(), batch_chars);
        }
        let mark = replay.mark;
        self.mark = mark;
        // The new checkpoint: the last place where what follows is not a tool result (a
        // result belongs with the call before it), before the last message.
        let h = self.seen.map_or(0, |s| s.count());
        let at = |i: usize| notes.iter().any(|n| n.0 == i);
        let next = (h + 1..history.len())
            .rev()
            .find(|&i| at(i) || history[i].role != MessageRole::Tool)
            .unwrap_or(h);
        if next > h {
            let settled = view_items(history, h, next, mark, &notes, false);
            self.sanitized.settle(settled);
            self.searches.extend(
                tool_calls(&history[h..next])
                    .filter(|c| crate::tool_defer::is_search(c))
                    .cloned(),
            );
            self.seen = Some(history.stamp_at(next));
            self.replay.run(history, next, batch_chars);
        }
        let tools = crate::tool_defer::with_loaded_by(
            sent,
            deferred,
            self.searches.iter().chain(tool_calls(&history[next..])),
        );
        let rest = view_items(history, next, history.len(), mark, &notes, true);
        self.sanitized.request(system, rest, tools, false, None)
    }

    fn start_over(&mut self, history: &History, batch_chars: usize, notes: &[(usize, &str)]) {
        *self = RequestCache {
            seen: Some(history.stamp_at(0)),
            batch_chars,
            notes: notes.iter().map(|(at, t)| (*at, t.to_string())).collect(),
            ..Default::default()
        };
    }
}

/// The tool calls of `messages` (those of assistant messages), in order.
fn tool_calls(messages: &[Message]) -> impl Iterator<Item = &yuyao_protocol::ToolCall> {
    messages
        .iter()
        .filter(|m| m.role == MessageRole::Assistant)
        .flat_map(|m| m.tool_calls.iter())
}

/// The request view of `history[from..to]` (stubs before `mark`), each repo-map note just
/// before the message it was placed at (`Maps::insert_into`), and with `end`, the notes
/// placed after the last message too.
fn view_items(
    history: &[Message],
    from: usize,
    to: usize,
    mark: usize,
    notes: &[(usize, &str)],
    end: bool,
) -> Vec<Message> {
    let mut names = HashMap::new();
    let mut out = Vec::with_capacity(to - from + 1);
    let notes_at = |i: usize, out: &mut Vec<Message>| {
        for (_, text) in notes.iter().filter(|n| n.0 == i) {
            out.push(Message::user(*text));
        }
    };
    for i in from..to {
        notes_at(i, &mut out);
        out.push(view_message(history, i, mark, from, &mut names).0);
    }
    if end {
        notes_at(to, &mut out);
    }
    out
}

/// Estimated tokens of a whole request (messages and tool schemas).
pub fn request_tokens(req: &ChatRequest) -> u64 {
    let tools: usize = req
        .tools
        .iter()
        .map(|t| t.to_string().chars().count())
        .sum();
    tokens(req.message_chars() + tools)
}

pub(crate) fn context_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let detail = match args.first().map(String::as_str) {
        None | Some("list") => false,
        Some("detail") => true,
        Some(other) => {
            return Err(CoreError::Usage(format!(
                "unknown /context action '{other}': use list or detail"
            )));
        }
    };
    let history = s.messages();
    let (req, stubs) = s.next_request(&history);
    let system_chars = req.messages.first().map(message_chars).unwrap_or_default();
    let conventions = crate::prompt::convention_files(&s.paths.project, s.ctx.cwd().as_path());
    let mut conv_raw = 0usize;
    let mut conv_injected = 0usize;
    let mut conv_truncated = Vec::new();
    if !s.opts.no_memory && s.opts.system_prompt.is_none() {
        for (path, text) in &conventions {
            let raw = std::fs::read_to_string(path)
                .map(|t| t.chars().count())
                .unwrap_or(0);
            let injected = text.trim().chars().count();
            conv_raw += raw;
            conv_injected += injected;
            if raw > text.chars().count() {
                conv_truncated.push(format!(
                    "{}: {raw} characters on disk, {injected} injected",
                    path.display()
                ));
            }
        }
    }
    // A feature's section of the system prompt (memory's) is shown on its own rows.
    // A replaced system prompt (--system-prompt) carries none.
    let replaced = s.opts.system_prompt.is_some();
    let parts: Vec<crate::feature::ContextPart> = crate::feature::hooks(|f| f.context_part)
        .map(|part| part(s, replaced))
        .collect();
    let memory_in_prompt: usize = parts.iter().map(|p| p.in_prompt).sum();
    let conv_injected =
        (conv_injected + memory_in_prompt).min(system_chars) - memory_in_prompt.min(system_chars);
    let tools_chars: usize = req
        .tools
        .iter()
        .map(|t| t.to_string().chars().count())
        .sum();
    let mut hist_chars = 0usize;
    let mut results_chars = 0usize;
    for m in req.messages.iter().skip(1) {
        if m.role == MessageRole::Tool {
            results_chars += message_chars(m);
        } else {
            hist_chars += message_chars(m);
        }
    }
    let results_raw: usize = history
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .map(message_chars)
        .sum();
    let total = system_chars + tools_chars + hist_chars + results_chars;
    let window = s.context_window();
    let threshold = s.compaction_threshold();
    let row = |name: &str, raw: Option<usize>, injected: usize| {
        let raw = raw
            .map(|r| format!("{:>9}", tokens(r)))
            .unwrap_or_else(|| format!("{:>9}", "-"));
        format!(
            "  {name:<26} {raw} {:>9} {:>9}\n",
            tokens(injected),
            injected
        )
    };
    let mut out = format!(
        "context (tokens estimated at 4 characters each; window {window}, compaction at {:.0}%)\n  {:<26} {:>9} {:>9} {:>9}\n",
        threshold * 100.0,
        "part",
        "raw tok",
        "sent tok",
        "sent chr"
    );
    let system_own =
        system_chars - conv_injected - memory_in_prompt.min(system_chars - conv_injected);
    out.push_str(&row("system prompt", Some(system_own), system_own));
    out.push_str(&row("AGENTS.md / CLAUDE.md", Some(conv_raw), conv_injected));
    // What features loaded into the prompt at session start (memory): each file's size on
    // disk and in the prompt.
    let mut memory_raw = 0;
    for part in &parts {
        memory_raw += part.raw;
        out.push_str(&row(part.name, Some(part.raw), part.in_prompt));
        for (label, raw, injected) in &part.rows {
            out.push_str(&row(label, Some(*raw), *injected));
        }
    }
    out.push_str(&row("tool schemas", Some(tools_chars), tools_chars));
    out.push_str(&row("history (messages)", Some(hist_chars), hist_chars));
    out.push_str(&row("tool results", Some(results_raw), results_chars));
    let raw_total = system_own + conv_raw + memory_raw + tools_chars + hist_chars + results_raw;
    out.push_str(&row("total", Some(raw_total), total));
    out.push_str(&format!(
        "  used {:.1}% of the window",
        tokens(total) as f64 * 100.0 / window.max(1) as f64
    ));
    for lines in crate::feature::hooks(|f| f.context_lines) {
        out.push_str(&lines(s));
    }
    out.push_str(&s.repo_map_context());
    if !detail {
        return Ok(out);
    }
    out.push_str("\n\ndetail:\n");
    if stubs.is_empty() {
        out.push_str("  no tool result is stubbed\n");
    }
    for st in &stubs {
        out.push_str(&format!(
            "  stubbed: {} result {} ({} characters kept on disk, {} sent)\n",
            st.tool, st.call_id, st.raw_chars, st.stub_chars
        ));
    }
    let capped = history
        .iter()
        .filter(|m| m.role == MessageRole::Tool && m.text().contains("[… output truncated:"))
        .count();
    out.push_str(&format!(
        "  tool results capped when added (full output spilled to a file): {capped}\n"
    ));
    for t in &conv_truncated {
        out.push_str(&format!("  truncated: {t}\n"));
    }
    for part in &parts {
        for line in &part.detail {
            out.push_str(line);
        }
    }
    let budget = (window as f64 * threshold) as u64;
    if tokens(total) > budget {
        out.push_str(&format!(
            "  OVER BUDGET: {} tokens > {budget} (compaction runs before the next model call)\n",
            tokens(total)
        ));
    } else {
        out.push_str(&format!(
            "  within budget: {} of {budget} tokens before compaction\n",
            tokens(total)
        ));
    }
    Ok(out.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use yuyao_protocol::ToolCall;

    fn step(h: &mut Vec<Message>, k: usize, chars: usize) {
        let mut a = Message::assistant("");
        a.tool_calls = vec![ToolCall {
            id: format!("c{k}"),
            name: "read".into(),
            arguments: "{}".into(),
        }];
        h.push(a);
        h.push(Message::tool(format!("c{k}"), "x".repeat(chars)));
    }

    #[test]
    fn notes_appended_mid_turn_do_not_count_as_turns() {
        let mut h = vec![Message::system("s"), Message::user("[settings] mode: yolo")];
        h.push(Message::user("print the files"));
        for k in 0..4 {
            step(&mut h, k, 5000);
            h.push(Message::user("[intent] state a reason before each batch"));
        }
        let prompts: Vec<usize> = (0..h.len()).filter(|&p| is_prompt(&h, p)).collect();
        assert_eq!(
            prompts,
            vec![1],
            "one turn: its prompt run starts at the settings note"
        );
        // One turn only: every result is within the last two turns, nothing is stubbed.
        assert!(request_view(&h, 4000).1.is_empty());
        h.push(Message::assistant("done"));
        h.push(Message::user("next task"));
        assert!(is_prompt(&h, h.len() - 1));
        // A prompt typed after an interrupted turn (its last message a tool result).
        step(&mut h, 9, 10);
        h.push(Message::user("stop, do this instead"));
        assert!(is_prompt(&h, h.len() - 1));
    }

    #[test]
    fn old_results_are_stubbed_recent_ones_kept() {
        let mut h = Vec::new();
        for turn in 0..3 {
            h.push(Message::user(format!("task {turn}")));
            step(&mut h, turn, 5000);
            h.push(Message::assistant("ok"));
        }
        // A batch as small as one result: the first turn's result is stubbed at once.
        let (view, stubs) = request_view(&h, 4000);
        assert_eq!(stubs.len(), 1);
        assert_eq!(stubs[0].call_id, "c0");
        assert!(view[2].text().len() < 600);
        assert_eq!(view[6].text().len(), 5000);
        assert_eq!(h[2].text().len(), 5000, "the durable history is untouched");
        // Below the batch threshold nothing is stubbed yet.
        assert!(request_view(&h, 6000).1.is_empty());
    }

    /// Over a long turn, each request's messages extend the previous request's, except at
    /// the few steps where a batch of old results is stubbed; nothing is ever un-stubbed.
    #[test]
    fn stubs_come_in_batches_and_requests_stay_append_only_between_them() {
        let batch = stub_batch_chars(DEFAULT_CONTEXT_WINDOW, DEFAULT_COMPACTION_THRESHOLD);
        let mut h = vec![Message::user("task")];
        let mut prev: Vec<Message> = Vec::new();
        let mut prev_stubs = 0;
        let mut rewrites = Vec::new();
        for k in 0..60 {
            step(&mut h, k, 14_000);
            let (view, stubs) = request_view(&h, batch);
            if view[..prev.len()] != prev[..] {
                rewrites.push(k);
                assert!(
                    stubs.len() > prev_stubs + 1,
                    "a batch, not one result: step {k}"
                );
            }
            assert!(stubs.len() >= prev_stubs, "nothing is un-stubbed");
            prev_stubs = stubs.len();
            prev = view;
        }
        assert!(
            (2..=8).contains(&rewrites.len()),
            "60 steps of 14 KB results rewrite the prefix a few times: {rewrites:?}"
        );
        let whole = |view: &[Message]| {
            view.iter()
                .filter(|m| m.role == MessageRole::Tool && m.text().len() == 14_000)
                .count()
        };
        // At a batch only the latest step's result stays whole, so the bytes sent again after
        // the divergence point are the new stubs and that one result, not ten whole results.
        let mut h = vec![Message::user("task")];
        let mut prev: Vec<Message> = Vec::new();
        for k in 0..60 {
            step(&mut h, k, 14_000);
            let (view, _) = request_view(&h, batch);
            if view[..prev.len()] != prev[..] {
                assert_eq!(whole(&view), 1, "step {k}");
                let same = view.iter().zip(&prev).take_while(|(a, b)| a == b).count();
                let resent: usize = view[same..].iter().map(|m| m.text().len()).sum();
                assert!(
                    resent < 14_000 + 40 * 600,
                    "step {k}: {resent} chars resent"
                );
            }
            // Between batches the recent results grow back to whole ones.
            assert!(whole(&view) <= RECENT_RESULTS + batch / 14_000 + 1);
            prev = view;
        }
        assert!(whole(&prev) >= 1);
    }

    /// A small deterministic generator (xorshift), so the scenarios below replay the same.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n.max(1)
        }
    }

    /// How many messages of the history the cache has settled.
    fn settled(cache: &RequestCache) -> usize {
        cache.seen.map_or(0, |s| s.count())
    }

    /// The request built in one pass over the whole history, as `assemble_request` does.
    fn from_scratch(
        history: &[Message],
        maps: &yuyao_repomap::Maps,
        system: &str,
        batch: usize,
        (sent, deferred): (&[serde_json::Value], &[serde_json::Value]),
    ) -> ChatRequest {
        let (view, _) = request_view(history, batch);
        let view = maps.insert_into(history, view);
        let tools = crate::tool_defer::with_loaded(sent.to_vec(), deferred, history);
        build_request_owned(system, view, tools, false, None)
    }

    fn wire(client: &yuyao_model::ModelClient, req: &ChatRequest, hints: bool) -> Vec<u8> {
        let mut req = req.clone();
        req.cache_hints = hints;
        client.body_bytes(&req)
    }

    /// One random change of the history, as the session makes them: prompts, notes, calls
    /// and their results (big ones get stubbed; some missing, stray, duplicated or with
    /// empty ids), answers, and the rewrites — /undo, a compaction, a rewind — and repo maps.
    fn change(rng: &mut Rng, h: &mut History, maps: &mut yuyao_repomap::Maps, k: usize) {
        let big = |rng: &mut Rng| "é\"x\u{1}".repeat(1 + rng.below(900) as usize);
        match rng.below(100) {
            0..=39 => {
                let n = 1 + rng.below(3) as usize;
                let mut a = Message::assistant(if rng.below(3) == 0 { "why" } else { "" });
                a.tool_calls = (0..n)
                    .map(|j| ToolCall {
                        id: match rng.below(12) {
                            0 => String::new(),
                            1 => "dup".into(),
                            _ => format!("c{k}_{j}"),
                        },
                        name: ["read", "bash", "", "tool-search"][rng.below(4) as usize].into(),
                        arguments: [
                            "{}",
                            "{\"a\":\"\\u0000\"}",
                            "not json",
                            "{\"names\":[\"lsp\"]}",
                            "{\"names\":\"web-fetch, nope\"}",
                        ][rng.below(5) as usize]
                            .into(),
                    })
                    .collect();
                let ids: Vec<String> = a.tool_calls.iter().map(|c| c.id.clone()).collect();
                h.push(a);
                for id in ids {
                    if rng.below(10) > 0 {
                        let text = if rng.below(2) == 0 {
                            big(rng)
                        } else {
                            "ok".into()
                        };
                        h.push(Message::tool(id, text));
                    }
                }
            }
            40..=49 => h.push(Message::user("[intent] state a reason before each batch")),
            50..=57 => h.push(Message::user(format!("task {k}"))),
            58..=63 => h.push(Message::assistant(format!("done {k}"))),
            64..=65 => h.push(Message::tool("stray", big(rng))),
            66 => h.push(Message::system("a system note")),
            67 => h.push(Message::user("")),
            68..=70 if !h.is_empty() => {
                // /undo, a rewind
                let keep = rng.below(h.len() as u64) as usize;
                h.truncate(keep);
                maps.truncate(keep);
            }
            71 if h.len() > 4 => {
                // A compaction: a summary and the last messages.
                let tail = h.split_off(h.len() - 3);
                h.replace(
                    std::iter::once(Message::user("summary"))
                        .chain(tail)
                        .collect(),
                );
                maps.truncate(0);
            }
            76 if !h.is_empty() => {
                // /clear, then a new prompt.
                h.clear();
                maps.truncate(0);
                h.push(Message::user(format!("task {k}")));
            }
            72..=74 => {
                let map = format!("[repo map {k}]");
                if rng.below(2) == 0 {
                    maps.record_after(h, map);
                } else if !h.is_empty() {
                    let at = h.len() - 1;
                    maps.record(h, at, map);
                }
            }
            75 if !h.is_empty() => {
                // A message rewritten in place (a resumed or edited session).
                let i = rng.below(h.len() as u64) as usize;
                h.rewrite()[i] = Message::user(format!("rewritten {k}"));
            }
            _ => h.push(Message::assistant("")),
        }
    }

    /// The main loop's requests, built from the cache as the history grows and is rewritten,
    /// are the one-pass requests to the byte: the body sent, with and without cache hints,
    /// and the messages and characters counted.
    #[test]
    fn cached_requests_are_the_one_pass_requests_to_the_byte() {
        let client = yuyao_model::ModelClient::new(yuyao_model::ModelConfig::new(
            "http://127.0.0.1:9/v1",
            "m",
            "",
        ))
        .unwrap();
        let tools = vec![serde_json::json!({"type": "function", "function": {"name": "read"}})];
        let deferred = vec![
            serde_json::json!({"type": "function", "function": {"name": "lsp"}}),
            serde_json::json!({"type": "function", "function": {"name": "web-fetch"}}),
        ];
        let mut rebuilt_steps = 0;
        for seed in 1..=60u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let mut h = History::default();
            let mut maps = yuyao_repomap::Maps::default();
            let mut cache = RequestCache::default();
            // Small batches, so that old results are stubbed in several batches.
            let mut batch = 3000 + rng.below(3) as usize * 2000;
            for k in 0..150 {
                // Sometimes several changes between two requests: a rewrite followed by
                // appends that bring the history back to its length or past it.
                for _ in 0..if rng.below(4) == 0 { 3 } else { 1 } {
                    change(&mut rng, &mut h, &mut maps, k);
                }
                if rng.below(60) == 0 {
                    batch += 1000; // the window or threshold changed (hot reload)
                }
                let system = if rng.below(40) == 0 { "" } else { "sys" };
                let before = settled(&cache);
                let defer: &[serde_json::Value] = if seed % 2 == 0 { &deferred } else { &[] };
                let got = cache.request(&h, &maps, system, batch, (tools.clone(), defer));
                if settled(&cache) < before {
                    rebuilt_steps += 1;
                }
                let want = from_scratch(&h, &maps, system, batch, (&tools, defer));
                for hints in [false, true] {
                    assert_eq!(
                        String::from_utf8_lossy(&wire(&client, &got, hints)),
                        String::from_utf8_lossy(&wire(&client, &want, hints)),
                        "seed {seed}, step {k}, hints {hints}"
                    );
                }
                let all: Vec<&Message> = got.all_messages().collect();
                assert_eq!(all, want.messages.iter().collect::<Vec<_>>());
                assert_eq!(got.message_count(), want.messages.len());
                assert_eq!(request_tokens(&got), request_tokens(&want));
                assert_eq!(got.clone().into_flat().messages, want.messages);
                assert!(settled(&cache) <= h.len());
            }
        }
        assert!(
            rebuilt_steps > 50,
            "the rewrites were exercised: {rebuilt_steps}"
        );
    }

    /// In a long silent session the cache settles all but the last few messages, so a step
    /// views, sanitizes and serializes only what it added.
    #[test]
    fn a_growing_history_is_settled_up_to_its_last_step() {
        let mut h = History::from(vec![Message::user("task")]);
        let mut cache = RequestCache::default();
        let maps = yuyao_repomap::Maps::default();
        for k in 0..300 {
            let mut added = Vec::new();
            step(&mut added, k, 40);
            h.extend(added);
            h.push(Message::user("[intent] state a reason before each batch"));
            let req = cache.request(&h, &maps, "sys", 16_000, (Vec::new(), &[]));
            assert!(req.messages.len() <= 4, "step {k}: {}", req.messages.len());
            assert!(h.len() - settled(&cache) <= 1, "step {k}");
            assert_eq!(req.message_count(), h.len() + 1);
        }
    }

    #[test]
    fn settings_notes_do_not_start_a_turn() {
        let mut h = vec![Message::user("task")];
        step(&mut h, 0, 5000);
        h.push(Message::user(format!(
            "{} mode changed",
            crate::state_notes::NOTE_PREFIX
        )));
        step(&mut h, 1, 5000);
        h.push(Message::user(format!(
            "{} role changed",
            crate::state_notes::NOTE_PREFIX
        )));
        step(&mut h, 2, 5000);
        assert!(request_view(&h, 1000).1.is_empty());
    }
}
