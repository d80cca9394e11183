//! A small Chrome DevTools Protocol client over `--remote-debugging-pipe`: Chromium reads
//! commands from its fd 3 and writes replies and events to its fd 4, each message a JSON text
//! ended by a NUL byte. A pipe, not a port: no other local process can drive this browser.
//!
//! One reader thread routes replies to their callers by id, keeps console messages and page
//! errors, and answers `Fetch.requestPaused` at once: every request the page makes is held
//! until [`Guard`] says whether it may go (the network switch and the domain rules).

use serde_json::{Value, json};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which requests the page may make.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    pub network_on: bool,
    pub rules: yuyao_policy::domains::HostRules,
    /// Plan mode, the ask role: only reads (GET/HEAD), no form submission.
    pub read_only: bool,
}

impl Guard {
    /// `Err(why)` when a request must not leave: its host ([`Guard::check`]), and in a
    /// read-only session any method but GET/HEAD or a navigation a form submission started
    /// (`form_submission`), which sends what the page holds even as a GET.
    pub fn check_request(
        &self,
        url: &str,
        method: &str,
        form_submission: bool,
    ) -> Result<(), String> {
        if self.read_only && !matches!(method, "GET" | "HEAD") {
            return Err(format!(
                "a {method} request sends data, and this session may only read (plan mode or the ask role)"
            ));
        }
        if self.read_only && form_submission {
            return Err(
                "a form submission sends data, and this session may only read (plan mode or the ask role)"
                    .into(),
            );
        }
        self.check(url)
    }

    /// `Err(why)` when a request to `url` must not leave.
    pub fn check(&self, url: &str) -> Result<(), String> {
        let Ok(u) = url::Url::parse(url) else {
            return Ok(());
        };
        if !matches!(u.scheme(), "http" | "https" | "ws" | "wss") {
            return Ok(());
        }
        let host = u.host_str().unwrap_or("");
        if !self.network_on && !crate::web::is_loopback_host(host) {
            return Err(format!(
                "network access is off: the browser reaches only loopback (127.0.0.0/8, ::1, localhost), not {host}; turn it on with --network on"
            ));
        }
        self.rules.check(host)?;
        self.check_resolved(host)
    }

    /// A name is judged by the addresses it resolves to as well (a deny of
    /// `domain:127.0.0.1` covers a name pointing there). Chromium resolves again when it
    /// connects; with the network off only loopback names resolve at all (the resolver rules
    /// of the launch), so this matters with it on.
    fn check_resolved(&self, host: &str) -> Result<(), String> {
        use std::net::ToSocketAddrs;
        let key = yuyao_policy::domains::HostKey::of(host);
        if self.rules.denies_nothing() || matches!(key, yuyao_policy::domains::HostKey::Addr(_)) {
            return Ok(());
        }
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let ips: Vec<std::net::IpAddr> = (bare, 0)
            .to_socket_addrs()
            .map(|a| a.map(|a| a.ip()).collect())
            .unwrap_or_default();
        self.rules.check_resolved(host, &ips)
    }
}

#[derive(Default)]
pub struct Log {
    /// Console messages and page errors, oldest first (bounded).
    pub lines: Vec<String>,
    /// How many lines were dropped past the bound.
    pub dropped: usize,
}

const MAX_LOG_LINES: usize = 500;

impl Log {
    fn push(&mut self, line: String) {
        if self.lines.len() >= MAX_LOG_LINES {
            self.lines.remove(0);
            self.dropped += 1;
        }
        self.lines.push(line.chars().take(2000).collect());
    }
}

pub struct Cdp {
    writer: Arc<Mutex<File>>,
    next_id: Arc<AtomicU64>,
    pending: Arc<Mutex<HashMap<u64, Sender<Value>>>>,
    pub log: Arc<Mutex<Log>>,
    pub guard: Arc<Mutex<Guard>>,
    pub alive: Arc<AtomicBool>,
}

fn send_raw(writer: &Mutex<File>, msg: &Value) -> Result<(), String> {
    let mut w = writer
        .lock()
        .map_err(|_| "the browser connection is broken".to_string())?;
    let mut bytes = serde_json::to_vec(msg).map_err(|e| e.to_string())?;
    bytes.push(0);
    w.write_all(&bytes)
        .and_then(|_| w.flush())
        .map_err(|e| format!("the browser is gone ({e})"))
}

