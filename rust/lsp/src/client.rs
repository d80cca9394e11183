//! A minimal LSP client over a child's stdio: JSON-RPC 2.0 with `Content-Length` framing.
//! One reader thread per server parses messages: responses wake the waiting request,
//! `textDocument/publishDiagnostics` is kept per document with a generation counter (so a
//! caller can wait for diagnostics newer than its change), and requests from the server
//! (`workspace/configuration`, `client/registerCapability`, progress) get a neutral answer
//! so servers that wait for one do not stall.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::PipeWriter;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use yuyao_policy::sandbox::{self, Launch, Prepared};

/// The model's key never reaches a language server (as for hooks and MCP servers).
use yuyao_protocol::MODEL_KEY_VAR;

#[derive(Default)]
struct Inner {
    responses: HashMap<i64, Value>,
    /// uri → (generation of the last publish, its diagnostics).
    diags: HashMap<String, (u64, Vec<Value>)>,
    generation: u64,
    exited: bool,
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    cv: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct Client {
    pub command: String,
    child: Mutex<Child>,
    stdin: Arc<Mutex<PipeWriter>>,
    next_id: AtomicI64,
    shared: Arc<Shared>,
    /// Open documents: uri → (version, the file's mtime when its text was last sent).
    open: Mutex<HashMap<String, (i32, Option<std::time::SystemTime>)>>,
    /// What the server said it offers (`initialize` result).
    capabilities: Value,
}

fn write_message(w: &mut impl Write, msg: &Value) -> std::io::Result<()> {
    let body = msg.to_string();
    write!(w, "Content-Length: {}\r\n\r\n{}", body.len(), body)?;
    w.flush()
}

/// Reads one framed message; `None` at end of stream or on a broken frame.
fn read_message(r: &mut impl BufRead) -> Option<Value> {
    let mut len: Option<usize> = None;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            if len.is_some() {
                break;
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().ok();
        }
    }
    let mut body = vec![0u8; len?];
    r.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn mtime(p: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

pub fn path_uri(p: &Path) -> String {
    let mut s = String::from("file://");
    for b in p.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                s.push(b as char)
            }
            _ => s.push_str(&format!("%{b:02X}")),
        }
    }
    s
}

pub fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(rest.get(i + 1..i + 3)?, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&out).into_owned()))
}

