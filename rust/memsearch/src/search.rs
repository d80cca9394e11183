//! Ranking: dense cosine similarity, lifted by how much of the query's rare vocabulary an
//! entry contains (BM25's IDF), so an exact identifier or error code still finds its note.
//! With `bm25` only the BM25 ranking.
//!
//! Why not reciprocal rank fusion: on short notes the static embeddings already rank the
//! right note first for most paraphrased questions, while BM25 ranks whatever shares an
//! incidental word ("test", "use"). RRF gives both lists the same say, so that noise pushed
//! right notes out of the top three (recall@3 0.85 against 0.975 for the embeddings alone on
//! benches/memory_paraphrase.json). Here the lexical side adds `LEXICAL_WEIGHT × coverage³`,
//! where coverage is the share of the query's IDF mass the entry holds: a note holding one
//! common word of a paraphrase gains almost nothing; a note holding the query's identifier
//! gains enough to rise above notes that are merely close in meaning.

use crate::bm25::Bm25;
use crate::embed::cosine;
use crate::index::Index;
use crate::source::FileKind;
use std::path::PathBuf;

/// What a full-coverage lexical match adds to a cosine similarity (which is at most 1).
/// Chosen on benches/memory_paraphrase.json only: with the cube, recall@3 there stays at the
/// embeddings' own 0.975 for any weight from 0.2 to 0.8 (with the square it drops from 0.4
/// on); 0.5 is the middle of that range. benches/memory_heldout.json was never used to tune.
const LEXICAL_WEIGHT: f32 = 0.5;

/// Which rankings answer a query: `Hybrid` by default; the other two are the components
/// alone (`/memory search --ranking`), to see which side found or missed a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    Hybrid,
    Lexical,
    Dense,
}

