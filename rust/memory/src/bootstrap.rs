//! The memory loaded at session start: global then project `MEMORY.md`, then yesterday's and
//! today's daily notes, within `memory.bootstrap_chars`. Over budget, the injected copy keeps
//! the newest entries (by `when`, then by position: later in a file is newer) and the most-used
//! ones (how often memory-search returned them or memory-get read them: the recall counts in
//! `recalls.json` beside the search index), taken in turn, and says what it left out; the files
//! on disk are never touched.

#[allow(unused_imports)]
use crate::session_ext::*;

use std::path::PathBuf;
use yuyao_store::memory::{Layout, Scope, format};

pub const DEFAULT_BOOTSTRAP_CHARS: usize = 12_000;

pub(crate) const HEADER: &str = "# Memory\nThe user's persistent memory, kept across sessions in plain Markdown files (written with /remember, removed with /forget, or edited by hand). Treat its entries as the user's standing preferences and facts about this project; a later entry wins over an earlier one. When you follow one of these preferences, say so in one line: \"applying your rule: <the rule>\". If memory changes during the session, a note starting \"memory changed:\" says what changed.\n";

#[derive(Debug, Clone)]
pub(crate) struct FileReport {
    pub path: PathBuf,
    pub raw_chars: usize,
    pub injected_chars: usize,
    /// Entries the budget left out: `id: first words`.
    pub cut: Vec<String>,
}

pub(crate) struct Boot {
    pub section: String,
    pub report: Vec<FileReport>,
}

struct Source {
    label: String,
    path: PathBuf,
    text: String,
}

fn sources(layout: &Layout, today: &str, yesterday: &str) -> Vec<Source> {
    let mut paths: Vec<(String, PathBuf)> =
        vec![("Global memory".into(), layout.target(Scope::Global))];
    let mut roots = vec![layout.project.clone()];
    if layout.write != layout.project {
        roots.push(layout.write.clone());
    }
    for r in &roots {
        paths.push(("Project memory".into(), r.join("MEMORY.md")));
    }
    for day in [yesterday, today] {
        for r in &roots {
            paths.push((
                format!("Daily note {day}"),
                r.join("memory").join(format!("{day}.md")),
            ));
        }
    }
    let allowed = [
        layout.project.as_path(),
        layout.write.as_path(),
        layout.global.as_path(),
    ];
    paths
        .into_iter()
        .filter_map(|(label, path)| {
            let text = yuyao_extension_files::instruction_files::read(&path, &allowed)?;
            (!text.trim().is_empty()).then_some(Source { label, path, text })
        })
        .collect()
}

pub(crate) fn load(layout: &Layout, budget: usize, today: &str, yesterday: &str) -> Boot {
    let files = sources(layout, today, yesterday);
    if files.is_empty() {
        return Boot {
            section: String::new(),
            report: Vec::new(),
        };
    }
    let raw_total: usize = files.iter().map(|f| f.text.chars().count()).sum();
    let mut report = Vec::new();
    let mut section = String::from(HEADER);
    // Which entries fit: all of them when the files fit, else the newest first.
    let keep: Vec<Option<Vec<bool>>> = if raw_total <= budget {
        files.iter().map(|_| None).collect()
    } else {
        let recalls = yuyao_memsearch::recall::load(&yuyao_memsearch::index::index_dir(
            &layout.global,
            &layout.write,
        ));
        let uses = |path: &std::path::Path, id: &str| {
            recalls
                .get(&yuyao_memsearch::recall::key(path, id))
                .map(|r| r.count)
                .unwrap_or(0)
        };
        choose(&files, budget, &uses)
    };
    for (f, keep) in files.iter().zip(keep) {
        let raw_chars = f.text.chars().count();
        let (body, cut) = match keep {
            None => (f.text.trim_end().to_string(), Vec::new()),
            Some(keep) => {
                let entries = format::parse(&f.text);
                let mut body = String::new();
                let mut cut = Vec::new();
                for (e, k) in entries.iter().zip(&keep) {
                    if *k {
                        body.push_str(f.text[e.span.clone()].trim_end());
                        body.push('\n');
                    } else {
                        let head: String = e.text.chars().take(60).collect();
                        cut.push(format!("{}: {head}", e.id));
                    }
                }
                if !cut.is_empty() {
                    body.push_str(&format!(
                        "[memory truncated: {} of {} entries of this file left out to fit memory.bootstrap_chars={budget}; memory-get {} reads the whole file]",
                        cut.len(),
                        entries.len(),
                        f.path.display()
                    ));
                }
                (body.trim_end().to_string(), cut)
            }
        };
        section.push_str(&format!(
            "\n## {} ({})\n{body}\n",
            f.label,
            f.path.display()
        ));
        report.push(FileReport {
            path: f.path.clone(),
            raw_chars,
            injected_chars: body.chars().count(),
            cut,
        });
    }
    Boot { section, report }
}

