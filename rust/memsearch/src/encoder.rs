//! The re-ranking encoder: all-MiniLM-L6-v2 (sentence-transformers) run in process, exactly as
//! sentence-transformers runs it — BERT WordPiece ids `[CLS] … [SEP]` (at most 256), word +
//! position + token-type embeddings, 6 post-LayerNorm transformer layers (12 heads, hidden 384,
//! intermediate 1536, GELU with erf, LayerNorm ε 1e-12), mean pooling over the tokens, L2
//! normalisation. It re-orders the static ranking's best few (search.rs, docs/memory.md "The
//! re-ranking encoder"): the static table misses paraphrases that need the context the encoder
//! sees ("who hosts our name servers" → the Cloudflare note).
//!
//! Weights come from the data-only package `yuyao_memory_encoder` (built by
//! scripts/build-memory-encoder-wheel.py), file `encoder.bin`:
//! `YYME0001`, u64 LE header length, a JSON header (the shape constants and every tensor's name,
//! kind, shape and offset), then 64-byte-aligned blobs from the end of the header: `f32` tensors
//! as little-endian f32; `q8` matrices as one f32 scale per row then the rows as int8 (value =
//! int8 × the row's scale). Activations are f32; a q8 row is widened to f32 as it is used.

use crate::tokenize::WordPiece;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

const MAGIC: &[u8; 8] = b"YYME0001";

/// The identity of the encoder's vectors, part of every cache key: vectors of another model or
/// another weight encoding are never mixed with these.
pub const ENCODER_ID: &str = "all-minilm-l6-v2:q8-row:mean";

/// The encoder package's folder (`yuyao_memory_encoder`), set once by the Python extension at
/// import when that package is installed; `YUYAO_MEMORY_ENCODER_DIR` overrides it (an empty
/// value, or a folder without `encoder.bin`, means "not installed").
static PACKAGE_ENCODER_DIR: OnceLock<PathBuf> = OnceLock::new();

pub fn set_package_encoder_dir(dir: PathBuf) {
    let _ = PACKAGE_ENCODER_DIR.set(dir);
}

pub fn encoder_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("YUYAO_MEMORY_ENCODER_DIR") {
        return (!d.is_empty()).then(|| PathBuf::from(d));
    }
    PACKAGE_ENCODER_DIR.get().cloned()
}

/// The installed encoder, loaded once per process (and again only if its folder changes);
/// `None` when it is not installed or cannot be read (the search then keeps the static
/// ranking, and `yuyao memory status` says so).
pub fn local_encoder() -> Option<Arc<Encoder>> {
    static CACHE: Mutex<Option<(PathBuf, Option<Arc<Encoder>>)>> = Mutex::new(None);
    let dir = encoder_dir()?;
    let mut slot = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((d, e)) = slot.as_ref()
        && *d == dir
    {
        return e.clone();
    }
    let e = Encoder::load(&dir).ok().map(Arc::new);
    *slot = Some((dir, e.clone()));
    e
}

/// Why the encoder is not available (`None` when it is), for `yuyao memory status`.
pub fn encoder_problem() -> Option<String> {
    let Some(dir) = encoder_dir() else {
        return Some("the yuyao_memory_encoder package is not installed".into());
    };
    local_encoder()
        .is_none()
        .then(|| Encoder::load(&dir).err().unwrap_or_default())
}

/// A matrix of int8 rows, each with its f32 scale.
struct Q8 {
    rows: usize,
    cols: usize,
    scales: Vec<f32>,
    data: Vec<i8>,
}

struct Linear {
    w: Q8,
    b: Vec<f32>,
}

struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_ln: Norm,
    inter: Linear,
    out: Linear,
    out_ln: Norm,
}

pub struct Encoder {
    tokenizer: WordPiece,
    cls: u32,
    sep: u32,
    unk: u32,
    hidden: usize,
    heads: usize,
    max_tokens: usize,
    eps: f32,
    word: Q8,
    position: Vec<f32>,
    token_type: Vec<f32>,
    emb_ln: Norm,
    layers: Vec<Layer>,
}

#[derive(serde::Deserialize)]
struct Header {
    layers: usize,
    hidden: usize,
    heads: usize,
    intermediate: usize,
    max_tokens: usize,
    layer_norm_eps: f32,
    tensors: Vec<TensorEntry>,
}

#[derive(serde::Deserialize)]
struct TensorEntry {
    name: String,
    kind: String,
    shape: Vec<usize>,
    offset: usize,
}

