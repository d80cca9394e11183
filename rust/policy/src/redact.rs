//! Redaction of secrets from tool results (DESIGN §5, the last layer).
//!
//! Whatever program printed it, a secret must not reach the model: before a tool result
//! (bash, bg-output, monitor lines, grep, read, …) enters the history, the values found in
//! the project's secret files ([`crate::sensitive::is_sensitive`]) and recognisable key
//! material (private key blocks, cloud and service tokens with known shapes, the model's own
//! API key) are replaced by `[redacted: value from .env]`, `[redacted: private key]`, ….
//! A file the user named with `@path`, or allowed with a rule, is exempt: its values pass.
//!
//! Matching is one literal-set search over the values (the regex crate's, built on
//! `aho_corasick`'s SIMD searchers; a plain Aho-Corasick automaton when the set is too big)
//! plus one combined regex for the key shapes; a [`Redactor`] is rebuilt only when a secret file (or the folder holding
//! it) changes, checked with a few `stat` calls per result.

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Values shorter than this are not redacted (ports, flags, `dev`).
pub const MIN_VALUE_CHARS: usize = 6;
/// Folders the project walk never enters.
const SKIP_DIRS: &[&str] = &[
    ".git",
    "target",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".yuyao",
];
const MAX_DEPTH: usize = 8;
/// Entries the walk visits at most (a huge tree is scanned partly, never for long).
const MAX_ENTRIES: usize = 50_000;
/// Secret files read at most, and the largest one read.
const MAX_FILES: usize = 200;
const MAX_FILE_BYTES: u64 = 1 << 20;
/// A full rescan (new secret files in sub-folders) happens at most this often.
const RESCAN_AFTER: Duration = Duration::from_secs(30);

/// Credential files in the home folder whose values are redacted too.
const HOME_FILES: &[&str] = &[
    ".vault-token",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".aws/credentials",
    ".docker/config.json",
    ".dockercfg",
    ".config/gh/hosts.yml",
    ".config/gcloud/application_default_credentials.json",
    ".terraformrc",
    ".config/rclone/rclone.conf",
    ".boto",
    ".s3cfg",
];

/// Values that are configuration words, not secrets.
const COMMON: &[&str] = &[
    "true",
    "false",
    "enabled",
    "disabled",
    "localhost",
    "127.0.0.1",
    "0.0.0.0",
    "development",
    "production",
    "staging",
    "testing",
    "default",
    "console",
    "warning",
    "verbose",
    "postgres",
    "postgresql",
    "password",
    "changeme",
    "example",
    "authorized_user",
    "service_account",
];

/// Tool configuration files that hold settings beside their tokens (`registry=…`,
/// `repository = …`): only values under a secret-looking key are redacted.
const TOOL_CONFIGS: &[&str] = &[
    ".npmrc",
    ".pypirc",
    ".boto",
    ".s3cfg",
    "rclone.conf",
    ".terraformrc",
    "terraform.rc",
];

/// Whether a setting's name says it holds a secret (`_authToken`, `password`, `secret_key`).
fn secret_key_name(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    [
        "token",
        "auth",
        "pass",
        "secret",
        "key",
        "credential",
        "pwd",
    ]
    .iter()
    .any(|w| k.contains(w))
}

/// JSON keys whose string values are structure, not secrets (gcloud credentials files).
const BENIGN_JSON_KEYS: &[&str] = &[
    "type",
    "universe_domain",
    "auth_uri",
    "token_uri",
    "auth_provider_x509_cert_url",
    "client_x509_cert_url",
    "quota_project_id",
];

/// The shapes of key material, as one alternation (kinds told apart by [`shape_label`]).
/// Word boundaries are checked after a match ([`Redactor::shape_span`]): a `\b` in the
/// pattern halves the regex engine's speed.
const SHAPES: &[&str] = &[
    // Private key blocks, whole or cut short (`head -3 id_rsa`).
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?s:.)*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n(?:[A-Za-z0-9+/=]{16,}|Proc-Type:[^\r\n]*|DEK-Info:[^\r\n]*|Comment:[^\r\n]*)?)*)",
    // AWS access key ids; the secret key beside one is found by `aws_secret_near`.
    r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}",
    r#"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|SecretAccessKey|secret_access_key)["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}"#,
    r"(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{30,255}",
    r"github_pat_[A-Za-z0-9_]{22,255}",
    r"xox[abprse]-[A-Za-z0-9-]{10,}",
    r"sk-[A-Za-z0-9_-]{20,}",
    r"AIza[0-9A-Za-z_-]{35}",
    r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",
    r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    r"glpat-[A-Za-z0-9_-]{20,}",
    r"npm_[A-Za-z0-9]{36}",
    r"hvs\.[A-Za-z0-9_-]{24,}",
    r"hf_[A-Za-z0-9]{30,}",
];

