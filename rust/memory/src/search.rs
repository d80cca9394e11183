//! memory-search in a session: the tool, `yuyao memory status|search|index|rem-backfill`
//! (through `/memory`), `/dream` and dreaming at session end. The engine is the
//! `yuyao-memsearch` crate; this module only reads the session's settings into it.

#[allow(unused_imports)]
use crate::session_ext::*;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use yuyao_core::{CoreError, Session};
use yuyao_memsearch::{Gateway, MemorySearch, Provider, backfill, dream, format_hits};
use yuyao_model::build_request;
use yuyao_protocol::{Event, Message};
use yuyao_tools::ToolOutput;

pub(crate) const NAME: &str = "memory-search";

/// The embedding model asked for when `memorySearch.provider` is `gateway` and
/// `memorySearch.model` is not set.
const DEFAULT_GATEWAY_MODEL: &str = "text-embedding-3-small";

pub(crate) fn schema() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": NAME,
            "description": "Search the persistent memory (MEMORY.md files, daily notes, DREAMS.md) by meaning and by words: finds notes phrased differently from the query. Each hit gives file, line range, score and text; read more with memory-get.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for, in any words"},
                    "k": {"type": "integer", "description": "number of hits (default 5, at most 50)"}
                },
                "required": ["query"],
                "additionalProperties": false
            }
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    #[serde(alias = "q", alias = "text")]
    query: String,
    #[serde(default, alias = "limit", alias = "top_k")]
    k: Option<Value>,
}

/// `memorySearch.provider` as configured now (read at every use): `local` (default),
/// `gateway` (the session's endpoint, `memorySearch.model`), `bm25`.
pub(crate) fn provider(s: &Session) -> Result<Provider, String> {
    let name = s
        .config()
        .get("memorySearch.provider")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "local".into());
    Ok(match name.as_str() {
        "local" => Provider::Local,
        "bm25" => Provider::Bm25,
        "gateway" => {
            let base_url = s
                .model_base_url()
                .ok_or("memorySearch.provider is gateway, but no endpoint is configured (D2A_MODEL_BASE_URL)")?;
            let api_key = s.model_key();
            let model = s
                .config()
                .get("memorySearch.model")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| DEFAULT_GATEWAY_MODEL.into());
            Provider::Gateway(Gateway {
                base_url,
                api_key,
                model,
            })
        }
        other => {
            return Err(format!(
                "memorySearch.provider is {other:?}: expected local, gateway or bm25"
            ));
        }
    })
}

fn engine(s: &Session) -> Result<MemorySearch, String> {
    Ok(MemorySearch::new(
        s.memory().layout.clone(),
        &s.paths().home,
        provider(s)?,
    ))
}

/// Runs the memory-search tool; `None` when `name` is another tool.
pub(crate) fn run_tool(s: &Session, name: &str, raw: &str) -> Option<ToolOutput> {
    if name != NAME {
        return None;
    }
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    let args = match serde_json::from_str::<SearchArgs>(raw) {
        Ok(a) => a,
        Err(e) => {
            return Some(ToolOutput::err(format!(
                "invalid arguments for memory-search: {e}. Send {{\"query\": \"which package manager do we use\", \"k\": 5}}."
            )));
        }
    };
    let k = match args.k.as_ref().map(lenient_k) {
        None => yuyao_memsearch::DEFAULT_K,
        Some(Ok(k)) => k,
        Some(Err(e)) => return Some(ToolOutput::err(e)),
    };
    if args.query.trim().is_empty() {
        return Some(ToolOutput::err("memory-search needs a non-empty query"));
    }
    let files = engine(s).and_then(|ms| {
        let hits = ms.search(&args.query, k)?;
        ms.record_recall(&args.query, &hits);
        Ok(format_hits(&hits, &ms.project, &ms.home))
    });
    let out = with_service(s, &args.query, k, files);
    Some(match out {
        Ok(text) => ToolOutput::ok(text),
        Err(e) => ToolOutput::err(format!("memory-search failed: {e}")),
    })
}