/// The tensors of an `encoder.bin`, by name, each checked against the shape the code expects.
struct Blobs<'a> {
    body: &'a [u8],
    entries: HashMap<&'a str, &'a TensorEntry>,
}

impl Blobs<'_> {
    fn entry(&self, name: &str, kind: &str, shape: &[usize]) -> Result<&TensorEntry, String> {
        let e = self
            .entries
            .get(name)
            .ok_or_else(|| format!("tensor {name} missing"))?;
        if e.kind != kind || e.shape != shape {
            return Err(format!(
                "tensor {name}: {} {:?}, expected {kind} {shape:?}",
                e.kind, e.shape
            ));
        }
        Ok(e)
    }

    fn bytes(&self, offset: usize, len: usize, name: &str) -> Result<&[u8], String> {
        offset
            .checked_add(len)
            .filter(|_| len <= self.body.len())
            .and_then(|end| self.body.get(offset..end))
            .ok_or_else(|| format!("tensor {name} runs past the end of the file"))
    }

    fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let e = self.entry(name, "f32", shape)?;
        let n: usize = shape.iter().product();
        Ok(self
            .bytes(e.offset, n * 4, name)?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    fn q8(&self, name: &str, rows: usize, cols: usize) -> Result<Q8, String> {
        let e = self.entry(name, "q8", &[rows, cols])?;
        let scales = self
            .bytes(e.offset, rows * 4, name)?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let data = self
            .bytes(e.offset.saturating_add(rows * 4), rows * cols, name)?
            .iter()
            .map(|&b| b as i8)
            .collect();
        Ok(Q8 {
            rows,
            cols,
            scales,
            data,
        })
    }

    fn linear(&self, name: &str, rows: usize, cols: usize) -> Result<Linear, String> {
        Ok(Linear {
            w: self.q8(&format!("{name}.weight"), rows, cols)?,
            b: self.f32s(&format!("{name}.bias"), &[rows])?,
        })
    }

    fn norm(&self, name: &str, dims: usize) -> Result<Norm, String> {
        Ok(Norm {
            w: self.f32s(&format!("{name}.weight"), &[dims])?,
            b: self.f32s(&format!("{name}.bias"), &[dims])?,
        })
    }
}

impl Encoder {
    /// Reads `encoder.bin` and `vocab.txt` from `dir` (one read each), checking every tensor's
    /// shape and bounds: a damaged or foreign file is refused, never half-used.
    pub fn load(dir: &Path) -> Result<Encoder, String> {
        let path = dir.join("encoder.bin");
        let raw =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let vocab_path = dir.join("vocab.txt");
        let vocab = std::fs::read_to_string(&vocab_path)
            .map_err(|e| format!("cannot read {}: {e}", vocab_path.display()))?;
        let bad = |why: String| format!("{}: {why}", path.display());
        if raw.len() < 16 || &raw[..8] != MAGIC {
            return Err(bad("not a yuyao encoder file".into()));
        }
        let n = u64::from_le_bytes(raw[8..16].try_into().unwrap_or_default()) as usize;
        let header_bytes = 16usize
            .checked_add(n)
            .and_then(|end| raw.get(16..end))
            .ok_or_else(|| bad("truncated header".into()))?;
        let h: Header =
            serde_json::from_slice(header_bytes).map_err(|e| bad(format!("header: {e}")))?;
        // Bounds far above any small sentence encoder keep every size computed below from
        // overflowing, whatever the header says.
        if h.heads == 0
            || !h.hidden.is_multiple_of(h.heads)
            || !(1..=4096).contains(&h.hidden)
            || !(1..=16384).contains(&h.intermediate)
            || !(2..=8192).contains(&h.max_tokens)
            || !(1..=64).contains(&h.layers)
        {
            return Err(bad("inconsistent shape constants".into()));
        }
        let blobs = Blobs {
            body: &raw[16 + n..],
            entries: h.tensors.iter().map(|t| (t.name.as_str(), t)).collect(),
        };
        let tokenizer = WordPiece::from_vocab(&vocab);
        if tokenizer.len() != vocab.lines().count() || tokenizer.len() > 1 << 20 {
            // A token id is its line number: a repeated line would give ids past the table.
            return Err(bad("vocab.txt repeats a token or is too large".into()));
        }
        let token = |t: &str| {
            tokenizer
                .id(t)
                .ok_or_else(|| bad(format!("vocab.txt has no {t}")))
        };
        let (cls, sep, unk) = (token("[CLS]")?, token("[SEP]")?, token("[UNK]")?);
        let (d, inter) = (h.hidden, h.intermediate);
        let word = blobs
            .q8("word_embeddings", tokenizer.len(), d)
            .map_err(bad)?;
        let mut layers = Vec::with_capacity(h.layers);
        for i in 0..h.layers {
            let p = |s: &str| format!("layer{i}.{s}");
            layers.push(Layer {
                query: blobs.linear(&p("query"), d, d).map_err(bad)?,
                key: blobs.linear(&p("key"), d, d).map_err(bad)?,
                value: blobs.linear(&p("value"), d, d).map_err(bad)?,
                attn_out: blobs.linear(&p("attn_out"), d, d).map_err(bad)?,
                attn_ln: blobs.norm(&p("attn_ln"), d).map_err(bad)?,
                inter: blobs.linear(&p("inter"), inter, d).map_err(bad)?,
                out: blobs.linear(&p("out"), d, inter).map_err(bad)?,
                out_ln: blobs.norm(&p("out_ln"), d).map_err(bad)?,
            });
        }
        Ok(Encoder {
            cls,
            sep,
            unk,
            hidden: d,
            heads: h.heads,
            max_tokens: h.max_tokens,
            eps: h.layer_norm_eps,
            position: blobs
                .f32s("position_embeddings", &[h.max_tokens, d])
                .map_err(bad)?,
            token_type: blobs.f32s("token_type_embeddings", &[2, d]).map_err(bad)?,
            emb_ln: blobs.norm("embeddings.ln", d).map_err(bad)?,
            word,
            layers,
            tokenizer,
        })
    }

