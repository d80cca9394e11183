//! The persisted index: `~/.yuyao/memory-index/<project>-<hash>/index.bin`, one file (a JSON
//! header, then the vectors as little-endian f32) written through a temp file and a rename,
//! so a reader never sees half of it. Updated incrementally: a file whose size and mtime are
//! unchanged keeps its chunks and vectors; a changed file is chunked again and only chunks
//! whose text is new are embedded; a provider change rebuilds the vectors. With the local
//! model every entry's vector depends on the token statistics of all entries (embed.rs), so
//! any change re-weights every entry (a table lookup per token: 10 000 entries take well under
//! a second) and the statistics are saved with the vectors they made.

use crate::embed::{Provider, TermStats, embed_all, local_model};
use crate::source::{Chunk, FileKind, MemoryFile, chunks};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"YYMI0001";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileRecord {
    pub path: PathBuf,
    pub kind: FileKind,
    pub size: u64,
    pub mtime_ns: i128,
    pub chunks: Vec<Chunk>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Header {
    provider: String,
    dims: usize,
    files: Vec<FileRecord>,
    #[serde(default)]
    terms: TermStats,
}

/// The index of one project's memory files.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub provider: String,
    pub dims: usize,
    pub files: Vec<FileRecord>,
    /// One vector per chunk, in file then chunk order (empty for `bm25`).
    pub vectors: Vec<Vec<f32>>,
    /// The chunks' token statistics the local model's vectors (and queries) are weighted
    /// with; empty for the other providers.
    pub terms: TermStats,
}

/// What an update did, for `yuyao memory index` and the tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateReport {
    pub files_read: usize,
    pub chunks_embedded: usize,
    pub changed: bool,
}

/// The index folder of a project: readable name + a hash of the full path.
pub fn index_dir(home: &Path, project: &Path) -> PathBuf {
    let h = Sha256::digest(project.to_string_lossy().as_bytes());
    let name: String = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    home.join("memory-index").join(format!(
        "{name}-{:02x}{:02x}{:02x}{:02x}",
        h[0], h[1], h[2], h[3]
    ))
}

fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

