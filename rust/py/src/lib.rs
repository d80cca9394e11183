//! `yuyao._core`: conversion between Python and the Rust core, nothing more.
//! Options and events cross as JSON text (docs/CORE_API.md). Turns run with the GIL
//! released; handler callbacks re-attach.

mod background;

use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use serde_json::Value;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use yuyao_core::{CoreError, Handler, HeadlessRequest, Session};
use yuyao_protocol::{Event, Request, SessionOptions};

/// How long `close` waits for callbacks already running in Python.
const CALLBACK_PATIENCE: Duration = Duration::from_secs(5);

fn to_py(e: CoreError) -> PyErr {
    match e {
        CoreError::Usage(m) => PyValueError::new_err(m),
        CoreError::NotAvailable(m) => PyNotImplementedError::new_err(m),
        CoreError::Failed(m) => PyRuntimeError::new_err(m),
    }
}

/// A feature's front call on this session (`yuyao_core::front_call`): the fronts name no
/// feature crate, so a feature left out of the build answers "not available".
fn call(s: &Arc<Session>, name: &str, args: Value) -> Result<Value, CoreError> {
    yuyao_core::front_call(Some(s), name, args)
}

/// A front call's answer as the text the Python side takes (a JSON string's text as is).
fn text_of(v: Value) -> String {
    match v {
        Value::String(s) => s,
        v => v.to_string(),
    }
}

/// A Python object with `event(json)` and `request(json) -> str | None`.
///
/// Core threads (job readers, monitors, the turn) call it at any time. Once the session is
/// closed the gate is shut: no callback enters Python again, and `close` waits (GIL released)
/// for the ones already inside. So nothing touches Python while or after the interpreter
/// finalizes (a Rust thread waiting for the GIL then is killed mid-frame or panics).
struct PyHandler {
    obj: Mutex<Option<Py<PyAny>>>,
    gate: Gate,
}

/// Counts the callbacks inside Python; once closed, lets none in.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, usize)>,
    idle: Condvar,
}

struct Pass<'a>(&'a Gate);

impl Gate {
    fn enter(&self) -> Option<Pass<'_>> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.0 {
            return None;
        }
        s.1 += 1;
        Some(Pass(self))
    }

    /// Shuts the gate and waits until no callback is inside, at most `patience` (a callback
    /// blocked on a question nobody answers must not hang the exit).
    fn close(&self, patience: Duration) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0 = true;
        let until = Instant::now() + patience;
        while s.1 > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = self
                .idle
                .wait_timeout(s, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock().unwrap_or_else(|e| e.into_inner());
        s.1 -= 1;
        if s.1 == 0 {
            self.0.idle.notify_all();
        }
    }
}

impl PyHandler {
    /// Runs `f` with the handler object, unless the session is closed or Python is gone.
    fn call<R>(&self, f: impl FnOnce(Python<'_>, &Py<PyAny>) -> R) -> Option<R> {
        let _pass = self.gate.enter()?;
        Python::try_attach(|py| {
            let obj = self
                .obj
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map(|o| o.clone_ref(py))?;
            Some(f(py, &obj))
        })
        .flatten()
    }

    /// After this no callback reaches Python; the handler object is released (GIL held).
    fn shut(&self, py: Python<'_>) {
        py.detach(|| self.gate.close(CALLBACK_PATIENCE));
        let obj = self.obj.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(obj);
    }
}

impl Handler for PyHandler {
    fn event(&self, event: &Event) {
        let Ok(text) = serde_json::to_string(event) else {
            return;
        };
        self.call(|py, obj| {
            if let Err(e) = obj.call_method1(py, "event", (text,)) {
                // A rendering bug must not kill the turn; show it and go on.
                e.print(py);
            }
        });
    }

