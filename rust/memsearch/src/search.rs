//! Ranking: BM25 and dense cosine similarity, fused by reciprocal rank fusion
//! (score = Σ 1 / (60 + rank) over the two rankings, each cut to its first RANK_WINDOW
//! entries, as search engines' RRF does). With `bm25` only the BM25 ranking.

use crate::bm25::Bm25;
use crate::embed::cosine;
use crate::index::Index;
use crate::source::FileKind;
use std::path::PathBuf;

/// RRF's constant: large enough that the top few ranks of either list count about the same.
const RRF_K: f32 = 60.0;
/// How many candidates each ranking contributes. Without a window the dense ranking, which
/// ranks every entry, would lend each BM25 match a second vote however unrelated it is.
const RANK_WINDOW: usize = 20;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Hit {
    pub path: PathBuf,
    pub kind: FileKind,
    pub line_start: usize,
    pub line_end: usize,
    pub score: f32,
    pub id: String,
    pub text: String,
}

/// An index ready to answer queries (BM25 statistics built once).
pub struct Searcher {
    pub index: Index,
    bm25: Bm25,
    /// (file, chunk) of every chunk, in vector order.
    slots: Vec<(usize, usize)>,
}

impl Searcher {
    pub fn new(index: Index) -> Searcher {
        let mut slots = Vec::new();
        for (fi, f) in index.files.iter().enumerate() {
            for ci in 0..f.chunks.len() {
                slots.push((fi, ci));
            }
        }
        let bm25 = Bm25::new(
            slots
                .iter()
                .map(|&(f, c)| index.files[f].chunks[c].text.as_str()),
        );
        Searcher { index, bm25, slots }
    }

    /// The `k` best chunks for `query`; `query_vec` is the query's embedding (`None` when the
    /// provider is `bm25`, or the index has no vectors).
    pub fn search(&self, query: &str, query_vec: Option<&[f32]>, k: usize) -> Vec<Hit> {
        let lexical = self.bm25.rank(query);
        let dense: Vec<(usize, f32)> = match query_vec {
            Some(q) if self.index.vectors.len() == self.slots.len() && !q.is_empty() => {
                let mut d: Vec<(usize, f32)> = self
                    .index
                    .vectors
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i, cosine(q, v)))
                    .filter(|(_, s)| *s > 0.0)
                    .collect();
                d.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                d
            }
            _ => Vec::new(),
        };
        let scored: Vec<(usize, f32)> = if dense.is_empty() {
            lexical
        } else {
            let mut fused = vec![0f32; self.slots.len()];
            let mut similarity = vec![0f32; self.slots.len()];
            for (i, s) in &dense {
                similarity[*i] = *s;
            }
            for list in [&lexical, &dense] {
                for (rank, (i, _)) in list.iter().take(RANK_WINDOW.max(k)).enumerate() {
                    fused[*i] += 1.0 / (RRF_K + rank as f32 + 1.0);
                }
            }
            let mut v: Vec<(usize, f32)> = fused
                .into_iter()
                .enumerate()
                .filter(|(_, s)| *s > 0.0)
                .collect();
            // Equal fused scores: the closer in meaning first.
            v.sort_by(|a, b| {
                b.1.total_cmp(&a.1)
                    .then(similarity[b.0].total_cmp(&similarity[a.0]))
                    .then(a.0.cmp(&b.0))
            });
            v
        };
        scored
            .into_iter()
            .take(k)
            .map(|(i, score)| {
                let (f, c) = self.slots[i];
                let file = &self.index.files[f];
                let chunk = &file.chunks[c];
                Hit {
                    path: file.path.clone(),
                    kind: file.kind,
                    line_start: chunk.line_start,
                    line_end: chunk.line_end,
                    score,
                    id: chunk.id.clone(),
                    text: chunk.text.clone(),
                }
            })
            .collect()
    }
}
