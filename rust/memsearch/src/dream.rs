//! Dreaming: short-term signals (entries of the daily notes that memory-search keeps
//! returning) are promoted into the project's MEMORY.md past fixed thresholds; stale entries
//! are removed (distillation, seed 002 §6.3); a stage summary goes to DREAMS.md, with every
//! removed entry, its place and the rule that removed it. Everything here is deterministic;
//! the model only words the summary (`facts` is what it is given).
//!
//! Stale, precisely (only the project's MEMORY.md is distilled), in this order:
//! 1. repeated: an entry saying the same words as a later entry — the earlier copy goes,
//!    nothing is lost (this is the one rule that may remove a hand-written line);
//! 2. contradicted: an entry yuyao wrote (it has a metadata tail) stating a preference
//!    ("use X, not Y", "use X instead of Y", "prefer X over Y", "use X rather than Y") that a
//!    later entry reverses (prefers Y over X) — the later statement wins;
//! 3. aged: an entry yuyao chose on its own (`src:dream` or `src:flush`, never the user's
//!    `/remember`, correction or "remember that …") written at least `stale_days` ago and
//!    returned by no memory-search or memory-get for `stale_days`.
//!
//! A hand-written line (no metadata) is never removed by rules 2 and 3.

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
/// An automatic entry this old that no search returned for this many days is stale
/// (`dreaming.stale_days`).
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

/// What a dream would do now; entries are aged out after `stale_days`.
pub fn plan(ms: &MemorySearch, index: &Index, today: &str, stale_days: i64) -> Plan {
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
    out.remove = stale(&chunks(&text), &project_memory, &recalls, today, stale_days);
    out
}

/// The `(preferred, avoided)` programs or tools of a preference: "use X, not Y", "use X
/// instead of Y", "use X rather than Y", "prefer X over Y" (first word of each, lowercase).
pub fn preference(text: &str) -> Option<(String, String)> {
    let lower = text
        .to_lowercase()
        .replace(['`', '"', '\u{2019}'], "")
        .trim()
        .to_string();
    let word = |s: &str| {
        s.split_whitespace()
            .next()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string())
            .filter(|w| !w.is_empty())
    };
    let body = lower
        .strip_prefix("always ")
        .unwrap_or(&lower)
        .trim_start_matches("please ")
        .to_string();
    for (lead, sep) in [
        ("use ", ", not "),
        ("use ", " not "),
        ("use ", " instead of "),
        ("use ", " rather than "),
        ("prefer ", " over "),
        ("prefer ", " to "),
    ] {
        let Some(rest) = body.strip_prefix(lead) else {
            continue;
        };
        if let Some((a, b)) = rest.split_once(sep) {
            let (a, b) = (word(a)?, word(b)?);
            if a != b {
                return Some((a, b));
            }
        }
    }
    None
}

