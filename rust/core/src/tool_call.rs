//! One tool call: resolve the tool, adjudicate it (DESIGN §5), ask or review when the
//! policy says so, run it, cap the result, trace everything.

use crate::session::Session;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use yuyao_model::{ModelClient, build_request};
use yuyao_policy::{Action, Verdict};
use yuyao_protocol::{Event, Message, PermissionAnswer, Request, ToolCall, canonical_tool_name};
use yuyao_tools::{ToolArgs, ToolOutput};

/// Tools the core itself implements (they need the session or the user).
const CORE_TOOLS: &[&str] = &[
    "ask-user",
    "declare-scope",
    crate::todo::NAME,
    crate::planning::START_TOOL,
    crate::lsp::NAME,
];

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
    pub(crate) fn tool_enabled(&self, name: &str) -> bool {
        if crate::memory::tools::NAMES.contains(&name) && !self.memory.enabled {
            return false;
        }
        if name == crate::lsp::NAME && !self.lsp_enabled() {
            return false;
        }
        match &self.opts.tools {
            None => true,
            Some(list) => {
                let listed = |n: &str| list.iter().any(|t| canonical_tool_name(t) == Some(n));
                // monitor runs shell commands: it is available only where bash is.
                listed(name) && (name != "monitor" || listed("bash"))
            }
        }
    }

    /// Built-in and core tools (MCP tools are added by name in [`Session::all_tool_schemas`]).
    pub(crate) fn advertised_names(&self) -> Vec<&'static str> {
        self.tools
            .names()
            .into_iter()
            .chain(CORE_TOOLS.iter().copied())
            .chain(crate::memory::tools::NAMES.iter().copied())
            .chain(["task"])
            .chain(crate::subagents::team::tool_names(self))
            .filter(|n| self.tool_enabled(n))
            .chain(
                crate::skills::NAMES
                    .iter()
                    .copied()
                    .filter(|_| self.skill_tool_offered()),
            )
            .collect()
    }

    /// Every offered tool's full schema (`tool_defer.rs` decides which a request carries).
    pub(crate) fn all_tool_schemas(&self) -> Vec<Value> {
        let mut schemas = self
            .tools
            .schemas(|n| self.tool_enabled(n) && self.tool_offered(n));
        if self.tool_enabled("ask-user") {
            schemas.push(crate::ask::schema());
        }
        if self.tool_enabled("declare-scope") {
            schemas.push(crate::scope::declare::schema());
        }
        if self.tool_enabled("task") {
            schemas.push(self.task_schema());
        }
        // The planning workflow's tools (todo; start_planning outside planning).
        schemas.extend(crate::planning::schemas(self, |n| self.tool_enabled(n)));
        if let Some(team) =
            crate::subagents::team::schema(self).filter(|_| self.tool_enabled("team"))
        {
            schemas.push(team);
        }
        if self.tool_enabled(crate::lsp::NAME) {
            schemas.push(crate::lsp::schema());
        }
        for s in crate::memory::tools::schemas() {
            if self.tool_enabled(s["function"]["name"].as_str().unwrap_or("")) {
                schemas.push(s);
            }
        }
        if self.skill_tool_offered() {
            schemas.push(crate::skills::schema());
        }
        schemas.extend(self.mcp_schemas());
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
        if canonical_tool_name(&call.name) != Some("bash") {
            self.work_stamp_stale();
        }
        let t0 = std::time::Instant::now();
        let (out, effective, may_change_repo) = if yuyao_policy::is_mcp_tool(&call.name) {
            // A server may change files too: HEAD is read again after it ran.
            let (out, effective) = self.execute_mcp(client, call).await;
            (out, effective, effective)
        } else {
            self.execute(client, call, token).await
        };
        // Files a sub-agent, a team merge or an MCP server changed are not in the turn's
        // pre-images: the turn is then never judged unchanged.
        if effective
            && (matches!(canonical_tool_name(&call.name), Some("task" | "team"))
                || (may_change_repo && yuyao_policy::is_mcp_tool(&call.name)))
        {
            self.lock().completion.untracked_changes = true;
        }
        // The call's own cost (policy, snapshot capture, the tool), for benches and traces.
        let run_us = t0.elapsed().as_micros() as u64;
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
            crate::cmd_permissions::redact(self, &st.policy, &capped).into_owned()
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
        self.completion_after_call(&call.name, &call.arguments, out.ok, effective, &text);
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
            evidence: effective
                && !matches!(
                    canonical_tool_name(&call.name),
                    Some("ask-user" | "declare-scope" | "todo" | "start_planning" | "tool-search")
                ),
            may_change_repo,
        }
    }

    async fn execute(
        &self,
        client: &ModelClient,
        call: &ToolCall,
        token: &CancellationToken,
    ) -> (ToolOutput, bool, bool) {
        // Loading deferred schemas changes only what later requests carry.
        if let Some(out) = crate::tool_defer::run_tool(self, call) {
            return (out, true, false);
        }
        let available = self.advertised_names();
        let Some(name) = canonical_tool_name(&call.name).filter(|n| available.contains(n)) else {
            return (
                ToolOutput::err(format!(
                    "unknown or unavailable tool '{}'; available tools: {}",
                    call.name,
                    available.join(", ")
                )),
                false,
                false,
            );
        };
        // The task tracker and start_planning change only the session's own state.
        if let Some(out) = crate::planning::run_tool(self, name, &call.arguments) {
            return (out, true, false);
        }
        // Memory tools read only memory files, which are the user's own notes.
        if let Some(out) = crate::memory::search::run_tool(self, name, &call.arguments) {
            return (out, true, false);
        }
        // Loading a skill reads instructions: no evidence of work on the workspace.
        if let Some(out) = self.run_skill_tool(name, &call.arguments) {
            return (out, false, false);
        }
        if let Some(out) = crate::memory::tools::run(&self.memory, name, &call.arguments) {
            // A memory write changes a memory file, never the repository's tracked state.
            return (out, true, false);
        }
        if let Some(out) = crate::scope::declare::run_tool(self, name, &call.arguments) {
            return (out, true, false);
        }
        // The orchestrator's team tool (a run merges teammates' work: may change the repo).
        if let Some((out, merged)) =
            crate::subagents::team::run_tool(self, name, &call.arguments, token)
        {
            return (out, true, merged);
        }
        if let Some(out) = crate::lsp::run_tool(self, name, &call.arguments) {
            return (out, true, false);
        }
        // The one parse of this call: everything below reads `args`, never the raw JSON.
        let args = match ToolArgs::parse(name, &call.arguments) {
            Ok(a) => a,
            Err(e) => return (ToolOutput::err(e), false, false),
        };
        if let ToolArgs::AskUser(a) = &args {
            return (self.ask_user(a), true, false);
        }
        let action = match self.action_for(name, &args) {
            Ok(a) => a,
            Err(e) => return (ToolOutput::err(e), false, false),
        };
        // A preference rule ("use bun, not npm", from MEMORY.md or AGENTS.md) that forbids
        // this command's program.
        if let Some(cmd) = &action.command
            && let Some(rule) = crate::memory::rules::violation(&self.preference_rules(), cmd)
        {
            self.notice(yuyao_protocol::NoticeLevel::Warning, rule.clone());
            self.lock().trajectory.record(
                "decision",
                json!({"tool": name, "arguments": args.to_value(), "verdict": "Deny", "source": "memory rule", "reason": rule}),
            );
            return (ToolOutput::err(rule), false, false);
        }
        let mut decision = self.decide(&action);
        // A running skill's `allowed-tools` spare the mode's question, never a refusal.
        self.skill_preapproval(&action, &call.arguments, &mut decision);
        // PreToolUse / beforeShellExecution hooks: a deny stops the call whatever the policy
        // said; an ask puts it to the user; an allow spares the question, never a refusal.
        if let Some((permission, why)) =
            self.tool_hooks(name, &args.to_value(), action.command.as_deref())
        {
            match permission {
                crate::hooks::Permission::Deny => {
                    let refusal = format!("Refused by a hook: {why}. The call did not run.");
                    self.lock().trajectory.record(
                        "decision",
                        json!({"tool": name, "arguments": args.to_value(), "verdict": "Deny", "reason": why, "source": "hook"}),
                    );
                    crate::cmd_permissions::record_block(self, name, &action, None, &refusal);
                    return (ToolOutput::err(refusal), false, false);
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
        }
        // The turn's declared scope (seed 000 behaviour 2): a hit asks the user or is refused.
        if let Err(refusal) = crate::scope::guard::gate(self, name, &args, &action, &mut decision) {
            crate::cmd_permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false, false);
        }
        // A /batch unit may not edit a file another running unit holds.
        if let Err(refusal) = crate::subagents::batch::claim_gate(self, &action) {
            crate::cmd_permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false, false);
        }
        self.lock().trajectory.record(
            "decision",
            json!({"tool": name, "arguments": args.to_value(), "paths": action.paths, "verdict": format!("{:?}", decision.verdict), "reason": decision.reason, "source": decision.source, "segment": decision.segment}),
        );
        // A call that would fail on its own preconditions (a file not read yet, an edit whose
        // text is not there) is refused before the user is asked to approve it.
        if matches!(decision.verdict, Verdict::Ask | Verdict::Review)
            && let Some(path) = action.paths.first()
            && let Err(why) = yuyao_tools::fs::precheck(&args, &self.ctx, path)
        {
            return (ToolOutput::err(why), false, false);
        }
        let approved = match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(self.refusal(name, &action, &decision)),
            Verdict::Ask => self.ask_permission(
                name,
                &self.detail(name, &args, &action),
                &action,
                &decision.reason,
            ),
            Verdict::Review => {
                self.review(client, name, &self.detail(name, &args, &action))
                    .await
            }
        };
        if let Err(refusal) = approved {
            crate::cmd_permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false, false);
        }
        let Some(tool) = self.tools.get(name) else {
            return (
                ToolOutput::err(format!("tool '{name}' is not available in this build")),
                false,
                false,
            );
        };
        self.before_file_tool(name, &action.paths);
        self.completion_before_write(name, &action.paths);
        // A command allowed only because it was judged read-only runs under the read-only
        // OS sandbox (yolo asks nothing of the classifier).
        let read_only_call =
            decision.source == "read-only" && self.lock().policy.mode != yuyao_protocol::Mode::Yolo;
        self.ctx
            .read_only_call
            .store(read_only_call, std::sync::atomic::Ordering::SeqCst);
        // A command that may change files: the work tree is stamped before it, so the files
        // it changed are known after it (command_edits.rs).
        let may_change_repo = self.lock().policy.is_mutating(&action);
        let stamp = if name == "bash" && may_change_repo {
            let stamp = self.stamp_before_command();
            if stamp.is_none() {
                // What it changes cannot be known: the turn is never judged unchanged.
                self.lock().completion.untracked_changes = true;
            }
            stamp
        } else {
            None
        };
        // Tools are synchronous; the turn owns this thread, and cancellation reaches the
        // tool through the token (checked by long-running tools such as bash).
        let mut out = tool.run_args(&args, &self.ctx, token);
        if let Some(stamp) = stamp
            && let Some(note) =
                self.command_changed_files(stamp, action.command.as_deref().unwrap_or(""))
        {
            out.text = format!("{}\n\n{note}", out.text.trim_end());
        }
        // A job left running may change files after the stamp: it is not current.
        if let ToolArgs::Bash(b) = &args
            && b.run_in_background == Some(true)
        {
            self.work_stamp_stale();
        }
        self.ctx
            .read_only_call
            .store(false, std::sync::atomic::Ordering::SeqCst);
        crate::cmd_permissions::after_run(self, name, &action, &out.text);
        self.observe_tool(name, &action, &out);
        self.add_nested_conventions(name, &action.paths);
        // A file read or edited brings the rule files that match it into the context.
        if !matches!(name, "grep" | "glob") {
            self.rules_for_paths(&action.paths);
        }
        // PostToolUse hooks: what they say joins the result the model reads.
        let feedback = self.post_tool_hooks(name, &args.to_value(), out.ok, &out.text);
        // The edited files' new errors and warnings, while the model still looks at them.
        self.lsp_after_edit(name, &action.paths, &mut out);
        if !feedback.is_empty() {
            out.text = format!("{}\n\n[PostToolUse hook]\n{feedback}", out.text);
        }
        (out, true, may_change_repo)
    }

    /// An MCP tool call: the same adjudication as a built-in tool (rules `mcp__server__tool`
    /// and `mcp__server`; a change unless the server marks the tool read-only), then the
    /// call on the server.
    async fn execute_mcp(&self, client: &ModelClient, call: &ToolCall) -> (ToolOutput, bool) {
        let Some(tool) = self.mcp_tool(&call.name) else {
            let names: Vec<String> = self.mcp_tools().into_iter().map(|t| t.full_name).collect();
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
            );
        };
        let args = match yuyao_tools::parse_arguments(&call.arguments) {
            Ok(a) => a,
            Err(e) => return (ToolOutput::err(e), false),
        };
        let action = Action {
            tool: tool.full_name.clone(),
            command: None,
            paths: Vec::new(),
        };
        let mut decision = {
            let mut st = self.lock();
            st.policy.mcp_read_only = self.mcp_read_only();
            st.policy.decide(&action)
        };
        self.skill_preapproval(&action, &call.arguments, &mut decision);
        self.lock().trajectory.record(
            "decision",
            json!({"tool": tool.full_name, "arguments": args, "verdict": format!("{:?}", decision.verdict), "reason": decision.reason, "source": decision.source}),
        );
        let detail = format!(
            "MCP server '{}', tool '{}'\n{}",
            tool.server,
            tool.name,
            serde_json::to_string_pretty(&args).unwrap_or_default()
        );
        let name = tool.full_name.as_str();
        let approved = match decision.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Deny => Err(self.refusal(name, &action, &decision)),
            Verdict::Ask => self.ask_permission(name, &detail, &action, &decision.reason),
            Verdict::Review => self.review(client, name, &detail).await,
        };
        if let Err(refusal) = approved {
            crate::cmd_permissions::record_block(self, name, &action, Some(&decision), &refusal);
            return (ToolOutput::err(refusal), false);
        }
        (self.mcp_call(&tool, args).await, true)
    }

    /// "Refused: <reason>." and what would allow the call, derived from the decision's
    /// source (the mode, rule, secret or sandbox level that refused it).
    fn refusal(&self, name: &str, action: &Action, decision: &yuyao_policy::Decision) -> String {
        let rules = crate::cmd_permissions::grant_rules(self, name, action);
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
    pub(crate) fn detail(&self, name: &str, args: &ToolArgs, action: &Action) -> String {
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

    pub(crate) fn ask_permission(
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
        let rules = crate::cmd_permissions::grant_rules(self, name, action);
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
            ) => crate::cmd_permissions::grant(self, a, name, action),
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
