//! The session's own commands (seed 002 §3): reports (/status /cost /tools), the switches
//! that mirror startup flags (/mode /role /ask /debug /model /think /curiosity /stream
//! /show-thinking /vim), /config, /gc, /exit, the display commands the TUI runs (/copy /focus
//! /tui), and the table rows of the kernel's context commands (/context /compact /recap).
//! Registered first so `/help` lists them first in their groups. The switches themselves
//! (`set_mode`, `set_role`, `set_model`) and the command table stay in the kernel
//! (`commands.rs`): `--mode`, planning and settings run the same code.

use crate::commands::{one_arg, parse, set_mode, set_model, set_role, toggle_arg, usage};
use crate::session::{CoreError, Session};
use yuyao_protocol::{Curiosity, MessageRole, Mode, Role, ShowThinking, ThinkingLevel};
use yuyao_store::Layer;

/// What this feature adds to a session (feature.rs).
pub(crate) static FEATURE: crate::feature::Feature = crate::feature::Feature {
    name: "session",
    commands: &[
        crate::cmd!(
            "status",
            [],
            "",
            "version, model, working directory, mode and role",
            Some(status)
        ),
        crate::cmd!(
            "cost",
            [],
            "",
            "tokens and cost of this session so far",
            Some(cost)
        ),
        crate::cmd!(
            "tools",
            [],
            "",
            "list the tools available to the model",
            Some(tools)
        ),
        crate::cmd!(
            "mode",
            [],
            "<ask|plan|auto-edit|auto-review|yolo>",
            "switch permission mode (= --mode)",
            Some(mode)
        ),
        crate::cmd!(
            "role",
            [],
            "<execute|ask|architect|debug|orchestrator>",
            "switch role (= --role)",
            Some(role)
        ),
        crate::cmd!(
            "ask",
            [],
            "[on|off]",
            "the answer-only role (= --role ask); off returns to the role before",
            Some(|s, a| role_toggle(s, "ask", a))
        ),
        crate::cmd!(
            "debug",
            [],
            "[on|off]",
            "the debugging role (= --role debug); off returns to the role before",
            Some(|s, a| role_toggle(s, "debug", a))
        ),
        crate::cmd!(
            "vim",
            [],
            "[on|off]",
            "vim editing keys in the input (ui.editor_mode); no argument toggles",
            Some(vim)
        ),
        crate::cmd!(
            "model",
            [],
            "<name>",
            "switch model, keeping the context",
            Some(model)
        ),
        crate::cmd!(
            "config",
            ["settings"],
            "[get <key> | set <key> <value> [--project] | unset <key> | list]",
            "read and write configuration (hot reload)",
            Some(config)
        ),
        crate::cmd!(
            "stream",
            [],
            "<on|off>",
            "toggle streaming output (= --stream)",
            Some(stream)
        ),
        crate::cmd!(
            "show-thinking",
            [],
            "<off|collapsed|expanded>",
            "how thinking is displayed (= --show-thinking)",
            Some(show_thinking)
        ),
        crate::cmd!(
            "think",
            [],
            "<off|low|medium|high|max>",
            "reasoning budget (= --thinking)",
            Some(think)
        ),
        crate::cmd!(
            "curiosity",
            [],
            "<low|normal|high>",
            "how readily the agent asks (= --curiosity)",
            Some(curiosity)
        ),
        crate::cmd!(
            "exit",
            ["quit"],
            "",
            "leave the session (exit code 0)",
            Some(exit)
        ),
        crate::cmd!(
            "copy",
            [],
            "[N]",
            "copy an answer to the clipboard",
            Some(ui_only)
        ),
        crate::cmd!("focus", [], "", "toggle the focused view", Some(ui_only)),
        crate::cmd!(
            "tui",
            [],
            "<default|fullscreen>",
            "switch the terminal renderer",
            Some(tui)
        ),
        crate::cmd!(
            "context",
            [],
            "<list|detail>",
            "context sizes and truncation",
            Some(context_command)
        ),
        crate::cmd!(
            "gc",
            [],
            "[--dry-run]",
            "free ended sessions' spill files, job logs, snapshots (storage.*)",
            Some(gc)
        ),
        crate::cmd!(
            "compact",
            ["compress"],
            "[focus]",
            "summarize the context",
            Some(crate::compact::compact_command)
        ),
        crate::cmd!(
            "recap",
            [],
            "",
            "one-line summary of where we left off",
            Some(crate::compact::recap_command)
        ),
    ],
    ..crate::feature::Feature::NONE
};

/// UI-only commands live in the TUI; `dispatch` knows them and says where they work.
fn ui_only(_: &Session, _: &[String]) -> Result<String, CoreError> {
    Ok("this command changes the interactive display; it takes effect in the yuyao TUI".into())
}

