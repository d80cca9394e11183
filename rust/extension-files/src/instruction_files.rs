//! Instruction, rule and memory files (`AGENTS.md`, `CLAUDE.md`, `.cursor/rules/*.mdc`,
//! `.claude/rules/*`, `.yuyao/rules/*`, `MEMORY.md`, daily notes) go into the system prompt or
//! a note without any tool call, so they are read the way the `read` tool reads: a file that
//! resolves (through symbolic links) outside the folders it belongs to, or to a secret file,
//! is skipped with a warning, and what is loaded is redacted like a tool result. A hostile
//! repository's `AGENTS.md -> ~/.ssh/id_rsa` never reaches the model.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Skips not yet told to the user (drained into warnings by the session, `take_warnings`).
static SKIPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Every skip already queued once, so a file read at every request is told once.
static TOLD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn skip(path: &Path, why: &str) {
    let mut told = TOLD.lock().unwrap_or_else(|e| e.into_inner());
    if told.iter().any(|p| p == path) {
        return;
    }
    told.push(path.to_path_buf());
    SKIPPED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(format!("{} skipped: {why}", path.display()));
}

/// The warnings of files skipped since the last call.
pub fn take_warnings() -> Vec<String> {
    std::mem::take(&mut *SKIPPED.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Why `path` may not be loaded (`None`: it may); `roots` are the folders it may resolve in.
fn refusal(path: &Path, roots: &[&Path]) -> Option<&'static str> {
    let real = path.canonicalize().ok()?;
    let inside = roots.iter().any(|r| {
        let r = r.canonicalize().unwrap_or_else(|_| r.to_path_buf());
        real.starts_with(r)
    });
    if !inside {
        return Some("it resolves outside the project (a symbolic link?)");
    }
    if yuyao_policy::sensitive::is_sensitive(&real) || yuyao_policy::sensitive::is_sensitive(path) {
        return Some("it is a secret file");
    }
    None
}

/// Reads `path` for the prompt: `None` when it is missing, unreadable, or refused (then
/// with a warning); the text is redacted with the secrets of `roots[0]` (the project).
pub fn read(path: &Path, roots: &[&Path]) -> Option<String> {
    std::fs::symlink_metadata(path).ok()?;
    if let Some(why) = refusal(path, roots) {
        skip(path, why);
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    Some(redact(&text, roots.first().copied()))
}

/// `text` redacted as a tool result would be (the project's secret values, key material).
pub fn redact(text: &str, project: Option<&Path>) -> String {
    let roots: Vec<PathBuf> = project.map(Path::to_path_buf).into_iter().collect();
    yuyao_policy::redact::for_roots(&roots, &[])
        .redact(text, &|_| false)
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_outside_and_secret_files_are_skipped_and_keys_redacted() {
        let proj = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdef\n-----END RSA PRIVATE KEY-----\n";
        std::fs::write(outside.path().join("id_rsa"), key).unwrap();
        symlink(outside.path().join("id_rsa"), proj.path().join("AGENTS.md")).unwrap();
        assert_eq!(read(&proj.path().join("AGENTS.md"), &[proj.path()]), None);
        std::fs::write(proj.path().join(".env"), "TOKEN=abcdef123456789\n").unwrap();
        symlink(proj.path().join(".env"), proj.path().join("CLAUDE.md")).unwrap();
        assert_eq!(read(&proj.path().join("CLAUDE.md"), &[proj.path()]), None);
        let w = take_warnings();
        assert!(w.iter().any(|w| w.contains("outside the project")), "{w:?}");
        assert!(w.iter().any(|w| w.contains("secret file")), "{w:?}");
        std::fs::write(proj.path().join("MEMORY.md"), format!("keep\n{key}")).unwrap();
        let text = read(&proj.path().join("MEMORY.md"), &[proj.path()]).unwrap();
        assert!(
            text.starts_with("keep") && !text.contains("MIIEpAIBAAKCAQEA"),
            "{text}"
        );
    }
}