fn shapes() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let joined = SHAPES
            .iter()
            .map(|s| format!("(?:{s})"))
            .collect::<Vec<_>>()
            .join("|");
        Regex::new(&joined).expect("the key-shape patterns are valid")
    })
}

fn aws_secret_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])")
            .expect("valid pattern")
    })
}

fn url_credentials_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"[A-Za-z][A-Za-z0-9+.-]*://[^:@/\s]+:([^@/\s]+)@").expect("valid pattern")
    })
}

/// What a key-shape match is, for its marker.
fn shape_label(m: &str) -> &'static str {
    if m.starts_with("-----BEGIN") {
        "private key"
    } else if m.starts_with("github_pat_") || m.get(3..4) == Some("_") && m.starts_with("gh") {
        "GitHub token"
    } else if m.starts_with("xox") {
        "Slack token"
    } else if m.starts_with("sk-ant-") {
        "Anthropic API key"
    } else if m.starts_with("sk-") {
        "OpenAI API key"
    } else if m.starts_with("AIza") {
        "Google API key"
    } else if m.starts_with("sk_") || m.starts_with("rk_") {
        "Stripe key"
    } else if m.starts_with("eyJ") {
        "JWT"
    } else if m.starts_with("glpat-") {
        "GitLab token"
    } else if m.starts_with("npm_") {
        "npm token"
    } else if m.starts_with("hvs.") {
        "Vault token"
    } else if m.starts_with("hf_") {
        "Hugging Face token"
    } else if m.len() == 20 && m.starts_with('A') {
        "AWS access key"
    } else {
        "AWS secret key"
    }
}

/// A secret file the redactor read values from.
#[derive(Debug, Clone)]
struct SecretFile {
    path: PathBuf,
    /// How the marker names it: relative to the project, or `~/…`.
    shown: String,
    content: String,
}

/// One stat-able thing whose change means "rebuild".
#[derive(Debug, Clone, PartialEq)]
struct Stamp {
    path: PathBuf,
    seen: Option<(SystemTime, u64)>,
}