fn tui(s: &Session, args: &[String]) -> Result<String, CoreError> {
    match args {
        [] => ui_only(s, args),
        [a] if matches!(a.as_str(), "default" | "fullscreen") => ui_only(s, args),
        [a] => Err(CoreError::Usage(format!(
            "invalid argument '{a}' for /tui: expected default or fullscreen"
        ))),
        _ => Err(usage("tui")),
    }
}

fn status(s: &Session, _: &[String]) -> Result<String, CoreError> {
    let v = s.status_json();
    let get = |k: &str| match &v[k] {
        serde_json::Value::String(t) => t.clone(),
        serde_json::Value::Null => "(not set)".into(),
        other => other.to_string(),
    };
    Ok(format!(
        "yuyao {}\nsession   {}{}\nmodel     {}\ncwd       {}\nmode      {}\nrole      {}\nsandbox   {}\nnetwork   {}\nsteps     {}\ncost      ${:.4}{}\ntokens    {}\ncontext   {}% of {} tokens",
        get("version"),
        get("session_id"),
        match v["title"].as_str() {
            Some(t) => format!(" ({t})"),
            None => String::new(),
        },
        get("model"),
        get("cwd"),
        get("mode"),
        get("role"),
        get("sandbox"),
        get("network"),
        get("steps"),
        v["cost_usd"].as_f64().unwrap_or(0.0),
        match v["max_cost_usd"].as_f64() {
            Some(m) => format!(" (ceiling ${m:.4})"),
            None => String::new(),
        },
        {
            let u = &v["usage"];
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            let hits = match u["cache_hit_percent"].as_f64() {
                Some(p) => format!("{p:.1}% cache hits"),
                None => "no cache hits reported".into(),
            };
            format!(
                "{} in ({} cached) / {} out · {hits}",
                n("prompt_tokens"),
                n("cached_tokens"),
                n("completion_tokens")
            )
        },
        get("context_percent"),
        get("context_window"),
    ) + &crate::feature::all()
        .filter_map(|f| f.status_line)
        .map(|line| line(s))
        .collect::<String>())
}

fn cost(s: &Session, _: &[String]) -> Result<String, CoreError> {
    let v = s.status_json();
    let u = &v["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let p = &v["pricing"];
    let per_m = |k: &str| match p[k].as_f64() {
        Some(x) => format!("${:.4}", x * 1e6),
        None => "as input".into(),
    };
    let mut prices = format!(
        "\nprices    {} per million tokens: {} in, {} out, {} cache read, {} cache write\nsource    {}",
        p["source"].as_str().unwrap_or("unknown"),
        per_m("input_cost_per_token"),
        per_m("output_cost_per_token"),
        per_m("cache_read_input_token_cost"),
        per_m("cache_creation_input_token_cost"),
        p["cost_from"].as_str().unwrap_or("unknown"),
    );
    if let Some(r) = p["reported_cost_usd"].as_f64() {
        prices.push_str(&format!(
            "\nreported  ${r:.6} by the proxy ({})",
            yuyao_model::COST_HEADER
        ));
    }
    for k in ["cost_env_warning", "warning"] {
        if let Some(w) = p[k].as_str() {
            prices.push_str(&format!("\nwarning   {w}"));
        }
    }
    Ok(format!(
        "cost      ${:.4}{}\ntokens    {} in ({} cached), {} out ({} reasoning)\nsteps     {}{prices}",
        v["cost_usd"].as_f64().unwrap_or(0.0),
        match v["max_cost_usd"].as_f64() {
            Some(m) => format!(" of a ${m:.4} ceiling"),
            None => String::new(),
        },
        n("prompt_tokens"),
        n("cached_tokens"),
        n("completion_tokens"),
        n("reasoning_tokens"),
        v["steps"],
    ))
}

fn tools(s: &Session, _: &[String]) -> Result<String, CoreError> {
    let names = s.advertised_names();
    let mut out = String::from("Tools available to the model:\n");
    for (name, desc) in s.tools.describe() {
        if names.contains(&name) {
            let first = desc.split(". ").next().unwrap_or(desc);
            out.push_str(&format!("  {name:<12} {first}\n"));
        }
    }
    for f in crate::feature::all().filter_map(|f| f.tools) {
        for (name, line) in f.summaries {
            if names.contains(name) {
                out.push_str(&format!("  {name:<12} {line}\n"));
            }
        }
    }
    Ok(out.trim_end().to_string())
}

fn mode(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        return Ok(format!(
            "mode: {} (one of {})",
            s.lock().policy.mode,
            Mode::ALL.join(", ")
        ));
    }
    set_mode(s, one_arg("mode", args)?)
}

