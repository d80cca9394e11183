"""What a batch shows while it runs and when it ends: a live line (rich) on a terminal —
done / running / failed, spend so far, ETA — or one plain line per finished task otherwise;
then a summary table. `--json` leaves stdout to one JSON document."""

from __future__ import annotations

import sys
import threading
import time


def is_failure(result: dict) -> bool:
    return result.get("exit_code", 1) != 0 and result.get("exit_status") != "NotRun"


def _money(value: float) -> str:
    return f"${value:.4f}"


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, spent, *, live: bool):
        self.total = total
        self.spent = spent  # () -> float, the ledger's total
        self.started = time.monotonic()
        self.done = 0
        self.failed = 0
        self.running: set[str] = set()
        self.lock = threading.Lock()
        self.live = None
        if live:
            import os

            from rich.console import Console
            from rich.live import Live

            console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
            self.live = Live(self._render(), console=console, refresh_per_second=4, transient=True)
            self.live.start()
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while self.live is not None:
            live = self.live
            try:
                live.update(self._render())
            except Exception:
                pass
            time.sleep(0.5)

    def _line(self) -> str:
        elapsed = time.monotonic() - self.started
        left = self.total - self.done
        eta = "—" if not self.done else _clock(elapsed / self.done * left)
        return (
            f"done {self.done}/{self.total} · running {len(self.running)} · failed "
            f"{self.failed} · spent {_money(self.spent())} · elapsed {_clock(elapsed)} · ETA {eta}"
        )

    def _render(self):
        from rich.text import Text

        with self.lock:
            running = sorted(self.running)
            text = Text(self._line(), style="bold")
        if running:
            shown = ", ".join(running[:8]) + (" …" if len(running) > 8 else "")
            text.append(f"\nrunning: {shown}", style="dim")
        return text

    def started_task(self, task_id: str) -> None:
        with self.lock:
            self.running.add(task_id)

    def finished_task(self, result: dict) -> None:
        with self.lock:
            self.running.discard(result.get("id"))
            self.done += 1
            if is_failure(result):
                self.failed += 1
        if self.live is None:
            line = (
                f"[{self.done}/{self.total}] {result.get('id') or result.get('line')}: "
                f"{result['exit_status']}, {result.get('steps', 0)} steps, "
                f"{_money(result.get('cost_usd', 0.0))}, {result.get('wall_seconds', 0.0):.1f} s"
            )
            if result.get("error") and is_failure(result):
                line += f" — {result['error']}"
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def note(self, text: str) -> None:
        if self.live is not None:
            self.live.console.print(text)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def close(self) -> None:
        live, self.live = self.live, None
        if live is not None:
            live.stop()


def summary(results: list[dict], wall: float) -> dict:
    by_status: dict[str, int] = {}
    for r in results:
        by_status[r["exit_status"]] = by_status.get(r["exit_status"], 0) + 1
    return {
        "tasks": len(results),
        "by_status": by_status,
        "failed": sum(1 for r in results if is_failure(r)),
        "cost_usd": round(sum(r.get("cost_usd") or 0.0 for r in results), 6),
        "wall_seconds": round(wall, 3),
    }


def print_summary(results: list[dict], totals: dict, out_dir: str, *, terminal: bool) -> None:
    """The table at the end: one row per task (failures first when there are many)."""
    rows = sorted(results, key=lambda r: (not is_failure(r), str(r.get("id"))))
    shown = rows if len(rows) <= 40 else [r for r in rows if is_failure(r)][:40]
    from rich.console import Console
    from rich.table import Table

    console = Console(no_color=not terminal, highlight=False, width=None if terminal else 120)
    table = Table(box=None, pad_edge=False)
    for column in ("task", "status", "steps", "cost", "wall", "error"):
        table.add_column(column, justify="right" if column in ("steps", "cost", "wall") else "left")
    for r in shown:
        table.add_row(
            str(r.get("id") or r.get("line")),
            r["exit_status"],
            str(r.get("steps", 0)),
            _money(r.get("cost_usd") or 0.0),
            f"{r.get('wall_seconds') or 0.0:.1f} s",
            (r.get("error") or "")[:80] if is_failure(r) or r["exit_status"] == "NotRun" else "",
        )
    if shown:
        console.print(table)
    if len(shown) < len(rows):
        console.print(f"({len(rows) - len(shown)} more tasks: see results.jsonl)")
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(totals["by_status"].items()))
    console.print(
        f"{totals['tasks']} tasks: {statuses}; spent {_money(totals['cost_usd'])}; "
        f"wall {totals['wall_seconds']:.1f} s; results in {out_dir}/results.jsonl"
    )
