//! yuyao-memory — persistent memory in a session (spec 002 §6), a feature registered with
//! the core's kernel (removing it is deleting this crate and its registration line): what is loaded into the system prompt at
//! session start, how hand edits reach the model (an appended "memory changed" note, never a
//! rewrite of the prompt, so the cached prefix stays stable), and the writing surfaces.
//! The file format and layout live in `yuyao_store::memory`.

#[allow(unused_imports)]
use crate::session_ext::*;

pub(crate) mod backend;
mod bootstrap;
pub(crate) mod commands;
pub(crate) mod detect;
pub(crate) mod flush;
pub(crate) mod init;
pub(crate) mod maintain;
pub(crate) mod search;
pub(crate) mod tools;
pub(crate) mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;
use yuyao_core::Session;
use yuyao_store::memory::{Layout, format};

pub use bootstrap::DEFAULT_BOOTSTRAP_CHARS;

/// The memory of one session.
pub(crate) struct Memory {
    pub enabled: bool,
    pub layout: Layout,
    budget: usize,
    state: Mutex<Loaded>,
    /// Held while a memory file is rewritten: by a write of the session (`write.rs`) and by a
    /// dream while it applies its plan, so a background dream and a turn's writes never
    /// interleave. Never held across a model call (a turn holding the runtime may write).
    files: Mutex<()>,
    /// Held for a dream's whole run: two dreams (periodic, session end) never overlap.
    dreaming: Mutex<()>,
    /// The memory service's side of the session (`backend.rs`).
    pub(crate) service: backend::ServiceState,
    /// The session's end dream ran (or a periodic one stands for it): once per session.
    pub(crate) dreamed: std::sync::atomic::AtomicBool,
}

#[derive(Default)]
struct Loaded {
    /// The memory section of the system prompt, fixed at session start.
    section: String,
    /// Per injected file: raw and injected sizes, and what the budget cut.
    report: Vec<bootstrap::FileReport>,
    /// Per watched file: modification time and length when last read, and its entries' texts.
    seen: BTreeMap<PathBuf, (Option<SystemTime>, u64, Vec<String>)>,
    /// Preference rules compiled from the MEMORY.md files (re-read on change).
    rules: Vec<yuyao_extension_files::preference_rules::Rule>,
}

impl Memory {
    pub fn disabled(layout: Layout) -> Self {
        Memory {
            enabled: false,
            layout,
            budget: 0,
            state: Mutex::new(Loaded::default()),
            files: Mutex::new(()),
            dreaming: Mutex::new(()),
            service: Default::default(),

            dreamed: Default::default(),
        }
    }

    /// Loads the memory files at session start: the prompt section within `budget`
    /// characters, the watched files' state, the compiled rules.
    pub fn open(layout: Layout, budget: usize) -> Self {
        let m = Memory {
            enabled: true,
            layout,
            budget,
            state: Mutex::new(Loaded::default()),
            files: Mutex::new(()),
            dreaming: Mutex::new(()),
            service: Default::default(),

            dreamed: Default::default(),
        };
        m.reload();
        m
    }

    /// Loads the files again into a new prompt section: for a new conversation (`/new`,
    /// `/clear`), whose prefix is new anyway.
    pub fn reload(&self) {
        self.service.forget_boot();
        if !self.enabled {
            return;
        }
        let boot = bootstrap::load(&self.layout, self.budget, &today(), &yesterday());
        let mut loaded = Loaded {
            section: boot.section,
            report: boot.report,
            ..Default::default()
        };
        for p in self.watched() {
            loaded.seen.insert(p.clone(), observe(&p));
        }
        loaded.rules = yuyao_extension_files::preference_rules::compile_files(&self.layout);
        *self.lock() = loaded;
    }

    pub(crate) fn files_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn dream_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.dreaming.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bootstrap budget in characters (`memory.bootstrap_chars`).
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// The memory section of the system prompt ("" when memory is off).
    pub fn section(&self) -> String {
        self.lock().section.clone()
    }

    /// The preference rules of the memory files, then those of the memory service's entries.
    pub fn rules(&self) -> Vec<yuyao_extension_files::preference_rules::Rule> {
        let mut r = self.lock().rules.clone();
        r.extend(self.service.rules());
        r
    }

    pub fn report(&self) -> Vec<bootstrap::FileReport> {
        self.lock().report.clone()
    }

    /// The files whose edits reach the model: both MEMORY.md files (and the headless write
    /// root's), today's and yesterday's daily notes.
    fn watched(&self) -> Vec<PathBuf> {
        let l = &self.layout;
        let mut v = vec![
            l.target(yuyao_store::memory::Scope::Global),
            l.project.join("MEMORY.md"),
        ];
        for day in [yesterday(), today()] {
            v.push(l.project.join("memory").join(format!("{day}.md")));
        }
        if l.write != l.project {
            v.push(l.write.join("MEMORY.md"));
            for day in [yesterday(), today()] {
                v.push(l.daily_target(&day));
            }
        }
        v
    }

