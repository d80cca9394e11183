//! Persisted state of yuyao: everything it keeps on disk — where files live, the layered
//! configuration, sessions, permissions and project trust, the MCP server registry, the
//! execution trace, snapshots and their retention, memory files, worktrees and background
//! sessions' folders.

pub mod beneath;
pub mod bg_agents;
pub mod config;
pub mod gitguard;
pub mod hostgit;
pub mod mcp;
pub mod memory;
pub mod paths;
pub mod permissions;
pub mod retention;
pub mod sessions;
pub mod snapshots;
pub mod spend_ledger;
pub mod trajectory;
pub mod trust;
pub mod worktree;
pub mod worktree_sync;

pub use config::{Config, ConfigError, Layer};
pub use mcp::{McpRegistry, McpScope, McpServer};
pub use paths::{Paths, project_root};
pub use snapshots::Snapshots;
pub use trajectory::Trajectory;

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, then a rename,
/// so a reader (or a crash) never sees half a file.
pub fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