fn console_line(p: &Value) -> String {
    let kind = p["type"].as_str().unwrap_or("log");
    let args: Vec<String> = p["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| match v.get("value") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) if !other.is_null() => other.to_string(),
                    _ => v["description"]
                        .as_str()
                        .or(v["type"].as_str())
                        .unwrap_or("")
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    format!("[console.{kind}] {}", args.join(" "))
}

impl Cdp {
    /// Starts the reader over Chromium's output pipe.
    pub fn new(to_browser: File, from_browser: File) -> Cdp {
        let cdp = Cdp {
            writer: Arc::new(Mutex::new(to_browser)),
            next_id: Arc::new(AtomicU64::new(1)),
            pending: Arc::new(Mutex::new(HashMap::new())),
            log: Arc::new(Mutex::new(Log::default())),
            guard: Arc::new(Mutex::new(Guard::default())),
            alive: Arc::new(AtomicBool::new(true)),
        };
        // Navigations started by a form submission, until their request is seen.
        let form_urls: Arc<Mutex<Vec<String>>> = Arc::default();
        let (writer, pending, log, guard, alive, next_id) = (
            cdp.writer.clone(),
            cdp.pending.clone(),
            cdp.log.clone(),
            cdp.guard.clone(),
            cdp.alive.clone(),
            cdp.next_id.clone(),
        );
        std::thread::Builder::new()
            .name("yuyao-cdp".into())
            .spawn(move || {
                let mut r = BufReader::new(from_browser);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match r.read_until(0, &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    if buf.last() == Some(&0) {
                        buf.pop();
                    }
                    let Ok(msg) = serde_json::from_slice::<Value>(&buf) else {
                        continue;
                    };
                    if let Some(id) = msg.get("id").and_then(Value::as_u64) {
                        if let Some(tx) = pending.lock().ok().and_then(|mut p| p.remove(&id)) {
                            let _ = tx.send(msg);
                        }
                        continue;
                    }
                    let method = msg["method"].as_str().unwrap_or("");
                    let params = &msg["params"];
                    match method {
                        "Page.frameRequestedNavigation" => {
                            // Comes before the navigation's request: remember the form's.
                            let reason = params["reason"].as_str().unwrap_or("");
                            if reason.starts_with("formSubmission")
                                && let (Some(u), Ok(mut f)) =
                                    (params["url"].as_str(), form_urls.lock())
                            {
                                f.push(u.to_string());
                            }
                        }
                        "Fetch.requestPaused" => {
                            let url = params["request"]["url"].as_str().unwrap_or("");
                            let method = params["request"]["method"].as_str().unwrap_or("GET");
                            let form = params["resourceType"].as_str() == Some("Document")
                                && form_urls.lock().is_ok_and(|mut f| {
                                    let hit = f.iter().position(|u| u == url);
                                    hit.map(|i| f.remove(i)).is_some()
                                });
                            let verdict = guard
                                .lock()
                                .map(|g| g.check_request(url, method, form))
                                .unwrap_or_else(|_| Err("guard unavailable".into()));
                            let id = next_id.fetch_add(1, Ordering::SeqCst);
                            let (method, extra) = match &verdict {
                                Ok(()) => ("Fetch.continueRequest", json!({})),
                                Err(_) => (
                                    "Fetch.failRequest",
                                    json!({"errorReason": "BlockedByClient"}),
                                ),
                            };
                            let mut p = json!({"requestId": params["requestId"]});
                            if let (Some(o), Some(e)) = (p.as_object_mut(), extra.as_object()) {
                                o.extend(e.clone());
                            }
                            let mut cmd = json!({"id": id, "method": method, "params": p});
                            if let Some(s) = msg.get("sessionId") {
                                cmd["sessionId"] = s.clone();
                            }
                            let _ = send_raw(&writer, &cmd);
                            if let Err(why) = verdict
                                && let Ok(mut l) = log.lock()
                            {
                                l.push(format!("[blocked] {url}: {why}"));
                            }
                        }
                        "Runtime.consoleAPICalled" => {
                            if let Ok(mut l) = log.lock() {
                                l.push(console_line(params));
                            }
                        }
                        "Runtime.exceptionThrown" => {
                            let d = &params["exceptionDetails"];
                            let text = d["exception"]["description"]
                                .as_str()
                                .or(d["text"].as_str())
                                .unwrap_or("exception");
                            if let Ok(mut l) = log.lock() {
                                l.push(format!("[page error] {text}"));
                            }
                        }
                        "Log.entryAdded" => {
                            let e = &params["entry"];
                            let mut line = format!(
                                "[{}] {}",
                                e["level"].as_str().unwrap_or("log"),
                                e["text"].as_str().unwrap_or("")
                            );
                            if let Some(u) = e["url"].as_str().filter(|u| !u.is_empty()) {
                                line.push_str(&format!(" ({u})"));
                            }
                            if let Ok(mut l) = log.lock() {
                                l.push(line);
                            }
                        }
                        _ => {}
                    }
                }
                alive.store(false, Ordering::SeqCst);
                // Waiting callers see their channel close.
                if let Ok(mut p) = pending.lock() {
                    p.clear();
                }
            })
            .expect("spawn the CDP reader");
        cdp
    }

    /// Sends one command (to a page when `session` is given) and waits for its reply.
    pub fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        if !self.alive.load(Ordering::SeqCst) {
            return Err("the browser has exited".into());
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx): (Sender<Value>, Receiver<Value>) = channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        send_raw(&self.writer, &msg)?;
        let reply = rx.recv_timeout(timeout).map_err(|e| {
            if let Ok(mut p) = self.pending.lock() {
                p.remove(&id);
            }
            match e {
                std::sync::mpsc::RecvTimeoutError::Timeout => format!(
                    "the browser did not answer {method} within {} s",
                    timeout.as_secs()
                ),
                std::sync::mpsc::RecvTimeoutError::Disconnected => {
                    "the browser has exited".to_string()
                }
            }
        })?;
        if let Some(err) = reply.get("error") {
            return Err(format!(
                "{method} failed: {}",
                err["message"].as_str().unwrap_or("unknown error")
            ));
        }
        Ok(reply["result"].clone())
    }
}
