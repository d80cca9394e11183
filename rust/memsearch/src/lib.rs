//! memory-search: hybrid retrieval (BM25 + dense embeddings, reciprocal rank fusion) over the
//! memory files, its persisted index, the recall statistics, and the deterministic parts of
//! dreaming (promotion, distillation) and of `yuyao memory rem-backfill`.

pub mod backfill;
pub mod bm25;
pub mod dream;
pub mod embed;
pub mod index;
pub mod recall;
pub mod search;
pub mod source;
pub mod tokenize;

pub use embed::{Gateway, Provider};
pub use index::{Index, UpdateReport};
pub use search::{Hit, Searcher};

use std::path::{Path, PathBuf};

/// The memory of one project as memory-search sees it.
pub struct MemorySearch {
    pub home: PathBuf,
    pub project: PathBuf,
    pub provider: Provider,
    /// Where the index and the recall statistics live.
    pub dir: PathBuf,
}

/// `yuyao memory status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    pub ready: bool,
    pub provider: String,
    pub files: usize,
    pub entries: usize,
    pub index_path: PathBuf,
    /// Why the index is not ready, when it is not.
    pub problem: Option<String>,
}

pub const DEFAULT_K: usize = 5;
pub const MAX_K: usize = 50;

impl MemorySearch {
    pub fn new(home: &Path, project: &Path, provider: Provider) -> MemorySearch {
        MemorySearch {
            home: home.to_path_buf(),
            project: project.to_path_buf(),
            dir: index::index_dir(home, project),
            provider,
        }
    }

    pub fn files(&self) -> Vec<source::MemoryFile> {
        source::memory_files(&self.home, &self.project)
    }

    /// The index brought up to date (and saved when anything changed).
    pub fn refresh(
        &self,
        force: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Index, UpdateReport), String> {
        let mut idx = Index::load(&self.dir).unwrap_or_default();
        let report = idx.update(&self.files(), &self.provider, force, progress)?;
        if report.changed || !Index::path(&self.dir).exists() {
            idx.save(&self.dir)?;
        }
        Ok((idx, report))
    }

    /// The `k` best entries for `query`, the index refreshed first.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<Hit>, String> {
        let (idx, _) = self.refresh(false, &mut |_, _| {})?;
        let qv = embed::embed_all(&self.provider, &[query.to_string()])?
            .and_then(|mut v| v.pop());
        Ok(Searcher::new(&idx).search(query, qv.as_deref(), k.clamp(1, MAX_K)))
    }

    /// Counts the hits for dreaming (memory-search tool calls, not the user's own look-ups).
    pub fn record_recall(&self, query: &str, hits: &[Hit]) {
        let keys: Vec<(PathBuf, String)> =
            hits.iter().map(|h| (h.path.clone(), h.id.clone())).collect();
        recall::record(&self.dir, &keys, query, &today());
    }

    pub fn status(&self) -> Status {
        let files = self.files();
        let saved = Index::load(&self.dir);
        let problem = match &self.provider {
            Provider::Local => embed::local_model().err(),
            _ => None,
        };
        let (ready, entries) = match &saved {
            Some(idx) if idx.provider == self.provider.id() => {
                let fresh = idx.files.len() == files.len()
                    && idx.files.iter().zip(&files).all(|(r, f)| {
                        r.path == f.path
                            && std::fs::metadata(&f.path)
                                .map(|m| m.len() == r.size)
                                .unwrap_or(false)
                    });
                (fresh && problem.is_none(), idx.chunk_count())
            }
            _ => (false, 0),
        };
        Status {
            ready,
            provider: self.provider.name().to_string(),
            files: files.len(),
            entries,
            index_path: Index::path(&self.dir),
            problem,
        }
    }
}

pub fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

/// Hits as the tool and `yuyao memory search` print them: file, line range, score, text.
pub fn format_hits(hits: &[Hit], project: &Path, home: &Path) -> String {
    if hits.is_empty() {
        return "no memory entry matches".to_string();
    }
    let mut out = String::new();
    for (i, h) in hits.iter().enumerate() {
        let shown = display_path(&h.path, project, home);
        out.push_str(&format!(
            "{}. {}:{}-{} (score {:.4}, id {})\n   {}\n",
            i + 1,
            shown,
            h.line_start,
            h.line_end,
            h.score,
            h.id,
            h.text
        ));
    }
    out
}

/// A memory file's path as the user knows it: relative to the project, or `~/.yuyao/…`.
pub fn display_path(p: &Path, project: &Path, home: &Path) -> String {
    if let Ok(r) = p.strip_prefix(project) {
        return r.display().to_string();
    }
    if let Ok(r) = p.strip_prefix(home) {
        return format!("{}/{}", home.display(), r.display());
    }
    p.display().to_string()
}