    fn request(&self, request: &Request) -> Option<String> {
        let text = serde_json::to_string(request).ok()?;
        self.call(|py, obj| match obj.call_method1(py, "request", (text,)) {
            Ok(v) => v.extract::<Option<String>>(py).ok().flatten(),
            Err(e) => {
                e.print(py);
                None
            }
        })
        .flatten()
    }
}

/// Text from Python as UTF-8: each lone surrogate (`"\ud800"`, or an undecodable byte of
/// argv that Python kept with `surrogateescape`) becomes one U+FFFD instead of an encoding
/// error, so no malformed text reaches a request.
fn text(s: &Bound<'_, PyString>) -> String {
    if let Ok(t) = s.to_cow() {
        return t.into_owned();
    }
    let units = s
        .call_method1("encode", ("utf-16-le", "surrogatepass"))
        .ok()
        .and_then(|b| {
            let b = b.downcast::<PyBytes>().ok()?.as_bytes().to_vec();
            Some(
                b.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect::<Vec<_>>(),
            )
        });
    match units {
        Some(units) => String::from_utf16_lossy(&units),
        None => s.to_string_lossy().into_owned(),
    }
}

#[pyclass(name = "Session", frozen, module = "yuyao._core")]
struct PySession {
    inner: Arc<Session>,
    handler: Option<Arc<PyHandler>>,
}

impl Drop for PySession {
    /// A session collected without `close` (at interpreter exit, say): callbacks stop here.
    /// Nothing waits: the GIL is held and a waiting callback may need it.
    fn drop(&mut self) {
        if let Some(h) = &self.handler {
            h.gate.close(Duration::ZERO);
        }
    }
}

#[pymethods]
impl PySession {
    #[new]
    #[pyo3(signature = (options_json, handler = None))]
    fn new(options_json: &str, handler: Option<Py<PyAny>>) -> PyResult<Self> {
        let mut opts: SessionOptions = serde_json::from_str(options_json)
            .map_err(|e| PyValueError::new_err(format!("invalid session options: {e}")))?;
        // Once the key left the environment (hide_model_key), sessions get it from memory.
        if opts.model.api_key.is_none() {
            opts.model.api_key = yuyao_model::hidden_model_key();
        }
        let handler = handler.map(|obj| {
            Arc::new(PyHandler {
                obj: Mutex::new(Some(obj)),
                gate: Gate::default(),
            })
        });
        let inner =
            Session::open(opts, handler.clone().map(|h| h as Arc<dyn Handler>)).map_err(to_py)?;
        let inner = Arc::new(inner);
        inner.shared_with_front();
        Ok(PySession { inner, handler })
    }

    /// One agentic turn; returns the final assistant text.
    fn chat(&self, py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<String> {
        let text = self::text(text);
        let inner = self.inner.clone();
        py.detach(move || inner.chat(&text)).map_err(to_py)
    }

    /// One turn from message content JSON (a string or text/image parts).
    fn chat_content(&self, py: Python<'_>, content_json: &str) -> PyResult<String> {
        let content: serde_json::Value = serde_json::from_str(content_json)
            .map_err(|e| PyValueError::new_err(format!("message content is not JSON: {e}")))?;
        let inner = self.inner.clone();
        py.detach(move || inner.chat_content(&content))
            .map_err(to_py)
    }

    /// One slash command; returns its text.
    fn dispatch(&self, py: Python<'_>, command: &Bound<'_, PyString>) -> PyResult<String> {
        let command = text(command);
        let inner = self.inner.clone();
        py.detach(move || inner.dispatch(&command)).map_err(to_py)
    }

    /// The user's `!command`: runs in the session cwd, no model call, no approval; returns
    /// the output (with the exit status line) and records both in the conversation.
    fn user_shell(&self, py: Python<'_>, command: &Bound<'_, PyString>) -> PyResult<String> {
        let command = text(command);
        let inner = self.inner.clone();
        py.detach(move || call(&inner, "shell.run", command.into()))
            .map(text_of)
            .map_err(to_py)
    }

    /// Ctrl+X Ctrl+K: stops every background sub-agent; says how many.
    fn kill_subagents(&self) -> PyResult<String> {
        call(&self.inner, "subagents.kill", Value::Null)
            .map(text_of)
            .map_err(to_py)
    }

    /// Ctrl+B: the running bash command becomes a background job (thread-safe). False when
    /// no command is running.
    fn background_running(&self) -> PyResult<bool> {
        call(&self.inner, "shell.to_background", Value::Null)
            .map(|v| v.as_bool() == Some(true))
            .map_err(to_py)
    }

    fn messages_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner.messages())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    fn config_get_json(&self, key: &str) -> String {
        self.inner.config_get(key).to_string()
    }

    /// The MCP servers' names (none when the MCP feature is not in this build).
    fn mcp_servers(&self) -> Vec<String> {
        call(&self.inner, "mcp.servers", Value::Null)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    }

    fn status_json(&self) -> String {
        self.inner.status_json().to_string()
    }

    /// The todo list (Ctrl+T): JSON list of {id, content, status, deps}.
    fn tasks_json(&self, py: Python<'_>) -> PyResult<String> {
        let inner = self.inner.clone();
        py.detach(move || call(&inner, "plan.tasks", Value::Null))
            .map(text_of)
            .map_err(to_py)
    }

    /// The planning workflow's state (the TUI's approval gate).
    fn plan_json(&self, py: Python<'_>) -> PyResult<String> {
        let inner = self.inner.clone();
        py.detach(move || call(&inner, "plan.state", Value::Null))
            .map(text_of)
            .map_err(to_py)
    }