/// Per file, which entries to keep while they fit in `budget`: the most-used and the newest
/// in turn (most-used: by use count, then newer; newest: by `when`, then later position,
/// later file), so a rule the agent keeps looking up is not pushed out by fresh notes.
fn choose(
    files: &[Source],
    budget: usize,
    uses: &dyn Fn(&std::path::Path, &str) -> u32,
) -> Vec<Option<Vec<bool>>> {
    let parsed: Vec<Vec<format::Entry>> = files.iter().map(|f| format::parse(&f.text)).collect();
    let mut order: Vec<(usize, usize)> = parsed
        .iter()
        .enumerate()
        .flat_map(|(fi, es)| (0..es.len()).map(move |ei| (fi, ei)))
        .collect();
    order.sort_by(|a, b| {
        let wa = parsed[a.0][a.1].when.clone().unwrap_or_default();
        let wb = parsed[b.0][b.1].when.clone().unwrap_or_default();
        wb.cmp(&wa).then(b.cmp(a))
    });
    let count = |(fi, ei): (usize, usize)| uses(&files[fi].path, &parsed[fi][ei].id);
    let mut used: Vec<(usize, usize)> = order.iter().copied().filter(|k| count(*k) > 0).collect();
    // Stable: equal counts keep the newest-first order.
    used.sort_by_key(|k| std::cmp::Reverse(count(*k)));
    let mut order_both = Vec::with_capacity(order.len());
    let (mut a, mut b) = (used.into_iter(), order.into_iter());
    loop {
        let next = [a.next(), b.next()];
        if next.iter().all(Option::is_none) {
            break;
        }
        for k in next.into_iter().flatten() {
            if !order_both.contains(&k) {
                order_both.push(k);
            }
        }
    }
    let order = order_both;
    let overhead = HEADER.len()
        + files
            .iter()
            .map(|f| f.label.len() + f.path.as_os_str().len() + 200)
            .sum::<usize>();
    let mut left = budget.saturating_sub(overhead);
    let mut keep: Vec<Vec<bool>> = parsed.iter().map(|es| vec![false; es.len()]).collect();
    for (fi, ei) in order {
        let e = &parsed[fi][ei];
        let size = files[fi].text[e.span.clone()].chars().count();
        if size <= left {
            left -= size;
            keep[fi][ei] = true;
        }
    }
    keep.into_iter().map(Some).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_budget_keeps_the_newest_entries_and_marks_the_cut() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!(
                "- entry number {i:03} with some padding text to weigh it\n"
            ));
        }
        std::fs::write(proj.path().join("MEMORY.md"), &text).unwrap();
        let layout = Layout::new(home.path(), proj.path(), None);
        let boot = load(&layout, 3000, "2026-01-02", "2026-01-01");
        assert!(
            boot.section.chars().count() <= 3000,
            "{}",
            boot.section.len()
        );
        assert!(boot.section.contains("entry number 199"));
        assert!(!boot.section.contains("entry number 000"));
        assert!(boot.section.contains("[memory truncated:"));
        assert_eq!(
            std::fs::read_to_string(proj.path().join("MEMORY.md")).unwrap(),
            text
        );
        let r = &boot.report[0];
        assert_eq!(r.raw_chars, text.chars().count());
        assert!(r.injected_chars < r.raw_chars);
        assert!(r.cut.iter().any(|c| c.contains("entry number 000")));
        // Within budget: whole files, in order.
        std::fs::write(home.path().join("MEMORY.md"), "- global one\n").unwrap();
        std::fs::write(proj.path().join("MEMORY.md"), "- project one\n").unwrap();
        let boot = load(&layout, 12_000, "2026-01-02", "2026-01-01");
        let g = boot.section.find("global one").unwrap();
        assert!(g < boot.section.find("project one").unwrap());
    }

    #[test]
    fn over_budget_keeps_a_much_used_old_entry_over_new_unused_ones() {
        let home = tempfile::tempdir().unwrap();
        let proj = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!(
                "- entry number {i:03} with some padding text to weigh it\n"
            ));
        }
        let file = proj.path().join("MEMORY.md");
        std::fs::write(&file, &text).unwrap();
        let layout = Layout::new(home.path(), proj.path(), None);
        let old = format::parse(&text)[3].id.clone();
        let dir = yuyao_memsearch::index::index_dir(&layout.global, &layout.write);
        for _ in 0..5 {
            yuyao_memsearch::recall::record(
                &dir,
                &[(file.clone(), old.clone())],
                "q",
                "2026-01-02",
            );
        }
        let boot = load(&layout, 3000, "2026-01-02", "2026-01-01");
        assert!(
            boot.section.contains("entry number 003"),
            "{}",
            boot.section
        );
        assert!(boot.section.contains("entry number 199"), "the newest went");
        assert!(!boot.section.contains("entry number 150"));
    }
}