/// `/ask` and `/debug [on|off]`: off goes back to the role the switch was made from.
fn role_toggle(s: &Session, name: &str, args: &[String]) -> Result<String, CoreError> {
    if toggle_arg(name, args)?.unwrap_or(true) {
        return set_role(s, name);
    }
    let (now, before) = {
        let st = s.lock();
        (st.policy.role, st.role_before)
    };
    if now.as_str() != name {
        return Ok(format!("the {name} role is not on (role: {now})"));
    }
    set_role(s, before.unwrap_or(Role::Execute).as_str())
}

/// `/vim [on|off]`: the input's editing keys (`ui.editor_mode`, saved like `/config set`).
fn vim(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let on = match toggle_arg("vim", args)? {
        Some(on) => on,
        None => {
            s.config
                .get("ui.editor_mode")
                .map(|v| yuyao_store::config::display(&v))
                .as_deref()
                != Some("vi")
        }
    };
    s.config
        .set("ui.editor_mode", if on { "vi" } else { "emacs" }, None)
        .map_err(|e| CoreError::Failed(e.to_string()))?;
    s.lock().config_seen = crate::context::config_snapshot(&s.config);
    Ok(format!(
        "editor mode: {}",
        if on { "vim" } else { "default" }
    ))
}

fn role(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        return Ok(format!(
            "role: {} (one of {})",
            s.lock().policy.role,
            Role::ALL.join(", ")
        ));
    }
    set_role(s, one_arg("role", args)?)
}

fn model(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if args.is_empty() {
        return Ok(format!(
            "model: {}",
            s.model_name().unwrap_or_else(|| "(not set)".into())
        ));
    }
    set_model(s, one_arg("model", args)?)
}

fn stream(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let on = match one_arg("stream", args)?.to_ascii_lowercase().as_str() {
        "on" | "true" => true,
        "off" | "false" => false,
        other => {
            return Err(CoreError::Usage(format!(
                "invalid value '{other}' for /stream: expected on or off"
            )));
        }
    };
    s.lock().stream = on;
    Ok(format!("stream: {}", if on { "on" } else { "off" }))
}

fn show_thinking(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let v: ShowThinking = parse(one_arg("show-thinking", args)?)?;
    s.lock().show_thinking = v;
    Ok(format!("show-thinking: {v}"))
}

fn think(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let v: ThinkingLevel = parse(one_arg("think", args)?)?;
    s.lock().thinking = Some(v);
    Ok(format!("thinking: {v}"))
}

fn curiosity(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let v: Curiosity = parse(one_arg("curiosity", args)?)?;
    s.lock().curiosity = v;
    Ok(format!("curiosity: {v}"))
}

/// `/gc [--dry-run]` (`yuyao gc`): the retention pass now, with what it freed per kind.
fn gc(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let mut dry_run = false;
    for a in args {
        match a.as_str() {
            "--dry-run" | "-n" => dry_run = true,
            "run" => {}
            other => {
                return Err(CoreError::Usage(format!(
                    "unknown /gc argument '{other}'; usage: /gc [--dry-run]"
                )));
            }
        }
    }
    let home = &s.paths.home;
    let _lock = yuyao_store::retention::gc_lock(home, true);
    let limits = yuyao_store::retention::Limits::from_config(&s.config);
    let summary =
        yuyao_store::retention::collect(home, limits, std::time::SystemTime::now(), dry_run);
    let days = match limits.retention_days {
        0 => "no age limit".to_string(),
        d => format!("older than {d} days"),
    };
    let cap = match limits.max_bytes {
        0 => "no size cap".to_string(),
        b => format!("cap {} MB", b / (1024 * 1024)),
    };
    Ok(format!(
        "{summary}
(limits: {days}, {cap})"
    ))
}

fn exit(s: &Session, _: &[String]) -> Result<String, CoreError> {
    s.lock().exit_requested = true;
    Ok("bye".into())
}

