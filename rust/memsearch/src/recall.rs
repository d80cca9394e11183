//! How often memory-search returned each entry, and for how many distinct queries: the
//! short-term signal dreaming promotes on. `recalls.json` beside the index.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Recall {
    pub count: u32,
    /// Short hashes of the distinct normalised queries (at most 32 kept).
    pub queries: Vec<String>,
    /// The day of the last hit (`YYYY-MM-DD`).
    pub last: String,
}

pub type Recalls = BTreeMap<String, Recall>;

/// The key of an entry: its file and id.
pub fn key(path: &Path, id: &str) -> String {
    format!("{}#{id}", path.display())
}

pub fn load(dir: &Path) -> Recalls {
    std::fs::read(dir.join("recalls.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn save(dir: &Path, r: &Recalls) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let tmp = dir.join(format!("recalls.json.{}.tmp", std::process::id()));
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(r).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, dir.join("recalls.json")).map_err(|e| e.to_string())
}

/// Counts one hit of each entry for `query` (today).
pub fn record(dir: &Path, hits: &[(std::path::PathBuf, String)], query: &str, today: &str) {
    if hits.is_empty() {
        return;
    }
    let mut all = load(dir);
    let norm = crate::source::normalized(query);
    let h = Sha256::digest(norm.as_bytes());
    let qh = format!("{:02x}{:02x}{:02x}{:02x}", h[0], h[1], h[2], h[3]);
    for (path, id) in hits {
        let r = all.entry(key(path, id)).or_default();
        r.count += 1;
        if !r.queries.contains(&qh) && r.queries.len() < 32 {
            r.queries.push(qh.clone());
        }
        r.last = today.to_string();
    }
    let _ = save(dir, &all);
}
