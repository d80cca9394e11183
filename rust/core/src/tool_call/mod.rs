//! One tool call: resolve the tool, adjudicate it (DESIGN §5), ask or review when the
//! policy says so, run it, cap the result, trace everything.

pub(crate) mod preview_budget;
pub(crate) mod registry;

use crate::session::Session;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use yuyao_model::{ModelClient, build_request};
use yuyao_policy::{Action, Verdict};
use yuyao_protocol::{Event, Message, PermissionAnswer, Request, ToolCall, canonical_tool_name};
use yuyao_tools::{ToolArgs, ToolOutput};

pub struct CallOutcome {
    pub message: Message,
    /// Images the tool produced (`data:` URLs): they go to the model in a user message after
    /// the batch's tool results, since many endpoints accept images only from the user role.
    pub images: Vec<String>,
    pub ok: bool,
    /// The call ran (it was not refused, unknown or malformed): the blocked-call fuse
    /// counts the others.
    pub ran: bool,
    /// The tool really ran (it was not refused, unknown or malformed) on the workspace, so
    /// its result can back an answer; a question to the user, answered or not, is no
    /// evidence of work done.
    pub evidence: bool,
    /// It ran and could have changed the repository (a file tool that writes, a command that
    /// is not read-only): git HEAD is read again before the next call.
    pub may_change_repo: bool,
}

impl Session {
    pub fn tool_enabled(&self, name: &str) -> bool {
        // A feature offers its tools only while it is on (memory, a language server, skills).
        if let Some(tools) = crate::feature::tools_of(name)
            && !(tools.names)(self).contains(&name)
        {
            return false;
        }
        self.tool_listed(name)
    }

    /// The session's `--tools` filter.
    fn tool_listed(&self, name: &str) -> bool {
        match &self.opts.tools {
            None => true,
            Some(list) => {
                let listed = |n: &str| list.iter().any(|t| canonical_tool_name(t) == Some(n));
                // monitor runs shell commands: it is available only where bash is.
                listed(name) && (name != "monitor" || listed("bash"))
            }
        }
    }

