//! Slash commands: ONE table shared by the TUI and `dispatch`. A command and its aliases are
//! one entry; in-session switches run the same code as the startup flags they mirror.

use crate::session::{CoreError, Session};
use crate::words::split_words;
use std::str::FromStr;
use yuyao_protocol::{Curiosity, Mode, Role, ThinkingLevel};

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

/// One row of a command table: `cmd!(name, [aliases], usage, help, run)` (feature crates
/// use it too).
#[macro_export]
macro_rules! cmd {
    ($name:literal, [$($a:literal),*], $usage:literal, $help:literal, $run:expr) => {
        $crate::Command {
            name: $name,
            aliases: &[$($a),*],
            usage: $usage,
            help: $help,
            run: $run,
        }
    };
}

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

const COMMANDS: &[Command] = &[cmd!(
    "help",
    [],
    "[command]",
    "list the commands, or show one",
    Some(help)
)];

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
pub fn is_builtin(name: &str) -> bool {
    find(name).is_some()
}

pub(crate) fn usage(name: &str) -> CoreError {
    let c = find(name).expect("usage is only asked for known commands");
    CoreError::Usage(format!("usage: /{} {}", c.name, c.usage))
}

pub(crate) fn one_arg<'a>(name: &str, args: &'a [String]) -> Result<&'a str, CoreError> {
    match args {
        [a] => Ok(a.as_str()),
        _ => Err(usage(name)),
    }
}

pub(crate) fn parse<T: FromStr<Err = String>>(v: &str) -> Result<T, CoreError> {
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

/// The code `--mode` runs too: every front and `/plan` go through here.
pub fn set_mode(s: &Session, v: &str) -> Result<String, CoreError> {
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

pub fn set_role(s: &Session, v: &str) -> Result<String, CoreError> {
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
pub(crate) fn toggle_arg(name: &str, args: &[String]) -> Result<Option<bool>, CoreError> {
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
