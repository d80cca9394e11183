//! Dreaming: short-term signals (entries of the daily notes that memory-search keeps
//! returning) are promoted into the project's MEMORY.md past fixed thresholds; stale entries
//! are removed (distillation); a stage summary goes to DREAMS.md. Everything here is
//! deterministic; the model only words the summary (`facts` is what it is given).

use crate::MemorySearch;
use crate::index::Index;
use crate::recall::{self, Recalls};
use crate::source::{Chunk, FileKind, chunks, normalized};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use yuyao_store::memory::format;

/// Promotion thresholds: all three must hold.
pub const MIN_SCORE: f32 = 0.5;
pub const MIN_RECALLS: u32 = 2;
pub const MIN_QUERIES: usize = 2;
/// A promoted entry no search returned for this many days is stale.
pub const STALE_DAYS: i64 = 60;

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub text: String,
    /// The daily notes it appears in.
    pub notes: Vec<PathBuf>,
    pub recalls: u32,
    pub queries: usize,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    pub id: String,
    pub text: String,
    pub line_start: usize,
    pub line_end: usize,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub promote: Vec<Candidate>,
    pub remove: Vec<Removal>,
    /// Short-term entries seen but below a threshold.
    pub below: usize,
}

/// score = 0.45·min(recalls/4, 1) + 0.35·min(queries/3, 1) + 0.2·min(notes/3, 1).
pub fn score(recalls: u32, queries: usize, notes: usize) -> f32 {
    0.45 * (recalls as f32 / 4.0).min(1.0)
        + 0.35 * (queries as f32 / 3.0).min(1.0)
        + 0.2 * (notes as f32 / 3.0).min(1.0)
}

fn day_of(s: &str) -> Option<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(s.get(..10)?, "%Y-%m-%d").ok()
}

/// What a dream would do now.
pub fn plan(ms: &MemorySearch, index: &Index, today: &str) -> Plan {
    let recalls = recall::load(&ms.dir);
    let project_memory = ms.layout.target(yuyao_store::memory::Scope::Project);
    let long_term: Vec<String> = index
        .files
        .iter()
        .filter(|f| matches!(f.kind, FileKind::ProjectMemory | FileKind::GlobalMemory))
        .flat_map(|f| f.chunks.iter().map(|c| normalized(&c.text)))
        .collect();
    // Daily-note entries grouped by what they say.
    let mut groups: BTreeMap<String, Candidate> = BTreeMap::new();
    let mut query_sets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in index.files.iter().filter(|f| f.kind == FileKind::Daily) {
        for c in &f.chunks {
            let norm = normalized(&c.text);
            if norm.is_empty() || long_term.contains(&norm) {
                continue;
            }
            let r = recalls
                .get(&recall::key(&f.path, &c.id))
                .cloned()
                .unwrap_or_default();
            let g = groups.entry(norm.clone()).or_insert_with(|| Candidate {
                text: c.text.clone(),
                notes: Vec::new(),
                recalls: 0,
                queries: 0,
                score: 0.0,
            });
            if !g.notes.contains(&f.path) {
                g.notes.push(f.path.clone());
            }
            g.recalls += r.count;
            let qs = query_sets.entry(norm).or_default();
            for q in r.queries {
                if !qs.contains(&q) {
                    qs.push(q);
                }
            }
        }
    }
    let mut out = Plan::default();
    for (norm, mut c) in groups {
        c.queries = query_sets.get(&norm).map_or(0, Vec::len);
        c.score = score(c.recalls, c.queries, c.notes.len());
        if c.score >= MIN_SCORE && c.recalls >= MIN_RECALLS && c.queries >= MIN_QUERIES {
            out.promote.push(c);
        } else {
            out.below += 1;
        }
    }
    out.promote
        .sort_by(|a, b| b.score.total_cmp(&a.score).then(a.text.cmp(&b.text)));
    let text = std::fs::read_to_string(&project_memory).unwrap_or_default();
    out.remove = stale(&chunks(&text), &project_memory, &recalls, today);
    out
}

