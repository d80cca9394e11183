//! memory-search: hybrid retrieval (dense embeddings lifted by BM25 term coverage) over the
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
pub use search::{Hit, Ranking, Searcher};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The memory of one project as memory-search sees it.
pub struct MemorySearch {
    /// Where the memory files are (the project, `~/.yuyao`, a headless run's write root).
    pub layout: yuyao_store::memory::Layout,
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
    /// `home` is yuyao's folder (`~/.yuyao`): the global MEMORY.md and the index live there.
    pub fn new(
        layout: yuyao_store::memory::Layout,
        home: &Path,
        provider: Provider,
    ) -> MemorySearch {
        MemorySearch {
            home: home.to_path_buf(),
            project: layout.project.clone(),
            dir: index::index_dir(home, &layout.write),
            layout,
            provider,
        }
    }

    pub fn files(&self) -> Vec<source::MemoryFile> {
        source::memory_files(&self.layout)
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

    /// A searcher over the up-to-date index. Kept in the process between calls while the
    /// memory files (paths, sizes, mtimes) and the provider stay the same, so a query costs a
    /// `stat` per file and the ranking, not a load.
    pub fn searcher(&self) -> Result<Arc<Searcher>, String> {
        static LOADED: Mutex<Vec<(PathBuf, Arc<Searcher>)>> = Mutex::new(Vec::new());
        let files = self.files();
        {
            let cache = LOADED.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, s)) = cache.iter().find(|(d, _)| *d == self.dir)
                && s.index.provider == self.provider.id()
                && s.index.matches(&files)
            {
                return Ok(s.clone());
            }
        }
        let (idx, _) = self.refresh(false, &mut |_, _| {})?;
        let s = Arc::new(Searcher::new(idx));
        let mut cache = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|(d, _)| *d != self.dir);
        cache.push((self.dir.clone(), s.clone()));
        if cache.len() > 8 {
            cache.remove(0);
        }
        Ok(s)
    }

    /// The `k` best entries for `query`, the index refreshed first.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<Hit>, String> {
        self.search_with(query, k, Ranking::Hybrid)
    }

    /// `search` with one of the rankings (the hybrid, or either of its components alone).
    pub fn search_with(&self, query: &str, k: usize, ranking: Ranking) -> Result<Vec<Hit>, String> {
        let searcher = self.searcher()?;
        let qv = if searcher.index.dims == 0 {
            None
        } else {
            // The query's tokens weighed with the statistics of the entries it is compared to.
            embed::embed_all(&self.provider, &[query.to_string()], &searcher.index.terms)?
                .and_then(|mut v| v.pop())
        };
        Ok(searcher.search_with(query, qv.as_deref(), k.clamp(1, MAX_K), ranking))
    }

    /// Counts the hits for dreaming (memory-search tool calls, not the user's own look-ups).
    pub fn record_recall(&self, query: &str, hits: &[Hit]) {
        let keys: Vec<(PathBuf, String)> = hits
            .iter()
            .map(|h| (h.path.clone(), h.id.clone()))
            .collect();
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
                (idx.matches(&files) && problem.is_none(), idx.chunk_count())
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
