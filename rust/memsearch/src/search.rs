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
//!
//! With the local model the vectors are compared after removing what all the entries share:
//! the static vectors of any two texts point roughly the same way (a common component, the
//! same for every note), so a note near that common direction is close to every query and
//! crowds the top three ("hubness"). Subtracting the entries' mean from them and from the
//! query before the cosine leaves what tells notes apart.

use crate::bm25::Bm25;
use crate::embed::{LOCAL_MODEL_ID, cosine, normalize};
use crate::index::Index;
use crate::source::FileKind;
use std::path::PathBuf;

/// What a full-coverage lexical match adds to a cosine similarity (which is at most 1).
/// Chosen on benches/memory_paraphrase.json only: with the cube, recall@3 there stays at the
/// embeddings' own 0.975 for any weight from 0.2 to 0.8 (with the square it drops from 0.4
/// on); 0.5 is the middle of that range. benches/memory_heldout.json was never used to tune.
const LEXICAL_WEIGHT: f32 = 0.5;

/// The weight of a zero prior in the entries' mean: the common component removed is
/// `sum / (N + COMMON_PRIOR)`, so a memory of one or two entries keeps its vectors (a lone
/// entry minus the plain mean would be zero) while one of hundreds loses its full mean.
const COMMON_PRIOR: f32 = 8.0;

/// Which rankings answer a query: `Hybrid` by default; the other two are the components
/// alone (`/memory search --ranking`), to see which side found or missed a note.
/// `Encoder` is the re-ranking encoder's cosine over every entry (it encodes each entry once,
/// then reads it from the cache: slow the first time on a large memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    Hybrid,
    Lexical,
    Dense,
    Encoder,
}

impl Ranking {
    pub fn parse(s: &str) -> Option<Ranking> {
        match s {
            "hybrid" => Some(Ranking::Hybrid),
            "bm25" => Some(Ranking::Lexical),
            "embeddings" => Some(Ranking::Dense),
            "encoder" => Some(Ranking::Encoder),
            _ => None,
        }
    }
}

/// How many of the static hybrid ranking's best entries the encoder re-orders. Measured on the
/// four bench sets together (rust/memsearch/tests/rerank_sets.rs, docs/memory.md "The re-ranking
/// encoder"): the static top 10 misses a question's note for 1–2 of 40 questions per set, the
/// top 20 for at most one, and with 20 every set reaches the encoder's own 0.950 (10: 0.925 on
/// two sets; 30 adds nothing). It bounds a cold query's work: twenty notes and the query through
/// the encoder, each note once (its vector is cached).
pub const RERANK_K: usize = 20;

/// What the static hybrid score weighs in the re-ranked score (`encoder cosine + this × static
/// score`). Measured with the top 20 at 0, 0.1, 0.25, 0.5 and 1: only 0 keeps all four sets at
/// 0.950 or above (0.25 gains one question on the project's set and loses one on heldout3), so
/// the encoder's cosine alone orders them.
pub const RERANK_STATIC_WEIGHT: f32 = 0.0;

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
    /// The index; with the local model its vectors are held with the common component
    /// removed (and normalised again), as they are ranked.
    pub index: Index,
    bm25: Bm25,
    /// (file, chunk) of every chunk, in vector order.
    slots: Vec<(usize, usize)>,
    /// The common component removed from the vectors, to remove from a query too.
    common: Option<Vec<f32>>,
    /// With the common component removed, which entries have a vector (a known token): a
    /// centred cosine below zero means "less like the query than the memory's average
    /// entry", not "unrelated", so these stay candidates, ranked below the positive ones.
    /// (The raw static cosines these replace were positive for any two such texts.)
    has_vector: Vec<bool>,
    /// The re-ranking encoder's vectors of the entries that reached a re-ranking, read from
    /// the index folder on first use (`MemorySearch::encoder_similarities`).
    pub encoded: std::sync::Mutex<Option<crate::encoder::VectorCache>>,
}

impl Searcher {
    pub fn new(mut index: Index) -> Searcher {
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
        let common = (index.provider == LOCAL_MODEL_ID && !index.vectors.is_empty())
            .then(|| remove_common_component(&mut index.vectors));
        let has_vector = match common {
            Some(_) => index
                .vectors
                .iter()
                .map(|v| v.iter().any(|x| *x != 0.0))
                .collect(),
            None => Vec::new(),
        };
        Searcher {
            index,
            bm25,
            slots,
            common,
            has_vector,
            encoded: std::sync::Mutex::new(None),
        }
    }

    /// The `k` best chunks for `query`; `query_vec` is the query's embedding (`None` when the
    /// provider is `bm25`, or the index has no vectors).
    pub fn search(&self, query: &str, query_vec: Option<&[f32]>, k: usize) -> Vec<Hit> {
        self.search_with(query, query_vec, k, Ranking::Hybrid)
    }

