//! The persisted index: `~/.yuyao/memory-index/<project>-<hash>/index.bin`, one file (a JSON
//! header, then the vectors as little-endian f32) written through a temp file and a rename,
//! so a reader never sees half of it. Updated incrementally: a file whose size and mtime are
//! unchanged keeps its chunks and vectors; a changed file is chunked again and only chunks
//! whose text is new are embedded; a provider change rebuilds the vectors.

use crate::embed::{Provider, embed_all};
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
}

/// The index of one project's memory files.
#[derive(Debug, Clone, Default)]
pub struct Index {
    pub provider: String,
    pub dims: usize,
    pub files: Vec<FileRecord>,
    /// One vector per chunk, in file then chunk order (empty for `bm25`).
    pub vectors: Vec<Vec<f32>>,
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
        })
    }

    pub fn save(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let header = serde_json::to_vec(&Header {
            provider: self.provider.clone(),
            dims: self.dims,
            files: self.files.clone(),
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
        // Vectors already computed, by chunk text: reused for unchanged entries.
        let mut known: HashMap<String, Vec<f32>> = HashMap::new();
        if !rebuild {
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
                if !known.contains_key(&c.text) && !pending.contains(&c.text) {
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
        let mut dims = if rebuild { 0 } else { self.dims };
        if let Some(vs) = embed_all(provider, &pending)? {
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