/// On a memory service (`backend.rs`): its hits first, then the memory files' (hand-written
/// `MEMORY.md` lines stay searchable); the files' failure alone is no failure then.
fn with_service(
    s: &Session,
    query: &str,
    k: usize,
    files: Result<String, String>,
) -> Result<String, String> {
    let Some((server, hits)) = super::backend::search(s, query, k) else {
        return files;
    };
    let mut out = format!("memory service '{server}':\n{}", hits.trim());
    if let Ok(f) = files
        && !f.trim().is_empty()
    {
        out.push_str(&format!("\n\nmemory files:\n{}", f.trim()));
    }
    Ok(out)
}

fn lenient_k(v: &Value) -> Result<usize, String> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(t) => t.trim().parse::<f64>().ok(),
        Value::Null => return Ok(yuyao_memsearch::DEFAULT_K),
        _ => None,
    };
    match n {
        Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok((n as usize).min(yuyao_memsearch::MAX_K)),
        _ => Err(format!(
            "memory-search: k must be a whole number from 1 to {}, got {v}",
            yuyao_memsearch::MAX_K
        )),
    }
}

/// `/memory status|search|index|rem-backfill` (also `yuyao memory …`); `None` for the other
/// `/memory` actions.
pub(crate) fn memory_action(s: &Session, args: &[String]) -> Option<Result<String, CoreError>> {
    let action = args.first()?.as_str();
    let rest = &args[1..];
    let failed = |e: String| CoreError::Failed(e);
    Some(match action {
        "status" => engine(s)
            .map_err(failed)
            .map(|ms| format!("{}\n{}", super::backend::status_line(s), status(&ms))),
        "search" => {
            const USAGE: &str =
                "usage: /memory search [--ranking hybrid|bm25|embeddings|encoder] <query>";
            // `--ranking` shows one component of the hybrid alone (seed 002 §6.4: the
            // provider trades off search quality; this shows where a hit came from).
            // The flag may come anywhere among the words (`yuyao memory search <query>
            // --ranking bm25` puts it last).
            let (ranking, rest) = match rest.iter().position(|w| w == "--ranking") {
                Some(i) => {
                    let Some(r) = rest
                        .get(i + 1)
                        .and_then(|v| yuyao_memsearch::Ranking::parse(v))
                    else {
                        return Some(Err(CoreError::Usage(USAGE.into())));
                    };
                    let words: Vec<String> =
                        rest[..i].iter().chain(&rest[i + 2..]).cloned().collect();
                    (r, words)
                }
                None => (yuyao_memsearch::Ranking::Hybrid, rest.to_vec()),
            };
            let q = rest.join(" ");
            if q.trim().is_empty() {
                return Some(Err(CoreError::Usage(USAGE.into())));
            }
            let with_service_too = ranking == yuyao_memsearch::Ranking::Hybrid;
            let files = engine(s).and_then(|ms| {
                let hits = ms.search_with(&q, yuyao_memsearch::DEFAULT_K, ranking)?;
                Ok(format_hits(&hits, &ms.project, &ms.home))
            });
            if with_service_too {
                with_service(s, &q, yuyao_memsearch::DEFAULT_K, files).map_err(failed)
            } else {
                files.map_err(failed)
            }
        }
        "index" => {
            let force = match rest {
                [] => false,
                [f] if f == "--force" => true,
                _ => {
                    return Some(Err(CoreError::Usage(
                        "usage: /memory index [--force]".into(),
                    )));
                }
            };
            index(s, force)
        }
        "rem-backfill" => {
            let rollback = match rest {
                [] => false,
                [f] if f == "--rollback" => true,
                _ => {
                    return Some(Err(CoreError::Usage(
                        "usage: /memory rem-backfill [--rollback]".into(),
                    )));
                }
            };
            rem_backfill(s, rollback)
        }
        _ => return None,
    })
}

fn status(ms: &MemorySearch) -> String {
    let st = ms.status();
    let mut out = format!(
        "index: {}\nprovider: {}\nfiles: {}\nentries: {}\nindex path: {}",
        if st.ready {
            "ready"
        } else {
            "not ready (run: yuyao memory index)"
        },
        st.provider,
        st.files,
        st.entries,
        st.index_path.display()
    );
    if let Some(p) = st.problem {
        out.push_str(&format!("\nproblem: {p}"));
    }
    // Which ranking answers (docs/memory.md, "The re-ranking encoder").
    out.push_str(&format!("\nreranker: {}", st.reranker));
    if let Some(p) = st.reranker_problem {
        out.push_str(&format!(" ({p})"));
    }
    out
}