    /// Replaces the waiting plan with an edited text, only if it validates (the TUI's
    /// inline edit at the approval gate).
    fn plan_revise(&self, py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<String> {
        let inner = self.inner.clone();
        let text = self::text(text);
        py.detach(move || call(&inner, "plan.revise", text.into()))
            .map(text_of)
            .map_err(to_py)
    }

    fn steer(&self, text: &Bound<'_, PyString>) {
        self.inner.steer(&self::text(text));
    }

    fn interrupt(&self) {
        self.inner.interrupt();
    }

    /// Ends the jobs and monitors, then shuts the callbacks off for good: after this no core
    /// thread calls into Python. Idempotent.
    fn close(&self, py: Python<'_>) {
        let inner = self.inner.clone();
        py.detach(move || inner.close());
        if let Some(h) = &self.handler {
            h.shut(py);
        }
    }

    #[getter]
    fn cwd(&self) -> String {
        self.inner.cwd()
    }

    /// The checkpoints `/rewind` can go back to, oldest first (JSON list).
    fn rewind_points_json(&self, py: Python<'_>) -> PyResult<String> {
        let inner = self.inner.clone();
        let points = py.detach(move || inner.rewind_points()).map_err(to_py)?;
        Ok(points.to_string())
    }

    /// The predicted next step for the input's greyed suggestion ("" when none).
    fn next_step(&self, py: Python<'_>) -> String {
        let inner = self.inner.clone();
        py.detach(move || inner.next_step())
    }

    /// True while a turn runs (slash commands typed then follow busy.rs's rules).
    fn is_busy(&self) -> bool {
        self.inner.is_busy()
    }

    /// The slash command table (JSON list of {name, aliases, usage, help, group, available}).
    #[staticmethod]
    fn command_table_json() -> String {
        Session::command_table().to_string()
    }

    /// The custom commands (commands/*.md) as of now, in the shape of `command_table_json`.
    fn custom_command_table_json(&self) -> String {
        call(&self.inner, "commands.custom", Value::Null)
            .unwrap_or_else(|_| Value::Array(Vec::new()))
            .to_string()
    }

    /// Every slash command name and alias (for completion).
    #[staticmethod]
    fn command_names() -> Vec<&'static str> {
        Session::command_names()
    }
}

/// The run_agent.sh contract; returns the exit code.
#[pyfunction]
fn run_headless(py: Python<'_>, request_json: &str) -> PyResult<i32> {
    let req: HeadlessRequest = serde_json::from_str(request_json)
        .map_err(|e| PyValueError::new_err(format!("invalid headless request: {e}")))?;
    Ok(py.detach(move || yuyao_core::run_headless(req)))
}

/// Remembers the model key for this process's sessions and blanks every copy of it in the
/// initial environment and argument blocks (`/proc/<pid>/environ`, `cmdline`). Call it once
/// the key was read, then drop the variable from `os.environ`. Returns the places blanked.
#[pyfunction]
#[pyo3(signature = (key = None))]
fn hide_model_key(key: Option<String>) -> usize {
    yuyao_model::hide_model_key(key)
}

/// The known configuration keys and how each applies to a running session (JSON).
#[pyfunction]
fn config_keys_json() -> String {
    yuyao_core::config_keys_json()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", yuyao_protocol::VERSION)?;
    // The features that live in crates of their own join the core's, one line each
    // (docs/ARCHITECTURE.md, "the kernel and the features registered with it"). Listening
    // (with `ask-user`) leads: its scope guard is the first gate a change meets and
    // `declare-scope` the first feature tool in a request.
    let trailing: Vec<&'static yuyao_core::Feature> = [
        yuyao_planning_workflow::FEATURES,
        yuyao_code_intel::FEATURES,
        yuyao_memory::FEATURES,
        yuyao_parallel::FEATURES,
        yuyao_review::FEATURES,
        yuyao_json_answer::FEATURES,
        yuyao_extensions::FEATURES,
    ]
    .concat();
    yuyao_core::register_features(yuyao_listening::FEATURES, &trailing);
    // memory-search's shipped model: package data beside this module (yuyao/models/).
    if let Ok(file) = m
        .py()
        .import("yuyao")
        .and_then(|p| p.getattr("__file__"))
        .and_then(|f| f.extract::<String>())
        && let Some(dir) = std::path::Path::new(&file).parent()
    {
        yuyao_memsearch::embed::set_package_model_dir(dir.join("models").join("memory-embed"));
    }
    // memory-search's re-ranking encoder: the optional data package yuyao_memory_encoder,
    // located without importing it (no code of it runs; the core reads its files only).
    if let Ok(dir) = m
        .py()
        .import("importlib.util")
        .and_then(|u| u.call_method1("find_spec", ("yuyao_memory_encoder",)))
        .and_then(|spec| spec.getattr("submodule_search_locations"))
        .and_then(|locations| locations.get_item(0))
        .and_then(|d| d.extract::<String>())
    {
        yuyao_memsearch::encoder::set_package_encoder_dir(dir.into());
    }
    m.add_class::<PySession>()?;
    m.add_function(wrap_pyfunction!(run_headless, m)?)?;
    m.add_function(wrap_pyfunction!(hide_model_key, m)?)?;
    m.add_function(wrap_pyfunction!(config_keys_json, m)?)?;
    background::register(m)?;
    Ok(())
}
