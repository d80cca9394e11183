//! `browser {action, …}`: a real headless Chromium driven over the DevTools protocol
//! (cdp.rs), one per session, started on first use and closed with the session (or by
//! `close`). Actions: open, click, type, press, extract, screenshot, evaluate, console, close.
//!
//! Network: with `--network off` the page reaches loopback only. Two locks, both inside
//! Chromium: it is started with a proxy that does not exist (`--proxy-server`, loopback being
//! bypassed implicitly) and a resolver that resolves nothing but localhost, and every
//! request the page makes is paused (`Fetch.enable`) and continued only when [`cdp::Guard`]
//! allows its host (loopback with the network off; the `Browser(domain:…)` rules always).
//! A change of the switch restarts the browser, so its flags follow it.

mod cdp;
mod confine;

use crate::args::{BrowserParams, ToolArgs};
use crate::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const CALL: Duration = Duration::from_secs(30);
const LOAD: Duration = Duration::from_secs(20);
/// Characters of page text returned by `open` and `extract`.
const TEXT_CHARS: usize = 20_000;

/// Run in every frame before the page's own scripts: the WebRTC constructors are gone, so a
/// page cannot open a peer connection (whose packets the request guard never sees).
const NO_WEBRTC: &str = "(() => { for (const n of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'RTCIceCandidate', 'RTCSessionDescription', 'RTCRtpSender', 'RTCRtpReceiver', 'RTCRtpTransceiver']) { try { Object.defineProperty(globalThis, n, {value: undefined, writable: false, configurable: false}); } catch (e) {} } })();";

pub const INSTALL_HINT: &str = "no Chromium found: install it (Debian/Ubuntu: `apt-get install chromium`; macOS: `brew install --cask chromium`) or set browser.executable to a Chromium or Chrome binary";

/// The session's browser, if started.
#[derive(Default)]
pub struct BrowserSlot(Mutex<Option<Running>>);

impl BrowserSlot {
    /// Closes the browser (the session ends, or the model said `close`).
    pub fn close(&self) -> bool {
        self.0
            .lock()
            .map(|mut b| b.take().is_some())
            .unwrap_or(false)
    }
    /// Whether a browser is running now.
    pub fn is_running(&self) -> bool {
        self.0.lock().map(|b| b.is_some()).unwrap_or(false)
    }
}

struct Running {
    child: Child,
    cdp: cdp::Cdp,
    session: String,
    network_on: bool,
    profile: PathBuf,
    stderr_path: PathBuf,
    /// Said once with the next result (the browser runs without Chromium's own sandbox).
    notice: Option<&'static str>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self
            .cdp
            .call(None, "Browser.close", json!({}), Duration::from_secs(2));
        // The browser leads its own process group: renderers and helpers go with it.
        let pgid = self.child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
        let _ = std::fs::remove_file(&self.stderr_path);
    }
}

/// The Chromium to run: `browser.executable`, else the first of the usual names on PATH.
pub fn find_executable(configured: Option<&str>) -> Result<PathBuf, String> {
    if let Some(c) = configured.map(str::trim).filter(|c| !c.is_empty()) {
        let p = PathBuf::from(c);
        if p.components().count() > 1 {
            return if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "browser.executable is {c}, which does not exist; {INSTALL_HINT}"
                ))
            };
        }
        return which(c).ok_or_else(|| {
            format!("browser.executable is {c}, which is not on PATH; {INSTALL_HINT}")
        });
    }
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
        "chrome",
    ]
    .iter()
    .find_map(|n| which(n))
    .ok_or_else(|| INSTALL_HINT.to_string())
}

fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| {
                p.metadata()
                    .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                    .unwrap_or(false)
            })
    })
}