    /// `search` with a choice of ranking. Without vectors every ranking is BM25's (and so is
    /// `Encoder` here: the encoder's ranking is `MemorySearch`'s, which holds the encoder).
    pub fn search_with(
        &self,
        query: &str,
        query_vec: Option<&[f32]>,
        k: usize,
        ranking: Ranking,
    ) -> Vec<Hit> {
        self.ranked(query, query_vec, ranking)
            .into_iter()
            .take(k)
            .map(|(i, score)| self.hit(i, score))
            .collect()
    }

    /// How many entries the index holds (slots `0..len`).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The text of entry `i`.
    pub fn text(&self, i: usize) -> &str {
        let (f, c) = self.slots[i];
        &self.index.files[f].chunks[c].text
    }

    /// Entry `i` as a hit with `score`.
    pub fn hit(&self, i: usize, score: f32) -> Hit {
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
    }

    /// The lexical lift of each entry holding a query term (`LEXICAL_WEIGHT × coverage³`).
    pub fn lexical_lift(&self, query: &str) -> Vec<(usize, f32)> {
        self.bm25
            .matches(query)
            .into_iter()
            .map(|m| (m.doc, LEXICAL_WEIGHT * m.coverage.powi(3)))
            .collect()
    }

    /// Every candidate entry (slot, score), best first.
    pub fn ranked(
        &self,
        query: &str,
        query_vec: Option<&[f32]>,
        ranking: Ranking,
    ) -> Vec<(usize, f32)> {
        let similarity: Option<Vec<f32>> = match query_vec {
            Some(q) if self.index.vectors.len() == self.slots.len() && !q.is_empty() => {
                let q = match &self.common {
                    Some(m) if m.len() == q.len() => {
                        let mut c: Vec<f32> = q.iter().zip(m).map(|(x, y)| x - y).collect();
                        normalize(&mut c);
                        c
                    }
                    _ => q.to_vec(),
                };
                Some(self.index.vectors.iter().map(|v| cosine(&q, v)).collect())
            }
            _ => None,
        };
        let candidate = |i: usize, s: f32| s > 0.0 || self.has_vector.get(i) == Some(&true);
        match (similarity, ranking) {
            (None, _) | (Some(_), Ranking::Lexical | Ranking::Encoder) => self.bm25.rank(query),
            (Some(sim), Ranking::Dense) => best_first(
                sim.iter()
                    .enumerate()
                    .map(|(i, s)| (i, *s))
                    .filter(|&(i, s)| candidate(i, s))
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
                        .filter(|&(i, s)| candidate(i, s))
                        .collect(),
                    &sim,
                )
            }
        }
    }
}

/// The static ranking `ranked` with its best entries (as many as `encoder_sim` holds, the
/// encoder's cosine of each to the query, in their order) re-ordered by that cosine plus
/// `static_weight` × their static score; the entries after them keep their order and score.
pub fn rerank(
    mut ranked: Vec<(usize, f32)>,
    encoder_sim: &[f32],
    static_weight: f32,
) -> Vec<(usize, f32)> {
    let n = ranked.len().min(encoder_sim.len());
    let mut head: Vec<(usize, f32, usize)> = ranked[..n]
        .iter()
        .zip(encoder_sim)
        .enumerate()
        .map(|(pos, (&(i, s), &e))| (i, e + static_weight * s, pos))
        .collect();
    // Equal scores keep the static order.
    head.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    for (slot, (i, s, _)) in ranked.iter_mut().zip(head) {
        *slot = (i, s);
    }
    ranked
}