fn index(s: &Session, force: bool) -> Result<String, CoreError> {
    let ms = engine(s).map_err(CoreError::Failed)?;
    let t0 = std::time::Instant::now();
    let mut progress = |done: usize, total: usize| {
        s.emit(Event::Progress {
            label: "indexing memory".into(),
            done: done as u64,
            total: total as u64,
        });
    };
    let (idx, report) = ms
        .refresh(force, &mut progress)
        .map_err(CoreError::Failed)?;
    Ok(format!(
        "indexed {} files, {} entries ({} files read, {} entries embedded, provider {}) in {:.2}s\nindex path: {}",
        idx.files.len(),
        idx.chunk_count(),
        report.files_read,
        report.chunks_embedded,
        ms.provider.name(),
        t0.elapsed().as_secs_f64(),
        yuyao_memsearch::Index::path(&ms.dir).display()
    ))
}

fn rem_backfill(s: &Session, rollback: bool) -> Result<String, CoreError> {
    let ms = engine(s).map_err(CoreError::Failed)?;
    let dreams = ms.layout.write.join("DREAMS.md");
    if rollback {
        let n = backfill::rollback(&dreams).map_err(CoreError::Failed)?;
        return Ok(if n == 0 {
            "nothing to roll back: DREAMS.md has no staged rem-backfill section".into()
        } else {
            format!(
                "removed {n} staged rem-backfill section(s) from {}",
                dreams.display()
            )
        });
    }
    let notes: Vec<std::path::PathBuf> = ms
        .files()
        .into_iter()
        .filter(|f| f.kind == yuyao_memsearch::source::FileKind::Daily)
        .map(|f| f.path)
        .collect();
    let mut said = backfill::from_daily_notes(&notes, &ms.project);
    said.extend(session_prompts(s));
    let long_term: Vec<String> = ms
        .files()
        .iter()
        .filter(|f| {
            matches!(
                f.kind,
                yuyao_memsearch::source::FileKind::ProjectMemory
                    | yuyao_memsearch::source::FileKind::GlobalMemory
            )
        })
        .flat_map(|f| {
            yuyao_memsearch::source::chunks(&std::fs::read_to_string(&f.path).unwrap_or_default())
        })
        .map(|c| yuyao_memsearch::source::normalized(&c.text))
        .collect();
    let staged = std::fs::read_to_string(&dreams).unwrap_or_default();
    let found = backfill::candidates(&said, &long_term, &staged);
    let n =
        backfill::stage(&dreams, &found, &yuyao_memsearch::today()).map_err(CoreError::Failed)?;
    Ok(format!(
        "replayed {} daily notes and the project's session logs: {n} promotion candidate(s) staged in {}{}",
        notes.len(),
        dreams.display(),
        if n > 0 {
            " (undo: yuyao memory rem-backfill --rollback)"
        } else {
            ""
        }
    ))
}

/// The user prompts of this project's stored sessions that state something durable.
fn session_prompts(s: &Session) -> Vec<backfill::Said> {
    let dir = s.paths().home.join("sessions");
    let mut out = Vec::new();
    for info in yuyao_store::sessions::list_sessions(&dir) {
        if !std::path::Path::new(&info.cwd).starts_with(&s.paths().project) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&info.path) else {
            continue;
        };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["type"] != "message" || v["message"]["role"] != "user" {
                continue;
            }
            let content = match &v["message"]["content"] {
                Value::String(t) => t.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => continue,
            };
            if let Some((text, explicit)) = backfill::durable_prompt(&content) {
                out.push(backfill::Said {
                    source: format!("session {}", info.id),
                    text,
                    explicit,
                });
            }
        }
    }
    out
}

const DREAM_SYSTEM: &str = "You word the journal entry of a memory consolidation for a coding agent's DREAMS.md. You are given the facts (already decided): write two or three plain sentences that summarise them for the person who reads the journal. Invent nothing, add no advice, no headings, no lists.";