impl Client {
    /// Spawns the server in `root` through the sandbox spawner, confined as `prepared` says
    /// (its profile: `process_profile`), and runs the `initialize` handshake.
    pub fn start(
        program: &str,
        args: &[String],
        root: &Path,
        timeout: Duration,
        prepared: Prepared,
        env: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)>,
    ) -> Result<Client, String> {
        let cannot = |e: std::io::Error| format!("cannot start language server '{program}': {e}");
        let (in_r, in_w) = std::io::pipe().map_err(cannot)?;
        let (out_r, out_w) = std::io::pipe().map_err(cannot)?;
        let null = std::fs::File::options()
            .write(true)
            .open("/dev/null")
            .map_err(cannot)?;
        let mut launch = Launch::new(program, &[], root);
        launch.args = args.iter().map(Into::into).collect();
        launch.env = env;
        launch.env.push((MODEL_KEY_VAR.into(), None));
        launch.stdin = Some(in_r.into());
        launch.stdout = Some(out_w.into());
        launch.stderr = Some(null.into());
        let child = sandbox::spawn(launch, prepared).map_err(cannot)?;
        let stdin = Arc::new(Mutex::new(in_w));
        let stdout = out_r;
        let shared = Arc::new(Shared::default());
        {
            let shared = shared.clone();
            let stdin = stdin.clone();
            std::thread::Builder::new()
                .name("yuyao-lsp-reader".into())
                .spawn(move || reader(BufReader::new(stdout), &shared, &stdin))
                .map_err(|e| e.to_string())?;
        }
        let client = Client {
            command: program.to_string(),
            child: Mutex::new(child),
            stdin,
            next_id: AtomicI64::new(1),
            shared,
            open: Mutex::new(HashMap::new()),
            capabilities: Value::Null,
        };
        let uri = path_uri(root);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let params = json!({
            // Not yuyao's pid: the server runs in a PID namespace where that pid is some other
            // process or none (pylsp exits at once when it is not alive). It dies with yuyao
            // all the same (the spawner's parent-death signal).
            "processId": null,
            "rootUri": uri,
            "rootPath": root,
            "workspaceFolders": [{"uri": uri, "name": name}],
            "clientInfo": {"name": "yuyao"},
            "capabilities": {
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "publishDiagnostics": {"relatedInformation": false},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "definition": {"linkSupport": true},
                    "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
                },
                "workspace": {"symbol": {}, "workspaceFolders": true, "configuration": true}
            }
        });
        let mut client = client;
        let init = client
            .request("initialize", params, timeout)
            .map_err(|e| format!("language server '{program}' did not initialize: {e}"))?;
        client.capabilities = init.get("capabilities").cloned().unwrap_or(Value::Null);
        client.notify("initialized", json!({}))?;
        Ok(client)
    }

    /// Whether the server offers `provider` (e.g. `definitionProvider`): `true` or options.
    pub fn offers(&self, provider: &str) -> bool {
        !matches!(
            self.capabilities.get(provider),
            None | Some(Value::Null) | Some(Value::Bool(false))
        )
    }

    pub fn alive(&self) -> bool {
        if self.shared.lock().exited {
            return false;
        }
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        matches!(child.try_wait(), Ok(None))
    }

    pub fn notify(&self, method: &str, params: Value) -> Result<(), String> {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let mut w = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        write_message(&mut *w, &msg).map_err(|e| format!("language server gone: {e}"))
    }

    pub fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        {
            let mut w = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
            write_message(&mut *w, &msg).map_err(|e| format!("language server gone: {e}"))?;
        }
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.lock();
        loop {
            if let Some(resp) = inner.responses.remove(&id) {
                if let Some(err) = resp.get("error") {
                    return Err(err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string());
                }
                return Ok(resp.get("result").cloned().unwrap_or(Value::Null));
            }
            if inner.exited {
                return Err("the language server exited".into());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "no answer to {method} within {} ms",
                    timeout.as_millis()
                ));
            }
            inner = self
                .shared
                .cv
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Sends the file's current text (didOpen the first time, then didChange + didSave) and
    /// returns the diagnostics generation before the change, for [`Client::wait_diagnostics`].
    /// Other open documents changed on disk since (by bash, by another tool) are sent again
    /// too, so cross-file answers never come from a stale copy.
    pub fn sync(&self, path: &Path, language_id: &str) -> Result<(String, u64), String> {
        let uri = path_uri(path);
        let before = self.shared.lock().generation;
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let stale: Vec<String> = open
            .iter()
            .filter(|(u, (_, seen))| *u != &uri && uri_path(u).map(|p| mtime(&p)) != Some(*seen))
            .map(|(u, _)| u.clone())
            .collect();
        for u in stale {
            if let Some(p) = uri_path(&u)
                && let Ok(text) = std::fs::read_to_string(&p)
            {
                let entry = open.get_mut(&u).expect("listed above");
                *entry = (entry.0 + 1, mtime(&p));
                self.change(&u, entry.0, &text)?;
            }
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        match open.get_mut(&uri) {
            None => {
                open.insert(uri.clone(), (1, mtime(path)));
                self.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}}),
                )?;
            }
            Some(entry) => {
                *entry = (entry.0 + 1, mtime(path));
                self.change(&uri, entry.0, &text)?;
            }
        }
        Ok((uri, before))
    }

    fn change(&self, uri: &str, version: i32, text: &str) -> Result<(), String> {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        )?;
        self.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}, "text": text}),
        )
    }

    /// Diagnostics of `uri` published after generation `after`: waits up to `timeout` for the
    /// first publish, then a short quiet period for a later one (servers often publish twice:
    /// after the change and after the save). `None` when nothing came in time.
    pub fn wait_diagnostics(&self, uri: &str, after: u64, timeout: Duration) -> Option<Vec<Value>> {
        let deadline = Instant::now() + timeout;
        let settle = Duration::from_millis(250);
        let mut inner = self.shared.lock();
        let mut seen: Option<u64> = None;
        let mut quiet_until: Option<Instant> = None;
        loop {
            let current = inner.diags.get(uri).map(|(g, _)| *g).filter(|g| *g > after);
            if current != seen && current.is_some() {
                seen = current;
                quiet_until = Some((Instant::now() + settle).min(deadline));
            }
            let now = Instant::now();
            let until = quiet_until.unwrap_or(deadline);
            if now >= until || inner.exited {
                return seen.map(|_| {
                    inner
                        .diags
                        .get(uri)
                        .map(|d| d.1.clone())
                        .unwrap_or_default()
                });
            }
            inner = self
                .shared
                .cv
                .wait_timeout(inner, until - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The last diagnostics published for `uri`, if any.
    pub fn last_diagnostics(&self, uri: &str) -> Option<Vec<Value>> {
        self.shared.lock().diags.get(uri).map(|d| d.1.clone())
    }

    /// `shutdown` + `exit`, then the process is killed if it lingers.
    pub fn stop(&self) {
        if self.alive() {
            let _ = self.request("shutdown", Value::Null, Duration::from_millis(800));
            let _ = self.notify("exit", Value::Null);
        }
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = Instant::now() + Duration::from_millis(500);
        while Instant::now() < deadline {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// The server's process id (tests and traces).
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.stop();
    }
}

fn reader(mut r: impl BufRead, shared: &Shared, stdin: &Mutex<PipeWriter>) {
    while let Some(msg) = read_message(&mut r) {
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").cloned();
        match (method, id) {
            (Some(m), Some(id)) => {
                // A request from the server: a neutral answer so it does not wait on us.
                let result = match m {
                    "workspace/configuration" => {
                        let n = msg
                            .pointer("/params/items")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len);
                        Value::Array(vec![Value::Null; n])
                    }
                    "workspace/workspaceFolders" => Value::Array(Vec::new()),
                    _ => Value::Null,
                };
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                let mut w = stdin.lock().unwrap_or_else(|e| e.into_inner());
                let _ = write_message(&mut *w, &reply);
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let uri = msg.pointer("/params/uri").and_then(Value::as_str);
                let diags = msg
                    .pointer("/params/diagnostics")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if let Some(uri) = uri {
                    let mut inner = shared.lock();
                    inner.generation += 1;
                    let g = inner.generation;
                    inner.diags.insert(uri.to_string(), (g, diags));
                    shared.cv.notify_all();
                }
            }
            (Some(_), None) => {}
            (None, Some(id)) => {
                if let Some(id) = id.as_i64() {
                    shared.lock().responses.insert(id, msg);
                    shared.cv.notify_all();
                }
            }
            (None, None) => {}
        }
    }
    shared.lock().exited = true;
    shared.cv.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trip_and_uris() {
        let mut buf = Vec::new();
        write_message(&mut buf, &json!({"a": "é"})).unwrap();
        write_message(&mut buf, &json!({"b": 2})).unwrap();
        let mut r = BufReader::new(&buf[..]);
        assert_eq!(read_message(&mut r), Some(json!({"a": "é"})));
        assert_eq!(read_message(&mut r), Some(json!({"b": 2})));
        assert_eq!(read_message(&mut r), None);
        let p = Path::new("/tmp/a b/ü.py");
        assert_eq!(uri_path(&path_uri(p)).as_deref(), Some(p));
        assert_eq!(path_uri(Path::new("/x/a b.py")), "file:///x/a%20b.py");
    }
}