    /// Re-reads the watched files whose modification time or length changed since they were
    /// last seen and returns one note per change for the model ("memory changed: …"). The
    /// rules are recompiled when any changed.
    pub fn refresh(&self) -> Vec<String> {
        if !self.enabled {
            return Vec::new();
        }
        let mut notes = Vec::new();
        let mut st = self.lock();
        for p in self.watched() {
            let (mtime, len, _) = observe_stat(&p);
            let known = st.seen.get(&p);
            if known.is_some_and(|(m, l, _)| *m == mtime && *l == len) {
                continue;
            }
            let now = observe(&p);
            let before = known.map(|k| k.2.clone()).unwrap_or_default();
            let added: Vec<&String> = now.2.iter().filter(|t| !before.contains(t)).collect();
            let removed: Vec<&String> = before.iter().filter(|t| !now.2.contains(t)).collect();
            if !added.is_empty() || !removed.is_empty() {
                let mut note = format!("memory changed: {} was edited.", p.display());
                for a in added {
                    note.push_str(&format!("\n+ {a}"));
                }
                for r in removed {
                    note.push_str(&format!("\n- (removed) {r}"));
                }
                note.push_str("\nFollow the memory as it reads now.");
                notes.push(note);
            }
            st.seen.insert(p, now);
        }
        if !notes.is_empty() {
            st.rules = yuyao_extension_files::preference_rules::compile_files(&self.layout);
        }
        notes
    }
}

fn observe_stat(p: &std::path::Path) -> (Option<SystemTime>, u64, ()) {
    match std::fs::metadata(p) {
        Ok(m) => (m.modified().ok(), m.len(), ()),
        Err(_) => (None, 0, ()),
    }
}

fn observe(p: &std::path::Path) -> (Option<SystemTime>, u64, Vec<String>) {
    let (m, l, _) = observe_stat(p);
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let entries = format::parse(&text).into_iter().map(|e| e.text).collect();
    (m, l, entries)
}

/// Today's date (`YYYY-MM-DD`, local time): the daily note being written.
pub fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

