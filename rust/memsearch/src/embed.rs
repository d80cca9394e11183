//! Text → vector. `local`: the static model shipped in the wheel (a token table distilled
//! from all-MiniLM-L6-v2; a text's vector is the sum of its tokens' rows weighted by their
//! inverse document frequency over the indexed entries, `##` continuation pieces at half
//! weight, L2-normalised); `gateway`: POST `{base}/embeddings` on the configured endpoint;
//! `bm25`: none.

use crate::tokenize::{Piece, WordPiece};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The shipped model's folder inside the installed package, set once by the Python
/// extension at import (`yuyao/models/memory-embed`); `YUYAO_EMBED_MODEL_DIR` overrides it.
static PACKAGE_MODEL_DIR: OnceLock<PathBuf> = OnceLock::new();

pub fn set_package_model_dir(dir: PathBuf) {
    let _ = PACKAGE_MODEL_DIR.set(dir);
}

pub fn model_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("YUYAO_EMBED_MODEL_DIR") {
        return Some(PathBuf::from(d));
    }
    PACKAGE_MODEL_DIR.get().cloned()
}

/// The identity of the shipped model and of how its vectors are made, stored with every
/// index built from it: an index of another identity (vectors that mean something else,
/// such as the plain token means of `local:minilm-l6-static-256-int8`) is rebuilt, never
/// mixed with new vectors.
pub const LOCAL_MODEL_ID: &str = "local:minilm-l6-static-256-int8:idf-halfcont";

/// What a `##` continuation piece weighs against a word's first piece. The first piece of a
/// split word carries most of its meaning; the later ones ("##guard", "##42") are shared by
/// unrelated words, and a word split in four would otherwise outweigh a whole word four
/// times (docs/memory.md, "How memory-search ranks").
const CONTINUATION_WEIGHT: f32 = 0.5;

/// Document frequencies of the local model's tokens over the indexed entries: the weight of
/// a token in an entry or a query is its BM25 inverse document frequency (the formula of
/// bm25.rs over the same entries), so what every note of this memory says ("service",
/// "the", ".") counts less than what tells notes apart. The table's own rows are already
/// weighted by an estimate of general-English frequency (MODEL.md); this adds the frequency
/// in this memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TermStats {
    /// How many entries the frequencies were counted over.
    pub entries: u32,
    /// Token id → the number of entries holding it.
    pub df: HashMap<u32, u32>,
}

impl TermStats {
    /// Counts each token once per entry.
    pub fn new<'a>(entries: impl Iterator<Item = &'a [Piece]>) -> TermStats {
        let mut stats = TermStats::default();
        let mut seen: Vec<u32> = Vec::new();
        for pieces in entries {
            stats.entries += 1;
            seen.clear();
            seen.extend(pieces.iter().map(|p| p.id));
            seen.sort_unstable();
            seen.dedup();
            for &id in &seen {
                *stats.df.entry(id).or_default() += 1;
            }
        }
        stats
    }

    /// BM25's IDF: ln((N − df + 0.5) / (df + 0.5) + 1), always positive; a token no entry
    /// holds gets the highest weight.
    pub fn idf(&self, id: u32) -> f32 {
        let n = self.entries as f32;
        let df = self.df.get(&id).copied().unwrap_or(0) as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }
}

pub struct StaticModel {
    dims: usize,
    scales: Vec<f32>,
    table: Vec<i8>,
    tokenizer: WordPiece,
}

impl StaticModel {
    /// Reads `embeddings.bin` (`YYSE0001`, rows, dims, one f32 scale per row, rows×dims
    /// int8) and `vocab.txt` from `dir`.
    pub fn load(dir: &Path) -> Result<StaticModel, String> {
        let bin = std::fs::read(dir.join("embeddings.bin"))
            .map_err(|e| format!("cannot read {}: {e}", dir.join("embeddings.bin").display()))?;
        let vocab = std::fs::read_to_string(dir.join("vocab.txt"))
            .map_err(|e| format!("cannot read {}: {e}", dir.join("vocab.txt").display()))?;
        if bin.len() < 16 || &bin[..8] != b"YYSE0001" {
            return Err(format!("{}: not a yuyao embedding table", dir.display()));
        }
        let rows = u32::from_le_bytes(bin[8..12].try_into().unwrap_or_default()) as usize;
        let dims = u32::from_le_bytes(bin[12..16].try_into().unwrap_or_default()) as usize;
        let scales_end = 16 + rows * 4;
        if bin.len() != scales_end + rows * dims || dims == 0 {
            return Err(format!("{}: truncated embedding table", dir.display()));
        }
        let scales = bin[16..scales_end]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let table = bin[scales_end..].iter().map(|&b| b as i8).collect();
        let tokenizer = WordPiece::from_vocab(&vocab);
        if tokenizer.len() != rows {
            return Err(format!(
                "{}: vocab.txt has {} tokens, the table {rows} rows",
                dir.display(),
                tokenizer.len()
            ));
        }
        Ok(StaticModel {
            dims,
            scales,
            table,
            tokenizer,
        })
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn pieces(&self, text: &str) -> Vec<Piece> {
        self.tokenizer.pieces(text)
    }

    /// The text's vector with the token weights of `stats` (see the module comment).
    pub fn embed(&self, text: &str, stats: &TermStats) -> Vec<f32> {
        self.embed_pieces(&self.pieces(text), stats)
    }

    /// The sum of the pieces' rows, each times its IDF in `stats` (half for a continuation
    /// piece), L2-normalised (zero when there is no piece).
    pub fn embed_pieces(&self, pieces: &[Piece], stats: &TermStats) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        for p in pieces {
            let id = p.id as usize;
            let mut w = self.scales[id] * stats.idf(p.id);
            if p.continuation {
                w *= CONTINUATION_WEIGHT;
            }
            let row = &self.table[id * self.dims..(id + 1) * self.dims];
            for (acc, &q) in v.iter_mut().zip(row) {
                *acc += q as f32 * w;
            }
        }
        normalize(&mut v);
        v
    }

