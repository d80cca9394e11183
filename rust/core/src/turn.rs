//! The agent loop: call the model, run every tool call of the reply in order (each gets its
//! own result; a failure does not skip the rest), feed the results back, repeat until the
//! model answers without tool calls or a limit stops the turn.

use crate::session::{CoreError, Session, TurnSummary};
use crate::tool_call::{CallOutcome, images_message};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use yuyao_model::{ModelClient, ModelConfig, ModelError, Piece};
use yuyao_protocol::{Event, Message, NoticeLevel, ThinkingLevel, canonical_tool_name};

/// The `reasoning_effort` a thinking level asks for.
pub(crate) fn effort(thinking: Option<ThinkingLevel>) -> Option<String> {
    thinking.and_then(|t| match t {
        ThinkingLevel::Off => None,
        ThinkingLevel::Max => Some("high".to_string()),
        other => Some(other.to_string()),
    })
}

/// A one-request note at the end of a request: joined to a closing user message (two user
/// messages in a row are not well-formed, spec §8), else a user message of its own.
fn push_view_note(messages: &mut Vec<Message>, note: String) {
    use yuyao_protocol::{Content, MessageRole};
    if let Some(last) = messages.last_mut()
        && last.role == MessageRole::User
    {
        match &mut last.content {
            Some(Content::Text(t)) => {
                t.push_str("\n\n");
                t.push_str(&note);
            }
            Some(Content::Parts(parts)) => parts.push(json!({"type": "text", "text": note})),
            None => last.content = Some(Content::Text(note)),
        }
        return;
    }
    messages.push(Message::user(note));
}

/// The smallest answer a call is made for under the spend ceiling: below this the turn stops.
pub(crate) const MIN_ANSWER_TOKENS: u64 = 256;
const NUDGE: &str = "Your last reply was empty. Continue the task: call a tool, or give your final answer with what you did and what you verified.";

/// Final answers that say nothing about the work ("done", "ok").
fn is_degenerate(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
        .to_ascii_lowercase();
    t.is_empty()
        || matches!(
            t.as_str(),
            "done" | "ok" | "okay" | "finished" | "complete" | "completed" | "submit" | "submitted"
        )
}

impl Session {
    /// One agentic turn. Returns the final assistant text; an error status is an `Err`.
    pub fn chat(&self, text: &str) -> Result<String, CoreError> {
        let text = crate::feature::hooks(|f| f.prompt_in)
            .fold(text.to_string(), |text, rewrite| rewrite(self, text));
        let result = {
            let _busy = crate::busy::Busy::enter(self);
            self.run_chat(&text)
        };
        for end in crate::feature::hooks(|f| f.turn_end) {
            end(self);
        }
        self.apply_after_turn();
        match crate::feature::hooks(|f| f.next_turn).find_map(|next| next(self)) {
            Some(next) => self.chat(&next),
            None => result,
        }
    }

