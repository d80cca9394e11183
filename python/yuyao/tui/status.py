"""What the status line shows besides the core's status: the git branch and the PR bar.

The branch is read from `.git/HEAD` (no subprocess). The PR bar (spec §5.7) exists only when
`gh` is installed: a daemon thread asks `gh pr view` for the current branch every
PR_REFRESH seconds; with no open PR (or no `gh`, or `gh` failing) the bar stays hidden.
"""

from __future__ import annotations

import os
import shutil
import threading

PR_REFRESH = 60.0


def git_dir(cwd: str) -> str | None:
    """The .git directory of the work tree holding cwd (os.path only: no pathlib at startup)."""
    d = os.path.realpath(cwd)
    while True:
        dot = os.path.join(d, ".git")
        if os.path.isdir(dot):
            return dot
        if os.path.isfile(dot):  # a worktree or submodule: "gitdir: <path>"
            try:
                with open(dot, encoding="utf-8", errors="replace") as fh:
                    text = fh.read().strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                return os.path.realpath(os.path.join(d, text[7:].strip()))
            return None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def git_branch(cwd: str) -> str:
    gd = git_dir(cwd)
    if gd is None:
        return ""
    try:
        with open(os.path.join(gd, "HEAD"), encoding="utf-8", errors="replace") as fh:
            head = fh.read().strip()
    except OSError:
        return ""
    if head.startswith("ref:"):
        ref = head[4:].strip()
        return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
    return head[:8] + " (detached)" if head else ""


def pr_state(info: dict) -> tuple[str, str]:
    """(label, style class) for an open PR: draft, changes requested, checks failing,
    awaiting review, or passing."""
    if info.get("isDraft"):
        return "draft", "pr.draft"
    decision = str(info.get("reviewDecision") or "").upper()
    if decision == "CHANGES_REQUESTED":
        return "changes requested", "pr.changes"
    checks = info.get("statusCheckRollup") or []
    states = {
        str(c.get("conclusion") or c.get("state") or c.get("status") or "").upper()
        for c in checks
        if isinstance(c, dict)
    }
    if states & {"FAILURE", "ERROR", "TIMED_OUT", "CANCELLED", "ACTION_REQUIRED"}:
        return "checks failing", "pr.changes"
    if decision == "APPROVED" and not states & {"PENDING", "IN_PROGRESS", "QUEUED", "EXPECTED"}:
        return "passing", "pr.passing"
    if decision in ("REVIEW_REQUIRED", "") and not states - {"SUCCESS", "NEUTRAL", "SKIPPED", ""}:
        return ("awaiting review", "pr.review") if decision else ("passing", "pr.passing")
    return "awaiting review", "pr.review"


class PrWatcher:
    """Polls `gh pr view` in the background; `.current` is None or a dict with number, url,
    label, cls."""

    def __init__(self, cwd_fn, on_change=None) -> None:
        self.cwd_fn = cwd_fn
        self.on_change = on_change
        self.current: dict | None = None
        self.gh = shutil.which("gh")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if not self.gh or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="yuyao-pr", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            new = self.fetch()
            if new != self.current:
                self.current = new
                if self.on_change:
                    try:
                        self.on_change()
                    except Exception:  # noqa: BLE001 - a status line never takes the TUI down
                        pass
            self._stop.wait(PR_REFRESH)

    def fetch(self) -> dict | None:
        import json
        import subprocess

        try:
            proc = subprocess.run(
                [
                    self.gh,
                    "pr",
                    "view",
                    "--json",
                    "number,title,url,state,isDraft,reviewDecision,statusCheckRollup",
                ],
                cwd=self.cwd_fn(),
                capture_output=True,
                timeout=20,
                env={**os.environ, "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"},
            )
            if proc.returncode != 0:
                return None
            info = json.loads(proc.stdout.decode(errors="replace") or "{}")
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        if not isinstance(info, dict) or str(info.get("state") or "").upper() != "OPEN":
            return None
        label, cls = pr_state(info)
        return {
            "number": info.get("number"),
            "url": str(info.get("url") or ""),
            "label": label,
            "cls": cls,
        }