/// Entries of the project's MEMORY.md to remove (the module's three rules).
fn stale(
    entries: &[Chunk],
    path: &Path,
    recalls: &Recalls,
    today: &str,
    stale_days: i64,
) -> Vec<Removal> {
    let today = day_of(today);
    let removal = |e: &Chunk, reason: String| Removal {
        id: e.id.clone(),
        text: e.text.clone(),
        line_start: e.line_start,
        line_end: e.line_end,
        reason,
    };
    let mut out = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let norm = normalized(&e.text);
        let later = &entries[i + 1..];
        if let Some(o) = later.iter().find(|o| normalized(&o.text) == norm) {
            out.push(removal(e, format!("repeats entry {}", o.id)));
            continue;
        }
        let src = e.src.as_deref().unwrap_or("hand");
        if src == "hand" {
            continue;
        }
        if let Some((prefer, avoid)) = e.text.lines().next().and_then(preference)
            && let Some(o) = later.iter().find(|o| {
                o.text.lines().next().and_then(preference) == Some((avoid.clone(), prefer.clone()))
            })
        {
            out.push(removal(
                e,
                format!(
                    "contradicted by the later entry {} (prefers {avoid} over {prefer})",
                    o.id
                ),
            ));
            continue;
        }
        if !matches!(src, "dream" | "flush") {
            continue;
        }
        // No date means unknown age: kept.
        let Some(written) = e.when.as_deref().and_then(day_of) else {
            continue;
        };
        let Some(t) = today else {
            continue;
        };
        let last = recalls
            .get(&recall::key(path, &e.id))
            .and_then(|r| day_of(&r.last));
        let unused = last.is_none_or(|d| (t - d).num_days() >= stale_days);
        if (t - written).num_days() >= stale_days && unused {
            out.push(removal(
                e,
                format!(
                    "written by {src} on {written}, older than {stale_days} days and {}",
                    match last {
                        None => "never recalled".to_string(),
                        Some(d) => format!("not recalled since {d}"),
                    }
                ),
            ));
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
        s.push_str(&format!(
            "\n- removed: \"{}\" (entry {}, MEMORY.md line {}: {})",
            r.text, r.id, r.line_start, r.reason
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn removed(text: &str, recalls: &Recalls, stale_days: i64) -> Vec<(String, String)> {
        stale(
            &chunks(text),
            Path::new("/p/MEMORY.md"),
            recalls,
            "2026-12-01",
            stale_days,
        )
        .into_iter()
        .map(|r| (r.text, r.reason))
        .collect()
    }

    #[test]
    fn preferences_are_read_from_the_usual_phrasings() {
        assert_eq!(
            preference("Use bun, not npm."),
            Some(("bun".into(), "npm".into()))
        );
        assert_eq!(
            preference("use `pnpm` instead of yarn"),
            Some(("pnpm".into(), "yarn".into()))
        );
        assert_eq!(
            preference("Prefer ruff over flake8"),
            Some(("ruff".into(), "flake8".into()))
        );
        assert_eq!(preference("The API lives in src/api"), None);
    }

    #[test]
    fn aged_automatic_entries_go_and_the_users_own_stay() {
        let text = "# M\n\
            - Old dream fact. <!-- id:m1 when:2026-01-01 scope:project why:\"d\" src:dream -->\n\
            - Fresh dream fact. <!-- id:m2 when:2026-11-20 scope:project why:\"d\" src:dream -->\n\
            - Old remembered fact. <!-- id:m3 when:2026-01-01 scope:project why:\"u\" src:remember -->\n\
            - Old hand line.\n\
            - Recalled dream fact. <!-- id:m4 when:2026-01-01 scope:project why:\"d\" src:dream -->\n\
            - Undated dream fact. <!-- id:m5 scope:project why:\"d\" src:dream -->\n";
        let mut recalls = Recalls::new();
        recalls.insert(
            recall::key(Path::new("/p/MEMORY.md"), "m4"),
            recall::Recall {
                count: 1,
                last: "2026-11-25".into(),
                queries: vec!["q".into()],
            },
        );
        let out = removed(text, &recalls, 60);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].0, "Old dream fact.");
        assert!(out[0].1.contains("never recalled"), "{}", out[0].1);
        // A shorter age takes the fresh one too; a longer one nothing.
        assert_eq!(removed(text, &recalls, 7).len(), 2);
        assert!(removed(text, &recalls, 400).is_empty());
    }

    #[test]
    fn a_later_reversed_preference_removes_the_earlier_automatic_one_only() {
        let text = "# M\n\
            - Use npm, not bun. <!-- id:m1 when:2026-11-01 scope:project why:\"u\" src:remember -->\n\
            - Use yarn, not pnpm.\n\
            - Use bun, not npm. <!-- id:m2 when:2026-11-30 scope:project why:\"u\" src:correction -->\n\
            - Use pnpm instead of yarn. <!-- id:m3 when:2026-11-30 scope:project why:\"u\" src:remember -->\n";
        let out = removed(text, &Recalls::new(), 60);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].0, "Use npm, not bun.");
        assert!(out[0].1.contains("m2"), "{}", out[0].1);
    }
}
