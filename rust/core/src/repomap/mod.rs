//! The session's side of the repo map (`yuyao-repomap` builds, caches and renders it): when
//! a prompt gets a map, the background build it waits for at most `GRACE`, the map attached
//! to the first request made after it is ready, `@SymbolName` blocks, and what a later prompt
//! reuses.

pub(crate) use yuyao_repomap::*;

use crate::session::Session;
use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use yuyao_repomap::tags::Lang;

impl Session {
    fn map_budget(&self) -> u32 {
        self.opts.map_tokens.unwrap_or(DEFAULT_TOKENS)
    }

    /// Files read or edited in this session and files and names `prompt` mentions.
    fn map_focus(&self, index: Option<&Index>, prompt: &str) -> Focus {
        let project = self.ctx.project();
        let mut focus = Focus::default();
        if let Ok(files) = self.ctx.files.lock() {
            for p in files.keys() {
                if let Ok(rel) = p.strip_prefix(&project) {
                    focus.files.insert(rel.to_string_lossy().into_owned());
                }
            }
        }
        for w in words(prompt) {
            let w = w.trim_matches('.');
            if Lang::of(Path::new(w)).is_some() && inside(Path::new(w)) && project.join(w).is_file()
            {
                focus.files.insert(w.to_string());
            } else if let Some((f, _)) = index.and_then(|i| {
                i.files
                    .iter()
                    .find(|(f, _)| Path::new(f).file_name().is_some_and(|n| n == w))
            }) {
                focus.files.insert(f.clone());
            }
            for part in w.split(['.', '/']) {
                if !part.is_empty() {
                    focus.idents.insert(part.to_string());
                }
            }
        }
        focus
    }

    /// The project's tags for `prompt`, or `None` when they are still being built after
    /// `wait`. A small tree is walked again (new files show up); a large one is checked by
    /// HEAD and the mapped files' stamps, and rebuilt in the background when HEAD moved.
    fn current_index(&self, prompt: &str, wait: Duration) -> Option<Index> {
        let project = self.ctx.project();
        let (memory, building) = {
            let mut st = self.lock();
            let maps = &mut st.repo_maps;
            (
                maps.index
                    .take()
                    .filter(|(p, _)| *p == project)
                    .map(|(_, i)| i),
                maps.building
                    .take()
                    .filter(|(p, _)| *p == project)
                    .map(|(_, r)| r),
            )
        };
        let hint = self.map_focus(memory.as_ref(), prompt);
        let rx = match (building, memory) {
            (Some(rx), memory) => {
                if let Some(m) = memory {
                    self.lock().repo_maps.index = Some((project.clone(), m));
                }
                rx
            }
            (None, Some(index)) if index.walk_ms < REWALK_MS || index.total <= REWALK_FILES => {
                let home = &self.paths.home;
                return Some(index_from(&project, home, Some(index), &hint, &|_| {}));
            }
            (None, Some(mut index)) => {
                if refresh(&project, &mut index, &hint) {
                    return Some(index);
                }
                let memory = Some(index.clone());
                self.lock().repo_maps.index = Some((project.clone(), index));
                spawn_build(project.clone(), self.paths.home.clone(), memory, hint)
            }
            (None, None) => spawn_build(project.clone(), self.paths.home.clone(), None, hint),
        };
        let mut deadline = Instant::now() + wait;
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Built::Done(index)) => return Some(index),
                // A small tree's remaining work is bounded by its files, not by a clock.
                Ok(Built::Walked(n)) if n <= SMALL_PARSE => {
                    deadline = deadline.max(Instant::now() + Duration::from_secs(30));
                }
                // A large tree: no point waiting out the grace.
                Ok(Built::Walked(_)) => deadline = Instant::now(),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let mut st = self.lock();
                    st.repo_maps.building = Some((project, rx));
                    // While HEAD's rebuild runs, the index of the commit before still maps.
                    return st.repo_maps.index.take().map(|(_, i)| i);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Runs `f` on the project's tags (waiting for a build in progress).
    fn with_index<R>(&self, f: impl FnOnce(&Index) -> R) -> Option<R> {
        let index = self.current_index("", Duration::from_secs(600))?;
        let out = f(&index);
        self.lock().repo_maps.index = Some((self.ctx.project(), index));
        Some(out)
    }

    /// The map for the prompt being sent, or `None` (budget 0, nothing to map, or the map
    /// is still being built: it attaches to a later request, `attach_ready_repo_map`).
    pub(crate) fn repo_map(&self, prompt: &str) -> Option<String> {
        let budget = self.map_budget();
        if budget == 0 {
            return None;
        }
        let t0 = Instant::now();
        let Some(index) = self.current_index(prompt, GRACE) else {
            let mut st = self.lock();
            st.repo_maps.waiting = Some(prompt.to_string());
            st.trajectory.record(
                "repo_map",
                serde_json::json!({"pending": true, "ms": t0.elapsed().as_millis() as u64}),
            );
            return None;
        };
        let check_ms = t0.elapsed().as_millis() as u64;
        Some(self.map_text(index, prompt, t0, check_ms)).filter(|m| !m.is_empty())
    }