fn stamp_of(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Secret values and key shapes, ready to match.
pub struct Redactor {
    files: Vec<SecretFile>,
    /// Per literal: the value's marker label and the files it came from.
    labels: Vec<String>,
    sources: Vec<Vec<usize>>,
    values: Vec<String>,
    literals: Literals,
    watched: Vec<Stamp>,
    built: Instant,
    extra: Vec<(String, String)>,
}

/// A range to replace and its marker.
struct Span {
    start: usize,
    end: usize,
    label: String,
}

impl Redactor {
    /// Scans `roots` (the project and `/add-dir` folders) and the home credential files;
    /// `extra` are `(value, label)` pairs always redacted (the model API key).
    pub fn build(roots: &[PathBuf], home: Option<&Path>, extra: &[(String, String)]) -> Self {
        let mut files = Vec::new();
        let mut watched = Vec::new();
        for root in roots {
            watched.push(Stamp {
                path: root.clone(),
                seen: stamp_of(root),
            });
            for path in walk(root) {
                let shown = path
                    .strip_prefix(root)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| path.display().to_string());
                if let Some(dir) = path.parent()
                    && !watched.iter().any(|s| s.path == dir)
                {
                    watched.push(Stamp {
                        path: dir.to_path_buf(),
                        seen: stamp_of(dir),
                    });
                }
                files.push((path, shown));
            }
        }
        if let Some(home) = home {
            for rel in HOME_FILES {
                let path = home.join(rel);
                if roots.iter().any(|r| path.starts_with(r)) {
                    continue; // already walked
                }
                watched.push(Stamp {
                    path: path.clone(),
                    seen: stamp_of(&path),
                });
                if path.is_file() {
                    files.push((path, format!("~/{rel}")));
                }
            }
        }
        let mut secret_files = Vec::new();
        for (path, shown) in files {
            watched.push(Stamp {
                path: path.clone(),
                seen: stamp_of(&path),
            });
            let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE_BYTES);
            if !small {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            secret_files.push(SecretFile {
                path,
                shown,
                content: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
        Self::from_files(secret_files, watched, extra)
    }

    fn from_files(files: Vec<SecretFile>, watched: Vec<Stamp>, extra: &[(String, String)]) -> Self {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut values: Vec<String> = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        let mut sources: Vec<Vec<usize>> = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let name = f
                .path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            for v in extract_values(&name, &f.content) {
                match index.get(&v) {
                    Some(&k) => {
                        if !sources[k].contains(&i) {
                            sources[k].push(i);
                        }
                    }
                    None => {
                        index.insert(v.clone(), values.len());
                        values.push(v);
                        labels.push(format!("value from {}", f.shown));
                        sources.push(vec![i]);
                    }
                }
            }
        }
        for (v, label) in extra {
            if v.chars().count() >= MIN_VALUE_CHARS && !index.contains_key(v) {
                index.insert(v.clone(), values.len());
                values.push(v.clone());
                labels.push(label.clone());
                sources.push(Vec::new());
            }
        }
        let literals = Literals::build(&values);
        Redactor {
            files,
            labels,
            sources,
            values,
            literals,
            watched,
            built: Instant::now(),
            extra: extra.to_vec(),
        }
    }

    /// A redactor over the given file contents only (tests, benchmarks).
    pub fn from_contents(files: &[(&str, &str)], extra: &[(String, String)]) -> Self {
        let files = files
            .iter()
            .map(|(shown, content)| SecretFile {
                path: PathBuf::from(shown),
                shown: shown.to_string(),
                content: content.to_string(),
            })
            .collect();
        Self::from_files(files, Vec::new(), extra)
    }

    /// Whether a secret file, the folder holding one, or a home credential file changed
    /// since the build (a few `stat` calls), or the periodic rescan is due.
    pub fn is_stale(&self) -> bool {
        self.built.elapsed() > RESCAN_AFTER
            || self.watched.iter().any(|s| stamp_of(&s.path) != s.seen)
    }

    /// The secret files the values came from (absolute paths).
    pub fn files(&self) -> Vec<&Path> {
        self.files.iter().map(|f| f.path.as_path()).collect()
    }

    /// Number of literal values matched.
    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// `text` with every secret replaced by a marker; `exempt(path)` says the user named or
    /// allowed that secret file (its values and the key material in it pass).
    pub fn redact<'a>(&self, text: &'a str, exempt: &dyn Fn(&Path) -> bool) -> Cow<'a, str> {
        let exempt_file: Vec<bool> = self.files.iter().map(|f| exempt(&f.path)).collect();
        let mut spans: Vec<Span> = Vec::new();
        match &self.literals {
            Literals::Regex(re, index) => {
                for m in re.find_iter(text) {
                    if let Some(&k) = index.get(m.as_str()) {
                        self.literal_span(k, m.start(), m.end(), &exempt_file, &mut spans);
                    }
                }
            }
            Literals::Automaton(ac) => {
                for m in ac.find_iter(text) {
                    let k = m.pattern().as_usize();
                    self.literal_span(k, m.start(), m.end(), &exempt_file, &mut spans);
                }
            }
            Literals::None => {}
        }
        for m in shapes().find_iter(text) {
            self.shape_span(text, m.start(), m.end(), &exempt_file, &mut spans);
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut i = 0;
        while i < spans.len() {
            let (start, mut end) = (spans[i].start, spans[i].end);
            let label = &spans[i].label;
            i += 1;
            while i < spans.len() && spans[i].start < end {
                end = end.max(spans[i].end);
                i += 1;
            }
            if start < at {
                // Entirely inside the previous replacement (cannot happen after merging,
                // kept for safety).
                at = at.max(end);
                continue;
            }
            out.push_str(&text[at..start]);
            // Keep a private key block's trailing line break outside the marker.
            let cut = text[start..end].trim_end_matches(['\n', '\r']).len() + start;
            out.push_str(&format!("[redacted: {label}]"));
            at = cut;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

impl Redactor {
    fn literal_span(
        &self,
        k: usize,
        start: usize,
        end: usize,
        exempt_file: &[bool],
        spans: &mut Vec<Span>,
    ) {
        let src = &self.sources[k];
        if !src.is_empty() && src.iter().any(|&i| exempt_file[i]) {
            return;
        }
        spans.push(Span {
            start,
            end,
            label: self.labels[k].clone(),
        });
    }

    fn shape_span(
        &self,
        text: &str,
        start: usize,
        end: usize,
        exempt_file: &[bool],
        spans: &mut Vec<Span>,
    ) {
        let s = &text[start..end];
        let bytes = text.as_bytes();
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let label = shape_label(s);
        // `task-runner-…` holds `sk-…`: a token starts at a word boundary (a private key
        // block or a secret key under its name need none: `MY_AWS_SECRET_ACCESS_KEY=`).
        let anywhere = matches!(label, "private key" | "AWS secret key");
        if !anywhere && start > 0 && word(bytes[start - 1]) {
            return;
        }
        let in_exempt = self
            .files
            .iter()
            .zip(exempt_file)
            .any(|(f, &e)| e && f.content.contains(s.trim_end()));
        if in_exempt {
            return;
        }
        if label == "AWS access key" && bytes.get(end).is_some_and(|&c| word(c)) {
            return;
        }
        let (from, to) = if label == "AWS secret key" {
            (end - 40, end)
        } else {
            (start, end)
        };
        spans.push(Span {
            start: from,
            end: to,
            label: label.to_string(),
        });
        if label == "AWS access key" {
            aws_secret_near(text, start, end, spans);
        }
    }
}

/// The literal values' matcher: the regex crate's literal-set search (its prefilter is
/// built on `aho_corasick`, with SIMD searchers and rare-byte heuristics) measured ~10x
/// faster than a plain Aho-Corasick automaton on values sharing common letters; the
/// automaton is the fallback when the set is too big for the regex size limit.
enum Literals {
    /// The alternation (longest value first, so a value wins over its own prefix) and the
    /// index of each value.
    Regex(Regex, HashMap<String, usize>),
    Automaton(AhoCorasick),
    None,
}

impl Literals {
    fn build(values: &[String]) -> Literals {
        if values.is_empty() {
            return Literals::None;
        }
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(values[k].len()));
        let alternation: Vec<String> = order.iter().map(|&k| regex::escape(&values[k])).collect();
        if let Ok(re) = regex::RegexBuilder::new(&alternation.join("|"))
            .size_limit(32 << 20)
            .build()
        {
            let index = values
                .iter()
                .enumerate()
                .map(|(k, v)| (v.clone(), k))
                .collect();
            return Literals::Regex(re, index);
        }
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(values)
            .map_or(Literals::None, Literals::Automaton)
    }
}

/// An AWS secret key (40 characters of base64) within three lines of an access key id.
fn aws_secret_near(text: &str, start: usize, end: usize, spans: &mut Vec<Span>) {
    let from = text[..start]
        .char_indices()
        .rev()
        .filter(|(_, c)| *c == '\n')
        .nth(2)
        .map_or(0, |(i, _)| i + 1);
    let to = text[end..]
        .char_indices()
        .filter(|(_, c)| *c == '\n')
        .nth(3)
        .map_or(text.len(), |(i, _)| end + i);
    for c in aws_secret_re().captures_iter(&text[from..to]) {
        if let Some(g) = c.get(1) {
            let s = g.as_str();
            // Real secret keys mix cases and digits; a 40-letter word is not one.
            let mixed = s
                .chars()
                .any(|c| c.is_ascii_digit() || c == '/' || c == '+')
                && s.chars().any(|c| c.is_ascii_lowercase())
                && s.chars().any(|c| c.is_ascii_uppercase());
            if mixed {
                spans.push(Span {
                    start: from + g.start(),
                    end: from + g.end(),
                    label: "AWS secret key".into(),
                });
            }
        }
    }
}

/// The secret files under `root`: hidden files included, ignore files not honoured (`.env`
/// is usually git-ignored), bounded in depth, entries and count.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .max_depth(Some(MAX_DEPTH))
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name()
                    .to_str()
                    .is_some_and(|n| SKIP_DIRS.contains(&n)))
        })
        .build();
    for (seen, entry) in walker.enumerate() {
        if seen >= MAX_ENTRIES || out.len() >= MAX_FILES {
            break;
        }
        let Ok(e) = entry else { continue };
        if e.file_type().is_some_and(|t| t.is_file()) && crate::sensitive::is_sensitive(e.path()) {
            out.push(e.into_path());
        }
    }
    out
}