fn yesterday() -> String {
    (chrono::Local::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string()
}

/// The session's memory (a crate outside the core extends `Session` through a trait).
pub(crate) trait MemoryExt {
    /// The session's memory: its files, the prompt section, the switches.
    fn memory(&self) -> &Memory;
}

impl MemoryExt for yuyao_core::Session {
    fn memory(&self) -> &Memory {
        self.part()
    }
}

/// The session methods this crate adds; every module imports them.
#[allow(unused_imports)]
pub(crate) mod session_ext {
    pub(crate) use crate::MemoryExt;
    pub(crate) use crate::maintain::MaintainExt;
}

/// The memory of a session being opened: off with `--no-memory` or `memory.enabled = false`;
/// a headless run writes into `memory_dir`; the prompt section is cut to
/// `memory.bootstrap_chars`.
pub(crate) fn open(
    opts: &yuyao_protocol::SessionOptions,
    paths: &yuyao_store::Paths,
    config: &yuyao_store::Config,
) -> Memory {
    let write = opts.memory_dir.as_deref().map(std::path::Path::new);
    let layout = Layout::new(&paths.home, &paths.project, write);
    let enabled =
        !opts.no_memory && config.get("memory.enabled").and_then(|v| v.as_bool()) != Some(false);
    if !enabled {
        return Memory::disabled(layout);
    }
    let budget = config
        .get("memory.bootstrap_chars")
        .and_then(|v| v.as_integer())
        .filter(|n| *n >= 0)
        .map_or(DEFAULT_BOOTSTRAP_CHARS, |n| n as usize);
    Memory::open(layout, budget)
}

static TOOLS: yuyao_core::FeatureTools = yuyao_core::FeatureTools {
    // Memory tools read only memory files, which are the user's own notes.
    specs: &[
        yuyao_core::registry::core(search::NAME, true, |s, name, call, _| {
            (
                yuyao_core::registry::one(search::run_tool(s, name, &call.arguments)),
                false,
            )
        }),
        yuyao_core::registry::core("memory-get", true, |s, name, call, _| {
            (
                yuyao_core::registry::one(tools::run(s.memory(), name, &call.arguments)),
                false,
            )
        }),
    ],
    summaries: &[],
    names: |s| {
        if s.memory().enabled {
            tools::NAMES.to_vec()
        } else {
            Vec::new()
        }
    },
    schemas: |_, ok| {
        tools::schemas()
            .into_iter()
            .filter(|s| ok(s["function"]["name"].as_str().unwrap_or("")))
            .collect()
    },
    beside: None,
};

/// The memory files' entries, for `ask-user`'s look for an earlier answer.
fn remembered(s: &Session) -> Vec<(String, Vec<String>)> {
    if !s.memory().enabled {
        return Vec::new();
    }
    s.memory()
        .layout
        .files()
        .into_iter()
        .filter(|f| f.kind == yuyao_store::memory::Kind::Memory)
        .filter_map(|f| {
            let text = std::fs::read_to_string(&f.path).ok()?;
            let lines = format::parse(&text).into_iter().map(|e| e.text).collect();
            Some((format!("memory ({})", f.path.display()), lines))
        })
        .collect()
}

/// Memory's section of the system prompt in `/context`: each file's size on disk and in the
/// prompt, and what the budget left out.
fn context_part(s: &Session, replaced: bool) -> yuyao_core::ContextPart {
    let m = s.memory();
    let report = if replaced { Vec::new() } else { m.report() };
    let in_prompt = if replaced {
        0
    } else {
        m.section().chars().count()
    };
    let raw = report.iter().map(|r| r.raw_chars).sum::<usize>()
        + in_prompt.saturating_sub(report.iter().map(|r| r.injected_chars).sum());
    let home = &s.paths().home;
    let rows = report
        .iter()
        .map(|r| {
            let name = r
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let label = if r.path.starts_with(home) {
                format!("  global {name}")
            } else {
                format!("  {name}")
            };
            (label, r.raw_chars, r.injected_chars)
        })
        .collect();
    let mut detail = Vec::new();
    if !m.enabled {
        detail
            .push("  memory: off in this session (--no-memory or memory.enabled = false)\n".into());
    } else if report.is_empty() {
        detail.push("  memory: no memory file to load (/remember writes one)\n".into());
    }
    for r in &report {
        if r.cut.is_empty() {
            detail.push(format!(
                "  memory: {} loaded whole ({} characters)\n",
                r.path.display(),
                r.raw_chars
            ));
        } else {
            detail.push(format!(
                "  memory: {} cut to memory.bootstrap_chars ({} of {} characters injected); left out:\n",
                r.path.display(),
                r.injected_chars,
                r.raw_chars
            ));
            for c in &r.cut {
                detail.push(format!("    {c}\n"));
            }
        }
    }
    yuyao_core::ContextPart {
        name: "memory",
        in_prompt,
        raw,
        rows,
        detail,
    }
}

/// The features of this crate, in registration order (one, memory).
pub static FEATURES: &[&yuyao_core::Feature] = &[&FEATURE];

/// What this feature adds to a session (feature.rs).
pub static FEATURE: yuyao_core::Feature = yuyao_core::Feature {
    name: "memory",
    state: Some(|o| Box::new(open(o.opts, o.paths, o.config))),
    // The memory service's failure to start is said once, as the fallback to the files.
    server_failed: Some(backend::server_failed),
    // Periodic dreaming between turns, once the session is shared with a front.
    shared: Some(maintain::MaintainExt::start_maintenance),
    // A memory file edited since it was last read reaches the model as a note.
    reload_notes: Some(|s| s.memory().refresh()),
    // A new conversation starts from the memory as it reads now.
    new_conversation: Some(|s| s.memory().reload()),
    remembered: Some(remembered),
    context_part: Some(context_part),
    rules: Some(|s| s.memory().rules()),
    system_section: Some(backend::section),
    before_compact: Some(|s, client, older, token, max_tokens| {
        Box::pin(flush::run(s, client, older, token, max_tokens))
    }),
    // A preference the user states is kept; a sub-agent's prompt is the model's: no
    // preference of the user's to keep.
    submitted: Some(|s, text| {
        if !s.is_sub_agent() {
            commands::on_submit(s, text);
        }
        None
    }),
    // Dreaming at the end of a session, once (seed 002, memory).
    // A sub-agent's end is not the user's session end: nothing to dream about.
    close: Some(|s| {
        if !s.is_sub_agent()
            && !s
                .memory()
                .dreamed
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            crate::search::dream_at_end(s);
        }
    }),
    commands: &[
        yuyao_core::cmd!(
            "init",
            [],
            "",
            "write AGENTS.md from the repository",
            Some(crate::init::init)
        ),
        yuyao_core::cmd!(
            "memory",
            [],
            "[list|edit|delete|open|path|status|search|index|rem-backfill]",
            "memory entries and the search index",
            Some(crate::commands::memory)
        ),
        yuyao_core::cmd!(
            "remember",
            [],
            "[--global] <text>",
            "keep a memory entry (--global: for every project)",
            Some(crate::commands::remember)
        ),
        yuyao_core::cmd!(
            "forget",
            [],
            "<words or id>",
            "remove the matching memory entry",
            Some(crate::commands::forget)
        ),
        yuyao_core::cmd!(
            "dream",
            [],
            "",
            "promote recalled notes to MEMORY.md, drop stale ones, journal",
            Some(crate::search::dream_command)
        ),
    ],
    tools: Some(&TOOLS),
    ..yuyao_core::Feature::NONE
};