impl Ranking {
    pub fn parse(s: &str) -> Option<Ranking> {
        match s {
            "hybrid" => Some(Ranking::Hybrid),
            "bm25" => Some(Ranking::Lexical),
            "embeddings" => Some(Ranking::Dense),
            _ => None,
        }
    }
}

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
        self.search_with(query, query_vec, k, Ranking::Hybrid)
    }

    /// `search` with a choice of ranking. Without vectors every ranking is BM25's.
    pub fn search_with(
        &self,
        query: &str,
        query_vec: Option<&[f32]>,
        k: usize,
        ranking: Ranking,
    ) -> Vec<Hit> {
        let similarity: Option<Vec<f32>> = match query_vec {
            Some(q) if self.index.vectors.len() == self.slots.len() && !q.is_empty() => {
                Some(self.index.vectors.iter().map(|v| cosine(q, v)).collect())
            }
            _ => None,
        };
        let scored: Vec<(usize, f32)> = match (similarity, ranking) {
            (None, _) | (Some(_), Ranking::Lexical) => self.bm25.rank(query),
            (Some(sim), Ranking::Dense) => best_first(
                sim.iter()
                    .enumerate()
                    .map(|(i, s)| (i, *s))
                    .filter(|(_, s)| *s > 0.0)
                    .collect(),
                &sim,
            ),
            (Some(sim), Ranking::Hybrid) => {
                let mut fused: Vec<f32> = sim.iter().map(|s| s.max(0.0)).collect();
                for m in self.bm25.matches(query) {
                    fused[m.doc] += LEXICAL_WEIGHT * m.coverage.powi(3);
                }
                best_first(
                    fused
                        .into_iter()
                        .enumerate()
                        .filter(|(_, s)| *s > 0.0)
                        .collect(),
                    &sim,
                )
            }
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

/// Highest score first; equal scores: the closer in meaning first, then index order.
fn best_first(mut v: Vec<(usize, f32)>, similarity: &[f32]) -> Vec<(usize, f32)> {
    v.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(similarity[b.0].total_cmp(&similarity[a.0]))
            .then(a.0.cmp(&b.0))
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::FileRecord;
    use crate::source::Chunk;

    /// A searcher over one file of entries with the given vectors (unit length or zero).
    fn searcher(entries: &[(&str, [f32; 3])]) -> Searcher {
        let chunks = entries
            .iter()
            .enumerate()
            .map(|(i, (text, _))| Chunk {
                id: format!("e{i}"),
                line_start: i + 1,
                line_end: i + 1,
                text: text.to_string(),
                src: None,
                when: None,
            })
            .collect();
        let vectors = entries
            .iter()
            .map(|(_, v)| {
                let mut v = v.to_vec();
                crate::embed::normalize(&mut v);
                v
            })
            .collect();
        Searcher::new(Index {
            provider: "test".into(),
            dims: 3,
            files: vec![FileRecord {
                path: PathBuf::from("MEMORY.md"),
                kind: FileKind::ProjectMemory,
                size: 0,
                mtime_ns: 0,
                chunks,
            }],
            vectors,
        })
    }

    fn ids(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.id.as_str()).collect()
    }

    /// An identifier the embeddings know nothing about (its vector points nowhere near its
    /// note): the note holding it still comes first, above notes merely close in meaning.
    #[test]
    fn a_keyword_only_query_finds_its_note() {
        let s = searcher(&[
            (
                "Restart the build when the cache is stale",
                [0.35, 1.0, 0.0],
            ),
            ("The license server runs on build-03", [0.3, 1.0, 0.0]),
            ("Error E1042 means flexlm is down", [0.0, 1.0, 0.0]),
            ("Builds fail when the disk is full", [0.25, 1.0, 0.0]),
            ("Nightly jobs start at two", [0.2, 1.0, 0.0]),
        ]);
        let q = [1.0, 0.0, 0.0];
        let hits = s.search("E1042", Some(&q), 3);
        assert_eq!(hits[0].id, "e2", "{:?}", ids(&hits));
        // The embeddings alone miss it: it is the reason for the lexical side.
        let dense = s.search_with("E1042", Some(&q), 3, Ranking::Dense);
        assert!(!ids(&dense).contains(&"e2"), "{:?}", ids(&dense));
    }

    /// A paraphrase sharing only a common word with many notes: those BM25 matches must
    /// not push the note closest in meaning out of the top three.
    #[test]
    fn bm25_noise_does_not_push_a_paraphrase_hit_below_three() {
        let s = searcher(&[
            ("Flaky test suites are retried twice", [0.55, 1.0, 0.0]),
            ("The test database is reset nightly", [0.5, 1.0, 0.0]),
            ("Run pytest -q from the repository root", [1.0, 0.45, 0.0]),
            ("Every test file ends in _test.go", [0.5, 1.0, 0.0]),
            ("Slow test cases are marked as such", [0.45, 1.0, 0.0]),
            (
                "Snapshot test output lives in __snapshots__",
                [0.45, 1.0, 0.0],
            ),
            ("Deploy on Tuesdays", [0.0, 0.0, 1.0]),
        ]);
        let q = [1.0, 0.0, 0.0];
        let query = "which tool executes our unit tests";
        let lexical = s.search_with(query, Some(&q), 5, Ranking::Lexical);
        assert!(!ids(&lexical).contains(&"e2"), "{:?}", ids(&lexical));
        let hits = s.search(query, Some(&q), 3);
        assert_eq!(hits[0].id, "e2", "{:?}", ids(&hits));
    }

    /// A query all of whose rare words one note holds: that note wins even when another is
    /// a little closer in meaning.
    #[test]
    fn full_coverage_of_rare_terms_outweighs_a_small_similarity_gap() {
        let s = searcher(&[
            ("Postgres is reached through DATABASE_URL", [0.8, 0.6, 0.0]),
            ("The database is backed up nightly", [0.9, 0.44, 0.0]),
            ("Redis caches sessions", [0.3, 0.95, 0.0]),
        ]);
        let q = [1.0, 0.0, 0.0];
        let hits = s.search("DATABASE_URL postgres", Some(&q), 3);
        assert_eq!(ids(&hits)[0], "e0");
        // Without vectors, every ranking is BM25's.
        let plain = s.search_with("DATABASE_URL postgres", None, 3, Ranking::Dense);
        assert_eq!(ids(&plain), ["e0", "e1"]);
    }
}
