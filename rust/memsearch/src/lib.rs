//! memory-search: hybrid retrieval (dense embeddings lifted by BM25 term coverage) over the
//! memory files, its persisted index, the recall statistics, and the deterministic parts of
//! dreaming (promotion, distillation) and of `yuyao memory rem-backfill`.

pub mod backfill;
pub mod bm25;
pub mod dream;
pub mod embed;
pub mod encoder;
pub mod index;
pub mod recall;
pub mod search;
pub mod source;
pub mod tokenize;

pub use embed::{Gateway, Provider};
pub use index::{Index, UpdateReport};
pub use search::{Hit, RERANK_K, Ranking, Searcher};

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
    /// `local encoder` when the hybrid's best entries are re-ordered by the encoder,
    /// `not installed` (with why in `reranker_problem`) when the static ranking answers alone,
    /// `off` for the providers other than `local`.
    pub reranker: String,
    pub reranker_problem: Option<String>,
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

    /// `search` with one of the rankings: the hybrid (with the local model and the encoder
    /// installed, its best `RERANK_K` re-ordered by the encoder), either of its static
    /// components alone, or the encoder alone.
    pub fn search_with(&self, query: &str, k: usize, ranking: Ranking) -> Result<Vec<Hit>, String> {
        let searcher = self.searcher()?;
        let k = k.clamp(1, MAX_K);
        let encoder = match (ranking, &self.provider) {
            (Ranking::Hybrid | Ranking::Encoder, Provider::Local) => encoder::local_encoder(),
            _ => None,
        };
        if ranking == Ranking::Encoder {
            let enc = encoder.ok_or_else(|| {
                encoder::encoder_problem()
                    .unwrap_or_else(|| "the re-ranking encoder is not available".into())
            })?;
            let all: Vec<usize> = (0..searcher.len()).collect();
            let sims = self.encoder_similarities(&searcher, &enc, query, &all);
            let mut ranked: Vec<(usize, f32)> = all.into_iter().zip(sims).collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            return Ok(ranked
                .into_iter()
                .take(k)
                .map(|(i, s)| searcher.hit(i, s))
                .collect());
        }
        let qv = if searcher.index.dims == 0 {
            None
        } else {
            // The query's tokens weighed with the statistics of the entries it is compared to.
            embed::embed_all(&self.provider, &[query.to_string()], &searcher.index.terms)?
                .and_then(|mut v| v.pop())
        };
        let mut ranked = searcher.ranked(query, qv.as_deref(), ranking);
        if let Some(enc) = encoder.filter(|_| ranking == Ranking::Hybrid && !ranked.is_empty()) {
            let head: Vec<usize> = ranked.iter().take(RERANK_K).map(|&(i, _)| i).collect();
            let sims = self.encoder_similarities(&searcher, &enc, query, &head);
            ranked = search::rerank(ranked, &sims, search::RERANK_STATIC_WEIGHT);
        }
        Ok(ranked
            .into_iter()
            .take(k)
            .map(|(i, s)| searcher.hit(i, s))
            .collect())
    }

    /// The encoder's cosine of each of `slots` to `query`. An entry's vector is encoded once:
    /// it is kept in the searcher and in `encoder-cache.bin` beside the index, keyed by a hash
    /// of its text, so a warm query encodes the query alone.
    fn encoder_similarities(
        &self,
        searcher: &Searcher,
        enc: &encoder::Encoder,
        query: &str,
        slots: &[usize],
    ) -> Vec<f32> {
        let mut guard = searcher.encoded.lock().unwrap_or_else(|e| e.into_inner());
        let cache = guard.get_or_insert_with(|| encoder::VectorCache::load(&self.dir, enc.dims()));
        let keys: Vec<[u8; 16]> = slots
            .iter()
            .map(|&i| encoder::cache_key(searcher.text(i)))
            .collect();
        // The query and the entries not yet encoded, in one batch (encoded in parallel).
        let mut missing: Vec<&str> = vec![query];
        let mut missing_keys: Vec<[u8; 16]> = Vec::new();
        let mut queued = std::collections::HashSet::new();
        for (&i, key) in slots.iter().zip(&keys) {
            if !cache.vectors.contains_key(key) && queued.insert(*key) {
                missing.push(searcher.text(i));
                missing_keys.push(*key);
            }
        }
        let mut fresh = enc.encode_many(&missing).into_iter();
        let q = fresh.next().unwrap_or_default();
        for (key, v) in missing_keys.into_iter().zip(fresh) {
            cache.vectors.insert(key, v);
            cache.dirty = true;
        }
        let sims = keys
            .iter()
            .map(|k| cache.vectors.get(k).map_or(0.0, |v| embed::cosine(&q, v)))
            .collect();
        if cache.dirty {
            let current: std::collections::HashSet<[u8; 16]> = (0..searcher.len())
                .map(|i| encoder::cache_key(searcher.text(i)))
                .collect();
            // A cache that cannot be written costs only the encoding again next time.
            let _ = cache.save(&self.dir, &|k| current.contains(k));
        }
        sims
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
        let reranker_problem = match self.provider {
            Provider::Local => encoder::encoder_problem(),
            _ => Some("re-ranking applies to memorySearch.provider = local only".into()),
        };
        Status {
            reranker: match (&self.provider, &reranker_problem) {
                (Provider::Local, None) => "local encoder".into(),
                (Provider::Local, Some(_)) => "not installed".into(),
                _ => "off".into(),
            },
            reranker_problem,
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