/// Whether a value is worth redacting (long enough, not a configuration word or a number).
fn keep(v: &str) -> bool {
    let v = v.trim();
    if v.chars().count() < MIN_VALUE_CHARS {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    if COMMON.contains(&lower.as_str()) {
        return false;
    }
    if v.chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == ':')
    {
        return false;
    }
    // `${OTHER_VAR}` refers to another value.
    !(v.starts_with("${") && v.ends_with('}') && !v[2..].contains('$'))
}

/// The secret values in one secret file (`name` is its lower-case file name).
pub fn extract_values(name: &str, content: &str) -> Vec<String> {
    let mut raw: Vec<String> = Vec::new();
    let history = name.ends_with("history");
    let json_like =
        name.ends_with(".json") || name == ".dockercfg" || content.trim_start().starts_with('{');
    let mut parsed_json = false;
    if json_like && let Ok(v) = serde_json::from_str::<serde_json::Value>(content) {
        json_strings(&v, None, &mut raw);
        parsed_json = true;
    }
    if !parsed_json {
        if name == ".pgpass" {
            for line in content.lines() {
                let line = line.trim();
                if !line.is_empty() && !line.starts_with('#') {
                    raw.push(line.rsplit(':').next().unwrap_or("").to_string());
                }
            }
        } else if name == ".netrc" || name == "_netrc" {
            let words: Vec<&str> = content.split_whitespace().collect();
            for w in words.windows(2) {
                if matches!(w[0], "password" | "passwd" | "account") {
                    raw.push(w[1].to_string());
                }
            }
        } else {
            let secret_keys_only = TOOL_CONFIGS.contains(&name);
            line_values(content, history, secret_keys_only, &mut raw);
        }
    }
    for c in url_credentials_re().captures_iter(content) {
        if let Some(g) = c.get(1) {
            raw.push(g.as_str().to_string());
        }
    }
    // A file holding one bare token (`.vault-token`, an API key file).
    if raw.is_empty() && !history {
        let t = content.trim();
        if !t.is_empty() && !t.contains(char::is_whitespace) {
            raw.push(t.to_string());
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut push = |v: &str| {
        let v = v.trim();
        if keep(v) && !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
    };
    for v in &raw {
        push(v);
        // A multi-line value (a key in quotes): each long line alone too, and the pieces of
        // a value written with `\n` escapes.
        if v.contains('\n') || v.contains("\\n") {
            for piece in v.split('\n').flat_map(|l| l.split("\\n")) {
                if piece.trim().len() >= 16 {
                    push(piece);
                }
            }
        }
    }
    out
}

fn json_strings(v: &serde_json::Value, key: Option<&str>, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if !key.is_some_and(|k| BENIGN_JSON_KEYS.contains(&k)) => {
            out.push(s.clone());
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_strings(x, key, out)),
        serde_json::Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| json_strings(x, Some(k.as_str()), out)),
        _ => {}
    }
}

