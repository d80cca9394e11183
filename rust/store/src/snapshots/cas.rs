//! The content-addressed, compressed store of large images (journal id `cas:<64 hex>`).
//!
//! An image is cut into content-defined chunks (FastCDC: a gear rolling hash picks the cut
//! points, so an edit moves only the chunks around it and every other chunk keeps its bytes
//! and its name). Each chunk is stored once, zstd-compressed, under the SHA-256 of its bytes:
//! `yuyao-cas/c/<2 hex>/<62 hex>`. The image itself is a manifest listing its chunks,
//! stored under the SHA-256 of the manifest's text: `yuyao-cas/m/<64 hex>`. The same content
//! always gives the same manifest, so seven edits of a large file cost one compressed copy
//! plus the chunks the edits touched.
//!
//! Reading checks everything: the manifest against its name, each chunk's length and SHA-256
//! against the manifest. A damaged or truncated object is an error, never partial bytes.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

pub(crate) const PREFIX: &str = "cas:";
pub(crate) const DIR: &str = "yuyao-cas";
/// `retention.rs` names chunks `chunk:<64 hex>` among the objects it may delete.
pub(crate) const CHUNK_PREFIX: &str = "chunk:";
/// A piece of a bundle: `pack:<64 hex>:<offset>:<length>` (see [`Cas::put_bundle`]).
pub(crate) const PACK_PREFIX: &str = "pack:";
/// `retention.rs` names bundles `bundle:<64 hex>`.
pub(crate) const BUNDLE_PREFIX: &str = "bundle:";
/// A bundle holds at most this many bytes (before compression).
const BUNDLE_MAX: usize = 64 * 1024 * 1024;
const MAGIC: &str = "yuyao-chunks 1";
/// zstd level: fast to write (the edit tools wait for it), still a good ratio on text.
const LEVEL: i32 = 3;
const MIN_CHUNK: u32 = 64 * 1024;
const AVG_CHUNK: u32 = 256 * 1024;
const MAX_CHUNK: usize = 1024 * 1024;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_name(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The chunks of `data`: (SHA-256 hex, bytes). The cut points are FastCDC's (2020 gear
/// hash, normalized sizes); a chunk's name depends only on its bytes, so a later change of
/// the cutting would cost sharing with older images, never the reading of them.
fn chunks(data: &[u8]) -> Vec<(String, &[u8])> {
    fastcdc::v2020::FastCDC::new(data, MIN_CHUNK, AVG_CHUNK, MAX_CHUNK as u32)
        .map(|c| {
            let bytes = &data[c.offset..c.offset + c.length];
            (hex(&Sha256::digest(bytes)), bytes)
        })
        .collect()
}

/// The manifest text of `data` and its id.
fn manifest(data: &[u8], parts: &[(String, &[u8])]) -> (String, String) {
    let mut text = format!("{MAGIC}\n{}\n", data.len());
    for (h, c) in parts {
        text.push_str(&format!("{h} {}\n", c.len()));
    }
    let id = hex(&Sha256::digest(text.as_bytes()));
    (text, id)
}

/// A manifest read back: the image's length and its chunks (SHA-256 hex, length).
pub(crate) struct Manifest {
    pub len: u64,
    pub chunks: Vec<(String, usize)>,
}

/// Parses a manifest's text; `None` when it is not one.
pub(crate) fn parse_manifest(text: &[u8]) -> Option<Manifest> {
    let text = std::str::from_utf8(text).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let len: u64 = lines.next()?.parse().ok()?;
    let mut chunks = Vec::new();
    let mut total = 0u64;
    for l in lines {
        let (h, n) = l.split_once(' ')?;
        let n: usize = n.parse().ok()?;
        if !is_name(h) || n == 0 || n > MAX_CHUNK {
            return None;
        }
        total += n as u64;
        chunks.push((h.to_string(), n));
    }
    (total == len).then_some(Manifest { len, chunks })
}

/// The store under a snapshot repository's folder.
pub(crate) struct Cas {
    root: PathBuf,
    /// The bundle read last, checked (a /redo of a thousand files reads it once).
    bundle: std::cell::RefCell<Option<(String, std::sync::Arc<Vec<u8>>)>>,
}

/// The parts of a bundle piece's id: (bundle name, offset, length).
pub(crate) fn parse_pack(id: &str) -> Option<(&str, usize, usize)> {
    let mut it = id.strip_prefix(PACK_PREFIX)?.split(':');
    let (name, off, len) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || !is_name(name) {
        return None;
    }
    Some((name, off.parse().ok()?, len.parse().ok()?))
}

/// Sets a file's modification time to now: an object about to be referenced again must not
/// look old to the retention pass (which spares objects younger than its grace period).
fn freshen(path: &Path) -> bool {
    std::fs::File::options()
        .append(true)
        .open(path)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .is_ok()
}

/// Writes `bytes` at `path` unless it exists (same name, same content): a temporary file in
/// the same folder renamed into place, so a reader never sees half an object.
fn write_once(path: &Path, bytes: impl FnOnce() -> Result<Vec<u8>, String>) -> Result<(), String> {
    if freshen(path) {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("o");
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let bytes = bytes()?;
    let r = std::fs::write(&tmp, &bytes).and_then(|_| std::fs::rename(&tmp, path));
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(())
}

impl Cas {
    pub(crate) fn new(git_dir: &Path) -> Cas {
        Cas {
            root: git_dir.join(DIR),
            bundle: Default::default(),
        }
    }

    pub(crate) fn bundle_path(root: &Path, name: &str) -> PathBuf {
        root.join("b").join(name)
    }

    /// Stores many small images in one compressed object (a bundle, named by the SHA-256 of
    /// its uncompressed bytes) and returns each one's id: one write instead of one per file
    /// when an /undo keeps the post-images of a large batch.
    pub(crate) fn put_bundle(&self, pieces: &[&[u8]]) -> Result<Vec<String>, String> {
        let mut ids = Vec::with_capacity(pieces.len());
        let mut start = 0;
        while start < pieces.len() {
            let mut end = start;
            let mut size = 0;
            while end < pieces.len() && (end == start || size + pieces[end].len() <= BUNDLE_MAX) {
                size += pieces[end].len();
                end += 1;
            }
            let mut all = Vec::with_capacity(size);
            let mut spans = Vec::with_capacity(end - start);
            for p in &pieces[start..end] {
                spans.push((all.len(), p.len()));
                all.extend_from_slice(p);
            }
            let name = hex(&Sha256::digest(&all));
            write_once(&Self::bundle_path(&self.root, &name), || {
                zstd::bulk::compress(&all, LEVEL).map_err(|e| format!("cannot compress: {e}"))
            })?;
            ids.extend(
                spans
                    .into_iter()
                    .map(|(o, n)| format!("{PACK_PREFIX}{name}:{o}:{n}")),
            );
            start = end;
        }
        Ok(ids)
    }

    /// The bytes of a bundle piece; the whole bundle is checked against its name.
    fn get_piece(&self, id: &str) -> Result<Vec<u8>, String> {
        let (name, off, len) =
            parse_pack(id).ok_or_else(|| format!("snapshot store: {id:?} is not an object id"))?;
        let cached = self
            .bundle
            .borrow()
            .as_ref()
            .filter(|(n, _)| n == name)
            .map(|(_, b)| b.clone());
        let all = match cached {
            Some(b) => b,
            None => {
                let path = Self::bundle_path(&self.root, name);
                let packed = std::fs::read(&path)
                    .map_err(|e| format!("snapshot store: cannot read {}: {e}", path.display()))?;
                let damaged =
                    |why: String| format!("snapshot store: {} is damaged ({why})", path.display());
                let all =
                    zstd::stream::decode_all(&packed[..]).map_err(|e| damaged(e.to_string()))?;
                if hex(&Sha256::digest(&all)) != name {
                    return Err(damaged("its content does not match its name".into()));
                }
                let all = std::sync::Arc::new(all);
                *self.bundle.borrow_mut() = Some((name.to_string(), all.clone()));
                all
            }
        };
        off.checked_add(len)
            .and_then(|end| all.get(off..end))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| format!("snapshot store: {id:?} is outside its bundle"))
    }

    pub(crate) fn manifest_path(root: &Path, name: &str) -> PathBuf {
        root.join("m").join(name)
    }

    pub(crate) fn chunk_path(root: &Path, name: &str) -> PathBuf {
        root.join("c").join(&name[..2]).join(&name[2..])
    }

    /// Stores `data`; returns its id (`cas:<hex>`). Only chunks not stored yet are compressed.
    pub(crate) fn put(&self, data: &[u8]) -> Result<String, String> {
        let parts = chunks(data);
        for (h, c) in &parts {
            write_once(&Self::chunk_path(&self.root, h), || {
                zstd::bulk::compress(c, LEVEL).map_err(|e| format!("cannot compress: {e}"))
            })?;
        }
        let (text, id) = manifest(data, &parts);
        write_once(&Self::manifest_path(&self.root, &id), || {
            Ok(text.into_bytes())
        })?;
        Ok(format!("{PREFIX}{id}"))
    }

    /// The manifest of `id` (`cas:<hex>`), checked against its name.
    fn manifest(&self, id: &str) -> Result<Manifest, String> {
        let name = id
            .strip_prefix(PREFIX)
            .filter(|n| is_name(n))
            .ok_or_else(|| format!("snapshot store: {id:?} is not an object id"))?;
        let path = Self::manifest_path(&self.root, name);
        let text = std::fs::read(&path)
            .map_err(|e| format!("snapshot store: cannot read {}: {e}", path.display()))?;
        if hex(&Sha256::digest(&text)) != name {
            return Err(format!(
                "snapshot store: {} is damaged (its content does not match its name)",
                path.display()
            ));
        }
        parse_manifest(&text).ok_or_else(|| {
            format!(
                "snapshot store: {} is damaged (not a chunk list)",
                path.display()
            )
        })
    }

    /// Whether the file at `path` holds the image `id`: its chunks' bytes are read in turn and
    /// hashed at the manifest's cut points, stopping at the first that differs (no cutting,
    /// and an edit in the middle of a large file is found after reading half of it).
    pub(crate) fn matches(&self, id: &str, path: &Path) -> Result<bool, String> {
        use std::io::Read;
        let m = self.manifest(id)?;
        let mut f = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let len = f
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .len();
        if len != m.len {
            return Ok(false);
        }
        let mut buf = vec![0u8; MAX_CHUNK];
        for (h, n) in &m.chunks {
            let part = &mut buf[..*n];
            match f.read_exact(part) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
            }
            if hex(&Sha256::digest(&*part)) != *h {
                return Ok(false);
            }
        }
        // Nothing past the end (it grew while being read).
        Ok(f.read(&mut buf[..1]).map_err(|e| e.to_string())? == 0)
    }

    /// The bytes of `id` (`cas:` or `pack:`), every chunk checked.
    pub(crate) fn get(&self, id: &str) -> Result<Vec<u8>, String> {
        if id.starts_with(PACK_PREFIX) {
            return self.get_piece(id);
        }
        let m = self.manifest(id)?;
        let mut out = Vec::with_capacity(m.len as usize);
        for (h, n) in &m.chunks {
            let path = Self::chunk_path(&self.root, h);
            let packed = std::fs::read(&path)
                .map_err(|e| format!("snapshot store: cannot read {}: {e}", path.display()))?;
            let damaged =
                |why: String| format!("snapshot store: {} is damaged ({why})", path.display());
            let bytes = zstd::bulk::decompress(&packed, *n).map_err(|e| damaged(e.to_string()))?;
            if bytes.len() != *n || hex(&Sha256::digest(&bytes)) != *h {
                return Err(damaged("its content does not match its name".into()));
            }
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_points_follow_content_not_offsets() {
        let mut x = 1u64;
        let data: Vec<u8> = (0..4_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b'a' + (x % 26) as u8
            })
            .collect();
        let a = chunks(&data);
        assert!(a.len() > 4, "{}", a.len());
        assert!(a.iter().all(|(_, c)| c.len() <= MAX_CHUNK));
        // Three bytes inserted near the start: all chunks but the first one or two are the same.
        let mut shifted = data.clone();
        shifted.splice(1000..1000, *b"xyz");
        let b = chunks(&shifted);
        let same = b
            .iter()
            .filter(|(h, _)| a.iter().any(|(g, _)| g == h))
            .count();
        assert!(same + 2 >= a.len(), "{same} of {}", a.len());
        assert_eq!(b.iter().map(|(_, c)| c.len()).sum::<usize>(), shifted.len());
    }
}