/// `/dream`: promotes, distils and journals now. The decisions are the deterministic plan;
/// the model (when one is configured) only words the summary.
pub(crate) fn dream_command(s: &Session, _: &[String]) -> Result<String, CoreError> {
    if !s.memory().enabled {
        return Err(CoreError::Usage(
            "memory is off in this session (--no-memory or memory.enabled = false)".into(),
        ));
    }
    run_dream(s, Trigger::Command).map(|d| d.unwrap_or_default())
}

/// What started a dream (named in the trace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    Command,
    SessionEnd,
    /// The background dream of a live session (`maintain.rs`): skipped when there is
    /// nothing to promote or remove, so an idle session makes no model call.
    Periodic,
}

impl Trigger {
    fn name(self) -> &'static str {
        match self {
            Trigger::Command => "command",
            Trigger::SessionEnd => "session_end",
            Trigger::Periodic => "periodic",
        }
    }
}

/// `dreaming.stale_days` (default `dream::STALE_DAYS`).
fn stale_days(s: &Session) -> i64 {
    s.config()
        .get("dreaming.stale_days")
        .and_then(|v| v.as_integer())
        .filter(|n| *n > 0)
        .unwrap_or(dream::STALE_DAYS)
}

/// One dream (never two at once); the memory files are held while its plan is applied, so
/// a turn's memory writes never interleave with it. `None` when a periodic dream found
/// nothing to do.
pub(crate) fn run_dream(s: &Session, trigger: Trigger) -> Result<Option<String>, CoreError> {
    let _dreaming = s.memory().dream_lock();
    let ms = engine(s).map_err(CoreError::Failed)?;
    let (idx, _) = ms
        .refresh(false, &mut |_, _| {})
        .map_err(CoreError::Failed)?;
    let today = yuyao_memsearch::today();
    let plan = dream::plan(&ms, &idx, &today, stale_days(s));
    if trigger == Trigger::Periodic && plan.promote.is_empty() && plan.remove.is_empty() {
        return Ok(None);
    }
    let facts = dream::facts(&plan, &ms.project);
    let (summary, unworded) = match word_summary(s, &facts) {
        Ok(t) => (t, None),
        Err(e) => (String::new(), Some(e)),
    };
    {
        // Removals go by id and promotions are appended to the file as it reads now.
        let _files = s.memory().files_lock();
        dream::apply(&ms, &plan, &summary, &today).map_err(CoreError::Failed)?;
    }
    let removed: Vec<Value> = plan
        .remove
        .iter()
        .map(|r| json!({"id": r.id, "text": r.text, "line": r.line_start, "reason": r.reason}))
        .collect();
    s.lock().trajectory.record(
        "dream",
        json!({
            "trigger": trigger.name(),
            "facts": facts,
            "summary": summary,
            "summary_error": unworded,
            "promoted": plan.promote.len(),
            "removed": removed,
        }),
    );
    Ok(Some(format!(
        "dream written to {}\n{facts}",
        ms.layout.write.join("DREAMS.md").display()
    )))
}

/// One model call that words the summary; an error without a model, over the spend
/// ceiling, or when the call fails (the facts alone are journaled then).
fn word_summary(s: &Session, facts: &str) -> Result<String, String> {
    let mut req = build_request(
        DREAM_SYSTEM,
        &[Message::user(format!(
            "Facts of this consolidation:\n{facts}"
        ))],
        Vec::new(),
        false,
        None,
    );
    let (reply, _) = s
        .side_call(&mut req, Some(300), &CancellationToken::new(), false)
        .map_err(|e| e.to_string())?;
    let text = reply.text.trim().to_string();
    if text.is_empty() {
        return Err("the model gave an empty summary".into());
    }
    Ok(text)
}

/// `dreaming.enabled` as configured now (off by default, seed 002 §6.3).
pub(crate) fn dreaming_enabled(s: &Session) -> bool {
    s.config()
        .get("dreaming.enabled")
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// Dreaming at session end (`dreaming.enabled`, read now): runs when the session had a
/// conversation and memory is on. Failures are reported, never fatal.
pub(crate) fn dream_at_end(s: &Session) {
    if !dreaming_enabled(s) || !s.memory().enabled || s.messages().is_empty() {
        return;
    }
    if let Err(e) = run_dream(s, Trigger::SessionEnd) {
        s.notice(
            yuyao_protocol::NoticeLevel::Warning,
            format!("dreaming failed: {e}"),
        );
    }
}