/// `KEY=value`, `export KEY=value`, `key: value`, `key = "value"` lines (dotenv, YAML, TOML,
/// INI, HCL). In shell histories only assignments count (other lines are commands).
fn line_values(content: &str, history: bool, secret_keys_only: bool, out: &mut Vec<String>) {
    let lines: Vec<&str> = content.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let mut line = lines[i].trim();
        i += 1;
        if history {
            // zsh extended history: `: 1700000000:0;command`
            if line.starts_with(": ")
                && let Some((_, cmd)) = line.split_once(';')
            {
                line = cmd.trim();
            }
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            continue;
        }
        let line = line
            .strip_prefix("export ")
            .or_else(|| line.strip_prefix("set "))
            .or_else(|| line.strip_prefix("- "))
            .unwrap_or(line)
            .trim_start();
        let Some((key, rest)) = split_assignment(line) else {
            continue;
        };
        if history && !is_identifier(key) {
            continue;
        }
        if secret_keys_only && !secret_key_name(key) {
            continue;
        }
        let rest = rest.trim();
        let Some(q) = rest
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\'' | '`'))
        else {
            // Unquoted: up to a ` #` comment; YAML block scalars (`|`, `>`) are skipped.
            let v = rest.split(" #").next().unwrap_or("").trim();
            let v = v.trim_end_matches(',');
            // In a history the command goes on after the assignment.
            let v = if history {
                v.split_whitespace().next().unwrap_or("")
            } else {
                v
            };
            if !matches!(v, "|" | ">" | "|-" | ">-" | "{" | "[") {
                out.push(v.to_string());
            }
            continue;
        };
        let body = &rest[1..];
        if let Some(end) = body.find(q) {
            out.push(body[..end].to_string());
            continue;
        }
        // A quoted value over several lines (a key pasted into a .env file).
        let mut value = body.to_string();
        while i < lines.len() {
            let l = lines[i];
            i += 1;
            value.push('\n');
            if let Some(end) = l.find(q) {
                value.push_str(&l[..end]);
                break;
            }
            value.push_str(l);
        }
        out.push(value);
    }
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Splits `key=value` / `key: value` at the earlier of `=` and a YAML `: `.
fn split_assignment(line: &str) -> Option<(&str, &str)> {
    let eq = line.find('=');
    let colon = line
        .match_indices(':')
        .find(|(i, _)| {
            line[i + 1..]
                .chars()
                .next()
                .is_none_or(|c| c == ' ' || c == '\t')
        })
        .map(|(i, _)| i);
    let at = match (eq, colon) {
        (Some(e), Some(c)) => e.min(c),
        (Some(e), None) => e,
        (None, Some(c)) => c,
        (None, None) => return None,
    };
    let key = line[..at].trim().trim_matches(['"', '\'']);
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    Some((key, &line[at + 1..]))
}