    /// The vectors of a whole memory's entries and the statistics they were weighted with
    /// (each text tokenized once).
    pub fn embed_corpus(&self, texts: &[&str]) -> (TermStats, Vec<Vec<f32>>) {
        let pieces: Vec<Vec<Piece>> = texts.iter().map(|t| self.pieces(t)).collect();
        let stats = TermStats::new(pieces.iter().map(Vec::as_slice));
        let vectors = pieces
            .iter()
            .map(|p| self.embed_pieces(p, &stats))
            .collect();
        (stats, vectors)
    }
}

pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// The shipped model, loaded once per process.
pub fn local_model() -> Result<Arc<StaticModel>, String> {
    static CACHE: Mutex<Option<(PathBuf, Arc<StaticModel>)>> = Mutex::new(None);
    let dir = model_dir().ok_or(
        "the embedding model is not installed (yuyao/models/memory-embed is missing); \
         set memorySearch.provider to bm25 or gateway",
    )?;
    let mut slot = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((d, m)) = slot.as_ref()
        && *d == dir
    {
        return Ok(m.clone());
    }
    let m = Arc::new(StaticModel::load(&dir)?);
    *slot = Some((dir, m.clone()));
    Ok(m)
}

/// Where vectors come from (`memorySearch.provider`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provider {
    Local,
    Gateway(Gateway),
    Bm25,
}

/// The configured OpenAI-compatible endpoint, for `POST {base}/embeddings`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

impl Provider {
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Local => "local",
            Provider::Gateway(_) => "gateway",
            Provider::Bm25 => "bm25",
        }
    }

    /// What an index built with this provider records: vectors of another id are rebuilt.
    pub fn id(&self) -> String {
        match self {
            Provider::Local => LOCAL_MODEL_ID.to_string(),
            Provider::Gateway(g) => format!("gateway:{}:{}", g.base_url, g.model),
            Provider::Bm25 => "bm25".to_string(),
        }
    }
}

/// Embeds texts with the provider; `Ok(None)` for `bm25`. `stats` are the indexed
/// entries' token statistics, which the local model weights tokens with (the gateway's
/// vectors do not use them).
pub fn embed_all(
    provider: &Provider,
    texts: &[String],
    stats: &TermStats,
) -> Result<Option<Vec<Vec<f32>>>, String> {
    match provider {
        Provider::Bm25 => Ok(None),
        Provider::Local => {
            let m = local_model()?;
            Ok(Some(texts.iter().map(|t| m.embed(t, stats)).collect()))
        }
        Provider::Gateway(g) => {
            let mut out = Vec::with_capacity(texts.len());
            for batch in texts.chunks(128) {
                out.extend(gateway_embed(g, batch)?);
            }
            Ok(Some(out))
        }
    }
}

/// One `POST {base}/embeddings` on a thread of its own with its own small runtime, so it
/// can be called from any context (a tool's blocking thread, a slash command, a test).
fn gateway_embed(g: &Gateway, batch: &[String]) -> Result<Vec<Vec<f32>>, String> {
    let g = g.clone();
    let batch = batch.to_vec();
    let worker = std::thread::spawn(move || -> Result<Vec<Vec<f32>>, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let url = format!("{}/embeddings", g.base_url.trim_end_matches('/'));
            let mut req = reqwest::Client::new()
                .post(&url)
                .timeout(std::time::Duration::from_secs(60))
                .json(&serde_json::json!({"model": g.model, "input": batch}));
            if let Some(k) = &g.api_key {
                req = req.bearer_auth(k);
            }
            let resp = req
                .send()
                .await
                .map_err(|e| format!("embeddings request to {url} failed: {e}"))?;
            let status = resp.status();
            let body: serde_json::Value = resp
                .json()
                .await
                .map_err(|e| format!("embeddings answer from {url} is not JSON: {e}"))?;
            if !status.is_success() {
                return Err(format!(
                    "embeddings request to {url}: HTTP {status}: {body}"
                ));
            }
            parse_embeddings(&body, batch.len())
        })
    });
    worker
        .join()
        .map_err(|_| "the embeddings request thread panicked".to_string())?
}

