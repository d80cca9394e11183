//! `yuyao._core`: conversion between Python and the Rust core, nothing more.
//! Options and events cross as JSON text (docs/CORE_API.md). Turns run with the GIL
//! released; handler callbacks re-attach.

use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Arc;
use yuyao_core::{CoreError, Handler, HeadlessRequest, Session};
use yuyao_protocol::{Event, Request, SessionOptions};

fn to_py(e: CoreError) -> PyErr {
    match e {
        CoreError::Usage(m) => PyValueError::new_err(m),
        CoreError::NotAvailable(m) => PyNotImplementedError::new_err(m),
        CoreError::Failed(m) => PyRuntimeError::new_err(m),
    }
}

/// A Python object with `event(json)` and `request(json) -> str | None`.
struct PyHandler {
    obj: Py<PyAny>,
}

impl Handler for PyHandler {
    fn event(&self, event: &Event) {
        let Ok(text) = serde_json::to_string(event) else {
            return;
        };
        Python::attach(|py| {
            if let Err(e) = self.obj.call_method1(py, "event", (text,)) {
                // A rendering bug must not kill the turn; show it and go on.
                e.print(py);
            }
        });
    }

    fn request(&self, request: &Request) -> Option<String> {
        let text = serde_json::to_string(request).ok()?;
        Python::attach(|py| match self.obj.call_method1(py, "request", (text,)) {
            Ok(v) => v.extract::<Option<String>>(py).ok().flatten(),
            Err(e) => {
                e.print(py);
                None
            }
        })
    }
}

#[pyclass(name = "Session", frozen, module = "yuyao._core")]
struct PySession {
    inner: Arc<Session>,
}

#[pymethods]
impl PySession {
    #[new]
    #[pyo3(signature = (options_json, handler = None))]
    fn new(options_json: &str, handler: Option<Py<PyAny>>) -> PyResult<Self> {
        let opts: SessionOptions = serde_json::from_str(options_json)
            .map_err(|e| PyValueError::new_err(format!("invalid session options: {e}")))?;
        let handler = handler.map(|obj| Arc::new(PyHandler { obj }) as Arc<dyn Handler>);
        let inner = Session::open(opts, handler).map_err(to_py)?;
        Ok(PySession {
            inner: Arc::new(inner),
        })
    }

    /// One agentic turn; returns the final assistant text.
    fn chat(&self, py: Python<'_>, text: String) -> PyResult<String> {
        let inner = self.inner.clone();
        py.detach(move || inner.chat(&text)).map_err(to_py)
    }

    /// One slash command; returns its text.
    fn dispatch(&self, py: Python<'_>, command: String) -> PyResult<String> {
        let inner = self.inner.clone();
        py.detach(move || inner.dispatch(&command)).map_err(to_py)
    }

    /// The user's `!command`: runs in the session cwd, no model call, no approval; returns
    /// the output (with the exit status line) and records both in the conversation.
    fn user_shell(&self, py: Python<'_>, command: String) -> PyResult<String> {
        let inner = self.inner.clone();
        py.detach(move || inner.user_shell(&command)).map_err(to_py)
    }

    /// Ctrl+B: the running bash command becomes a background job (thread-safe). False when
    /// no command is running.
    fn background_running(&self) -> bool {
        self.inner.background_running()
    }

    fn messages_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.inner.messages())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    fn config_get_json(&self, key: &str) -> String {
        self.inner.config_get(key).to_string()
    }

    fn mcp_servers(&self) -> Vec<String> {
        self.inner.mcp_servers()
    }

    fn status_json(&self) -> String {
        self.inner.status_json().to_string()
    }

    fn steer(&self, text: &str) {
        self.inner.steer(text);
    }

    fn interrupt(&self) {
        self.inner.interrupt();
    }

    fn close(&self) {
        self.inner.close();
    }

    #[getter]
    fn cwd(&self) -> String {
        self.inner.cwd()
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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", yuyao_protocol::VERSION)?;
    m.add_class::<PySession>()?;
    m.add_function(wrap_pyfunction!(run_headless, m)?)?;
    Ok(())
}