/// Redactors per set of roots, rebuilt when stale.
fn cache() -> &'static Mutex<HashMap<Vec<PathBuf>, Arc<Redactor>>> {
    static C: OnceLock<Mutex<HashMap<Vec<PathBuf>, Arc<Redactor>>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The redactor for these roots (cached; rebuilt when a secret file changed).
pub fn for_roots(roots: &[PathBuf], extra: &[(String, String)]) -> Arc<Redactor> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut c = match cache().lock() {
        Ok(c) => c,
        Err(p) => p.into_inner(),
    };
    if let Some(r) = c.get(roots)
        && r.extra == extra
        && !r.is_stale()
    {
        return r.clone();
    }
    let r = Arc::new(Redactor::build(roots, home.as_deref(), extra));
    if c.len() >= 32 {
        c.clear(); // many short sessions in one process (tests, agent_api): stay small
    }
    c.insert(roots.to_vec(), r.clone());
    r
}

/// The policy's exemption: files named with `@path`, or allowed by a path rule for `read`.
pub fn exempt_by(policy: &crate::Policy) -> impl Fn(&Path) -> bool + '_ {
    move |p: &Path| {
        let project = policy
            .roots
            .first()
            .map(PathBuf::as_path)
            .unwrap_or(Path::new("/"));
        policy.mentioned.iter().any(|m| m == p)
            || policy
                .allow
                .iter()
                .chain(policy.granted.iter())
                .any(|r| r.covers_tool("read") && r.pattern.is_some() && r.matches_path(p, project))
    }
}