fn parse_embeddings(body: &serde_json::Value, n: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = body["data"]
        .as_array()
        .ok_or("embeddings answer without a data array")?;
    let mut out = vec![Vec::new(); n];
    for (pos, item) in data.iter().enumerate() {
        let i = item["index"].as_u64().map(|i| i as usize).unwrap_or(pos);
        let mut v: Vec<f32> = item["embedding"]
            .as_array()
            .ok_or("embeddings answer: an item without an embedding")?
            .iter()
            .map(|x| x.as_f64().unwrap_or(0.0) as f32)
            .collect();
        normalize(&mut v);
        if i < n {
            out[i] = v;
        }
    }
    if out.iter().any(|v| v.is_empty()) {
        return Err(format!(
            "embeddings answer has {} vectors for {n} texts",
            data.len()
        ));
    }
    Ok(out)
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_model(dir: &Path, rows: &[[i8; 2]], scales: &[f32], vocab: &str) {
        let mut b = b"YYSE0001".to_vec();
        b.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        for s in scales {
            b.extend_from_slice(&s.to_le_bytes());
        }
        for r in rows {
            b.extend(r.iter().map(|&x| x as u8));
        }
        std::fs::write(dir.join("embeddings.bin"), b).unwrap();
        std::fs::write(dir.join("vocab.txt"), vocab).unwrap();
    }

    #[test]
    fn a_text_is_the_normalised_mean_of_its_tokens_rows() {
        let d = tempfile::tempdir().unwrap();
        write_model(
            d.path(),
            &[[0, 0], [127, 0], [0, 127]],
            &[1.0, 0.5, 0.5],
            "[UNK]\nbun\nnpm\n",
        );
        let m = StaticModel::load(d.path()).unwrap();
        // No statistics (an empty memory): every token weighs the same.
        let none = TermStats::default();
        let v = m.embed("bun npm unknownword", &none);
        assert!(
            (v[0] - v[1]).abs() < 1e-6 && (v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6
        );
        assert_eq!(m.embed("nothing known", &none), vec![0.0, 0.0]);
    }

    /// A token most entries hold weighs less than one that tells them apart, in the entries
    /// and in a query; a `##` piece weighs half of a first piece.
    #[test]
    fn tokens_are_weighted_by_their_rarity_among_the_entries() {
        let d = tempfile::tempdir().unwrap();
        write_model(
            d.path(),
            &[[0, 0], [127, 0], [0, 127], [0, 127]],
            &[1.0, 1.0, 1.0, 1.0],
            "[UNK]\nbun\nnpm\n##pm\n",
        );
        let m = StaticModel::load(d.path()).unwrap();
        // "bun" in all three entries, "npm" in one.
        let (stats, vectors) = m.embed_corpus(&["bun npm", "bun", "bun"]);
        assert_eq!((stats.entries, stats.df[&1], stats.df[&2]), (3, 3, 1));
        assert!(stats.idf(2) > stats.idf(1) && stats.idf(1) > 0.0);
        // Unweighted, "bun npm" would sit at 45°; the rarer "npm" pulls it towards itself.
        assert!(vectors[0][1] > vectors[0][0], "{:?}", vectors[0]);
        assert_eq!(vectors[1], vec![1.0, 0.0]);
        assert_eq!(m.embed("bun npm", &stats), vectors[0]);
        // "bunpm" is "bun" + "##pm": with equal statistics the continuation weighs half.
        let v = m.embed("bunpm", &TermStats::default());
        assert!((v[1] / v[0] - 0.5).abs() < 1e-5, "{v:?}");
    }

    #[test]
    fn a_truncated_table_is_refused() {
        let d = tempfile::tempdir().unwrap();
        write_model(d.path(), &[[1, 1]], &[1.0], "a\nb\n");
        assert!(
            StaticModel::load(d.path())
                .err()
                .unwrap_or_default()
                .contains("vocab.txt has 2 tokens")
        );
        std::fs::write(
            d.path().join("embeddings.bin"),
            b"YYSE0001\x05\0\0\0\x02\0\0\0",
        )
        .unwrap();
        assert!(
            StaticModel::load(d.path())
                .err()
                .unwrap_or_default()
                .contains("truncated")
        );
    }

    #[test]
    fn gateway_answers_are_put_back_in_input_order() {
        let body = serde_json::json!({"data": [
            {"index": 1, "embedding": [0.0, 2.0]},
            {"index": 0, "embedding": [3.0, 0.0]},
        ]});
        assert_eq!(
            parse_embeddings(&body, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
        assert!(parse_embeddings(&body, 3).is_err());
    }
}