fn pipe() -> Result<(i32, i32), String> {
    let mut fds = [0i32; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!(
            "cannot create a pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    // Above the descriptors the child's 3 and 4 will be, so dup2 never meets itself.
    let high = |fd: i32| unsafe {
        let h = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
        libc::close(fd);
        h
    };
    Ok((high(fds[0]), high(fds[1])))
}

/// Starts the browser with its own sandbox; where that sandbox cannot start here (no user
/// namespaces), once more without it (still unprivileged, see confine.rs), saying so.
fn launch(exe: &Path, network_on: bool, scratch: &Path) -> Result<Running, String> {
    match launch_with(exe, network_on, scratch, true) {
        Err(e) if e.contains(confine::NO_SANDBOX_CUE) => {
            let mut b = launch_with(exe, network_on, scratch, false)?;
            b.notice = Some(
                "Note: Chromium's own sandbox cannot start on this machine (no user namespaces); \
                 the browser runs without it, as an unprivileged user.",
            );
            Ok(b)
        }
        other => other,
    }
}

fn launch_with(
    exe: &Path,
    network_on: bool,
    scratch: &Path,
    own_sandbox: bool,
) -> Result<Running, String> {
    use std::os::fd::FromRawFd;
    let stamp = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let run_as = confine::run_as();
    let profile = confine::profile_dir(scratch, &stamp, run_as)?;
    let stderr_path = scratch.join(format!("browser-{stamp}.log"));
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| format!("cannot create {}: {e}", stderr_path.display()))?;
    let (to_read, to_write) = pipe()?; // we write, Chromium reads (its fd 3)
    let (from_read, from_write) = pipe()?; // Chromium writes (its fd 4), we read
    let mut cmd = Command::new(exe);
    cmd.args([
        "--headless=new",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        // Nothing of its own leaves the machine: only what the page asks for.
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
        "--safebrowsing-disable-auto-update",
        "--dns-prefetch-disable",
        "--no-pings",
        // WebRTC is off in every mode: its UDP (STUN, media) never passes the request guard.
        // Only proxied traffic may use it, and there is no proxy that carries UDP; the page
        // also finds no RTCPeerConnection (NO_WEBRTC, in every frame).
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--enforce-webrtc-ip-permission-check",
        // Pop-ups would be pages whose requests the guard never sees.
        "--block-new-web-contents",
        "--metrics-recording-only",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--window-size=1280,800",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.display()));
    if !own_sandbox {
        cmd.arg("--no-sandbox");
    }
    cmd.env_clear().envs(confine::environment(&profile));
    if !network_on {
        cmd.arg("--proxy-server=http://127.0.0.1:1");
        // The rules apply to IP literals too: loopback is excluded by name and address.
        cmd.arg(
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost, EXCLUDE 127.*, EXCLUDE [::1], EXCLUDE ::1",
        );
    }
    cmd.arg("about:blank");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr));
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(to_read, 3) < 0 || libc::dup2(from_write, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::setpgid(0, 0);
            match run_as {
                Some((uid, gid)) => confine::switch_user(uid, gid),
                None => Ok(()),
            }
        });
    }
    let spawned = cmd.spawn();
    unsafe {
        libc::close(to_read);
        libc::close(from_write);
    }
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            unsafe {
                libc::close(to_write);
                libc::close(from_read);
            }
            let _ = std::fs::remove_dir_all(&profile);
            return Err(format!("cannot start {}: {e}", exe.display()));
        }
    };
    let cdp = unsafe {
        cdp::Cdp::new(
            std::fs::File::from_raw_fd(to_write),
            std::fs::File::from_raw_fd(from_read),
        )
    };
    let mut running = Running {
        child,
        cdp,
        session: String::new(),
        network_on,
        profile,
        stderr_path,
        notice: None,
    };
    let started = (|| {
        let t = running.cdp.call(
            None,
            "Target.createTarget",
            json!({"url": "about:blank"}),
            CALL,
        )?;
        let target = t["targetId"].as_str().unwrap_or("").to_string();
        let a = running.cdp.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            CALL,
        )?;
        let session = a["sessionId"]
            .as_str()
            .ok_or("the browser gave no page session")?
            .to_string();
        for m in ["Page.enable", "Runtime.enable", "Log.enable"] {
            running.cdp.call(Some(&session), m, json!({}), CALL)?;
        }
        running.cdp.call(
            Some(&session),
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": NO_WEBRTC, "runImmediately": true}),
            CALL,
        )?;
        // A fixed viewport: screenshots are 1280x800 whatever the headless window's frame.
        running.cdp.call(
            Some(&session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
            CALL,
        )?;
        running.cdp.call(
            Some(&session),
            "Fetch.enable",
            json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
            CALL,
        )?;
        Ok::<String, String>(session)
    })();
    match started {
        Ok(s) => {
            running.session = s;
            Ok(running)
        }
        Err(e) => {
            let log = std::fs::read_to_string(&running.stderr_path).unwrap_or_default();
            let tail: String = log
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            Err(format!(
                "{} did not start as a DevTools browser: {e}\n{tail}",
                exe.display()
            ))
        }
    }
}

