//! The exfiltration guard's notion of a sensitive file (spec §3.3): private keys, `.env`
//! files, credential stores. Their content is never collected automatically: `read` and
//! shell reads of them need the user to have named them with `@path` (or an explicit allow
//! rule, or an approval), and directory searches skip them.

use std::path::Path;

/// Exact file names that hold secrets.
const NAMES: &[&str] = &[
    ".env",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    "credentials",
    "credentials.json",
    "credentials.yml",
    "credentials.yaml",
    "credentials.toml",
    "client_secret.json",
    "service-account.json",
    "secrets.json",
    "secrets.yml",
    "secrets.yaml",
    "secrets.toml",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
    "identity",
    "master.key",
    "keystore.jks",
    ".envrc",
    ".vault-token",
    ".terraformrc",
    "terraform.rc",
    "rclone.conf",
    "application_default_credentials.json",
    ".dockercfg",
    ".boto",
    ".s3cfg",
    // Shell and REPL histories: commands typed with tokens in them.
    ".bash_history",
    ".zsh_history",
    ".sh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".node_repl_history",
    ".rediscli_history",
    "fish_history",
];

/// Extensions of key and certificate-store files.
const EXTENSIONS: &[&str] = &[
    "pem", "key", "p12", "pfx", "jks", "keystore", "ppk", "asc", "gpg", "kdbx", "tfvars",
];

/// `.env.example` and friends are templates meant to be read.
const TEMPLATE_SUFFIXES: &[&str] = &["example", "sample", "template", "dist", "defaults"];

/// Folders whose every file is sensitive (relative to home, matched as path components).
const DIRS: &[(&str, &str)] = &[
    (".ssh", ""),
    (".aws", "credentials"),
    (".aws", "config"),
    (".gnupg", ""),
    (".docker", "config.json"),
    (".kube", "config"),
    (".config", "gh/hosts.yml"),
    (".azure", ""),
];

/// Whether `path` names a file whose content must not be collected without the user naming it.
pub fn is_sensitive(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".pub") || lower == "known_hosts" || lower == "authorized_keys" {
        return false;
    }
    if NAMES.contains(&lower.as_str()) {
        return true;
    }
    if lower.ends_with(".tfvars.json") {
        return true;
    }
    if let Some(rest) = lower.strip_prefix(".env.") {
        return !TEMPLATE_SUFFIXES
            .iter()
            .any(|t| rest == *t || rest.ends_with(t));
    }
    if lower.ends_with(".env") && !lower.starts_with('.') {
        // e.g. `prod.env`
        return true;
    }
    if let Some(ext) = Path::new(&lower).extension().and_then(|e| e.to_str())
        && EXTENSIONS.contains(&ext)
    {
        return true;
    }
    let comps: Vec<&str> = path
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .collect();
    for (i, c) in comps.iter().enumerate() {
        for (dir, file) in DIRS {
            if c == dir {
                let rest = comps[i + 1..].join("/");
                if !rest.is_empty() && (file.is_empty() || rest == *file) {
                    return true;
                }
            }
        }
    }
    false
}

/// Whether a shell word looks like a path to a sensitive file (for `cat .env`).
pub fn word_is_sensitive(word: &str) -> bool {
    if word.starts_with('-') || word.is_empty() {
        // `--env-file=.env`: look at the value
        return word
            .split_once('=')
            .is_some_and(|(_, v)| !v.is_empty() && is_sensitive(Path::new(v)));
    }
    let expanded = match word.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", std::env::var("HOME").unwrap_or_default()),
        None => word.to_string(),
    };
    is_sensitive(Path::new(&expanded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        for p in [
            ".env",
            "app/.env.local",
            ".env.production",
            "prod.env",
            "/home/u/.ssh/id_rsa",
            "/home/u/.ssh/config",
            "/home/u/.aws/credentials",
            "server.key",
            "cert.pem",
            "x/.npmrc",
            "credentials.json",
            "/r/.git-credentials",
            "~/.kube/config",
            ".envrc",
            "infra/prod.tfvars",
            "infra/prod.tfvars.json",
            "/home/u/.vault-token",
            "/home/u/.bash_history",
            "/home/u/.zsh_history",
            "/home/u/.python_history",
            "/home/u/.psql_history",
            "/home/u/.mysql_history",
            "/home/u/.local/share/fish/fish_history",
            "/home/u/.config/gcloud/application_default_credentials.json",
            "/home/u/.terraformrc",
            "terraform.rc",
            "/home/u/.config/rclone/rclone.conf",
            ".netrc",
            ".pgpass",
            ".pypirc",
            ".git-credentials",
            ".dockercfg",
            ".boto",
            ".s3cfg",
        ] {
            assert!(is_sensitive(Path::new(p)), "{p}");
        }
        for p in [
            ".env.example",
            ".env.sample",
            "/home/u/.ssh/id_rsa.pub",
            "/home/u/.ssh/known_hosts",
            "src/env.rs",
            "environment.md",
            "key.rs",
            "README.md",
            "/home/u/.aws",
            ".envrc.md",
            "variables.tf",
            "history.md",
            "src/fish_history.rs",
            "wp-config.php",
        ] {
            assert!(!is_sensitive(Path::new(p)), "{p}");
        }
        assert!(word_is_sensitive("--env-file=.env"));
        assert!(word_is_sensitive("~/.ssh/id_ed25519"));
        assert!(!word_is_sensitive("-n"));
    }
}
