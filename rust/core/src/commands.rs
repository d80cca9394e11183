//! Slash commands: ONE table shared by the TUI and `dispatch`. A command and its aliases are
//! one entry; in-session switches run the same code as the startup flags they mirror.

use crate::session::{CoreError, Session};
use crate::words::split_words;
use std::str::FromStr;
use yuyao_protocol::{Curiosity, Mode, Role, ShowThinking, ThinkingLevel};
use yuyao_store::Layer;

pub type Handler = fn(&Session, &[String]) -> Result<String, CoreError>;

/// One command of the table: the kernel's own below, a feature's in its registration
/// (`feature.rs`).
pub struct Command {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub usage: &'static str,
    pub help: &'static str,
    /// `None`: part of the product, not in this build yet (fails explicitly).
    pub run: Option<Handler>,
}

macro_rules! cmd {
    ($name:literal, [$($a:literal),*], $usage:literal, $help:literal, $run:expr) => {
        $crate::commands::Command {
            name: $name,
            aliases: &[$($a),*],
            usage: $usage,
            help: $help,
            run: $run,
        }
    };
}
pub(crate) use cmd;

/// The kernel's commands, then every feature's (registration order), each with the name
/// of what registered it.
pub(crate) fn all_named() -> impl Iterator<Item = (&'static str, &'static Command)> {
    COMMANDS
        .iter()
        .map(|c| ("kernel", c))
        .chain(crate::feature::commands())
}

fn all() -> impl Iterator<Item = &'static Command> {
    all_named().map(|(_, c)| c)
}

const COMMANDS: &[Command] = &[
    cmd!(
        "help",
        [],
        "[command]",
        "list the commands, or show one",
        Some(help)
    ),
    cmd!(
        "status",
        [],
        "",
        "version, model, working directory, mode and role",
        Some(status)
    ),
    cmd!(
        "cost",
        [],
        "",
        "tokens and cost of this session so far",
        Some(cost)
    ),
    cmd!(
        "tools",
        [],
        "",
        "list the tools available to the model",
        Some(tools)
    ),
    cmd!(
        "mode",
        [],
        "<ask|plan|auto-edit|auto-review|yolo>",
        "switch permission mode (= --mode)",
        Some(mode)
    ),
    cmd!(
        "role",
        [],
        "<execute|ask|architect|debug|orchestrator>",
        "switch role (= --role)",
        Some(role)
    ),
    cmd!(
        "ask",
        [],
        "[on|off]",
        "the answer-only role (= --role ask); off returns to the role before",
        Some(|s, a| role_toggle(s, "ask", a))
    ),
    cmd!(
        "debug",
        [],
        "[on|off]",
        "the debugging role (= --role debug); off returns to the role before",
        Some(|s, a| role_toggle(s, "debug", a))
    ),
    cmd!(
        "vim",
        [],
        "[on|off]",
        "vim editing keys in the input (ui.editor_mode); no argument toggles",
        Some(vim)
    ),
    cmd!(
        "model",
        [],
        "<name>",
        "switch model, keeping the context",
        Some(model)
    ),
    cmd!(
        "config",
        ["settings"],
        "[get <key> | set <key> <value> [--project] | unset <key> | list]",
        "read and write configuration (hot reload)",
        Some(config)
    ),
    cmd!(
        "stream",
        [],
        "<on|off>",
        "toggle streaming output (= --stream)",
        Some(stream)
    ),
    cmd!(
        "show-thinking",
        [],
        "<off|collapsed|expanded>",
        "how thinking is displayed (= --show-thinking)",
        Some(show_thinking)
    ),
    cmd!(
        "think",
        [],
        "<off|low|medium|high|max>",
        "reasoning budget (= --thinking)",
        Some(think)
    ),
    cmd!(
        "curiosity",
        [],
        "<low|normal|high>",
        "how readily the agent asks (= --curiosity)",
        Some(curiosity)
    ),
    cmd!(
        "exit",
        ["quit"],
        "",
        "leave the session (exit code 0)",
        Some(exit)
    ),
    cmd!(
        "copy",
        [],
        "[N]",
        "copy an answer to the clipboard",
        Some(ui_only)
    ),
    cmd!("focus", [], "", "toggle the focused view", Some(ui_only)),
    cmd!(
        "tui",
        [],
        "<default|fullscreen>",
        "switch the terminal renderer",
        Some(tui)
    ),
    cmd!(
        "context",
        [],
        "<list|detail>",
        "context sizes and truncation",
        Some(crate::context::context_command)
    ),
    cmd!(
        "gc",
        [],
        "[--dry-run]",
        "free ended sessions' spill files, job logs, snapshots (storage.*)",
        Some(gc)
    ),
    cmd!(
        "compact",
        ["compress"],
        "[focus]",
        "summarize the context",
        Some(crate::compact::compact_command)
    ),
    cmd!(
        "recap",
        [],
        "",
        "one-line summary of where we left off",
        Some(crate::compact::recap_command)
    ),
];

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

fn find(name: &str) -> Option<&'static Command> {
    all().find(|c| c.name == name || c.aliases.contains(&name))
}