/// Redacts one tool result under the policy's exemptions: the one call the core makes.
pub fn redact_result<'a>(
    policy: &crate::Policy,
    extra: &[(String, String)],
    text: &'a str,
) -> Cow<'a, str> {
    let r = for_roots(&policy.roots, extra);
    r.redact(text, &exempt_by(policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "# app settings\nSECRET_TOKEN=s3cr3t-value-123456\nexport API_KEY=\"quoted-value-98765\"\nSINGLE='single-quoted-4242'\nDEBUG=true\nPORT=8080\nSHORT=abc\nHOST=localhost\nCOMMENTED=plain-value-777 # the comment\n";

    fn never(_: &Path) -> bool {
        false
    }

    fn red(files: &[(&str, &str)], text: &str) -> String {
        Redactor::from_contents(files, &[])
            .redact(text, &never)
            .into_owned()
    }

    #[test]
    fn dotenv_values_in_every_form() {
        let out = red(
            &[(".env", ENV)],
            "SECRET_TOKEN=s3cr3t-value-123456\nkey quoted-value-98765 and single-quoted-4242, plain-value-777",
        );
        assert!(!out.contains("s3cr3t-value-123456"), "{out}");
        assert!(!out.contains("quoted-value-98765"), "{out}");
        assert!(!out.contains("single-quoted-4242"), "{out}");
        assert!(!out.contains("plain-value-777"), "{out}");
        assert!(
            out.contains("SECRET_TOKEN=[redacted: value from .env]"),
            "{out}"
        );
    }

    #[test]
    fn short_and_common_values_are_not_redacted() {
        let text = "DEBUG=true on localhost:8080, abc, 8080, the comment";
        assert_eq!(red(&[(".env", ENV)], text), text);
        let vals = extract_values(".env", ENV);
        assert_eq!(
            vals,
            vec![
                "s3cr3t-value-123456",
                "quoted-value-98765",
                "single-quoted-4242",
                "plain-value-777"
            ]
        );
    }

    #[test]
    fn named_file_is_exempt() {
        let r = Redactor::from_contents(&[("app/.env", ENV)], &[]);
        let text = "s3cr3t-value-123456";
        let named = |p: &Path| p == Path::new("app/.env");
        assert_eq!(r.redact(text, &named), text);
        assert_eq!(r.redact(text, &never), "[redacted: value from app/.env]");
    }

    #[test]
    fn model_key_is_never_exempt() {
        let extra = vec![(
            "model-key-abcdef123".to_string(),
            "model API key".to_string(),
        )];
        let r = Redactor::from_contents(&[(".env", ENV)], &extra);
        let all = |_: &Path| true;
        assert_eq!(
            r.redact("k=model-key-abcdef123", &all),
            "k=[redacted: model API key]"
        );
        assert_eq!(r.value_count(), 5);
    }

    #[test]
    fn key_shapes() {
        let cases: &[(&str, &str)] = &[
            ("AKIAIOSFODNN7EXAMPLE", "AWS access key"),
            ("ASIAY34FZKBOKMUTVV7A", "AWS access key"),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"),
            ("gho_abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"),
            ("ghs_abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"),
            ("ghu_abcdefghijklmnopqrstuvwxyz0123456789", "GitHub token"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "GitHub token",
            ),
            ("xoxb-123456789012-abcdefghijkl", "Slack token"),
            ("xoxp-123456789012-abcdefghijkl", "Slack token"),
            ("xoxa-2-123456789012-abcdefgh", "Slack token"),
            ("xoxr-123456789012-abcdefghijkl", "Slack token"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "OpenAI API key"),
            ("sk-abcdefghijklmnopqrstuvwxyz012345", "OpenAI API key"),
            (
                "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
                "Anthropic API key",
            ),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "Google API key"),
            ("sk_live_abcdefghijklmnop1234", "Stripe key"),
            ("rk_live_abcdefghijklmnop1234", "Stripe key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "JWT",
            ),
            ("glpat-abcdefghij0123456789", "GitLab token"),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm token"),
            ("hvs.CAESIJabcdefghijklmnopqrstuvwxyz", "Vault token"),
        ];
        for (secret, label) in cases {
            let text = format!("token: {secret} end");
            let out = red(&[], &text);
            assert_eq!(out, format!("token: [redacted: {label}] end"), "{secret}");
        }
        // Siblings that are not secrets.
        for text in [
            "task-runner-configuration-file",
            "risk-assessment-for-the-project-x",
            "AKIA is a prefix",
            "ghp_short",
            "eyJ alone",
            "the npm_config_cache variable",
            "sk-short",
        ] {
            assert_eq!(red(&[], text), text);
        }
    }

    #[test]
    fn aws_secret_next_to_access_key() {
        let text = "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = us-east-1\n";
        let out = red(&[], text);
        assert!(!out.contains("AKIAIOSFODNN7EXAMPLE"), "{out}");
        assert!(!out.contains("wJalrXUtnFEMI"), "{out}");
        assert!(out.contains("region = us-east-1"), "{out}");
        // A secret key under its name alone.
        let out = red(
            &[],
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        );
        assert_eq!(out, "AWS_SECRET_ACCESS_KEY=[redacted: AWS secret key]");
        let out = red(
            &[],
            "MY_AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        );
        assert_eq!(out, "MY_AWS_SECRET_ACCESS_KEY: [redacted: AWS secret key]");
        // An id inside a longer upper-case word is not one.
        let long = "XAKIAIOSFODNN7EXAMPLE AKIAIOSFODNN7EXAMPLEXX";
        assert_eq!(red(&[], long), long);
    }

    #[test]
    fn private_key_blocks_whole_and_cut() {
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDbW3Vm1kZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAA\n-----END OPENSSH PRIVATE KEY-----\n";
        let out = red(&[], &format!("before\n{key}after\n"));
        assert_eq!(out, "before\n[redacted: private key]\nafter\n");
        let rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdef\n-----END RSA PRIVATE KEY-----";
        assert_eq!(red(&[], rsa), "[redacted: private key]");
        // `head -2 id_rsa`: no END line.
        let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdef\ndone\n";
        assert_eq!(red(&[], cut), "[redacted: private key]\ndone\n");
        let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF1234\n-----END PGP PRIVATE KEY BLOCK-----";
        assert_eq!(red(&[], pgp), "[redacted: private key]");
        // A public key or certificate passes.
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        assert_eq!(red(&[], cert), cert);
        // Named key file: exempt.
        let r = Redactor::from_contents(&[("id_rsa", rsa)], &[]);
        let named = |p: &Path| p == Path::new("id_rsa");
        assert_eq!(r.redact(rsa, &named), rsa);
        assert_eq!(r.redact(rsa, &never), "[redacted: private key]");
    }

    #[test]
    fn multi_line_quoted_value() {
        let env = "KEY=\"line-one-of-the-secret-value\nline-two-of-the-secret-value\"\nNEXT=other-value-123\n";
        let vals = extract_values(".env", env);
        assert!(
            vals.contains(
                &"line-one-of-the-secret-value\nline-two-of-the-secret-value".to_string()
            ),
            "{vals:?}"
        );
        assert!(
            vals.contains(&"line-two-of-the-secret-value".to_string()),
            "{vals:?}"
        );
        assert!(vals.contains(&"other-value-123".to_string()), "{vals:?}");
        let out = red(&[(".env", env)], "x line-two-of-the-secret-value y");
        assert_eq!(out, "x [redacted: value from .env] y");
    }

    #[test]
    fn file_formats() {
        let cases: &[(&str, &str, &[&str])] = &[
            (
                "config.json",
                r#"{"db": {"password": "json-pass-1234"}, "type": "service_account_x", "n": 5}"#,
                &["json-pass-1234"],
            ),
            (
                "secrets.yml",
                "db:\n  password: \"yaml-pass-1234\"\n  url: https://h/a=b\n",
                &["yaml-pass-1234", "https://h/a=b"],
            ),
            (
                "secrets.toml",
                "[db]\npassword = 'toml-pass-1234'\n",
                &["toml-pass-1234"],
            ),
            (
                "prod.tfvars",
                "db_password = \"tf-pass-123456\"\n",
                &["tf-pass-123456"],
            ),
            (
                ".netrc",
                "machine api.example.com login me password netrc-pass-99\n",
                &["netrc-pass-99"],
            ),
            (
                ".pgpass",
                "db.example.com:5432:app:me:pg-pass-123456\n",
                &["pg-pass-123456"],
            ),
            (
                ".git-credentials",
                "https://me:gitcred-token-77@github.com\n",
                &["gitcred-token-77"],
            ),
            (
                ".npmrc",
                "registry=https://registry.example.org/\n//registry.npmjs.org/:_authToken=npmrc-token-12345\n",
                &["npmrc-token-12345"],
            ),
            (
                ".pypirc",
                "[pypi]\nrepository = https://upload.pypi.org/legacy/\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc\n",
                &["pypi-AgEIcHlwaS5vcmc"],
            ),
            (
                ".vault-token",
                "s.vaulttoken123456\n",
                &["s.vaulttoken123456"],
            ),
            (
                ".envrc",
                "export DB_PASS=envrc-pass-1234\n",
                &["envrc-pass-1234"],
            ),
            (
                ".bash_history",
                "ls -la\nexport GH_TOKEN=hist-token-123456\ngit commit -m 'x=yyyyyyyyyy'\n",
                &["hist-token-123456"],
            ),
            (
                ".zsh_history",
                ": 1700000000:0;TOKEN=zsh-token-123456 make\n",
                &["zsh-token-123456"],
            ),
            (
                ".env",
                "DATABASE_URL=postgres://app:db-pass-5678@localhost/app\n",
                &["postgres://app:db-pass-5678@localhost/app", "db-pass-5678"],
            ),
        ];
        for (name, content, want) in cases {
            let got = extract_values(name, content);
            assert_eq!(&got, want, "{name}");
        }
    }

    #[test]
    fn walk_finds_hidden_ignored_secret_files_and_skips_vendored_dirs() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join(".env"), "SECRET_TOKEN=s3cr3t-value-123456\n").unwrap();
        std::fs::write(root.join(".gitignore"), ".env\n").unwrap();
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join("app/.env.local"), "X=local-value-123456\n").unwrap();
        std::fs::write(root.join(".env.example"), "X=example-value-1234\n").unwrap();
        std::fs::create_dir_all(root.join("node_modules/p")).unwrap();
        std::fs::write(root.join("node_modules/p/.env"), "X=vendored-value-123\n").unwrap();
        let r = Redactor::build(std::slice::from_ref(&root), None, &[]);
        let out = r.redact(
            "s3cr3t-value-123456 local-value-123456 example-value-1234 vendored-value-123",
            &never,
        );
        assert_eq!(
            out,
            "[redacted: value from .env] [redacted: value from app/.env.local] example-value-1234 vendored-value-123"
        );
        assert!(!r.is_stale());
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(root.join(".env"), "SECRET_TOKEN=changed-value-123456\n").unwrap();
        assert!(r.is_stale());
        // A new secret file in the root changes the root's mtime.
        let r = Redactor::build(std::slice::from_ref(&root), None, &[]);
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(root.join("prod.env"), "X=new-file-value-123\n").unwrap();
        assert!(r.is_stale());
        let r = for_roots(std::slice::from_ref(&root), &[]);
        assert!(r.redact("new-file-value-123", &never).contains("prod.env"));
    }

    #[test]
    fn overlapping_matches_merge() {
        // A .env value that is itself a token: one marker.
        let env = "GH=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n";
        let out = red(
            &[(".env", env)],
            "t=ghp_abcdefghijklmnopqrstuvwxyz0123456789.",
        );
        assert_eq!(out, "t=[redacted: value from .env].");
    }
}