impl Index {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("index.bin")
    }

    /// The saved index, or `None` when there is none (or it cannot be read: it is rebuilt).
    pub fn load(dir: &Path) -> Option<Index> {
        let raw = std::fs::read(Index::path(dir)).ok()?;
        if raw.len() < 16 || &raw[..8] != MAGIC {
            return None;
        }
        let n = u64::from_le_bytes(raw[8..16].try_into().ok()?) as usize;
        let header: Header = serde_json::from_slice(raw.get(16..16 + n)?).ok()?;
        let total: usize = header.files.iter().map(|f| f.chunks.len()).sum();
        let body = &raw[16 + n..];
        if body.len() != total * header.dims * 4 {
            return None;
        }
        let vectors = if header.dims == 0 {
            Vec::new()
        } else {
            body.chunks_exact(header.dims * 4)
                .map(|row| {
                    row.chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect()
                })
                .collect()
        };
        Some(Index {
            provider: header.provider,
            dims: header.dims,
            files: header.files,
            vectors,
            terms: header.terms,
        })
    }

    pub fn save(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let header = serde_json::to_vec(&Header {
            provider: self.provider.clone(),
            dims: self.dims,
            files: self.files.clone(),
            terms: self.terms.clone(),
        })
        .map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(16 + header.len() + self.vectors.len() * self.dims * 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&header);
        for v in &self.vectors {
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        let tmp = dir.join(format!("index.bin.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &out).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, Index::path(dir))
            .map_err(|e| format!("cannot write {}: {e}", Index::path(dir).display()))
    }

    /// Whether the index was built from exactly these files as they are now (paths, kinds,
    /// sizes, modification times).
    pub fn matches(&self, files: &[MemoryFile]) -> bool {
        self.files.len() == files.len()
            && self.files.iter().zip(files).all(|(r, f)| {
                r.path == f.path
                    && r.kind == f.kind
                    && std::fs::metadata(&f.path)
                        .map(|m| m.len() == r.size && mtime_ns(&m) == r.mtime_ns)
                        .unwrap_or(false)
            })
    }

    pub fn chunk_count(&self) -> usize {
        self.files.iter().map(|f| f.chunks.len()).sum()
    }

    /// Brings the index in step with `files`. `force` rebuilds everything; `progress` gets
    /// (files done, files total).
    pub fn update(
        &mut self,
        files: &[MemoryFile],
        provider: &Provider,
        force: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<UpdateReport, String> {
        let mut report = UpdateReport::default();
        let provider_id = provider.id();
        let rebuild = force || self.provider != provider_id;
        // Vectors already computed, by chunk text: reused for unchanged entries (not with the
        // local model, whose vectors are all made again on a change).
        let local = *provider == Provider::Local;
        let mut known: HashMap<String, Vec<f32>> = HashMap::new();
        if !rebuild && !local {
            let mut k = 0;
            for f in &self.files {
                for c in &f.chunks {
                    if let Some(v) = self.vectors.get(k) {
                        known.insert(c.text.clone(), v.clone());
                    }
                    k += 1;
                }
            }
        }
        let old: HashMap<PathBuf, FileRecord> = if rebuild {
            HashMap::new()
        } else {
            self.files
                .iter()
                .map(|f| (f.path.clone(), f.clone()))
                .collect()
        };
        let mut records = Vec::with_capacity(files.len());
        let mut pending: Vec<String> = Vec::new();
        for (i, f) in files.iter().enumerate() {
            progress(i, files.len());
            let Ok(meta) = std::fs::metadata(&f.path) else {
                continue;
            };
            let (size, mtime) = (meta.len(), mtime_ns(&meta));
            if let Some(r) = old.get(&f.path)
                && r.size == size
                && r.mtime_ns == mtime
                && r.kind == f.kind
            {
                records.push(r.clone());
                continue;
            }
            let text = std::fs::read(&f.path)
                .map_err(|e| format!("cannot read {}: {e}", f.path.display()))?;
            let text = String::from_utf8_lossy(&text);
            report.files_read += 1;
            let cs = chunks(&text);
            for c in &cs {
                if !local && !known.contains_key(&c.text) && !pending.contains(&c.text) {
                    pending.push(c.text.clone());
                }
            }
            records.push(FileRecord {
                path: f.path.clone(),
                kind: f.kind,
                size,
                mtime_ns: mtime,
                chunks: cs,
            });
        }
        progress(files.len(), files.len());
        let changed = rebuild
            || records.len() != self.files.len()
            || records
                .iter()
                .zip(&self.files)
                .any(|(a, b)| a.path != b.path || a.size != b.size || a.mtime_ns != b.mtime_ns);
        if !changed {
            return Ok(report);
        }
        if local {
            let model = local_model()?;
            let texts: Vec<&str> = records
                .iter()
                .flat_map(|r| r.chunks.iter().map(|c| c.text.as_str()))
                .collect();
            let (terms, vectors) = model.embed_corpus(&texts);
            report.chunks_embedded = vectors.len();
            *self = Index {
                provider: provider_id,
                dims: model.dims(),
                files: records,
                vectors,
                terms,
            };
            report.changed = true;
            return Ok(report);
        }
        let mut dims = if rebuild { 0 } else { self.dims };
        if let Some(vs) = embed_all(provider, &pending, &TermStats::default())? {
            report.chunks_embedded = vs.len();
            for (t, v) in pending.into_iter().zip(vs) {
                dims = v.len();
                known.insert(t, v);
            }
        }
        let mut vectors = Vec::new();
        if *provider != Provider::Bm25 {
            for r in &records {
                for c in &r.chunks {
                    match known.get(&c.text) {
                        Some(v) if v.len() == dims => vectors.push(v.clone()),
                        _ => vectors.push(vec![0.0; dims]),
                    }
                }
            }
        } else {
            dims = 0;
        }
        *self = Index {
            provider: provider_id,
            dims,
            files: records,
            vectors,
            terms: TermStats::default(),
        };
        report.changed = true;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::memory_files;
    use yuyao_store::memory::Layout;

    /// The shipped model, from the source tree (the extension sets its installed folder).
    fn use_shipped_model() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/yuyao/models/memory-embed");
        crate::embed::set_package_model_dir(dir);
    }

    /// An index saved by the plain token-mean model (its vectors mean something else) is
    /// rebuilt with the current identity and statistics, although no file changed; then any
    /// change re-weights every entry, and the statistics are saved with the vectors.
    #[test]
    fn an_index_of_the_former_local_vectors_is_rebuilt_and_any_change_reweights_all() {
        use_shipped_model();
        let d = tempfile::tempdir().unwrap();
        let (home, project) = (d.path().join("home"), d.path().join("p"));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join("MEMORY.md"),
            "- Use bun, not npm.\n- Alice owns the billing service.\n",
        )
        .unwrap();
        let layout = Layout::new(&home, &project, None);
        let files = memory_files(&layout);
        let mut fresh = Index::default();
        fresh
            .update(&files, &Provider::Local, false, &mut |_, _| {})
            .unwrap();
        assert_eq!(fresh.provider, crate::embed::LOCAL_MODEL_ID);
        assert_eq!(fresh.terms.entries, 2);
        // The same files, indexed by the former model: same paths, sizes and mtimes.
        let mut old = fresh.clone();
        old.provider = "local:minilm-l6-static-256-int8".into();
        old.terms = TermStats::default();
        old.vectors = vec![vec![1.0; fresh.dims]; 2];
        let dir = index_dir(&home, &project);
        old.save(&dir).unwrap();
        let mut back = Index::load(&dir).unwrap();
        let r = back
            .update(&files, &Provider::Local, false, &mut |_, _| {})
            .unwrap();
        assert_eq!((r.files_read, r.chunks_embedded, r.changed), (1, 2, true));
        assert_eq!(back.provider, crate::embed::LOCAL_MODEL_ID);
        assert_eq!((&back.vectors, &back.terms), (&fresh.vectors, &fresh.terms));
        back.save(&dir).unwrap();
        let loaded = Index::load(&dir).unwrap();
        assert_eq!(
            (&loaded.vectors, &loaded.terms),
            (&fresh.vectors, &fresh.terms)
        );

        // A third entry sharing "the" and "service": the first two are weighted anew.
        std::fs::write(
            project.join("MEMORY.md"),
            "- Use bun, not npm.\n- Alice owns the billing service.\n- The search service is Bob's.\n",
        )
        .unwrap();
        let mut next = loaded.clone();
        let r = next
            .update(
                &memory_files(&layout),
                &Provider::Local,
                false,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!((r.chunks_embedded, next.terms.entries), (3, 3));
        assert_ne!(next.vectors[1], loaded.vectors[1]);
        let model = local_model().unwrap();
        assert_eq!(
            next.vectors[1],
            model.embed("Alice owns the billing service.", &next.terms)
        );
    }

    #[test]
    fn only_changed_files_are_read_again_and_the_saved_index_loads_back() {
        let d = tempfile::tempdir().unwrap();
        let (home, project) = (d.path().join("home"), d.path().join("p"));
        std::fs::create_dir_all(project.join("memory")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(project.join("MEMORY.md"), "- Use bun, not npm.\n").unwrap();
        std::fs::write(
            project.join("memory/2026-11-30.md"),
            "- Alice owns billing.\n",
        )
        .unwrap();
        let layout = Layout::new(&home, &project, None);
        let mut idx = Index::default();
        let r = idx
            .update(
                &memory_files(&layout),
                &Provider::Bm25,
                false,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!((r.files_read, r.changed), (2, true));
        let dir = index_dir(&home, &project);
        idx.save(&dir).unwrap();
        let mut back = Index::load(&dir).unwrap();
        assert_eq!(back.chunk_count(), 2);
        assert!(back.matches(&memory_files(&layout)));
        let r = back
            .update(
                &memory_files(&layout),
                &Provider::Bm25,
                false,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!((r.files_read, r.changed), (0, false));
        std::fs::write(
            project.join("memory/2026-11-30.md"),
            "- Alice owns billing.\n- Bob owns search.\n",
        )
        .unwrap();
        assert!(!back.matches(&memory_files(&layout)));
        let r = back
            .update(
                &memory_files(&layout),
                &Provider::Bm25,
                false,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!((r.files_read, r.changed), (1, true));
        assert_eq!(back.chunk_count(), 3);
    }
}