impl Session {
    /// Runs one slash command line (`/name args…`).
    pub fn dispatch(&self, line: &str) -> Result<String, CoreError> {
        let line = line.trim();
        let Some(body) = line.strip_prefix('/') else {
            return Err(CoreError::Usage(format!(
                "'{line}' is not a slash command (they start with '/')"
            )));
        };
        let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let name = name.to_ascii_lowercase();
        let Some(cmd) = find(&name) else {
            // Not in the table: a feature may run it (a skill's `/flow:<name>`, a custom
            // command read from disk now).
            if let Some(result) =
                crate::feature::hooks(|f| f.other_command).find_map(|run| run(self, &name, rest))
            {
                return result;
            }
            return Err(CoreError::Usage(format!(
                "unknown command: /{name} (type /help for the list)"
            )));
        };
        let args = split_words(rest).map_err(|e| CoreError::Usage(format!("/{name}: {e}")))?;
        let Some(run) = cmd.run else {
            return Err(CoreError::NotAvailable(format!(
                "/{} is not available in this build",
                cmd.name
            )));
        };
        // Every command honours its arguments: one that takes none says so.
        if cmd.usage.is_empty() && !args.is_empty() {
            return Err(CoreError::Usage(format!(
                "/{} takes no arguments (got '{}')",
                cmd.name,
                args.join(" ")
            )));
        }
        if let Some(answer) = self.dispatch_while_busy(cmd.name, line, &args) {
            return answer;
        }
        let result = run(self, &args);
        self.lock().trajectory.record(
            "command",
            serde_json::json!({"command": line, "ok": result.is_ok(),
                               "result": match &result { Ok(t) => t.clone(), Err(e) => e.to_string() }}),
        );
        result
    }

    /// The command table for the fronts: name, aliases, usage, help, group (the `/help`
    /// heading), the feature that registered it (`kernel` for the kernel's own), whether it is in this build and what it does while a turn runs.
    pub fn command_table() -> serde_json::Value {
        all_named()
            .map(|(feature, c)| {
                serde_json::json!({
                    "name": c.name,
                    "feature": feature,
                    "aliases": c.aliases,
                    "usage": c.usage,
                    "help": c.help,
                    "group": group_title(c.name),
                    "available": c.run.is_some(),
                })
            })
            .collect()
    }

    /// Names of every command and alias (for completion in the TUI).
    pub fn command_names() -> Vec<&'static str> {
        all()
            .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
            .collect()
    }
}

/// A built-in command or alias of that name (a custom command never shadows one).
pub(crate) fn is_builtin(name: &str) -> bool {
    find(name).is_some()
}

fn usage(name: &str) -> CoreError {
    let c = find(name).expect("usage is only asked for known commands");
    CoreError::Usage(format!("usage: /{} {}", c.name, c.usage))
}

fn one_arg<'a>(name: &str, args: &'a [String]) -> Result<&'a str, CoreError> {
    match args {
        [a] => Ok(a.as_str()),
        _ => Err(usage(name)),
    }
}

fn parse<T: FromStr<Err = String>>(v: &str) -> Result<T, CoreError> {
    v.parse().map_err(CoreError::Usage)
}

/// The `/help` groups, in the order they are listed.
const GROUPS: &[&str] = &[
    "Session",
    "Mode and role",
    "Files and changes",
    "Context and memory",
    "Configuration and permissions",
    "Display",
    "Tasks and agents",
];

fn group_title(name: &str) -> &'static str {
    let i = match name {
        "help" | "status" | "cost" | "exit" | "new" | "clear" | "sessions" | "title" | "export"
        | "branch" | "tree" | "recap" | "usage" | "background" | "gc" => 0,
        "mode" | "role" | "plan" | "ask" | "debug" | "model" | "think" | "curiosity" => 1,
        "undo" | "redo" | "rewind" | "diff" | "add-dir" | "cd" | "review" | "security-review"
        | "run" | "verify" => 2,
        "compact" | "context" | "memory" | "remember" | "forget" | "dream" | "init" => 3,
        "config" | "permissions" | "trust" | "sandbox" | "mcp" | "hooks" | "features" | "tools"
        | "agents" | "skills" => 4,
        "stream" | "show-thinking" | "copy" | "focus" | "tui" | "vim" => 5,
        _ => 6,
    };
    GROUPS[i]
}

