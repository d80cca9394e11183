//! Options a front passes when it opens a session. Every field is optional: what a front
//! leaves out comes from the layered configuration, then from the defaults.

use crate::{Curiosity, Mode, NetworkAccess, Role, SandboxLevel, ShowThinking, ThinkingLevel};
use serde::{Deserialize, Serialize};

/// How to reach the model. Absent fields fall back to `D2A_MODEL_*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSettings {
    pub base_url: Option<String>,
    pub name: Option<String>,
    pub api_key: Option<String>,
    /// Raw `D2A_MODEL_COST` JSON.
    pub cost: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionOptions {
    pub cwd: Option<String>,
    pub mode: Option<Mode>,
    pub role: Option<Role>,
    pub sandbox: Option<SandboxLevel>,
    pub network: Option<NetworkAccess>,
    /// `--allow` / `--allowed-tools` rules: run without asking.
    pub allow: Vec<String>,
    /// `--deny` / `--disallowed-tools` rules: refused.
    pub deny: Vec<String>,
    /// `--team-name` (with `--role orchestrator`): the lead's team.
    pub team_name: Option<String>,
    /// `--tools`: restrict the advertised tool set.
    pub tools: Option<Vec<String>>,
    pub model: ModelSettings,
    pub stream: Option<bool>,
    pub show_thinking: Option<ShowThinking>,
    pub thinking: Option<ThinkingLevel>,
    pub curiosity: Option<Curiosity>,
    pub max_steps: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_seconds: Option<f64>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub no_memory: bool,
    /// `--experimental-lsp`: the `lsp` tool and diagnostics after edits (also `lsp.enabled`).
    pub experimental_lsp: bool,
    /// `--map-tokens n`: the repo map's budget (default 1024; 0: no map).
    pub map_tokens: Option<u32>,
    /// Where project memory is written instead of the project (the headless contract:
    /// `<out-dir>/memory`, so `--repo-dir` is never written).
    pub memory_dir: Option<String>,
    /// Nobody is there to answer a question: refuse what would need one.
    pub headless: bool,
    /// Where the run's trace goes (default `<cwd>/.trajectory/`).
    pub trajectory_dir: Option<String>,
    /// Do not write a trace at all (agent_api sessions opt in through config).
    pub no_trajectory: bool,
    pub verbose: bool,
    /// Override of `~/.yuyao` (otherwise `YUYAO_HOME`, then `$HOME/.yuyao`).
    pub home: Option<String>,
    /// `-c/--continue`: resume the most recent session of this working directory.
    #[serde(rename = "continue")]
    pub continue_last: bool,
    /// `--resume <id>`: resume that session (an id or a unique prefix).
    pub resume: Option<String>,
    /// `--fork-session`: the resumed session gets a new id; the original file is untouched.
    pub fork_session: bool,
    /// Do not record this session under `~/.yuyao/sessions/` (one-shot sub-commands).
    pub no_session: bool,
    /// Project trust for this session: `Some(true)` trusts the project (`--trust-project`),
    /// `Some(false)` never does (the headless contract), `None` follows the user's persisted
    /// decision. Untrusted projects' widening settings are ignored.
    #[serde(default)]
    pub trust_project: Option<bool>,
    /// Set on sessions a session opens for itself (sub-agents, teammates, background
    /// workers): their `trust_project` is inherited, not the user's gesture, so it approves
    /// no project file's content (DESIGN §8: only the user approves).
    #[serde(default)]
    pub inherited_trust: bool,
    /// The project root, decided once by the top-level session and handed down: a sub-agent
    /// whose cwd holds a `.git` made during the session is still in the parent's project.
    #[serde(default)]
    pub project_dir: Option<String>,
    /// Project-provided executables (project hooks, `!{cmd}` of project commands, `.mcp.json` servers): `Some(true)`
    /// runs them (`-p`, agent_api: the caller chose the directory), `Some(false)` never
    /// (run_agent.sh), `None` once the project is trusted (the TUI).
    pub project_extensions: Option<bool>,
    /// `--no-project-extensions`: never run them, whatever the above says.
    pub no_project_extensions: bool,
    /// `--json-schema <file>`: the final answer is a JSON document valid against it.
    pub json_schema: Option<String>,
    /// `--auto-commit`: one git commit per batch of the agent's file changes (else
    /// `git.auto_commit`).
    pub auto_commit: Option<bool>,
    /// `--auto-test`: run the tests after each edit batch and iterate until they pass.
    pub auto_test: bool,
    /// `--test-cmd <cmd>`: the test command (overrides detection and `verification.command`).
    pub test_cmd: Option<String>,
}