impl Running {
    fn page(&self, method: &str, params: Value) -> Result<Value, String> {
        self.cdp.call(Some(&self.session), method, params, CALL)
    }

    /// Evaluates `expr` in the page and returns its value (promises awaited).
    fn eval(&self, expr: &str) -> Result<Value, String> {
        let r = self.page(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(d) = r.get("exceptionDetails") {
            let text = d["exception"]["description"]
                .as_str()
                .or(d["text"].as_str())
                .unwrap_or("exception");
            return Err(format!("the script threw: {text}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Waits until the document has loaded (bounded), after a navigation or an action that
    /// may start one.
    fn settle(&self, cancel: &CancellationToken) {
        std::thread::sleep(Duration::from_millis(150));
        let deadline = Instant::now() + LOAD;
        while Instant::now() < deadline && !cancel.is_cancelled() {
            match self.eval("document.readyState") {
                Ok(Value::String(s)) if s == "complete" => return,
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    fn where_now(&self) -> String {
        let v = self
            .eval("JSON.stringify([document.title, location.href])")
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
            .unwrap_or_default();
        match v.as_slice() {
            [t, u] => format!("Page: {u}\nTitle: {t}"),
            _ => String::from("Page: (unknown)"),
        }
    }
}

fn js_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn cut(s: &str, n: usize) -> String {
    let total = s.chars().count();
    if total <= n {
        s.to_string()
    } else {
        format!(
            "{}\n[cut at {n} of {total} characters; extract a selector for a part]",
            s.chars().take(n).collect::<String>()
        )
    }
}

/// The key's DevTools description: (key, code, virtual key code, text typed).
fn key_info(key: &str) -> Option<(&'static str, &'static str, i64, &'static str)> {
    Some(match key.to_ascii_lowercase().as_str() {
        "enter" | "return" => ("Enter", "Enter", 13, "\r"),
        "tab" => ("Tab", "Tab", 9, ""),
        "escape" | "esc" => ("Escape", "Escape", 27, ""),
        "backspace" => ("Backspace", "Backspace", 8, ""),
        "delete" => ("Delete", "Delete", 46, ""),
        "space" | " " => (" ", "Space", 32, " "),
        "arrowup" | "up" => ("ArrowUp", "ArrowUp", 38, ""),
        "arrowdown" | "down" => ("ArrowDown", "ArrowDown", 40, ""),
        "arrowleft" | "left" => ("ArrowLeft", "ArrowLeft", 37, ""),
        "arrowright" | "right" => ("ArrowRight", "ArrowRight", 39, ""),
        "home" => ("Home", "Home", 36, ""),
        "end" => ("End", "End", 35, ""),
        "pageup" => ("PageUp", "PageUp", 33, ""),
        "pagedown" => ("PageDown", "PageDown", 34, ""),
        _ => return None,
    })
}

fn need<'a>(v: &'a Option<String>, what: &str, action: &str) -> Result<&'a str, String> {
    v.as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("browser {action} needs {what}"))
}

/// Scrolls the element into view and returns the centre of its box, or why not.
fn locate(b: &Running, selector: &str) -> Result<(f64, f64), String> {
    let v = b.eval(&format!(
        "(() => {{ const e = document.querySelector({}); if (!e) return null; e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2, r.width, r.height]; }})()",
        js_str(selector)
    ))?;
    let a = v
        .as_array()
        .ok_or_else(|| format!("no element matches the selector {selector:?} on this page"))?;
    let n = |i: usize| a.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    if n(2) == 0.0 && n(3) == 0.0 {
        return Err(format!(
            "the element {selector:?} has no size on the page (hidden?); it cannot be clicked"
        ));
    }
    Ok((n(0), n(1)))
}

fn act(b: &Running, a: &BrowserParams, cancel: &CancellationToken) -> Result<ToolOutput, String> {
    let action = a.action.trim().to_ascii_lowercase();
    match action.as_str() {
        "open" | "navigate" | "goto" => {
            let url = need(&a.url, "a url", "open")?;
            let parsed = url::Url::parse(url).map_err(|e| {
                format!("{url:?} is not a valid URL ({e}); give a full http:// URL such as http://127.0.0.1:8000/")
            })?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "the browser opens http and https URLs only (got {}:)",
                    parsed.scheme()
                ));
            }
            let guard = b.cdp.guard.lock().map(|g| g.clone()).unwrap_or_default();
            guard.check(parsed.as_str())?;
            let r = b.page("Page.navigate", json!({"url": parsed.as_str()}))?;
            if let Some(err) = r["errorText"].as_str().filter(|e| !e.is_empty()) {
                return Err(format!("opening {parsed} failed: {err}"));
            }
            b.settle(cancel);
            let text = b
                .eval("document.body ? document.body.innerText : ''")?
                .as_str()
                .unwrap_or("")
                .to_string();
            Ok(ToolOutput::ok(format!(
                "{}\n\n{}",
                b.where_now(),
                cut(text.trim(), 4000)
            )))
        }
        "click" => {
            let sel = need(&a.selector, "a CSS selector", "click")?;
            let (x, y) = locate(b, sel)?;
            for t in ["mouseMoved", "mousePressed", "mouseReleased"] {
                b.page(
                    "Input.dispatchMouseEvent",
                    json!({"type": t, "x": x, "y": y, "button": "left", "clickCount": 1}),
                )?;
            }
            b.settle(cancel);
            Ok(ToolOutput::ok(format!("Clicked {sel}.\n{}", b.where_now())))
        }
        "type" | "fill" => {
            let sel = need(&a.selector, "a CSS selector", "type")?;
            let text = a.text.as_deref().unwrap_or("");
            let found = b.eval(&format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return false; e.focus(); if ('value' in e) {{ e.value = ''; }} return true; }})()",
                js_str(sel)
            ))?;
            if found != Value::Bool(true) {
                return Err(format!(
                    "no element matches the selector {sel:?} on this page"
                ));
            }
            b.page("Input.insertText", json!({"text": text}))?;
            Ok(ToolOutput::ok(format!(
                "Typed {} characters into {sel}.",
                text.chars().count()
            )))
        }
        "press" => {
            let key = need(&a.key, "a key (Enter, Tab, Escape, ArrowDown, …)", "press")?;
            if let Some(sel) = a.selector.as_deref().filter(|s| !s.is_empty()) {
                b.eval(&format!(
                    "(() => {{ const e = document.querySelector({}); if (e) e.focus(); }})()",
                    js_str(sel)
                ))?;
            }
            let (k, code, vk, text) = match key_info(key) {
                Some(i) => i,
                None if key.chars().count() == 1 => {
                    b.page("Input.insertText", json!({"text": key}))?;
                    return Ok(ToolOutput::ok(format!("Pressed {key}.")));
                }
                None => {
                    return Err(format!(
                        "unknown key {key:?}: use Enter, Tab, Escape, Backspace, Delete, Space, ArrowUp/Down/Left/Right, Home, End, PageUp, PageDown or one character"
                    ));
                }
            };
            let mut down =
                json!({"type": "keyDown", "key": k, "code": code, "windowsVirtualKeyCode": vk});
            if !text.is_empty() {
                down["text"] = json!(text);
            }
            b.page("Input.dispatchKeyEvent", down)?;
            b.page(
                "Input.dispatchKeyEvent",
                json!({"type": "keyUp", "key": k, "code": code, "windowsVirtualKeyCode": vk}),
            )?;
            b.settle(cancel);
            Ok(ToolOutput::ok(format!("Pressed {k}.\n{}", b.where_now())))
        }
        "extract" | "read" | "text" => {
            let what = a.what.as_deref().unwrap_or("text").to_ascii_lowercase();
            let sel = a.selector.as_deref().filter(|s| !s.is_empty());
            let root = match sel {
                Some(s) => format!("document.querySelectorAll({})", js_str(s)),
                None => "[document.body || document.documentElement]".into(),
            };
            let expr = match what.as_str() {
                "links" => format!(
                    "JSON.stringify(Array.from({root}).flatMap(r => Array.from(r.matches && r.matches('a[href]') ? [r] : r.querySelectorAll('a[href]'))).map(a => [(a.innerText || a.title || '').trim().replace(/\\s+/g, ' '), a.href]))"
                ),
                "html" => format!("JSON.stringify(Array.from({root}).map(e => e.outerHTML))"),
                "text" => format!("JSON.stringify(Array.from({root}).map(e => e.innerText))"),
                other => {
                    return Err(format!(
                        "extract what={other:?}: use text (default), links or html"
                    ));
                }
            };
            let raw = b.eval(&expr)?;
            let parsed: Value = raw
                .as_str()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or(Value::Null);
            let items = parsed.as_array().cloned().unwrap_or_default();
            if items.is_empty() {
                return Err(match sel {
                    Some(s) => format!("no element matches the selector {s:?} on this page"),
                    None => "the page has no body".into(),
                });
            }
            let body = if what == "links" {
                items
                    .iter()
                    .map(|l| {
                        format!(
                            "- [{}]({})",
                            l[0].as_str().unwrap_or(""),
                            l[1].as_str().unwrap_or("")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                items
                    .iter()
                    .map(|t| t.as_str().unwrap_or("").trim().to_string())
                    .collect::<Vec<_>>()
                    .join("\n---\n")
            };
            Ok(ToolOutput::ok(format!(
                "{}\n\n{}",
                b.where_now(),
                cut(&body, TEXT_CHARS)
            )))
        }
        "screenshot" => {
            let mut params = json!({"format": "png"});
            if a.full_page == Some(true) {
                let m = b.page("Page.getLayoutMetrics", json!({}))?;
                let size = &m["cssContentSize"];
                let (w, h) = (
                    size["width"].as_f64().unwrap_or(1280.0),
                    size["height"].as_f64().unwrap_or(800.0).min(16384.0),
                );
                params["clip"] = json!({"x": 0, "y": 0, "width": w, "height": h, "scale": 1});
                params["captureBeyondViewport"] = json!(true);
            }
            let r = b.page("Page.captureScreenshot", params)?;
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(r["data"].as_str().unwrap_or(""))
                .map_err(|e| format!("the screenshot could not be decoded: {e}"))?;
            let p = crate::media::prepare_image(&bytes, "screenshot")?;
            let mut out = ToolOutput::ok(format!(
                "{}\nScreenshot {}x{} attached as {}.",
                b.where_now(),
                p.width,
                p.height,
                p.mime
            ));
            out.images.push(p.data_url);
            Ok(out)
        }
        "evaluate" | "eval" => {
            let expr = need(&a.expression, "an expression (JavaScript)", "evaluate")?;
            let v = b.eval(expr)?;
            let shown = match &v {
                Value::String(s) => s.clone(),
                Value::Null => "undefined".into(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            Ok(ToolOutput::ok(cut(&shown, TEXT_CHARS)))
        }
        "console" | "logs" => {
            let mut log = b
                .cdp
                .log
                .lock()
                .map_err(|_| "the console log is unavailable".to_string())?;
            let lines = std::mem::take(&mut log.lines);
            let dropped = std::mem::take(&mut log.dropped);
            if lines.is_empty() {
                return Ok(ToolOutput::ok(
                    "No console messages or page errors since the last look.",
                ));
            }
            let mut out = format!(
                "{} console message{} and page error{} since the last look:\n",
                lines.len(),
                if lines.len() == 1 { "" } else { "s" },
                if lines.len() == 1 { "" } else { "s" }
            );
            if dropped > 0 {
                out.push_str(&format!("({dropped} older ones were dropped)\n"));
            }
            out.push_str(&lines.join("\n"));
            Ok(ToolOutput::ok(out))
        }
        other => Err(format!(
            "unknown browser action {other:?}: use open, click, type, press, extract, screenshot, evaluate, console or close"
        )),
    }
}

pub struct Browser;

impl Tool for Browser {
    fn name(&self) -> &'static str {
        "browser"
    }
    fn description(&self) -> &'static str {
        "Drive a real headless Chromium to check web pages (e.g. a dev server you started on http://127.0.0.1:PORT). action: open {url} | click {selector} | type {selector, text} | press {key, selector?} | extract {selector?, what: text|links|html} | screenshot {full_page?} (image attached) | evaluate {expression} | console (console messages and page errors since the last look) | close. With --network off only loopback is reachable."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["open", "click", "type", "press", "extract", "screenshot", "evaluate", "console", "close"]},
                "url": {"type": "string", "description": "open: http(s) URL"},
                "selector": {"type": "string", "description": "CSS selector (click, type, press, extract)"},
                "text": {"type": "string", "description": "type: the text to enter"},
                "key": {"type": "string", "description": "press: Enter, Tab, Escape, ArrowDown, …"},
                "expression": {"type": "string", "description": "evaluate: JavaScript expression, its JSON value is returned"},
                "what": {"type": "string", "enum": ["text", "links", "html"], "description": "extract: what to return (default text)"},
                "full_page": {"type": "boolean", "description": "screenshot: the whole page, not only the viewport"}
            },
            "required": ["action"]
        })
    }
    fn run_args(
        &self,
        args: &ToolArgs,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let ToolArgs::Browser(a) = args else {
            return crate::fs::mismatched("browser", args);
        };
        let action = a.action.trim().to_ascii_lowercase();
        if action == "close" {
            return ToolOutput::ok(if ctx.browser.close() {
                "The browser is closed."
            } else {
                "No browser was running."
            });
        }
        let settings = ctx.web_settings();
        let mut slot = match ctx.browser.0.lock() {
            Ok(s) => s,
            Err(e) => e.into_inner(),
        };
        // A browser started under the other network switch, or one that died, is replaced.
        if slot.as_ref().is_some_and(|b| {
            b.network_on != settings.network_on
                || !b.cdp.alive.load(std::sync::atomic::Ordering::SeqCst)
        }) {
            *slot = None;
        }
        if slot.is_none() {
            if matches!(action.as_str(), "console" | "logs") {
                return ToolOutput::ok("No browser is running; open a page first.");
            }
            let started = find_executable(settings.browser_executable.as_deref()).and_then(|exe| {
                let scratch = ctx.scratch_dir()?;
                launch(&exe, settings.network_on, &scratch)
            });
            match started {
                Ok(b) => *slot = Some(b),
                Err(e) => return ToolOutput::err(e),
            }
        }
        let notice = slot.as_mut().and_then(|b| b.notice.take());
        let Some(b) = slot.as_ref() else {
            return ToolOutput::err("the browser could not be started");
        };
        if let Ok(mut g) = b.cdp.guard.lock() {
            *g = cdp::Guard {
                network_on: settings.network_on,
                rules: settings.browser_rules.clone(),
                read_only: settings.read_only,
            };
        }
        let mut out = act(b, a, cancel).unwrap_or_else(ToolOutput::err);
        if let Some(n) = notice {
            out.text = format!("{n}\n{}", out.text);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_keeps_the_page_on_loopback_with_the_network_off() {
        let g = cdp::Guard::default();
        assert!(g.check("http://127.0.0.1:8000/").is_ok());
        assert!(g.check("http://localhost/x").is_ok());
        assert!(g.check("http://[::1]:3000/").is_ok());
        assert!(g.check("data:text/html,hi").is_ok());
        assert!(
            g.check("http://10.1.2.3/")
                .unwrap_err()
                .contains("only loopback")
        );
        assert!(g.check("https://example.com/").is_err());
        let on = cdp::Guard {
            network_on: true,
            ..Default::default()
        };
        assert!(on.check("https://example.com/").is_ok());
    }

    #[test]
    fn a_read_only_guard_lets_only_reads_through() {
        let url = "http://127.0.0.1:8000/x";
        let ro = cdp::Guard {
            read_only: true,
            ..Default::default()
        };
        assert!(ro.check_request(url, "GET", false).is_ok());
        assert!(ro.check_request(url, "HEAD", false).is_ok());
        for m in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            assert!(ro.check_request(url, m, false).is_err(), "{m}");
        }
        assert!(
            ro.check_request(url, "GET", true)
                .unwrap_err()
                .contains("form submission")
        );
        let rw = cdp::Guard::default();
        assert!(rw.check_request(url, "POST", true).is_ok());
        // The spellings of loopback are loopback with the network off.
        assert!(rw.check("http://[::ffff:127.0.0.1]:8000/").is_ok());
        assert!(rw.check("http://[::ffff:10.0.0.1]:8000/").is_err());
    }

    #[test]
    fn a_missing_executable_says_how_to_install() {
        let e = find_executable(Some("/nonexistent/chromium")).unwrap_err();
        assert!(e.contains("apt-get install chromium"), "{e}");
    }
}