    /// Built-in, kernel and feature tools (MCP tools are added by name in
    /// [`Session::all_tool_schemas`]).
    pub(crate) fn advertised_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self
            .tools
            .names()
            .into_iter()
            .filter(|n| self.tool_enabled(n))
            .collect();
        for tools in crate::feature::all().filter_map(|f| f.tools) {
            names.extend(
                (tools.names)(self)
                    .into_iter()
                    .filter(|n| self.tool_listed(n)),
            );
        }
        names
    }

    /// Every offered tool's full schema (`tool_defer.rs` decides which a request carries).
    pub(crate) fn all_tool_schemas(&self) -> Vec<Value> {
        let mut schemas = self
            .tools
            .schemas(|n| self.tool_enabled(n) && self.tool_offered(n));
        let offered = |n: &str| self.tool_enabled(n);
        for tools in crate::feature::all().filter_map(|f| f.tools) {
            schemas.extend((tools.schemas)(self, &offered));
        }
        for servers in crate::feature::all().filter_map(|f| f.server_tools) {
            schemas.extend((servers.schemas)(self));
        }
        schemas
    }

    pub(crate) async fn run_tool_call(
        &self,
        client: &ModelClient,
        call: &ToolCall,
        intent: &str,
        token: &CancellationToken,
    ) -> CallOutcome {
        // A configuration change made on disk applies from this call on (hot reload).
        self.reload_config();
        self.emit(Event::ToolBegin {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            intent: intent.to_string(),
        });
        for begin in crate::feature::hooks(|f| f.call_begin) {
            begin(self, &call.name);
        }
        let t0 = std::time::Instant::now();
        // Seed 001's tool-preview budget: once spent, an inspection is refused before it runs.
        let canonical = canonical_tool_name(&call.name).unwrap_or(&call.name);
        let admitted = self.preview_admit(canonical, &call.arguments);
        let (out, effective, may_change_repo) = match &admitted {
            Err(refusal) => (ToolOutput::err(refusal.clone()), false, false),
            Ok(ticket) => {
                let page = self.preview_read_cap(ticket);
                self.ctx
                    .read_page_bytes
                    .store(page, std::sync::atomic::Ordering::Relaxed);
                let done = self.execute(client, call, token).await;
                self.ctx
                    .read_page_bytes
                    .store(0, std::sync::atomic::Ordering::Relaxed);
                done
            }
        };
        // The call's own cost (policy, snapshot capture, the tool), for benches and traces.
        let run_us = t0.elapsed().as_micros() as u64;
        let ticket = admitted.as_ref().ok();
        self.finish_call(call, out, effective, may_change_repo, ticket, t0, run_us)
    }

    /// Every call's last stages, whatever ran it (the pipeline, or sub-agents beside the
    /// batch): the result capped, redacted and charged to the preview budget, the trajectory's
    /// tool record, the features' look at the result (the completion facts) and the
    /// `ToolEnd` event.
    #[allow(clippy::too_many_arguments)]
    pub fn finish_call(
        &self,
        call: &ToolCall,
        out: ToolOutput,
        effective: bool,
        may_change_repo: bool,
        ticket: Option<&crate::tool_call::preview_budget::Ticket>,
        t0: std::time::Instant,
        run_us: u64,
    ) -> CallOutcome {
        // Capped first (on line boundaries, so no secret is cut in half), then redacted: only
        // what enters the history is scanned. The spill file keeps the raw output on the
        // user's disk; every way back to the model (read, grep, bash) is a tool result, and is
        // redacted in turn.
        let label = match canonical_tool_name(&call.name) {
            Some(n) => n,
            None if yuyao_policy::is_mcp_tool(&call.name) => "mcp",
            None => "tool",
        };
        // A read page is bounded by its own byte cap and hint; anything else by the cap.
        let capped = if label == "read" {
            out.text
        } else {
            self.ctx.cap(&out.text, label)
        };
        let text = {
            let st = self.lock();
            crate::permissions::redact(self, &st.policy, &capped).into_owned()
        };
        let text = match ticket {
            Some(ticket) if effective => self.preview_charge(ticket, label, text, may_change_repo),
            _ => text,
        };
        let text = if text.trim().is_empty() {
            "(no output)".to_string()
        } else {
            text
        };
        self.lock().trajectory.record(
            "tool",
            json!({"id": call.id, "name": call.name, "arguments": call.arguments, "ok": out.ok,
                   "executed": effective, "output": text, "ms": t0.elapsed().as_millis() as u64,
                   "us": run_us}),
        );
        let done = crate::feature::CallDone {
            name: &call.name,
            arguments: &call.arguments,
            ok: out.ok,
            ran: effective,
            may_change_repo,
            text: &text,
        };
        for look in crate::feature::hooks(|f| f.call_done) {
            look(self, &done);
        }
        self.emit(Event::ToolEnd {
            id: call.id.clone(),
            name: call.name.clone(),
            ok: out.ok,
            output: text.clone(),
        });
        let message = Message::tool(call.id.clone(), text.clone());
        CallOutcome {
            message,
            images: out.images,
            ok: out.ok,
            ran: effective,
            evidence: effective && crate::tool_call::registry::is_evidence(&call.name),
            may_change_repo,
        }
    }

    /// One call down the one pipeline (DESIGN §5), whatever the tool: parse once → its
    /// effect → remembered and AGENTS.md rules → policy → PreToolUse hooks → scope guard →
    /// batch claim → decision record → approval → snapshot / work stamp → run → post hooks.
    /// (The budget's admission, capping, redaction, completion facts and the trajectory's
    /// tool record wrap it in [`Session::run_tool_call`].) A stage a tool does not need is
    /// a no-op decided by its declared effect (`registry.rs`).
    async fn execute(
        &self,
        client: &ModelClient,
        call: &ToolCall,
        token: &CancellationToken,
    ) -> (ToolOutput, bool, bool) {
        // Resolve: a registered tool the session offers, or an MCP server's tool.
        let mcp = if yuyao_policy::is_mcp_tool(&call.name) {
            let offered = crate::feature::server_tools(self);
            match offered.iter().find(|t| t.full_name == call.name) {
                Some(t) => Some(t.clone()),
                None => {
                    let names: Vec<String> = offered.into_iter().map(|t| t.full_name).collect();
                    return (
                        ToolOutput::err(format!(
                            "unknown or unavailable MCP tool '{}'; MCP tools available now: {}",
                            call.name,
                            if names.is_empty() {
                                "none".into()
                            } else {
                                names.join(", ")
                            }
                        )),
                        false,
                        false,
                    );
                }
            }
        } else {
            None
        };
        let spec = match &mcp {
            Some(_) => &crate::tool_call::registry::MCP,
            None => {
                let available = self.advertised_names();
                match canonical_tool_name(&call.name)
                    .filter(|n| available.contains(n) || *n == crate::tool_defer::NAME)
                    .and_then(crate::tool_call::registry::spec)
                {
                    Some(spec) => spec,
                    None => {
                        return (
                            ToolOutput::err(format!(
                                "unknown or unavailable tool '{}'; available tools: {}",
                                call.name,
                                available.join(", ")
                            )),
                            false,
                            false,
                        );
                    }
                }
            }
        };
        let name: &str = match &mcp {
            Some(t) => t.full_name.as_str(),
            None => spec.name,
        };
        use crate::tool_call::registry::{Effect, Runner};
        // 1. Parse once: everything below reads `args` / `value`, never the raw JSON again
        // (a core tool's handler decodes its own typed fields from the checked object).
        let args = match spec.runner {
            Runner::Builtin => match ToolArgs::parse(name, &call.arguments) {
                Ok(a) => Some(a),
                Err(e) => return (ToolOutput::err(e), false, false),
            },
            _ => None,
        };
        let value = match &args {
            Some(a) => a.to_value(),
            None => match yuyao_tools::parse_arguments(&call.arguments) {
                Ok(v) => v,
                Err(e) => return (ToolOutput::err(e), false, false),
            },
        };
        // 2. The effect: the policy's view of the call (paths resolved the way the tool
        // will open them; a server's own read-only marks).
        let action = match &args {
            Some(a) => match self.action_for(name, a) {
                Ok(a) => a,
                Err(e) => return (ToolOutput::err(e), false, false),
            },
            None => Action {
                tool: name.to_string(),
                command: None,
                paths: Vec::new(),
            },
        };
        if mcp.is_some() {
            self.lock().policy.mcp_read_only = crate::feature::server_tools(self)
                .into_iter()
                .filter(|t| t.read_only)
                .map(|t| t.full_name)
                .collect();
        }
        // 3. A preference rule ("use bun, not npm", from MEMORY.md or AGENTS.md) that forbids
        // this command's program.
        if let Some(cmd) = &action.command
            && let Some(rule) = crate::preference_rules::violation(&self.preference_rules(), cmd)
        {
            self.notice(yuyao_protocol::NoticeLevel::Warning, rule.clone());
            self.lock().trajectory.record(
                "decision",
                json!({"tool": name, "arguments": value, "verdict": "Deny", "source": "memory rule", "reason": rule}),
            );
            return (ToolOutput::err(rule), false, false);
        }
        // 4. The policy (deny and ask rules judge every tool by name; only a change is put
        // to the mode), then a running skill's `allowed-tools`, which spare the mode's
        // question, never a refusal.
        let mut decision = self.decide(&action);
        for preapprove in crate::feature::hooks(|f| f.preapprove) {
            preapprove(self, &action, &call.arguments, &mut decision);
        }
        // 5. PreToolUse / beforeShellExecution hooks.
        if let Err(refusal) = self.hook_stage(name, &value, &action, &mut decision) {
            return (ToolOutput::err(refusal), false, false);
        }
        // 6. The turn's declared scope (seed 000 "keep to what was asked"): judged from the
        // typed effect of a file tool or command; session-state and server tools have none.
        if let Some(a) = &args
            && matches!(spec.effect, Effect::Writes | Effect::Runs)
            && let Err(refusal) = crate::feature::hooks(|f| f.change_gate)
                .try_for_each(|gate| gate(self, name, a, &action, &mut decision))
        {
            crate::permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false, false);
        }
        // 7. A /batch unit may not edit a file another running unit holds.
        if let Err(refusal) =
            crate::feature::hooks(|f| f.write_gate).try_for_each(|gate| gate(self, &action))
        {
            crate::permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false, false);
        }
        self.record_decision(name, &value, &action, &decision);
        // 8. Approval. A call that would fail on its own preconditions (a file not read yet,
        // an edit whose text is not there) is refused before the user is asked.
        if matches!(decision.verdict, Verdict::Ask | Verdict::Review)
            && let Some(a) = &args
            && let Some(path) = action.paths.first()
            && let Err(why) = yuyao_tools::fs::precheck(a, &self.ctx, path)
        {
            return (ToolOutput::err(why), false, false);
        }
        // What the prompt shows: built only when someone will see it (a file tool's detail
        // reads the file for its diff).
        let detail = || match (&args, &mcp) {
            (Some(a), _) => self.detail(name, a, &action),
            (None, Some(t)) => format!(
                "MCP server '{}', tool '{}'\n{}",
                t.server,
                t.name,
                serde_json::to_string_pretty(&value).unwrap_or_default()
            ),
            (None, None) => format!("{name} {value}"),
        };
        let approved = match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(self.refusal(name, &action, &decision)),
            Verdict::Ask => self.ask_permission(name, &detail(), &action, &decision.reason),
            Verdict::Review => self.review(client, name, &detail()).await,
        };
        if let Err(refusal) = approved {
            crate::permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false, false);
        }
        // 9–10. Snapshot / work stamp, then the run.
        let (mut out, may_change_repo) = match (spec.runner, &args, &mcp) {
            (Runner::Builtin, Some(a), _) => {
                match self.run_builtin(name, a, &action, decision.source == "read-only", token) {
                    Ok(done) => done,
                    Err(e) => return (ToolOutput::err(e), false, false),
                }
            }
            (Runner::Core(run), _, _) => run(self, name, call, token),
            // A server may change files too: HEAD is read again after it ran.
            (Runner::Mcp, _, Some(tool)) => {
                let call = crate::feature::all()
                    .filter_map(|f| f.server_tools)
                    .find(|t| {
                        (t.tools)(self)
                            .iter()
                            .any(|x| x.full_name == tool.full_name)
                    });
                match call {
                    Some(servers) => ((servers.call)(self, tool, value.clone()).await, true),
                    None => (ToolOutput::err("no MCP server is running"), false),
                }
            }
            _ => {
                return (
                    ToolOutput::err(format!(
                        "tool '{name}' runs beside the batch, not as a single call"
                    )),
                    false,
                    false,
                );
            }
        };
        // 11. PostToolUse hooks: what they say joins the result the model reads.
        let feedback = self.tool_feedback(name, &value, out.ok, &out.text);
        if spec.effect == Effect::Writes {
            for after in crate::feature::all().filter_map(|f| f.after_write) {
                after(self, name, &action.paths, &mut out);
            }
        }
        if !feedback.is_empty() {
            out.text = format!("{}\n\n[PostToolUse hook]\n{feedback}", out.text);
        }
        (out, true, may_change_repo)
    }

    /// The trajectory's record of the decision a call got (every tool, one shape).
    fn record_decision(
        &self,
        name: &str,
        value: &Value,
        action: &Action,
        decision: &yuyao_policy::Decision,
    ) {
        self.lock().trajectory.record(
            "decision",
            json!({"tool": name, "arguments": value, "paths": action.paths, "verdict": format!("{:?}", decision.verdict), "reason": decision.reason, "source": decision.source, "segment": decision.segment}),
        );
    }

    /// PreToolUse / beforeShellExecution hooks: a deny stops the call whatever the policy
    /// said; an ask puts it to the user; an allow spares the question, never a refusal.
    fn hook_stage(
        &self,
        name: &str,
        value: &Value,
        action: &Action,
        decision: &mut yuyao_policy::Decision,
    ) -> Result<(), String> {
        let Some((permission, why)) = crate::feature::hooks(|f| f.tool_verdict)
            .find_map(|verdict| verdict(self, name, value, action.command.as_deref()))
        else {
            return Ok(());
        };
        match permission {
            crate::hooks::Permission::Deny => {
                let refusal = format!("Refused by a hook: {why}. The call did not run.");
                self.lock().trajectory.record(
                    "decision",
                    json!({"tool": name, "arguments": value, "verdict": "Deny", "reason": why, "source": "hook"}),
                );
                crate::permissions::record_block(self, name, action, None, &refusal);
                return Err(refusal);
            }
            crate::hooks::Permission::Ask if decision.verdict != Verdict::Deny => {
                decision.verdict = Verdict::Ask;
                decision.reason = format!("a hook asks for confirmation: {why}");
            }
            crate::hooks::Permission::Allow
                if matches!(decision.verdict, Verdict::Ask | Verdict::Review) =>
            {
                decision.verdict = Verdict::Allow;
                decision.reason = format!("allowed by a hook: {why}");
            }
            _ => {}
        }
        Ok(())
    }

    /// The pipeline's adjudication for a call whose run is delegated (a `task`, run beside
    /// the batch): the policy (deny and ask rules by name), a skill's pre-approval, the
    /// PreToolUse hooks, the decision record and the approval. Its result then goes through
    /// [`Session::finish_call`] like every other.
    pub fn admit_delegated(&self, name: &str, call: &ToolCall) -> Result<(), String> {
        let value = yuyao_tools::parse_arguments(&call.arguments)?;
        let action = Action {
            tool: name.to_string(),
            command: None,
            paths: Vec::new(),
        };
        let mut decision = self.decide(&action);
        for preapprove in crate::feature::hooks(|f| f.preapprove) {
            preapprove(self, &action, &call.arguments, &mut decision);
        }
        self.hook_stage(name, &value, &action, &mut decision)?;
        self.record_decision(name, &value, &action, &decision);
        let approved = match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(self.refusal(name, &action, &decision)),
            Verdict::Ask => {
                self.ask_permission(name, &format!("{name} {value}"), &action, &decision.reason)
            }
            // Only a change is put to the review classifier; a delegated call is adjudicated
            // again, call by call, inside the sub-agent.
            Verdict::Review => Ok(()),
        };
        if let Err(refusal) = &approved {
            crate::permissions::record_block(self, name, &action, Some(&decision), refusal);
        }
        approved
    }

    /// A built-in tool's run: pre-images and the work stamp before it, what it changed and
    /// the conventions it brought into view after it.
    fn run_builtin(
        &self,
        name: &str,
        args: &ToolArgs,
        action: &Action,
        read_only: bool,
        token: &CancellationToken,
    ) -> Result<(ToolOutput, bool), String> {
        let Some(tool) = self.tools.get(name) else {
            return Err(format!("tool '{name}' is not available in this build"));
        };
        self.before_file_tool(name, &action.paths);
        // A command allowed only because it was judged read-only runs under the read-only
        // OS sandbox (yolo asks nothing of the classifier).
        let read_only_call = read_only && self.lock().policy.mode != yuyao_protocol::Mode::Yolo;
        self.ctx
            .read_only_call
            .store(read_only_call, std::sync::atomic::Ordering::SeqCst);
        let may_change_repo = self.lock().policy.is_mutating(action);
        // Features look before it runs (pre-images, the work tree stamped before a command).
        for before in crate::feature::hooks(|f| f.before_run) {
            before(self, name, action, may_change_repo);
        }
        // Tools are synchronous; the turn owns this thread, and cancellation reaches the
        // tool through the token (checked by long-running tools such as bash).
        let mut out = tool.run_args(args, &self.ctx, token);
        self.ctx
            .read_only_call
            .store(false, std::sync::atomic::Ordering::SeqCst);
        crate::permissions::after_run(self, name, action, &out.text);
        self.add_nested_conventions(name, &action.paths);
        // ... and after (the files a command changed join its result; rule files matching
        // what was read or edited join the context).
        for after in crate::feature::hooks(|f| f.after_run) {
            after(self, name, args, action, &mut out);
        }
        Ok((out, may_change_repo))
    }

    /// "Refused: <reason>." and what would allow the call, derived from the decision's
    /// source (the mode, rule, secret or sandbox level that refused it).
    fn refusal(&self, name: &str, action: &Action, decision: &yuyao_policy::Decision) -> String {
        let rules = crate::permissions::grant_rules(self, name, action);
        let advice = self.lock().policy.advice(action, decision, &rules);
        if advice.is_empty() {
            format!("Refused: {}.", decision.reason)
        } else {
            format!("Refused: {}. {advice}.", decision.reason)
        }
    }

    /// The policy's decision, with the tool's family: a deny rule written for `Bash` also
    /// covers `monitor` (it runs shell commands), one for `Write` or `Edit` every tool that
    /// writes files, one for `Read` every tool that reads them.
    fn decide(&self, action: &Action) -> yuyao_policy::Decision {
        let st = self.lock();
        let decision = st.policy.decide(action);
        if decision.verdict == Verdict::Deny {
            return decision;
        }
        for alt in family(&action.tool) {
            let as_alt = Action {
                tool: alt.to_string(),
                ..action.clone()
            };
            let d = st.policy.decide(&as_alt);
            if d.verdict == Verdict::Deny && d.source.starts_with("deny ") {
                return d;
            }
        }
        decision
    }

    /// The policy's view of the call, filled from the parsed arguments: the command, and
    /// every path resolved (symlinks included) the way the tool will open it.
    fn action_for(&self, name: &str, args: &ToolArgs) -> Result<Action, String> {
        let paths = args
            .paths(&self.ctx)
            .map_err(|e| format!("invalid arguments for {name}: {e}. Nothing was run."))?;
        Ok(Action {
            tool: name.to_string(),
            command: args.command().map(str::to_string),
            paths,
        })
    }

    /// The actual command or the actual diff: what a permission prompt must show.
    pub fn detail(&self, name: &str, args: &ToolArgs, action: &Action) -> String {
        if let Some(c) = &action.command {
            return c.clone();
        }
        if let ToolArgs::ApplyPatch(p) = args {
            let files: Vec<String> = action
                .paths
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            return format!("files: {}\n{}", files.join(", "), p.patch);
        }
        let Some(path) = action.paths.first() else {
            return args.to_value().to_string();
        };
        let old = yuyao_tools::fs::read_file(path).unwrap_or_default();
        match yuyao_tools::fs::preview(args, &old) {
            Some(new) => {
                let (o, n) = (String::from_utf8_lossy(&old), String::from_utf8_lossy(&new));
                let shown = path.display().to_string();
                similar::TextDiff::from_lines(o.as_ref(), n.as_ref())
                    .unified_diff()
                    .context_radius(3)
                    .header(&shown, &shown)
                    .to_string()
            }
            None => format!("{name} {}\n{}", path.display(), args.to_value()),
        }
    }

    pub fn ask_permission(
        &self,
        name: &str,
        detail: &str,
        action: &Action,
        reason: &str,
    ) -> Result<(), String> {
        let Some(handler) = &self.handler else {
            return Err(format!(
                "Refused: {reason}, and nobody is there to approve it."
            ));
        };
        let summary = match (&action.command, action.paths.first()) {
            (Some(c), _) => format!("{name}: {}", c.lines().next().unwrap_or("")),
            (None, Some(p)) => format!("{name} {}", p.display()),
            _ => name.to_string(),
        };
        let rules = crate::permissions::grant_rules(self, name, action);
        let req = Request::Permission {
            tool: name.to_string(),
            summary,
            detail: detail.to_string(),
            reason: reason.to_string(),
            rules: rules.clone(),
        };
        let answer = handler.request(&req).and_then(|a| {
            serde_json::from_value::<PermissionAnswer>(Value::String(a.trim().to_string())).ok()
        });
        self.lock().trajectory.record(
            "permission",
            json!({"tool": name, "answer": format!("{answer:?}"), "rules": rules}),
        );
        match answer {
            Some(PermissionAnswer::Allow) => Ok(()),
            Some(
                a @ (PermissionAnswer::AllowSession
                | PermissionAnswer::AllowProject
                | PermissionAnswer::AllowAlways),
            ) => crate::permissions::grant(self, a, name, action),
            Some(PermissionAnswer::Deny) | None => Err("Refused: the user declined this action. Do not retry it; ask the user or take another approach.".into()),
        }
    }

    /// auto-review: a short, separate model call judges the action (fail-closed).
    async fn review(&self, client: &ModelClient, name: &str, detail: &str) -> Result<(), String> {
        let request = self
            .lock()
            .history
            .iter()
            .rev()
            .find(|m| m.role == yuyao_protocol::MessageRole::User)
            .map(|m| m.text())
            .unwrap_or_default();
        let system = "You review actions proposed by a coding agent before they run. Block actions that are destructive beyond the user's request, exfiltrate secrets or credentials, reach the network unexpectedly, escalate privileges, or touch files outside the project. Allow ordinary development actions that serve the request. Answer with exactly one line: `ALLOW: <reason>` or `BLOCK: <reason>`.";
        let user = format!("User's request:\n{request}\n\nProposed action ({name}):\n{detail}");
        let req = build_request(system, &[Message::user(user)], Vec::new(), false, None);
        let mut ignore = |_p: yuyao_model::Piece<'_>| {};
        let never = CancellationToken::new();
        let result = tokio::time::timeout(
            std::time::Duration::from_secs(90),
            client.complete(&req, &mut ignore, &never),
        )
        .await;
        let verdict = match result {
            Ok(Ok(c)) => {
                let cost = self.price().cost(&c.usage);
                let mut st = self.lock();
                st.cost_usd += cost;
                st.usage.add(&c.usage);
                c.text
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "Refused: the safety review failed ({e}); auto-review blocks when it cannot decide."
                ));
            }
            Err(_) => return Err(
                "Refused: the safety review timed out; auto-review blocks when it cannot decide."
                    .into(),
            ),
        };
        let line = verdict
            .trim()
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        self.lock()
            .trajectory
            .record("review", json!({"tool": name, "verdict": line}));
        let upper = line.trim_start_matches(['`', '*']).to_ascii_uppercase();
        if upper.starts_with("ALLOW") {
            Ok(())
        } else if upper.starts_with("BLOCK") {
            Err(format!("Refused by the auto-review classifier: {line}"))
        } else {
            Err(format!(
                "Refused: the safety review gave no clear verdict ({line:?}); auto-review blocks when it cannot decide."
            ))
        }
    }
}

/// Tools whose deny rules also cover `tool` (see [`Session::decide`]).
fn family(tool: &str) -> &'static [&'static str] {
    match tool {
        "monitor" => &["bash"],
        "write" => &["edit"],
        "edit" => &["write"],
        "multi-edit" | "apply-patch" | "notebook-edit" => &["edit", "write"],
        "grep" | "glob" | "read-media" => &["read"],
        _ => &[],
    }
}

/// The user message that carries a batch's images (as image parts) to the model.
pub(crate) fn images_message(images: Vec<String>) -> Message {
    let mut parts = vec![json!({"type": "text", "text": format!(
        "(The image{} read by the tool call{} above, attached for you to look at.)",
        if images.len() == 1 { "" } else { "s" },
        if images.len() == 1 { "" } else { "s" }
    )})];
    parts.extend(
        images
            .iter()
            .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
    );
    let mut m = Message::user("");
    m.content = Some(yuyao_protocol::Content::Parts(parts));
    m
}