    /// Renders (and redacts) the map of `index` for `prompt`, then keeps the index.
    /// `check_ms`: how long getting the index took (the walk or the HEAD-and-stamps check).
    fn map_text(&self, index: Index, prompt: &str, t0: Instant, check_ms: u64) -> String {
        let budget = self.map_budget();
        let focus = self.map_focus(Some(&index), prompt);
        // Nothing the map depends on changed: the last rendering is reused.
        let key = render_key(&index, &focus, budget);
        let last = {
            let st = self.lock();
            st.repo_maps
                .rendered
                .as_ref()
                .filter(|(k, _)| *k == key)
                .map(|(_, m)| m.clone())
        };
        let reused = last.is_some();
        let map = last.unwrap_or_else(|| render(&self.ctx.project(), &index, &focus, budget));
        self.lock().repo_maps.rendered = Some((key, map.clone()));
        let (files, parsed, total) = (index.files.len(), index.parsed, index.total);
        let pending = {
            let mut st = self.lock();
            st.repo_maps.index = Some((self.ctx.project(), index));
            let pending = st.repo_maps.building.is_some();
            // A rebuild still running: its map attaches to a later request.
            st.repo_maps.waiting = pending.then(|| prompt.to_string());
            pending
        };
        // Definition lines are file content: redacted like every tool result.
        let map = {
            let st = self.lock();
            crate::permissions::redact(self, &st.policy, &map).into_owned()
        };
        self.lock().trajectory.record(
            "repo_map",
            serde_json::json!({"files": files, "total": total, "parsed": parsed,
                               "pending": pending, "chars": map.len(), "check_ms": check_ms,
                               "reused": reused,
                               "ms": t0.elapsed().as_millis() as u64}),
        );
        map
    }

    /// Before a request: a map whose build finished after its prompt went without one is
    /// added at the end of the request view (after everything already sent), unless the
    /// requests already carry that map.
    pub(crate) fn attach_ready_repo_map(&self) {
        let project = self.ctx.project();
        let (index, prompt) = {
            let mut st = self.lock();
            let maps = &mut st.repo_maps;
            if maps.waiting.is_none() {
                return;
            }
            let Some((p, rx)) = maps.building.as_ref() else {
                maps.waiting = None;
                return;
            };
            let index = loop {
                match rx.try_recv() {
                    Ok(Built::Walked(_)) => {}
                    Ok(Built::Done(index)) if *p == project => break index,
                    Err(mpsc::TryRecvError::Empty) => return,
                    _ => {
                        maps.building = None;
                        maps.waiting = None;
                        return;
                    }
                }
            };
            maps.building = None;
            (index, maps.waiting.take().unwrap_or_default())
        };
        let map = self.map_text(index, &prompt, Instant::now(), 0);
        if map.is_empty() {
            return;
        }
        let mut st = self.lock();
        let st = &mut *st;
        if st.repo_maps.latest(&st.history) != Some(map.as_str()) {
            st.repo_maps.record_after(&st.history, map);
        }
    }

    /// The map for `prompt`, unless it is the one the requests already carry. Computed
    /// before the prompt is pushed (it walks the project; no lock held).
    pub(crate) fn new_repo_map(&self, prompt: &str) -> Option<String> {
        let map = self.repo_map(prompt)?;
        let st = self.lock();
        (st.repo_maps.latest(&st.history) != Some(map.as_str())).then_some(map)
    }

    /// `/context list` lines: the map's size, and the map.
    pub(crate) fn repo_map_context(&self) -> String {
        let budget = self.map_budget();
        if budget == 0 {
            return "\n  repo map: off (--map-tokens n to send one)".into();
        }
        let last = {
            let st = self.lock();
            st.repo_maps.latest(&st.history).map(str::to_string)
        };
        match last.or_else(|| self.repo_map("")) {
            None if self.lock().repo_maps.building.is_some() => format!(
                "\n  repo map: being built in the background (budget {budget} tokens; it joins the first request made after it is ready)"
            ),
            None => format!("\n  repo map: nothing to map (budget {budget} tokens)"),
            Some(map) => format!(
                "\n  repo map: {} tokens of {budget} (--map-tokens)\n{}",
                map.chars().count().div_ceil(4),
                map.lines()
                    .map(|l| format!("    {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }
    }

    /// `@Name` that is no path: the definition's lines, or the candidates when ambiguous.
    pub fn symbol_block(&self, word: &str) -> Option<String> {
        let name = word.trim_start_matches('@');
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        self.with_index(|index| self.symbol_text(index, name))
            .flatten()
    }

    fn symbol_text(&self, index: &Index, name: &str) -> Option<String> {
        let project = self.ctx.project();
        let mut defs = definitions(index, name);
        // A C/C++ prototype beside its definition: the definition is what `@name` means.
        if defs.iter().any(|(_, d)| d.kind != "declaration") {
            defs.retain(|(_, d)| d.kind != "declaration");
        }
        match defs.as_slice() {
            [] => None,
            [(file, d)] => {
                let text = std::fs::read_to_string(self.ctx.project().join(file)).ok()?;
                let body: Vec<&str> = text
                    .lines()
                    .skip(d.line as usize - 1)
                    .take((d.end - d.line + 1).min(400) as usize)
                    .collect();
                Some(format!(
                    "[@{name}: {} {name} in {file}, lines {}-{}]\n{}\n",
                    d.kind,
                    d.line,
                    d.end,
                    body.join("\n")
                ))
            }
            many => Some(format!(
                "[@{name} is ambiguous: {} definitions; name the file with @path]\n{}\n",
                many.len(),
                many.iter()
                    .take(20)
                    .map(|(f, d)| {
                        let line = def_lines(&project, f, &HashSet::from([d.line]));
                        let line = line.get(&d.line).map_or("", String::as_str);
                        format!("  {f}:{}  {}", d.line, def_text(d, line))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
        }
    }
}
