//! Background sessions and worktrees (`yuyao_parallel::background`): conversion only.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::Path;
use yuyao_parallel::background::{self, DispatchRequest, bg_agents, worktree};

fn failed(e: String) -> PyErr {
    PyRuntimeError::new_err(e)
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("serializes")
}

/// Starts a background session (or `exec` job); returns its status JSON at once.
#[pyfunction]
fn bg_dispatch(py: Python<'_>, request_json: &str) -> PyResult<String> {
    let req: DispatchRequest = serde_json::from_str(request_json)
        .map_err(|e| PyValueError::new_err(format!("invalid background request: {e}")))?;
    let status = py
        .detach(move || background::dispatch(req))
        .map_err(failed)?;
    Ok(json(&status))
}

/// The detached process's work: runs the session of `dir`; returns the exit code.
#[pyfunction]
fn bg_run(py: Python<'_>, dir: String) -> i32 {
    py.detach(move || background::run(Path::new(&dir)))
}

#[pyfunction]
#[pyo3(signature = (home = None))]
fn bg_list_text(home: Option<String>) -> String {
    background::list_text(&background::home(home.as_deref()))
}

#[pyfunction]
#[pyo3(signature = (home = None))]
fn bg_list_json(home: Option<String>) -> String {
    background::list_json(&background::home(home.as_deref())).to_string()
}

/// One session's status (its real state) with its folder and pending question.
#[pyfunction]
#[pyo3(signature = (id, home = None))]
fn bg_status_json(id: &str, home: Option<String>) -> PyResult<String> {
    let dir = bg_agents::dir(&background::home(home.as_deref()), id).map_err(failed)?;
    let status = bg_agents::read(&dir).map_err(failed)?;
    let mut v = serde_json::to_value(&status).expect("serializes");
    v["state"] = status.effective_state().into();
    v["dir"] = dir.display().to_string().into();
    v["pending"] = bg_agents::pending(&dir).unwrap_or_default();
    Ok(v.to_string())
}

#[pyfunction]
#[pyo3(signature = (id, answer, home = None))]
fn bg_answer(id: &str, answer: &str, home: Option<String>) -> PyResult<()> {
    let dir = bg_agents::dir(&background::home(home.as_deref()), id).map_err(failed)?;
    bg_agents::answer(&dir, answer).map_err(failed)
}

/// Stops a background session; returns its status JSON afterwards.
#[pyfunction]
#[pyo3(signature = (id, home = None))]
fn bg_stop(py: Python<'_>, id: String, home: Option<String>) -> PyResult<String> {
    let home = background::home(home.as_deref());
    let status = py
        .detach(move || background::stop(&home, &id))
        .map_err(failed)?;
    Ok(json(&status))
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
    // The worker of a background session is this interpreter running `yuyao.background`.
    if let Ok(exe) = m
        .py()
        .import("sys")
        .and_then(|s| s.getattr("executable"))
        .and_then(|e| e.extract::<String>())
        && !exe.is_empty()
    {
        background::set_launcher(vec![exe, "-m".into(), "yuyao.background".into()]);
    }
    m.add_function(wrap_pyfunction!(bg_dispatch, m)?)?;
    m.add_function(wrap_pyfunction!(bg_run, m)?)?;
    m.add_function(wrap_pyfunction!(bg_list_text, m)?)?;
    m.add_function(wrap_pyfunction!(bg_list_json, m)?)?;
    m.add_function(wrap_pyfunction!(bg_status_json, m)?)?;
    m.add_function(wrap_pyfunction!(bg_answer, m)?)?;
    m.add_function(wrap_pyfunction!(bg_stop, m)?)?;
    m.add_function(wrap_pyfunction!(worktree_create, m)?)?;
    m.add_function(wrap_pyfunction!(worktree_changes, m)?)?;
    m.add_function(wrap_pyfunction!(worktree_finish, m)?)?;
    Ok(())
}