    pub fn dims(&self) -> usize {
        self.hidden
    }

    /// The ids the model reads: `[CLS]`, the text's WordPiece ids (unknown words as `[UNK]`),
    /// `[SEP]`; cut to `max_tokens` as sentence-transformers truncates (the end is dropped,
    /// `[SEP]` kept).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.cls];
        ids.extend(self.tokenizer.ids_with_unknown(text, self.unk));
        ids.truncate(self.max_tokens - 1);
        ids.push(self.sep);
        ids
    }

    /// The text's sentence vector (unit length).
    pub fn encode(&self, text: &str) -> Vec<f32> {
        let ids = self.token_ids(text);
        let (t, d) = (ids.len(), self.hidden);
        let mut x = vec![0f32; t * d];
        for (pos, &id) in ids.iter().enumerate() {
            let row = &mut x[pos * d..(pos + 1) * d];
            let w = &self.word;
            let scale = w.scales[id as usize];
            let q = &w.data[id as usize * w.cols..(id as usize + 1) * w.cols];
            for (j, r) in row.iter_mut().enumerate() {
                *r = q[j] as f32 * scale + self.position[pos * d + j] + self.token_type[j];
            }
            layer_norm(row, &self.emb_ln, self.eps);
        }
        for layer in &self.layers {
            self.layer(layer, &mut x, t);
        }
        let mut v = vec![0f32; d];
        for row in x.chunks_exact(d) {
            v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
        }
        crate::embed::normalize(&mut v);
        v
    }

    /// The vectors of `texts`, in their order, encoded on up to four threads (one text each
    /// at a time): a cold query's re-ranked notes are independent forward passes.
    pub fn encode_many(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 4)
            .min(texts.len());
        if threads <= 1 {
            return texts.iter().map(|t| self.encode(t)).collect();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let done: Vec<Vec<(usize, Vec<f32>)>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(t) = texts.get(i) else { break };
                            mine.push((i, self.encode(t)));
                        }
                        mine
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_default())
                .collect()
        });
        for (i, v) in done.into_iter().flatten() {
            out[i] = Some(v);
        }
        // A worker that panicked left its texts out: encode them here (the panic repeats).
        out.into_iter()
            .zip(texts)
            .map(|(v, t)| v.unwrap_or_else(|| self.encode(t)))
            .collect()
    }

    fn layer(&self, l: &Layer, x: &mut [f32], t: usize) {
        let d = self.hidden;
        let q = linear(&l.query, x, t);
        let k = linear(&l.key, x, t);
        let v = linear(&l.value, x, t);
        let hd = d / self.heads;
        let scale = 1.0 / (hd as f32).sqrt();
        let mut context = vec![0f32; t * d];
        let mut scores = vec![0f32; t];
        for h in 0..self.heads {
            let cols = h * hd..(h + 1) * hd;
            for i in 0..t {
                let qi = &q[i * d..][cols.clone()];
                for (j, s) in scores.iter_mut().enumerate() {
                    *s = dot(qi, &k[j * d..][cols.clone()]) * scale;
                }
                let top = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for s in scores.iter_mut() {
                    *s = (*s - top).exp();
                    sum += *s;
                }
                let out = &mut context[i * d..][cols.clone()];
                for (j, s) in scores.iter().enumerate() {
                    let p = s / sum;
                    let vj = &v[j * d..][cols.clone()];
                    out.iter_mut().zip(vj).for_each(|(o, vv)| *o += p * vv);
                }
            }
        }
        let attn = linear(&l.attn_out, &context, t);
        for (row, a) in x.chunks_exact_mut(d).zip(attn.chunks_exact(d)) {
            row.iter_mut().zip(a).for_each(|(r, a)| *r += a);
            layer_norm(row, &l.attn_ln, self.eps);
        }
        let mut mid = linear(&l.inter, x, t);
        mid.iter_mut().for_each(|m| *m = gelu(*m));
        let out = linear(&l.out, &mid, t);
        for (row, o) in x.chunks_exact_mut(d).zip(out.chunks_exact(d)) {
            row.iter_mut().zip(o).for_each(|(r, o)| *r += o);
            layer_norm(row, &l.out_ln, self.eps);
        }
    }
}