fn config(s: &Session, args: &[String]) -> Result<String, CoreError> {
    let fail = |e: yuyao_store::ConfigError| match e {
        yuyao_store::ConfigError::Invalid(m) => CoreError::Usage(m),
        yuyao_store::ConfigError::Io(m) => CoreError::Failed(m),
    };
    match args.first().map(String::as_str) {
        None | Some("list") => {
            let entries = s.config.entries();
            let mut out = format!(
                "configuration (user: {}, project: {})\n",
                s.paths.user_config().display(),
                s.paths.project_config().display()
            );
            if entries.is_empty() {
                out.push_str("  (nothing set)\n");
            }
            for (k, v) in entries {
                out.push_str(&format!("  {k} = {}\n", yuyao_store::config::display(&v)));
            }
            let problems = s.config.problems();
            if !problems.is_empty() {
                out.push_str("problems:\n");
                for p in problems {
                    out.push_str(&format!("  ! {p}\n"));
                }
            }
            out.push_str("known keys:\n");
            for (k, d) in yuyao_store::Config::known_keys() {
                let when = match crate::settings::when_effective(k) {
                    Some(_)
                        if yuyao_store::config::applies(k)
                            == Some(yuyao_store::config::Applies::NextSession) =>
                    {
                        " (next session)"
                    }
                    Some(_) => " (not in this build)",
                    None => "",
                };
                out.push_str(&format!("  {k:<32} {d}{when}\n"));
            }
            Ok(out.trim_end().to_string())
        }
        Some("get") => {
            let key = args
                .get(1)
                .filter(|_| args.len() == 2)
                .ok_or_else(|| usage("config"))?;
            match s.config.get(key) {
                Some(v) => Ok(yuyao_store::config::display(&v)),
                // A typo is said, not answered with an empty line (a known key that is unset
                // prints nothing: its built-in default applies).
                None if yuyao_store::config::applies(key).is_none()
                    && !yuyao_store::config::is_open_key(key) =>
                {
                    Err(CoreError::Usage(format!(
                        "unknown configuration key '{key}' (it is not set, and yuyao does not know it); `/config` lists the known keys"
                    )))
                }
                None => Ok(String::new()),
            }
        }
        Some("set") => {
            let rest: Vec<&String> = args[1..].iter().filter(|a| *a != "--project").collect();
            let project = args.iter().any(|a| a == "--project");
            let [key, value] = rest.as_slice() else {
                return Err(usage("config"));
            };
            let layer = project.then_some(Layer::Project);
            let (stored, warning) = s.config.set(key, value, layer).map_err(fail)?;
            let shown = yuyao_store::config::display(&stored);
            crate::settings::apply_live(s, key, &shown)?;
            // Applied here: the next call's reload must not apply it again over a later switch.
            s.lock().config_seen = crate::context::config_snapshot(&s.config);
            let mut out = format!("{key} = {shown}");
            if let Some(w) = warning {
                out.push_str(&format!(" (warning: {w})"));
            }
            if let Some(n) = crate::settings::when_effective(key) {
                out.push_str(&format!(" ({n})"));
            }
            Ok(out)
        }
        Some("unset") => {
            let key = args
                .get(1)
                .filter(|_| args.len() == 2)
                .ok_or_else(|| usage("config"))?;
            let removed = s.config.unset(key).map_err(fail)?;
            s.lock().config_seen = crate::context::config_snapshot(&s.config);
            Ok(if removed {
                format!("{key} unset")
            } else {
                format!("{key} was not set")
            })
        }
        Some(other) => Err(CoreError::Usage(format!(
            "unknown /config action '{other}': use get, set, unset or list"
        ))),
    }
}

/// `/context [list|detail]`: what the next request weighs, part by part (seed 000
/// behaviour 10), and with `detail` what the request view stubbed or capped.
fn context_command(s: &Session, args: &[String]) -> Result<String, CoreError> {
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
    let system_chars = req
        .messages
        .first()
        .map(crate::context::message_chars)
        .unwrap_or_default();
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
            results_chars += crate::context::message_chars(m);
        } else {
            hist_chars += crate::context::message_chars(m);
        }
    }
    let results_raw: usize = history
        .iter()
        .filter(|m| m.role == MessageRole::Tool)
        .map(crate::context::message_chars)
        .sum();
    let total = system_chars + tools_chars + hist_chars + results_chars;
    let window = s.context_window();
    let threshold = s.compaction_threshold();
    let row = |name: &str, raw: Option<usize>, injected: usize| {
        let raw = raw
            .map(|r| format!("{:>9}", crate::context::tokens(r)))
            .unwrap_or_else(|| format!("{:>9}", "-"));
        format!(
            "  {name:<26} {raw} {:>9} {:>9}\n",
            crate::context::tokens(injected),
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
        crate::context::tokens(total) as f64 * 100.0 / window.max(1) as f64
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
    if crate::context::tokens(total) > budget {
        out.push_str(&format!(
            "  OVER BUDGET: {} tokens > {budget} (compaction runs before the next model call)\n",
            crate::context::tokens(total)
        ));
    } else {
        out.push_str(&format!(
            "  within budget: {} of {budget} tokens before compaction\n",
            crate::context::tokens(total)
        ));
    }
    Ok(out.trim_end().to_string())
}
