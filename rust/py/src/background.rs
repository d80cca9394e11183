//! Background sessions (`yuyao_core::front_call`'s `background.*` calls) and worktrees
//! (`yuyao_store::worktree`): conversion only. No feature crate is named here, so a build
//! without background sessions answers "not available".

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde_json::{Value, json};
use std::path::Path;
use yuyao_store::worktree;

fn failed(e: String) -> PyErr {
    PyRuntimeError::new_err(e)
}

/// A background call (it needs no session of the caller's), the GIL released.
fn call(py: Python<'_>, name: &'static str, args: Value) -> PyResult<Value> {
    py.detach(move || yuyao_core::front_call(None, name, args))
        .map_err(crate::to_py)
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("serializes")
}

/// Starts a background session (or `exec` job); returns its status JSON at once.
#[pyfunction]
fn bg_dispatch(py: Python<'_>, request_json: &str) -> PyResult<String> {
    let req: Value = serde_json::from_str(request_json)
        .map_err(|e| PyValueError::new_err(format!("invalid background request: {e}")))?;
    Ok(call(py, "background.dispatch", req)?.to_string())
}

/// The detached process's work: runs the session of `dir`; returns the exit code.
#[pyfunction]
fn bg_run(py: Python<'_>, dir: String) -> PyResult<i32> {
    let code = call(py, "background.run", dir.into())?;
    Ok(code.as_i64().unwrap_or(1) as i32)
}

#[pyfunction]
#[pyo3(signature = (home = None))]
fn bg_list_text(py: Python<'_>, home: Option<String>) -> PyResult<String> {
    let v = call(py, "background.list", json!({"home": home, "text": true}))?;
    Ok(v.as_str().unwrap_or_default().to_string())
}

#[pyfunction]
#[pyo3(signature = (home = None))]
fn bg_list_json(py: Python<'_>, home: Option<String>) -> PyResult<String> {
    Ok(call(py, "background.list", json!({"home": home}))?.to_string())
}

/// One session's status (its real state) with its folder and pending question.
#[pyfunction]
#[pyo3(signature = (id, home = None))]
fn bg_status_json(py: Python<'_>, id: &str, home: Option<String>) -> PyResult<String> {
    Ok(call(py, "background.status", json!({"id": id, "home": home}))?.to_string())
}

#[pyfunction]
#[pyo3(signature = (id, answer, home = None))]
fn bg_answer(py: Python<'_>, id: &str, answer: &str, home: Option<String>) -> PyResult<()> {
    let args = json!({"id": id, "answer": answer, "home": home});
    call(py, "background.answer", args).map(|_| ())
}

/// Stops a background session; returns its status JSON afterwards.
#[pyfunction]
#[pyo3(signature = (id, home = None))]
fn bg_stop(py: Python<'_>, id: String, home: Option<String>) -> PyResult<String> {
    Ok(call(py, "background.stop", json!({"id": id, "home": home}))?.to_string())
}

/// `--worktree`: creates the worktree for `cwd`'s repository; returns its JSON.
#[pyfunction]
#[pyo3(signature = (cwd, name = None))]
fn worktree_create(cwd: &str, name: Option<String>) -> PyResult<String> {
    let wt = worktree::create(Path::new(cwd), name.as_deref()).map_err(failed)?;
    Ok(json(&wt))
}

fn parse_worktree(text: &str) -> PyResult<worktree::Worktree> {
    serde_json::from_str(text).map_err(|e| PyValueError::new_err(format!("invalid worktree: {e}")))
}

#[pyfunction]
fn worktree_changes(worktree_json: &str) -> PyResult<String> {
    let wt = parse_worktree(worktree_json)?;
    Ok(json(&worktree::changes(&wt).map_err(failed)?))
}

/// keep | merge | remove; returns what to tell the user (an error: nothing was forced).
#[pyfunction]
fn worktree_finish(worktree_json: &str, action: &str) -> PyResult<String> {
    let wt = parse_worktree(worktree_json)?;
    worktree::finish(&wt, action).map_err(failed)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The worker of a background session is this interpreter running `yuyao.background`
    // (a build without background sessions has nothing to tell).
    if let Ok(exe) = m
        .py()
        .import("sys")
        .and_then(|s| s.getattr("executable"))
        .and_then(|e| e.extract::<String>())
        && !exe.is_empty()
    {
        let argv = json!([exe, "-m", "yuyao.background"]);
        let _ = yuyao_core::front_call(None, "background.launcher", argv);
    }
    m.add_function(wrap_pyfunction!(bg_dispatch, m)?)?;
    m.add_function(wrap_pyfunction!(bg_run, m)?)?;
    m.add_function(wrap_pyfunction!(bg_list_text, m)?)?;
    m.add_function(wrap_pyfunction!(bg_list_json, m)?)?;
    m.add_function(wrap_pyfunction!(bg_status_json, m)?)?;
    m.add_function(wrap_pyfunction!(bg_answer, m)?)?;
    m.add_function(wrap_pyfunction!(bg_stop, m)?)?;
    m.add_function(wrap_pyfunction!(worktree_create, m)?)?;
    m.add_function(wrap_pyfunction!(worktree_finish, m)?)?;
    m.add_function(wrap_pyfunction!(worktree_changes, m)?)?;
    Ok(())
}