/// Entries of the project's MEMORY.md to remove: a repeated entry (the last copy stays) and a
/// dream-promoted entry older than STALE_DAYS that no search returned for STALE_DAYS.
fn stale(entries: &[Chunk], path: &Path, recalls: &Recalls, today: &str) -> Vec<Removal> {
    let today = day_of(today);
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let norm = normalized(&e.text);
        if let Some(later) = entries[i + 1..]
            .iter()
            .find(|o| normalized(&o.text) == norm)
        {
            out.push(Removal {
                id: e.id.clone(),
                text: e.text.clone(),
                line_start: e.line_start,
                line_end: e.line_end,
                reason: format!("repeats entry {}", later.id),
            });
            continue;
        }
        if e.src.as_deref() != Some("dream") {
            continue;
        }
        let age = |d: Option<&str>| match (d.and_then(day_of), today) {
            (Some(d), Some(t)) => (t - d).num_days(),
            _ => i64::MAX,
        };
        let last = recalls
            .get(&recall::key(path, &e.id))
            .map(|r| r.last.clone());
        if age(e.when.as_deref()) >= STALE_DAYS && age(last.as_deref()) >= STALE_DAYS {
            out.push(Removal {
                id: e.id.clone(),
                text: e.text.clone(),
                line_start: e.line_start,
                line_end: e.line_end,
                reason: format!("promoted by dreaming and not recalled for {STALE_DAYS} days"),
            });
        }
    }
    out
}

/// The plan in plain words: what the model is asked to summarise, and the summary itself
/// when no model words it.
pub fn facts(plan: &Plan, project: &Path) -> String {
    let mut s = format!(
        "{} promoted to MEMORY.md, {} removed as stale, {} short-term entries below the thresholds (score ≥ {MIN_SCORE}, recalls ≥ {MIN_RECALLS}, distinct queries ≥ {MIN_QUERIES}).",
        plan.promote.len(),
        plan.remove.len(),
        plan.below
    );
    for c in &plan.promote {
        s.push_str(&format!(
            "\n- promoted: \"{}\" (score {:.2}, {} recalls, {} queries, from {})",
            c.text,
            c.score,
            c.recalls,
            c.queries,
            c.notes
                .iter()
                .map(|p| crate::display_path(p, project, project))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for r in &plan.remove {
        s.push_str(&format!("\n- removed: \"{}\" ({})", r.text, r.reason));
    }
    s
}

/// Carries the plan out: MEMORY.md loses the stale entries' lines (every other byte stays)
/// and gains the promoted entries; DREAMS.md gains a dated section with `summary` and the
/// facts. Returns what was done.
pub fn apply(ms: &MemorySearch, plan: &Plan, summary: &str, today: &str) -> Result<String, String> {
    let memory = ms.layout.target(yuyao_store::memory::Scope::Project);
    if !plan.promote.is_empty() || !plan.remove.is_empty() {
        let mut text = std::fs::read_to_string(&memory).unwrap_or_default();
        for r in &plan.remove {
            if let Some(t) = format::remove(&text, &r.id) {
                text = t;
            }
        }
        let mut taken: Vec<String> = format::parse(&text).into_iter().map(|e| e.id).collect();
        for c in &plan.promote {
            let note = c
                .notes
                .first()
                .map(|p| crate::display_path(p, &ms.project, &ms.home))
                .unwrap_or_default();
            let id = format::new_id(&c.text, today, &taken);
            taken.push(id.clone());
            let line = format::render(
                &c.text,
                &format::Meta {
                    id,
                    when: today.to_string(),
                    scope: "project".into(),
                    why: format!(
                        "dreaming: recalled {} times by {} queries, from {note}",
                        c.recalls, c.queries
                    ),
                    src: "dream".into(),
                },
            );
            text = format::append(&text, &line);
        }
        write_atomic(&memory, &text)?;
    }
    let facts = facts(plan, &ms.project);
    let dreams = ms.layout.write.join("DREAMS.md");
    let mut journal = std::fs::read_to_string(&dreams).unwrap_or_default();
    if !journal.is_empty() && !journal.ends_with('\n') {
        journal.push('\n');
    }
    if !journal.is_empty() {
        journal.push('\n');
    }
    let summary = summary.trim();
    journal.push_str(&format!("## Dream {today}\n\n"));
    if !summary.is_empty() {
        journal.push_str(summary);
        journal.push_str("\n\n");
    }
    journal.push_str(&facts);
    journal.push('\n');
    write_atomic(&dreams, &journal)?;
    Ok(facts)
}

pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("memory"),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