    fn run_chat(&self, text: &str) -> Result<String, CoreError> {
        let token = CancellationToken::new();
        if let Ok(mut c) = self.cancel.lock() {
            *c = token.clone();
        }
        // A custom command's expanded text attached its files itself (`@{file}`, through
        // the policy): words in it name nothing on the user's behalf.
        let expanded = self
            .expanded_prompt
            .swap(false, std::sync::atomic::Ordering::SeqCst);
        // UserPromptSubmit hooks may refuse the prompt (it never reaches the model) or add
        // context after it.
        let gate =
            crate::feature::hooks(|f| f.prompt_gate).try_fold(Vec::new(), |mut all, gate| {
                all.extend(gate(self, text)?);
                Ok::<_, String>(all)
            });
        let (usage_before, cost_before) = {
            let st = self.lock();
            (st.usage, st.cost_usd)
        };
        // The planning workflow reads the prompt first (instructions, intent phrases).
        let mut intercepted = gate
            .as_ref()
            .ok()
            .and_then(|_| crate::feature::turn_hooks().find_map(|t| (t.intercept)(self, text)));
        let summary = match gate {
            Err(why) => {
                self.lock()
                    .trajectory
                    .record("prompt_blocked", json!({"text": text, "reason": why}));
                self.failure(
                    "NotSubmitted",
                    format!("the prompt was blocked by a UserPromptSubmit hook: {why}"),
                )
            }
            // An intent phrase at a waiting plan (cancel) is handled without a model call.
            Ok(_) if intercepted.is_some() => TurnSummary {
                status: "completed",
                exit_status: "Answered",
                error: None,
                text: intercepted.take().unwrap_or_default(),
            },
            Ok(context) => 'turn: {
                // `@path` references are attached to the prompt (the only content that
                // enters a request without a tool call).
                let message = if expanded {
                    None
                } else {
                    crate::feature::hooks(|f| f.prompt_message).find_map(|m| m(self, text))
                }
                .unwrap_or_else(|| Message::user(text));
                // A prompt that cannot fit the window is refused before anything is sent
                // or kept: the session stays usable.
                if let Err(why) = self.check_prompt_fits(&message) {
                    self.lock()
                        .trajectory
                        .record("prompt_too_large", json!({"reason": why}));
                    break 'turn self.failure("Error", why);
                }
                self.checkpoint_prompt(text);
                for begin in crate::feature::hooks(|f| f.turn_begin) {
                    begin(self, text);
                }
                // The repo map goes into the request view beside this prompt, when it changed
                // (the stored prompt stays what the user typed).
                let map = self.new_repo_map(text);
                let message = self.attach_pending_images(message);
                // What features add after a typed prompt (skills its words trigger).
                let skills = if expanded {
                    Vec::new()
                } else {
                    crate::feature::hooks(|f| f.prompt_context)
                        .flat_map(|context| context(self, text))
                        .collect()
                };
                {
                    let mut st = self.lock();
                    st.push(message);
                    if let Some(map) = map {
                        let at = st.history.len() - 1;
                        let st = &mut *st;
                        st.repo_maps.record(&st.history, at, map);
                    }
                    st.trajectory.record("user", json!({"text": text}));
                    for body in skills {
                        st.push(Message::user(body));
                    }
                    for c in context {
                        st.push(Message::user(format!(
                            "(from a UserPromptSubmit hook)\n{c}"
                        )));
                    }
                    if let Some(format) =
                        crate::feature::answer_format().and_then(|f| (f.instruction)(self))
                    {
                        st.push(Message::user(format));
                    }
                }
                // Features read the prompt (`@explore` naming an agent hands that work to it;
                // a stated preference is kept in memory).
                for submitted in crate::feature::hooks(|f| f.submitted) {
                    if let Some(note) = submitted(self, text) {
                        self.lock().push(Message::user(note));
                    }
                }
                if !expanded {
                    crate::permissions::note_mentions(self, text);
                }
                let summary = if self.lock().policy.role == yuyao_protocol::Role::Architect {
                    self.block_on(self.run_architect(&token))
                } else {
                    self.block_on(self.run_turn(&token))
                };
                // A call that never happened gives its spend reservation back.
                self.agents.release();
                summary?
            }
        };
        self.finish_file_batch();
        // Features have their say on the text returned (the completion check is appended
        // when it finds the turn not clean).
        let returned = crate::feature::hooks(|f| f.turn_result)
            .fold(summary.text.clone(), |text, result| {
                result(self, &summary, text)
            });
        // Before the lock: the catalog's price reads the model's name.
        let priced = self.price() != yuyao_model::Pricing::default();
        let usage_line = {
            let st = self.lock();
            let u = &st.usage;
            let turn = yuyao_protocol::Usage {
                prompt_tokens: u.prompt_tokens - usage_before.prompt_tokens,
                completion_tokens: u.completion_tokens - usage_before.completion_tokens,
                cached_tokens: u.cached_tokens - usage_before.cached_tokens,
                cache_write_tokens: u.cache_write_tokens - usage_before.cache_write_tokens,
                reasoning_tokens: u.reasoning_tokens - usage_before.reasoning_tokens,
                reported_cost_usd: None,
            };
            if turn == yuyao_protocol::Usage::default() {
                String::new()
            } else {
                crate::settings::usage_line(
                    &st.usage_display,
                    &turn,
                    st.cost_usd - cost_before,
                    st.cost_usd,
                    priced,
                )
            }
        };
        {
            let mut st = self.lock();
            let fields = json!({"status": summary.status, "exit_status": summary.exit_status, "error": summary.error, "cost_usd": st.cost_usd, "steps": st.steps});
            st.trajectory.record("turn_end", fields);
            st.last_turn = summary.clone();
        }
        self.emit(Event::TurnEnd {
            status: summary.status.into(),
            text: summary.text.clone(),
            usage_line,
        });
        match (summary.status, summary.error) {
            ("error", Some(e)) => Err(CoreError::Failed(e)),
            _ => Ok(returned),
        }
    }

    pub(crate) fn client(&self) -> Result<ModelClient, String> {
        let base = self.model_base_url();
        let name = self.model_name();
        let (Some(base), Some(name)) = (base, name) else {
            return Err(
                "no model configured: set D2A_MODEL_BASE_URL, D2A_MODEL_NAME and D2A_MODEL_API_KEY"
                    .into(),
            );
        };
        let key = self.model_key().unwrap_or_default();
        let mut cfg = ModelConfig::new(&base, &name, &key);
        self.configure_client(&mut cfg);
        ModelClient::new(cfg).map_err(|e| e.to_string())
    }

    /// `model.idle_timeout_s` and `model.max_retries` as configured now.
    fn configure_client(&self, cfg: &mut ModelConfig) {
        if let Some(s) = self
            .config
            .get("model.idle_timeout_s")
            .and_then(|v| v.as_integer())
            && s > 0
        {
            cfg.idle_timeout = std::time::Duration::from_secs(s as u64);
        }
        if let Some(n) = self
            .config
            .get("model.max_retries")
            .and_then(|v| v.as_integer())
            && n >= 0
        {
            cfg.max_retries = n as u32;
        }
    }

    /// Whether `client` still matches the model name and the client settings in force (a
    /// `/model` switch or a configuration change makes a new one for the next call).
    fn client_is_current(&self, client: &ModelClient) -> bool {
        let have = client.config();
        let mut want = ModelConfig::new(&have.base_url, &have.model, &have.api_key);
        self.configure_client(&mut want);
        self.model_name().is_none_or(|m| m.trim() == have.model)
            && want.idle_timeout == have.idle_timeout
            && want.max_retries == have.max_retries
    }

    /// The spend ceiling, applied before a model call: the `max_tokens` the call may ask
    /// for — the configured limit, lowered to what the remaining budget can pay after the
    /// call's input — so no call can pass the ceiling. `Err` (LimitsExceeded) when not even a
    /// minimal answer fits and the human (interactive) does not raise or remove the ceiling.
    pub(crate) fn spend_cap(
        &self,
        request_tokens: u64,
        max_out: Option<u64>,
    ) -> Result<Option<u64>, TurnSummary> {
        // The batch's one ceiling, when this run is a task of `yuyao batch`.
        self.batch_ledger_gate()?;
        let price = self.price();
        if price == yuyao_model::Pricing::default() {
            // No price: nothing to estimate or cap; the user was told once. Costs the
            // endpoint reports still count: once they reach the ceiling no call is made.
            self.warn_unenforceable_ceiling();
            let (max, spent) = {
                let st = self.lock();
                let (max, spent, _) =
                    self.agents
                        .budget(st.max_cost_usd, st.cost_usd, st.max_steps);
                (max, spent)
            };
            if let Some(max) = max.filter(|m| spent >= *m && spent > 0.0) {
                return Err(self.limit(format!(
                    "spend ceiling reached: ${spent:.4} spent of ${max:.4} (the costs the endpoint reported)"
                )));
            }
            return Ok(max_out);
        }
        let input_cost =
            self.input_tokens_estimate(request_tokens) as f64 * price.input_cost_per_token;
        let minimal_cost = input_cost + MIN_ANSWER_TOKENS as f64 * price.output_cost_per_token;
        // A raise by the human is checked again (a few times at most: float rounding must not
        // make this spin).
        for _ in 0..3 {
            // The whole tree's spend (sub-agents and calls in flight reserved), not only ours;
            // decided and reserved in one step so parallel sub-agents cannot both pass.
            let decision = {
                let st = self.lock();
                let own = (st.max_cost_usd, st.cost_usd, st.max_steps);
                self.agents.reserve_within(own, |max, spent, share| {
                    let Some(max) = max else {
                        return (Spend::Unlimited, 0.0);
                    };
                    // Sub-agents running side by side share what is left.
                    let left = (max - spent - input_cost) / share as f64;
                    if left >= 0.0 {
                        if price.output_cost_per_token <= 0.0 {
                            return (Spend::Go(max_out), input_cost);
                        }
                        let affordable = (left / price.output_cost_per_token)
                            .floor()
                            .min(u64::MAX as f64) as u64;
                        if affordable >= MIN_ANSWER_TOKENS {
                            let cap = max_out.map_or(affordable, |m| m.min(affordable));
                            let held = input_cost + cap as f64 * price.output_cost_per_token;
                            return (Spend::Go(Some(cap)), held);
                        }
                    }
                    (Spend::Short { spent, max }, 0.0)
                })
            };
            let (spent, max) = match decision {
                Spend::Unlimited => return Ok(max_out),
                Spend::Go(cap) => return Ok(cap),
                Spend::Short { spent, max } => (spent, max),
            };
            // A sub-agent does not ask the human: the ceiling is its parent's.
            if self.agents.is_child() || !self.cost_ceiling_allows(spent, minimal_cost, max) {
                break;
            }
        }
        let (max, spent) = {
            let st = self.lock();
            let (max, spent, _) = self
                .agents
                .budget(st.max_cost_usd, st.cost_usd, st.max_steps);
            (max.unwrap_or(0.0), spent)
        };
        Err(self.limit(format!(
            "spend ceiling reached: ${spent:.4} spent of ${max:.4}; the next call needs about ${input_cost:.4} for its input plus ${:.4} for a minimal answer ({MIN_ANSWER_TOKENS} tokens)",
            minimal_cost - input_cost
        )))
    }

    /// Input tokens of a request: the estimate (4 characters a token), scaled up by how much
    /// the endpoint's count of the last request exceeded its estimate.
    fn input_tokens_estimate(&self, estimated: u64) -> u64 {
        let st = self.lock();
        let (known, guessed) = (st.last_usage.prompt_tokens, st.last_request_tokens);
        if known > guessed && guessed > 0 {
            ((estimated as f64) * known as f64 / guessed as f64).ceil() as u64
        } else {
            estimated
        }
    }

    pub(crate) fn limit(&self, why: String) -> TurnSummary {
        self.notice(NoticeLevel::Warning, why.clone());
        TurnSummary {
            status: "limits_exceeded",
            exit_status: "LimitsExceeded",
            error: Some(why),
            text: String::new(),
        }
    }

    fn failure(&self, exit_status: &'static str, why: String) -> TurnSummary {
        self.notice(NoticeLevel::Error, why.clone());
        TurnSummary {
            status: "error",
            exit_status,
            error: Some(why),
            text: String::new(),
        }
    }

    /// Research ends with `why` (a limit or a guard): a feature may end the turn with its
    /// own tool-free answer (planning's synthesis).
    async fn research_end(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: String,
    ) -> Option<TurnSummary> {
        self.feature_research_end(client, token, crate::feature::ResearchEnd::Limit(why))
            .await
    }

    async fn feature_research_end(
        &self,
        client: &ModelClient,
        token: &CancellationToken,
        why: crate::feature::ResearchEnd,
    ) -> Option<TurnSummary> {
        // The first feature with an answer ends the turn.
        for hooks in crate::feature::turn_hooks() {
            if let Some(summary) = (hooks.research_end)(self, client, token, why.clone()).await {
                return Some(summary);
            }
        }
        None
    }

    pub(crate) async fn run_turn(&self, token: &CancellationToken) -> TurnSummary {
        self.extension_watch_turn_start();
        // The config files are stat'ed once per model or tool call (`reload_config`).
        let _stats = self.config.hold_stats();
        self.reload_config();
        let mut client = match self.client() {
            Ok(c) => c,
            Err(e) => return self.failure("Error", e),
        };
        let mut nudged = false;
        let mut acted = false;
        let mut stop_blocks: u32 = 0;
        let mut turn_steps: u32 = 0;
        self.agents.turn_start();
        let mut json_repairs: u32 = 0;
        let mut fuse = crate::recovery::Fuse::new(self);
        let planning = self.lock().policy.mode == yuyao_protocol::Mode::Plan;
        let mut balance = yuyao_planning::navigation::Balancer::new(planning);
        self.lock().preview.reset();
        // The recovery pass armed for the next request (execution mode; planning's pass is
        // the plan synthesis), and whether the reply being handled answered it.
        let mut pass: Option<String> = None;
        let mut turn_tool_calls: u32 = 0;
        let mut overflow_compacted = false;
        let mut granted_calls = 0u32;
        'turn: loop {
            if token.is_cancelled() {
                return interrupted();
            }
            // Limits are checked before the call, never after the money is spent.
            let max_steps = self.step_limit();
            if let Some(max) = max_steps
                && turn_steps >= max
            {
                self.budget_exhausted("tool_loop", turn_steps, max);
                // A person present may grant more; the turn goes on with tools enabled.
                // The grant raises the session's limit (seed 001: kept for the next turn, and
                // by the sub-agent tree's gate, which reads the same limit).
                if let Some(n) = self.grant_more("tool_loop", turn_steps, max) {
                    let mut st = self.lock();
                    st.max_steps = st.max_steps.map(|m| m.saturating_add(n));
                    continue;
                }
                // Planning's loop limit ends research, not the turn: one tool-free plan.
                if !balance.spent
                    && let Some(summary) = self
                        .research_end(
                            &client,
                            token,
                            format!("the planning loop limit ({max} model calls) was reached"),
                        )
                        .await
                {
                    return summary;
                }
                return self.limit(format!("step limit reached ({max} model calls)"));
            }
            // A stopped sub-agent, or the step limit of the whole tree (sub-agents included).
            if let Some(stop) = self.tree_gate() {
                return stop;
            }
            if let Some(wall) = self.opts.max_wall_seconds
                && self.started.elapsed().as_secs_f64() >= wall
            {
                return self.limit(format!("time limit reached ({wall} s)"));
            }
            // Hand edits of the configuration files take effect here (hot reload).
            self.reload_config();
            if !self.client_is_current(&client) {
                match self.client() {
                    Ok(c) => client = c,
                    Err(e) => return self.failure("Error", e),
                }
            }
            let queued: Vec<String> = self
                .steer
                .lock()
                .map(|mut q| q.drain(..).collect())
                .unwrap_or_default();
            for begin in crate::feature::hooks(|f| f.step_begin) {
                begin(self);
            }
            {
                let mut st = self.lock();
                for q in queued {
                    st.trajectory.record("steer", json!({"text": q}));
                    st.push(Message::user(q));
                }
                for inject in crate::feature::hooks(|f| f.step_inject) {
                    inject(self, &mut st);
                }
                for note in std::mem::take(&mut st.pending_notes) {
                    crate::state_notes::push_note(&mut st, note);
                }
            }
            // What changed since the model was last told (a mode switch, a commit) is
            // appended: the request's prefix stays as it was.
            if let Some(note) = self.settings_note() {
                crate::state_notes::push_note(&mut self.lock(), note);
            }
            // What a feature has to say since the last call (a skill added or removed).
            for note in crate::feature::hooks(|f| f.step_note).filter_map(|note| note(self)) {
                crate::state_notes::push_note(&mut self.lock(), note);
            }
            let tool_free = pass.is_some();
            if let Some(why) = pass.take() {
                self.lock()
                    .push(Message::user(crate::recovery::pass_prompt(&why)));
            }
            // MCP servers still starting get until their startup deadline to offer tools.
            for servers in crate::feature::all().filter_map(|f| f.server_tools) {
                (servers.wait_started)(self).await;
            }
            // A repo map built since its prompt's first request joins this one.
            self.attach_ready_repo_map();
            let mut req = self.next_request_cached();
            let max_out = self
                .config
                .get("model.max_output_tokens")
                .and_then(|v| v.as_integer())
                .filter(|n| *n > 0)
                .map(|n| n as u64);
            let budget = (self.context_window() as f64 * self.compaction_threshold()) as u64;
            // Counted once per step (the history is long in a long session); again only when
            // the messages or tools change below.
            let mut request_tokens = crate::context::request_tokens(&req);
            if request_tokens > budget {
                // The summary call is a model call too: the ceiling applies to it.
                let cap = match self.spend_cap(request_tokens, max_out) {
                    Ok(cap) => cap,
                    Err(stop) => return stop,
                };
                match self.compact(&client, None, token, cap).await {
                    Ok(_) => {
                        req = self.next_request_cached();
                        request_tokens = crate::context::request_tokens(&req);
                    }
                    Err(ModelError::Cancelled) => return interrupted(),
                    Err(e) => self.notice(
                        NoticeLevel::Warning,
                        format!("automatic compaction failed ({e}); continuing without it"),
                    ),
                }
            }
            // One-request notes go at the end of this request's view, not into the history.
            let view_notes = std::mem::take(&mut self.lock().view_notes);
            let recount = !view_notes.is_empty() || tool_free;
            for note in view_notes {
                self.lock()
                    .trajectory
                    .record("view_note", json!({"text": note}));
                push_view_note(&mut req.messages, note);
            }
            if let Some(format) = crate::feature::answer_format() {
                (format.apply)(self, &mut req);
            }
            self.apply_thinking(&mut req);
            if tool_free {
                req.tools.clear();
            }
            let stream = req.stream;
            if recount {
                request_tokens = crate::context::request_tokens(&req);
            }
            req.max_tokens = match self.spend_cap(request_tokens, max_out) {
                Ok(cap) => cap,
                Err(stop) => return stop,
            };
            self.lock().last_request_tokens = request_tokens;
            let step = self.lock().steps + 1;
            self.emit(Event::ModelCall { step });
            let t0 = std::time::Instant::now();
            let show = stream;
            // `<proposed_plan>` markup never reaches the live transcript.
            let mut plan_filter = yuyao_planning::extract::StreamFilter::new();
            let mut on_piece = |p: Piece<'_>| {
                // Said whether or not the reply streams: the user sees why it waits.
                if let Piece::Retrying {
                    retry,
                    of,
                    wait,
                    why,
                } = p
                {
                    self.notice(
                        NoticeLevel::Warning,
                        format!(
                            "{why}; retrying ({retry}/{of}) in {:.1} s",
                            wait.as_secs_f64()
                        ),
                    );
                    return;
                }
                if !show {
                    return;
                }
                match p {
                    Piece::Text(t) => {
                        let text = plan_filter.push(t);
                        if !text.is_empty() {
                            self.emit(Event::TextDelta { text });
                        }
                        let plan = plan_filter.take_plan();
                        if !plan.is_empty() {
                            self.emit(Event::PlanDelta { text: plan });
                        }
                    }
                    Piece::Thinking(t) => self.emit(Event::ThinkingDelta {
                        text: t.to_string(),
                    }),
                    Piece::Retrying { .. } => {}
                }
            };
            let result = client.complete(&req, &mut on_piece, token).await;
            let held = plan_filter.finish();
            if show && !held.is_empty() {
                self.emit(Event::TextDelta { text: held });
            }
            let reply = match result {
                Ok(r) => r,
                Err(ModelError::Cancelled) => return interrupted(),
                Err(e)
                    if crate::feature::answer_format().is_some_and(|f| (f.refused)(self, &e)) =>
                {
                    continue;
                }
                Err(e) if self.xhigh_refused(&e, &req) => continue,
                // The provider says the request is too long: compact once and retry; a
                // second refusal ends the turn (never a loop of flushes and retries).
                Err(e) if crate::prompt_fit::is_context_overflow(&e) => {
                    if overflow_compacted {
                        return self.failure(
                            "Error",
                            format!("the conversation still does not fit the model's context window after compaction ({e}); use /clear or /compact with a focus, or raise model.context_window only if the model really has more"),
                        );
                    }
                    overflow_compacted = true;
                    self.notice(
                        NoticeLevel::Warning,
                        "the provider says the request is longer than the model's context window; compacting the conversation once and retrying",
                    );
                    match self.compact(&client, None, token, req.max_tokens).await {
                        Ok(_) => continue,
                        Err(ModelError::Cancelled) => return interrupted(),
                        Err(c) => {
                            return self.failure(
                                "Error",
                                format!("the request is longer than the model's context window ({e}), and compacting it failed ({c}); use /clear"),
                            );
                        }
                    }
                }
                Err(e) => return self.failure("Error", e.to_string()),
            };
            turn_steps += 1;
            let cost = self.price().cost(&reply.usage);
            let assistant = {
                let mut st = self.lock();
                st.steps += 1;
                st.cost_usd += cost;
                st.usage.add(&reply.usage);
                self.agents.after_call(cost, st.cost_usd);
                st.last_usage = reply.usage;
                let mut m = Message::assistant(reply.text.clone());
                m.tool_calls = reply.tool_calls.clone();
                if !reply.reasoning.is_empty() {
                    m.reasoning_content = Some(reply.reasoning.clone());
                }
                st.push(m.clone());
                let fields = json!({"step": st.steps, "text": reply.text, "reasoning": reply.reasoning,
                       "tool_calls": reply.tool_calls, "usage": reply.usage, "cost_usd": cost,
                       "finish_reason": reply.finish_reason, "ms": t0.elapsed().as_millis() as u64});
                st.trajectory.record("assistant", fields);
                m
            };
            self.batch_ledger_record();
            let window = self.context_window();
            let (session_cost, percent, display) = {
                let st = self.lock();
                (
                    st.cost_usd,
                    crate::session::context_percent(&st.last_usage, st.last_request_tokens, window),
                    st.usage_display.clone(),
                )
            };
            let priced = self.price() != yuyao_model::Pricing::default();
            self.emit(Event::AssistantMessage {
                text: yuyao_planning::extract::strip(&reply.text),
                thinking: reply.reasoning.clone(),
                tool_calls: reply.tool_calls.len(),
            });
            self.emit(Event::Usage {
                prompt_tokens: reply.usage.prompt_tokens,
                completion_tokens: reply.usage.completion_tokens,
                cached_tokens: reply.usage.cached_tokens,
                reasoning_tokens: reply.usage.reasoning_tokens,
                cost_usd: cost,
                session_cost_usd: session_cost,
                context_percent: percent,
                line: crate::settings::usage_line(
                    &display,
                    &reply.usage,
                    cost,
                    session_cost,
                    priced,
                ),
            });

            let has_calls = !assistant.tool_calls.is_empty();
            for t in crate::feature::turn_hooks() {
                match (t.after_reply)(self, &reply.text, has_calls) {
                    crate::feature::ReplyStep::Stop(summary) => return summary,
                    crate::feature::ReplyStep::Again if !has_calls => continue 'turn,
                    _ => {}
                }
            }
            if assistant.tool_calls.is_empty() {
                if reply.text.trim().is_empty() {
                    if nudged
                        && let Some(summary) = self
                            .feature_research_end(
                                &client,
                                token,
                                crate::feature::ResearchEnd::EmptyTwice,
                            )
                            .await
                    {
                        return summary;
                    }
                    if !nudged {
                        nudged = true;
                        self.notice(
                            NoticeLevel::Warning,
                            "the model sent an empty reply; asking it once to continue",
                        );
                        self.lock().push(Message::user(NUDGE));
                        continue;
                    }
                    return self.failure(
                        "NotSubmitted",
                        "the model sent empty replies twice; the turn ends without a result".into(),
                    );
                }
                // Checks before the gates (verification by default: after edits, the
                // project's tests run before the final answer; a failure goes back once).
                let finals = || crate::feature::hooks(|f| f.final_answer);
                if finals().any(|h| (h.before_gates)(self, token)) {
                    continue;
                }
                // Stop hooks are quality gates: a failing one sends the model back to work,
                // a bounded number of times; then the turn ends reporting the gate.
                if let Some((gate, max)) = crate::feature::hooks(|f| f.stop_gate).find_map(|g| {
                    (g.check)(self, &reply.text, stop_blocks).map(|why| (why, (g.max)(self)))
                }) {
                    if stop_blocks >= max {
                        return self.failure(
                            "NotSubmitted",
                            format!("a Stop hook (quality gate) still fails after {stop_blocks} attempt(s) to fix it: {gate}"),
                        );
                    }
                    stop_blocks += 1;
                    self.notice(
                        NoticeLevel::Warning,
                        format!("a Stop hook failed; the model continues ({stop_blocks}/{max})"),
                    );
                    self.lock().push(Message::user(format!(
                        "A Stop hook (quality gate) failed, so the task is not finished. Fix what it reports, then finish:\n{gate}"
                    )));
                    continue;
                }
                // The answer's review (honest completion: a check that is not clean goes to
                // the model once); a schema-bound answer is a document, not a statement.
                if crate::feature::answer_format()
                    .and_then(|f| (f.instruction)(self))
                    .is_none()
                    && finals().any(|h| (h.review)(self, &reply.text))
                {
                    continue;
                }
                // Headless planning without a valid plan: one tool-free synthesis.
                if let Some(summary) = self
                    .feature_research_end(&client, token, crate::feature::ResearchEnd::Final)
                    .await
                {
                    return summary;
                }
                // --json-schema: the answer must validate; one repair turn, then an error.
                let mut document = false;
                let settled = crate::feature::answer_format()
                    .and_then(|f| (f.settle)(self, &reply.text, &mut json_repairs));
                let text = match settled {
                    None => reply.text,
                    Some(crate::feature::Settled::Valid(doc)) => {
                        document = true;
                        doc
                    }
                    Some(crate::feature::Settled::Repair(why)) => {
                        self.notice(
                            NoticeLevel::Warning,
                            "the answer does not match the JSON schema; one repair turn",
                        );
                        self.lock().push(Message::user(why));
                        continue;
                    }
                    Some(crate::feature::Settled::Fail(why)) => {
                        return self.failure("Error", why);
                    }
                };
                // Asked for a change and none was made (refused, or only talk): not done,
                // whatever the answer claims (seed 000 #7).
                let not_made = if document {
                    None
                } else {
                    finals().find_map(|h| (h.not_done)(self))
                };
                let exit_status = if not_made.is_some() {
                    "NotSubmitted"
                } else if acted && !text.trim().is_empty() {
                    "Submitted"
                } else if !document && is_degenerate(&text) {
                    "NotSubmitted"
                } else {
                    "Answered"
                };
                return TurnSummary {
                    status: "completed",
                    exit_status,
                    error: not_made,
                    text,
                };
            }

            // The line that says why the batch runs (the intent line, seed 000 #6).
            let intent = crate::feature::hooks(|f| f.batch_line)
                .next()
                .map(|line| line(self, &reply.text, &assistant.tool_calls))
                .unwrap_or_default();
            // Extension files written since the last look (a background job between turns)
            // are the session's doing too: nothing a session ran writes is taken for the user's.
            self.note_extension_writes_before_batch();
            for stated in crate::feature::hooks(|f| f.batch_intent) {
                stated(self, &intent);
            }
            let calls = assistant.tool_calls.clone();
            if tool_free {
                // Calls sent in answer to the tool-free pass never run; each is a refusal.
                let mut tripped = None;
                for call in &calls {
                    self.lock().push(Message::tool(
                        call.id.clone(),
                        "Refused: tools are unavailable in the recovery pass. Answer from the evidence gathered.",
                    ));
                    if let Some(why) = fuse.record(true) {
                        tripped.get_or_insert(why);
                    }
                }
                if let Some(why) = tripped {
                    return self.blocked_stop(&client, token, why).await;
                }
                continue;
            }
            turn_tool_calls += calls.len() as u32;
            let mut over = self
                .tool_call_budget(planning)
                .map(|m| m.saturating_add(granted_calls))
                .filter(|max| turn_tool_calls > *max);
            if let Some(max) = over {
                let used = turn_tool_calls - calls.len() as u32;
                self.budget_exhausted("tool_calls", used, max);
                // A person present may grant more: this batch then runs.
                if let Some(n) = self.grant_more("tool_calls", used, max) {
                    granted_calls = granted_calls.saturating_add(n.max(calls.len() as u32));
                    over = None;
                }
            }
            if let Some(max) = over {
                {
                    let mut st = self.lock();
                    for call in &calls {
                        st.push(Message::tool(
                            call.id.clone(),
                            format!("Not run: the turn's tool-call budget ({max}) is spent."),
                        ));
                    }
                }
                if !balance.spent
                    && let Some(summary) = self
                        .research_end(
                            &client,
                            token,
                            format!("the planning tool-call budget ({max} calls) is spent"),
                        )
                        .await
                {
                    return summary;
                }
                return self.limit(format!(
                    "tool-call limit reached ({max} tool calls in this turn)"
                ));
            }
            // The reply's task calls run first, concurrently; their results keep call order.
            let mut delegated = crate::feature::BesideOutcomes::new();
            for tools in crate::feature::all().filter_map(|f| f.tools) {
                if let Some(beside) = tools.beside {
                    delegated.extend(beside(self, &calls, &intent, token));
                }
            }
            let mut images = Vec::new();
            let mut tripped: Option<String> = None;
            let mut churned: Option<String> = None;
            for (k, call) in calls.iter().enumerate() {
                if token.is_cancelled() {
                    let mut st = self.lock();
                    for rest in &calls[k..] {
                        st.push(Message::tool(
                            rest.id.clone(),
                            "(interrupted by the user before this tool call ran)",
                        ));
                    }
                    return interrupted();
                }
                let outcome: CallOutcome = match delegated.remove(&call.id) {
                    Some(done) => done,
                    None => self.run_tool_call(&client, call, &intent, token).await,
                };
                acted |= outcome.ok && outcome.evidence;
                if let Some(why) = fuse.record(!outcome.ran) {
                    tripped.get_or_insert(why);
                }
                if outcome.ran
                    && let Some(why) = balance.record(
                        yuyao_planning::navigation::classify(
                            canonical_tool_name(&call.name).unwrap_or(""),
                            &call.arguments,
                        ),
                        outcome.ok,
                        outcome.may_change_repo,
                        &outcome.message.text(),
                    )
                {
                    churned.get_or_insert(why);
                }
                if outcome.may_change_repo {
                    self.mark_git_stale();
                }
                images.extend(outcome.images);
                self.lock().push(outcome.message);
            }
            self.finish_file_batch();
            // Extension files the batch wrote are marked at once (a kill -9 later keeps it).
            self.note_extension_writes_after_batch(&calls);
            if !images.is_empty() {
                self.lock().push(images_message(images));
            }
            // Planning's tool-preview budget is spent: more inspection cannot surface new
            // evidence, so the plan is synthesized now (seed 001); the
            // inspections the spend refused are the budget's doing, not the blocked-call fuse's.
            if planning
                && let Some(why) = self.preview_newly_spent()
                && let Some(summary) = self.research_end(&client, token, why).await
            {
                return summary;
            }
            // Every call of the batch has its result; then the fuse stops the turn.
            if let Some(why) = tripped {
                return self.blocked_stop(&client, token, why).await;
            }
            // Research stopped surfacing evidence: the turn's one recovery pass, and the
            // turn is in recovery mode from here on.
            if let Some(why) = churned {
                fuse.recovery = true;
                if let Some(summary) = self.research_end(&client, token, why.clone()).await {
                    return summary;
                }
                self.notice(
                    NoticeLevel::Warning,
                    format!("{why}: one tool-free recovery pass follows"),
                );
                self.lock()
                    .trajectory
                    .record("recovery_pass", json!({"reason": why}));
                pass = Some(why);
                continue;
            }
            // After the batch (--auto-test: the tests run after an edit batch, their result
            // joins the history).
            for after in crate::feature::hooks(|f| f.after_batch) {
                after(self, token);
            }
        }
    }
}

pub(crate) fn interrupted() -> TurnSummary {
    TurnSummary {
        status: "interrupted",
        exit_status: "Interrupted",
        error: Some("interrupted".into()),
        text: String::new(),
    }
}

/// What the spend ceiling allows for the next call.
enum Spend {
    /// No ceiling is set.
    Unlimited,
    /// The call may go, with this `max_tokens`.
    Go(Option<u64>),
    /// Not even a minimal answer fits in what is left.
    Short { spent: f64, max: f64 },
}