fn names_of(c: &Command) -> String {
    std::iter::once(c.name)
        .chain(c.aliases.iter().copied())
        .map(|n| format!("/{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn help(s: &Session, args: &[String]) -> Result<String, CoreError> {
    if let [name] = args {
        let name = name.trim_start_matches('/').to_ascii_lowercase();
        if find(&name).is_none()
            && let Some(text) = crate::feature::hooks(|f| f.help).find_map(|h| h(s, Some(&name)))
        {
            return Ok(text);
        }
        let c = find(&name).ok_or_else(|| {
            CoreError::Usage(format!(
                "unknown command: /{name} (type /help for the list)"
            ))
        })?;
        let busy = match crate::busy::while_busy(c.name, &[]) {
            crate::busy::WhileBusy::Now => "runs at once",
            crate::busy::WhileBusy::AfterTurn => "applies after the turn",
            crate::busy::WhileBusy::Refused => "waits for the turn to end",
        };
        return Ok(format!(
            "/{} {}\n  {}{}\n  names: {}\n  group: {}\n  typed while a turn runs: {busy}",
            c.name,
            c.usage,
            c.help,
            if c.run.is_none() {
                " [not in this build]"
            } else {
                ""
            },
            names_of(c),
            group_title(c.name),
        ));
    }
    if args.len() > 1 {
        return Err(usage("help"));
    }
    // Rows fit 80 columns: a long name-and-usage puts its description on the next line.
    let mut out = String::from("Commands (/help <command> for one):\n");
    for g in GROUPS {
        out.push_str(&format!("{g}\n"));
        for c in all().filter(|c| group_title(c.name) == *g) {
            let head = if c.usage.is_empty() {
                names_of(c)
            } else {
                format!("{} {}", names_of(c), c.usage)
            };
            let avail = if c.run.is_none() {
                "  [not in this build]"
            } else {
                ""
            };
            if head.chars().count() > 30 {
                out.push_str(&format!("  {head}\n  {:<30} {}{avail}\n", "", c.help));
            } else {
                out.push_str(&format!("  {head:<30} {}{avail}\n", c.help));
            }
        }
    }
    for section in crate::feature::hooks(|f| f.help).filter_map(|h| h(s, None)) {
        out.push_str(&section);
    }
    out.push_str("Prefixes: /command, @path (reference a file), !command (run a shell command)");
    Ok(out)
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

/// The code `--mode` runs too: every front and `/plan` go through here.
pub(crate) fn set_mode(s: &Session, v: &str) -> Result<String, CoreError> {
    let m: Mode = parse(v)?;
    let mut st = s.lock();
    if st.policy.mode != m {
        st.log_entry("mode", serde_json::json!({"value": m}));
        if m == Mode::Plan {
            st.mode_before_plan = Some(st.policy.mode);
        }
    }
    st.policy.mode = m;
    Ok(format!("mode: {m}"))
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

pub(crate) fn set_role(s: &Session, v: &str) -> Result<String, CoreError> {
    let r: Role = parse(v)?;
    let mut st = s.lock();
    if st.policy.role != r {
        st.log_entry("role", serde_json::json!({"value": r}));
        if matches!(r, Role::Ask | Role::Debug) {
            st.role_before = Some(st.policy.role);
        }
    }
    st.policy.role = r;
    Ok(format!("role: {r}"))
}

/// `[on|off]` of a toggle command: `None` when no argument was given.
fn toggle_arg(name: &str, args: &[String]) -> Result<Option<bool>, CoreError> {
    match args {
        [] => Ok(None),
        [a] => match a.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" => Ok(Some(true)),
            "off" | "false" | "no" => Ok(Some(false)),
            _ => Err(CoreError::Usage(format!(
                "invalid argument '{a}' for /{name}: expected on or off"
            ))),
        },
        _ => Err(usage(name)),
    }
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

/// The arguments of a switch typed during a turn, checked before it is queued (the same
/// parsers its handler uses), so a typo is said at once rather than after the turn.
pub(crate) fn check_args(name: &str, args: &[String]) -> Result<(), CoreError> {
    let one = |args: &[String]| one_arg(name, args).map(str::to_string);
    match name {
        "mode" => parse::<Mode>(&one(args)?).map(drop),
        "role" => parse::<Role>(&one(args)?).map(drop),
        "think" => parse::<ThinkingLevel>(&one(args)?).map(drop),
        "curiosity" => parse::<Curiosity>(&one(args)?).map(drop),
        "model" => one(args).map(drop),
        // `/plan <goal>` would start a turn: typed during one, it is dropped (said at once).
        "plan" => toggle_arg(name, args).map(drop).map_err(|_| {
            CoreError::Usage(
                "/plan with a goal cannot start while a turn is running, so it was dropped (expected on or off)".into(),
            )
        }),
        "ask" | "debug" | "vim" => toggle_arg(name, args).map(drop),
        "stream" => match one(args)?.to_ascii_lowercase().as_str() {
            "on" | "off" | "true" | "false" => Ok(()),
            other => Err(CoreError::Usage(format!(
                "invalid value '{other}' for /stream: expected on or off"
            ))),
        },
        "config" => match args.first().map(String::as_str) {
            Some("set") if args.len() >= 3 => Ok(()),
            Some("unset") if args.len() == 2 => Ok(()),
            _ => Err(usage(name)),
        },
        _ => Ok(()),
    }
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

/// `/model <name>` and `model.name`: the next call uses `name`; the conversation is kept.
pub(crate) fn set_model(s: &Session, name: &str) -> Result<String, CoreError> {
    let switch = s.model_name().is_some_and(|m| m != name);
    let mut st = s.lock();
    st.log_entry(
        "model",
        serde_json::json!({"value": name, "switch": switch}),
    );
    if switch {
        st.sync_log();
        yuyao_store::sessions::reasoning_to_text(st.history.rewrite());
    }
    st.model_override = Some(name.to_string());
    Ok(format!("model: {name} (the conversation is kept)"))
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