/// `x` (t rows of `w.cols`) times the transposed weight plus the bias: t rows of `w.rows`.
/// Each int8 weight row is widened to f32 once and used for every token. On x86-64 with AVX2
/// the same loops are compiled a second time for it (8 lanes instead of SSE2's 4) and chosen at
/// run time: with `dot`'s 32 running sums, an 18-token text took 15.6 ms here instead of 22.7.
fn linear(l: &Linear, x: &[f32], t: usize) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { linear_avx2(l, x, t) };
    }
    linear_portable(l, x, t)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn linear_avx2(l: &Linear, x: &[f32], t: usize) -> Vec<f32> {
    linear_portable(l, x, t)
}

#[inline(always)]
fn linear_portable(l: &Linear, x: &[f32], t: usize) -> Vec<f32> {
    let (rows, cols) = (l.w.rows, l.w.cols);
    let mut y = vec![0f32; t * rows];
    let mut w = vec![0f32; cols];
    for r in 0..rows {
        let scale = l.w.scales[r];
        w.iter_mut()
            .zip(&l.w.data[r * cols..(r + 1) * cols])
            .for_each(|(a, &b)| *a = b as f32);
        for i in 0..t {
            y[i * rows + r] = dot(&x[i * cols..(i + 1) * cols], &w) * scale + l.b[r];
        }
    }
    y
}

/// A dot product over `LANES` independent sums, so the compiler keeps them in several vector
/// registers (a single running sum would force the additions into order, and one register's
/// worth would wait on each addition's latency).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 32;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..LANES {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn layer_norm(row: &mut [f32], n: &Norm, eps: f32) {
    let len = row.len() as f32;
    let mean = row.iter().sum::<f32>() / len;
    let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / len;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, w), b) in row.iter_mut().zip(&n.w).zip(&n.b) {
        *x = (*x - mean) * inv * w + b;
    }
}

/// GELU with the exact error function, as BERT's "gelu".
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7, computed in
/// f64): well under the int8 weights' own error.
fn erf(x: f32) -> f32 {
    let x = x as f64;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    (if x < 0.0 { -y } else { y }) as f32
}

/// The key of a text's encoder vector in the cache: the encoder's identity and the text,
/// hashed (sha-256, first 16 bytes), so an edited note or another model never reuses a vector.
pub fn cache_key(text: &str) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(ENCODER_ID.as_bytes());
    h.update([0u8]);
    h.update(text.as_bytes());
    let d = h.finalize();
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    k
}

const CACHE_MAGIC: &[u8; 8] = b"YYEC0001";

/// The encoder vectors of notes that reached a re-ranking, kept on disk beside the index
/// (`encoder-cache.bin`: `YYEC0001`, u32 dims, then records of a 16-byte key and dims f32), so a
/// warm query encodes the query alone.
#[derive(Default)]
pub struct VectorCache {
    pub dims: usize,
    pub vectors: HashMap<[u8; 16], Vec<f32>>,
    /// Vectors added since the cache was read.
    pub dirty: bool,
}