/// Subtracts the shrunk mean of `vectors` (see `COMMON_PRIOR`) from each of them and
/// normalises them again; returns what was subtracted. Zero vectors (texts without a known
/// token) stay zero, so they still match nothing.
fn remove_common_component(vectors: &mut [Vec<f32>]) -> Vec<f32> {
    let dims = vectors.iter().map(Vec::len).max().unwrap_or(0);
    let mut mean = vec![0f32; dims];
    for v in vectors.iter().filter(|v| v.len() == dims) {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += x;
        }
    }
    let denominator = vectors.len() as f32 + COMMON_PRIOR;
    mean.iter_mut().for_each(|m| *m /= denominator);
    for v in vectors.iter_mut() {
        if v.len() == dims && v.iter().any(|x| *x != 0.0) {
            v.iter_mut().zip(&mean).for_each(|(x, m)| *x -= m);
            normalize(v);
        }
    }
    mean
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
        searcher_of("test", entries)
    }

    /// `searcher` with the index's provider identity.
    fn searcher_of(provider: &str, entries: &[(&str, [f32; 3])]) -> Searcher {
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
            provider: provider.into(),
            dims: 3,
            files: vec![FileRecord {
                path: PathBuf::from("MEMORY.md"),
                kind: FileKind::ProjectMemory,
                size: 0,
                mtime_ns: 0,
                chunks,
            }],
            vectors,
            terms: Default::default(),
        })
    }

    fn ids(hits: &[Hit]) -> Vec<&str> {
        hits.iter().map(|h| h.id.as_str()).collect()
    }

    /// A memory whose entries all lean the same way, one of them (e0) along that common
    /// direction alone: a query near it in raw cosine is about e1's subject. With the local
    /// model's index the common component is removed first and e1 ranks first; an index of
    /// another provider keeps the raw cosine.
    #[test]
    fn the_common_component_of_the_local_vectors_is_removed_before_the_cosine() {
        let mut entries = vec![
            ("Notes about everything", [1.0, 0.0, 0.0]),
            ("The subject asked about", [1.0, 1.0, 0.0]),
        ];
        for _ in 0..3 {
            entries.push(("Another subject", [1.0, 0.0, 0.5]));
            entries.push(("A third subject", [1.0, 0.0, -0.5]));
        }
        let mut q = vec![1.0, 0.4, 0.0];
        crate::embed::normalize(&mut q);
        let raw = searcher_of("test", &entries);
        assert_eq!(
            ids(&raw.search_with("x", Some(&q), 2, Ranking::Dense)),
            ["e0", "e1"]
        );
        let local = searcher_of(LOCAL_MODEL_ID, &entries);
        let hits = local.search_with("x", Some(&q), 2, Ranking::Dense);
        assert_eq!(ids(&hits), ["e1", "e0"]);
        // The score is the cosine of the centred vectors: sum / (N + COMMON_PRIOR) removed.
        let n = entries.len() as f32;
        let unit: Vec<Vec<f32>> = entries
            .iter()
            .map(|(_, v)| {
                let mut v = v.to_vec();
                crate::embed::normalize(&mut v);
                v
            })
            .collect();
        let mean: Vec<f32> = (0..3)
            .map(|d| unit.iter().map(|v| v[d]).sum::<f32>() / (n + COMMON_PRIOR))
            .collect();
        let centred = |v: &[f32]| {
            let mut c: Vec<f32> = v.iter().zip(&mean).map(|(x, m)| x - m).collect();
            crate::embed::normalize(&mut c);
            c
        };
        let want = cosine(&centred(&q), &centred(&unit[1]));
        assert!(
            (hits[0].score - want).abs() < 1e-5,
            "{} vs {want}",
            hits[0].score
        );
    }

    /// A memory of one entry keeps its vector (the shrunk mean is a ninth of it); an entry
    /// below the mean stays a candidate (a memory of five entries still answers three hits);
    /// an entry without a known token (zero vector) still matches nothing.
    #[test]
    fn a_lone_entry_is_not_cancelled_and_a_zero_vector_stays_unmatched() {
        let one = searcher_of(LOCAL_MODEL_ID, &[("Use bun", [0.6, 0.8, 0.0])]);
        let hits = one.search_with("x", Some(&[0.6, 0.8, 0.0]), 3, Ranking::Dense);
        assert_eq!(ids(&hits), ["e0"]);
        assert!((hits[0].score - 1.0).abs() < 1e-5);
        let two = searcher_of(
            LOCAL_MODEL_ID,
            &[("Use bun", [0.6, 0.8, 0.0]), ("§§§", [0.0, 0.0, 0.0])],
        );
        let hits = two.search_with("x", Some(&[0.0, 0.0, 1.0]), 3, Ranking::Dense);
        // e0 is less like this query than the (shrunk) mean is: still a candidate, e1 never.
        assert_eq!(ids(&hits), ["e0"]);
        assert!(hits[0].score < 0.0, "{}", hits[0].score);
        let hits = two.search("x", Some(&[0.0, 0.0, 1.0]), 3);
        assert_eq!(ids(&hits), ["e0"]);
        assert_eq!(hits[0].score, 0.0);
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

    /// The re-ranking orders the head by the encoder's cosine (equal cosines keep the static
    /// order) and leaves the entries after it as they were.
    #[test]
    fn rerank_reorders_the_head_only() {
        let ranked = vec![(4, 0.9), (2, 0.8), (7, 0.7), (1, 0.6), (3, 0.5)];
        let out = rerank(ranked, &[0.1, 0.5, 0.3, 0.5], 0.0);
        assert_eq!(out, vec![(2, 0.5), (1, 0.5), (7, 0.3), (4, 0.1), (3, 0.5)]);
        let blended = rerank(vec![(0, 1.0), (1, 0.0)], &[0.2, 0.5], 0.5);
        assert_eq!(blended, vec![(0, 0.7), (1, 0.5)]);
    }
}