impl VectorCache {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("encoder-cache.bin")
    }

    /// The saved cache; an empty one when there is none or it is unreadable (it is rebuilt).
    pub fn load(dir: &Path, dims: usize) -> VectorCache {
        let mut c = VectorCache {
            dims,
            ..Default::default()
        };
        let Ok(raw) = std::fs::read(VectorCache::path(dir)) else {
            return c;
        };
        if raw.len() < 12
            || &raw[..8] != CACHE_MAGIC
            || u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize != dims
        {
            return c;
        }
        for rec in raw[12..].chunks_exact(16 + dims * 4) {
            let mut key = [0u8; 16];
            key.copy_from_slice(&rec[..16]);
            let v = rec[16..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            c.vectors.insert(key, v);
        }
        c
    }

    /// Writes the vectors of `keep` (the keys of the memory's current entries: a deleted or
    /// edited note's vector goes) through a temp file and a rename.
    pub fn save(&mut self, dir: &Path, keep: &dyn Fn(&[u8; 16]) -> bool) -> Result<(), String> {
        self.vectors.retain(|k, _| keep(k));
        let mut keys: Vec<&[u8; 16]> = self.vectors.keys().collect();
        keys.sort();
        let mut out = Vec::with_capacity(12 + keys.len() * (16 + self.dims * 4));
        out.extend_from_slice(CACHE_MAGIC);
        out.extend_from_slice(&(self.dims as u32).to_le_bytes());
        for k in keys {
            out.extend_from_slice(k);
            for x in &self.vectors[k] {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let tmp = dir.join(format!("encoder-cache.bin.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &out).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, VectorCache::path(dir))
            .map_err(|e| format!("cannot write {}: {e}", VectorCache::path(dir).display()))?;
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder from the data package, when the test environment has it: the test venv
    /// installs it (scripts/test.sh's venv stage, which CI runs before `cargo test`), found at
    /// `YUYAO_MEMORY_ENCODER_DIR` or in that venv (`YUYAO_TEST_VENV`, default
    /// target/test-venv). Where `YUYAO_TEST_VENV` is set (CI sets it) a missing package fails
    /// the tests instead of skipping them.
    pub(crate) fn installed() -> Option<Encoder> {
        let venv = std::env::var_os("YUYAO_TEST_VENV").filter(|v| !v.is_empty());
        let root = venv.clone().map(PathBuf::from).unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-venv")
        });
        let found = encoder_dir().or_else(|| {
            std::fs::read_dir(root.join("lib"))
                .ok()?
                .flatten()
                .find_map(|py| {
                    let d = py.path().join("site-packages/yuyao_memory_encoder");
                    d.join("encoder.bin").exists().then_some(d)
                })
        });
        match found {
            Some(dir) => Some(Encoder::load(&dir).expect("the installed encoder loads")),
            None if venv.is_some() => panic!(
                "the yuyao_memory_encoder package is not installed in {} (YUYAO_TEST_VENV)",
                root.display()
            ),
            None => {
                eprintln!(
                    "SKIPPED: the yuyao_memory_encoder package is not installed \
                     (run scripts/test.sh's venv stage, or set YUYAO_MEMORY_ENCODER_DIR)"
                );
                None
            }
        }
    }

    #[test]
    fn erf_and_gelu_match_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu(-3.0) - -0.004_049_6).abs() < 1e-6);
    }

    #[test]
    fn dot_handles_lengths_that_are_not_multiples_of_its_lanes() {
        let a: Vec<f32> = (0..45).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..45).map(|i| 1.0 + i as f32 * 0.5).collect();
        let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(
            (dot(&a, &b) - want).abs() < want * 1e-6,
            "{} against {want}",
            dot(&a, &b)
        );
    }

    #[test]
    fn the_cache_key_depends_on_every_byte_of_the_text() {
        assert_eq!(
            cache_key("Use bun, not npm."),
            cache_key("Use bun, not npm.")
        );
        assert_ne!(
            cache_key("Use bun, not npm."),
            cache_key("Use bun, not npm")
        );
        assert_ne!(cache_key("a"), cache_key("A"));
        assert_ne!(cache_key(""), cache_key(" "));
    }

    #[test]
    fn the_vector_cache_keeps_only_current_entries_and_refuses_other_dims() {
        let d = tempfile::tempdir().unwrap();
        let mut c = VectorCache::load(d.path(), 3);
        assert!(c.vectors.is_empty());
        let (a, b) = (cache_key("a"), cache_key("b"));
        c.vectors.insert(a, vec![1.0, 0.0, 0.0]);
        c.vectors.insert(b, vec![0.0, 1.0, 0.0]);
        c.save(d.path(), &|k| *k == a).unwrap();
        let back = VectorCache::load(d.path(), 3);
        assert_eq!(back.vectors.len(), 1);
        assert_eq!(back.vectors[&a], vec![1.0, 0.0, 0.0]);
        assert!(VectorCache::load(d.path(), 4).vectors.is_empty());
        std::fs::write(VectorCache::path(d.path()), b"garbage").unwrap();
        assert!(VectorCache::load(d.path(), 3).vectors.is_empty());
    }

    #[test]
    fn a_damaged_encoder_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n").unwrap();
        std::fs::write(
            d.path().join("encoder.bin"),
            b"YYME0001\xff\xff\xff\xff\xff\xff\xff\x7f",
        )
        .unwrap();
        assert!(
            Encoder::load(d.path())
                .err()
                .unwrap()
                .contains("truncated header")
        );
        let header = br#"{"layers":1,"hidden":4,"heads":2,"intermediate":8,"max_tokens":8,"layer_norm_eps":1e-12,"tensors":[{"name":"word_embeddings","kind":"q8","shape":[4,4],"offset":1000}]}"#;
        let mut bin = b"YYME0001".to_vec();
        bin.extend_from_slice(&(header.len() as u64).to_le_bytes());
        bin.extend_from_slice(header);
        std::fs::write(d.path().join("encoder.bin"), bin).unwrap();
        let err = Encoder::load(d.path()).err().unwrap();
        assert!(err.contains("runs past the end"), "{err}");
        std::fs::write(
            d.path().join("vocab.txt"),
            "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[UNK]\n",
        )
        .unwrap();
        let err = Encoder::load(d.path()).err().unwrap();
        assert!(err.contains("repeats a token"), "{err}");
        let huge = String::from_utf8(header.to_vec())
            .unwrap()
            .replace(r#""hidden":4"#, r#""hidden":1099511627776"#);
        let mut bin = b"YYME0001".to_vec();
        bin.extend_from_slice(&(huge.len() as u64).to_le_bytes());
        bin.extend_from_slice(huge.as_bytes());
        std::fs::write(d.path().join("encoder.bin"), bin).unwrap();
        let err = Encoder::load(d.path()).err().unwrap();
        assert!(err.contains("inconsistent shape constants"), "{err}");
    }

    #[derive(serde::Deserialize)]
    struct Reference {
        text: String,
        ids: Vec<u32>,
        /// The f32 reference vector (sentence-transformers' all-MiniLM-L6-v2 forward pass in
        /// numpy on the original safetensors weights, HF `tokenizers` for the ids).
        vector: Vec<f32>,
    }

    fn references() -> Vec<Reference> {
        serde_json::from_str(include_str!("../testdata/encoder_reference.json")).unwrap()
    }

    /// Token ids equal those of the model's own tokenizer (tokenizer.json through HF
    /// `tokenizers`) on tricky text: accents, punctuation, CJK, unknown words, control
    /// characters, an empty text, and a text cut at 256 tokens.
    #[test]
    fn token_ids_match_the_reference_tokenizer() {
        let Some(enc) = installed() else {
            return;
        };
        for r in references() {
            assert_eq!(enc.token_ids(&r.text), r.ids, "{:?}", r.text);
        }
    }

    /// The int8 weights give the f32 model's vectors: cosine ≥ 0.99 for every reference text.
    #[test]
    fn vectors_match_the_f32_reference() {
        let Some(enc) = installed() else {
            return;
        };
        let refs = references();
        let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).collect();
        let many = enc.encode_many(&texts);
        for (r, batch) in refs.iter().zip(&many) {
            let v = enc.encode(&r.text);
            assert_eq!(&v, batch, "{:?}: encoded alone and among others", r.text);
            let c = crate::embed::cosine(&v, &r.vector);
            assert!(c >= 0.99, "{:?}: cosine {c}", r.text);
            for (a, b) in v.iter().zip(&r.vector).take(8) {
                assert!((a - b).abs() < 0.02, "{:?}: {a} against {b}", r.text);
            }
        }
    }
}
