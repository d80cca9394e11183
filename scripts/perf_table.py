#!/usr/bin/env python3
"""Write the performance table of docs/PERFORMANCE.md from the benches' results files.

    python scripts/perf_table.py            # rewrite the table between the markers
    python scripts/perf_table.py --check    # exit 1 when the committed table differs
    python scripts/perf_table.py --print    # print the table only

The table is never typed: every row comes from the newest results file of one bench (and one
tree or variant: `benches/results/<bench>[-<variant>]-<YYYY-MM-DD>.json`) that carries the
`meta` block benches/_record.py writes (peer and its version, tree, load before and after,
date). Older files without that block are not used: a figure that does not say what it was
compared with, on what and at which load is not one to quote.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benches" / "results"
DOC = ROOT / "docs" / "PERFORMANCE.md"
BEGIN = "<!-- perf-table:begin -->"
END = "<!-- perf-table:end -->"
NAME = re.compile(r"^(?P<key>.+)-(?P<date>\d{4}-\d{2}-\d{2})\.json$")
HEAD = ("what", "yuyao", "peer (version)", "ratio", "goal", "load", "tree", "date")


def newest(results: Path) -> dict[str, dict]:
    """The newest results file with a meta block, per `<bench>[-<variant>]` key."""
    found: dict[str, tuple[str, dict]] = {}
    for path in sorted(results.glob("*.json")):
        m = NAME.match(path.name)
        if not m:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "meta" not in data:
            continue
        key, date = m["key"], m["date"]
        if key not in found or date >= found[key][0]:
            found[key] = (date, data)
    return {key: data for key, (_, data) in sorted(found.items())}


def num(x: float, unit: str = "") -> str:
    if x is None:
        return "—"
    if abs(x) >= 100:
        text = f"{x:,.0f}"
    elif abs(x) >= 10:
        text = f"{x:.1f}"
    else:
        text = f"{x:.2f}"
    return f"{text} {unit}".rstrip()


def ratio(x: float | None) -> str:
    """Two decimals; three near 1, where two would hide which side of a 1.0× goal it is."""
    if x is None:
        return "—"
    return f"{x:.3f}×" if 0.995 <= x < 1.005 else f"{x:.2f}×"


def goal(text: str, met: bool | None) -> str:
    """The goal with whether the figure meets it (✔ / ✘)."""
    return text if met is None else f"{text} {'✔' if met else '✘'}"


def load_cell(meta: dict) -> str:
    before, after = meta.get("load_before"), meta.get("load_after")
    if not before or not after:
        return "—"
    return f"{before[0]:.1f} → {after[0]:.1f}"


# Each function turns one results file into rows: (what, yuyao, peer, ratio, goal).


def repomap_session(data: dict) -> list[tuple]:
    rows = []
    s = data["summary"]
    for key, what in (
        ("cold first request", "repo map: first request, cold"),
        ("warm first request", "repo map: first request, warm"),
        ("later prompt map cost", "repo map: a later prompt's map, nothing changed"),
        ("peak RSS", "repo map session: peak RSS"),
        ("tag cache", "repo map: tag cache on disk"),
    ):
        r = s.get(key)
        if not r:
            continue
        unit = r["unit"]
        peer = r["peer"]
        rows.append(
            (
                what,
                num(r["median"], unit),
                f"{num(peer['median'], unit)} ({data['meta'].get('peer_version')})"
                if peer
                else "—",
                ratio(r["ratio"]),
                goal(r["goal"].replace("<=", "≤"), r["met"]) if r["goal"] else "—",
            )
        )
    return rows


def harness(data: dict) -> list[tuple]:
    """Overhead per step of each yuyao row against the peer's tool-call row; for long
    sessions (1,000 steps or more) also the bytes sent and the per-step cost windows, whose
    goals (seed of the long-session work) are stated for 1,000 steps."""
    rows = []
    meta = data["meta"]
    peer_v = meta.get("peer_version") or "—"
    steps = data["steps"]
    long = steps >= 1000
    silent = not data.get("model_states_reason")
    talk = "silent model" if silent else "with a reason"
    for repo, by in data["summary"].items():
        p = by.get("peer (tool call)")
        if not p or "error" in p:
            continue
        files = data["repos"][repo]["files"]
        where = f"{steps} steps, {talk}, {files:,}-file repo"
        for label in ("yuyao (read)", "yuyao (bash cat)"):
            y = by.get(label)
            if not y or "error" in y:
                continue
            tool = label.removeprefix("yuyao (").removesuffix(")")
            a, b = y["overhead_per_step_ms"]["median"], p["overhead_per_step_ms"]["median"]
            rows.append(
                (f"harness overhead per step, `{tool}` ({where})", num(a, "ms"),
                 f"{num(b, 'ms')} ({peer_v})", ratio(a / b), "—")
            )  # fmt: skip
            if not long or label != "yuyao (read)" or "prompt_bytes_total" not in y:
                continue
            a, b = y["prompt_bytes_total"]["median"], p["prompt_bytes_total"]["median"]
            rows.append(
                (f"bytes sent to the model ({where})", num(a / 1e6, "MB"),
                 f"{num(b / 1e6, 'MB')} ({peer_v})", ratio(a / b),
                 goal("≤ 1.0×", a <= b) if silent else "—")
            )  # fmt: skip
            if "window_first_ms" not in y or "window_first_ms" not in p:
                continue
            fy, fp = y["window_first_ms"], p["window_first_ms"]
            ly, lp = y["window_last_ms"], p["window_last_ms"]
            r_first = fy["median"] / fp["median"]
            r_last = ly["median"] / lp["median"]
            grow_y, grow_p = ly["median"] / fy["median"], lp["median"] / fp["median"]
            span = f"steps {fy['steps'][0]}–{fy['steps'][1]} → {ly['steps'][0]}–{ly['steps'][1]}"
            rows.append(
                (f"per-step cost, {span} ({where})",
                 f"{num(fy['median'], 'ms')} → {num(ly['median'], 'ms')} (×{grow_y:.2f})",
                 f"{num(fp['median'], 'ms')} → {num(lp['median'], 'ms')} (×{grow_p:.2f}) ({peer_v})",
                 f"{ratio(r_first)} → {ratio(r_last)}",
                 goal("growth below the peer's", grow_y <= grow_p))
            )  # fmt: skip
    return rows


def repomap(data: dict) -> list[tuple]:
    """The map's construction alone, cold and warm, against aider's repo map."""
    rows = []
    for phase, limit in (("cold", 3000), ("warm", 150)):
        y, a = data.get(f"yuyao_{phase}"), data.get(f"aider_{phase}")
        if not y:
            continue
        med = y["median_ms"]
        rows.append(
            (f"repo map build alone, {phase} ({data['files']:,} files, budget 1024 tokens)",
             num(med, "ms"),
             f"{num(a['median_ms'], 'ms')} ({data['meta'].get('peer_version')})" if a else "—",
             ratio(med / a["median_ms"]) if a else "—", goal(f"< {limit} ms", med < limit))
        )  # fmt: skip
    return rows


def spawn(data: dict) -> list[tuple]:
    rows = []
    for h in data["hosts"]:
        if "ratio_median" not in h:
            continue
        side = "bash call from agent_api" + (" (fork path)" if h.get("fork") else "")
        rows.append(
            (f"{side}, {h['size']} host", num(h["per_call_median_ms"], "ms"),
             f"{num(h['subprocess_median_ms'], 'ms')} (subprocess, {data['meta']['peer_version']})",
             ratio(h["ratio_median"]), goal("≤ 2.0×", h["ratio_median"] <= 2.0))
        )  # fmt: skip
    return rows


def files(data: dict) -> list[tuple]:
    rows = []
    peer_v = data["meta"].get("peer_version")
    goals = {"edit": 1.5, "/undo": 3.0}
    ops = data["operations"]
    # The small edit late in the history against the same edit on a new journal: a journal
    # entry costs what it holds, not the history (the ratios to the peer, run alike).
    early = ops.get("small edit, new journal", {}).get("ratio_of_medians")
    for name, op in ops.items():
        y, p = statistics.median(op["yuyao_s"]) * 1e3, statistics.median(op["peer_s"]) * 1e3
        r = op["ratio_of_medians"]
        limit = next((g for k, g in goals.items() if name.startswith(k)), None)
        verdict = goal(f"≤ {limit}×", r <= limit) if limit else "—"
        if name.startswith("small edit,") and name.endswith("journaled") and early:
            verdict = goal(f"≤ 1.25× the new journal's ({early}×)", r <= 1.25 * early)
        rows.append((name, num(y, "ms"), f"{num(p, 'ms')} ({peer_v})", ratio(r), verdict))
    store = data.get("snapshot_store")
    if store:
        rows.append((f"snapshot store after {store['edits']} one-line edits",
                     num(store["after_last_edit_bytes"] / 1e6, "MB"),
                     f"{num(store['edits'] * store['file_bytes'] / 1e6, 'MB')} ({store['edits']} raw copies)",
                     ratio(store["after_last_edit_bytes"] / (store["edits"] * store["file_bytes"])),
                     store_goal(store)))  # fmt: skip
    return rows


def store_goal(store: dict) -> str:
    """At most 1.1× one compressed copy (the store after the first edit) plus the bytes the
    edits changed; results written before the changed bytes were recorded have no goal."""
    if "changed_bytes" not in store:
        return "—"
    limit = 1.1 * (store["after_first_edit_bytes"] + store["changed_bytes"])
    held = store["after_last_edit_bytes"] <= limit
    return goal("≤ 1.1× one compressed copy + the changed bytes", held)


def requests(data: dict) -> list[tuple]:
    rows = []
    peer_v = data["meta"].get("peer_version")
    talk = "silent model" if data.get("silent_model") else "with a reason"
    for w in data["workloads"]:
        y, p = data["summary"][w].get("yuyao"), data["summary"][w].get("peer")
        if not y or not p or "error" in y or "error" in p:
            continue
        a, b = y["uncacheable_bytes"]["min"], p["uncacheable_bytes"]["min"]
        rows.append(
            (f"uncacheable request bytes, {w}, {data['steps']} steps, {talk}", num(a / 1024, "KB"),
             f"{num(b / 1024, 'KB')} ({peer_v})", ratio(a / b), goal("≤ 1.0×", a <= b))
        )  # fmt: skip
        key = "next_session_uncacheable_bytes"
        if key in y and key in p:
            a, b = y[key]["min"], p[key]["min"]
            rows.append(
                (f"uncacheable request bytes, {w}, {data['steps']} steps, {talk}, a later session",
                 num(a / 1024, "KB"), f"{num(b / 1024, 'KB')} ({peer_v})", ratio(a / b),
                 goal("≤ 1.0×", a <= b))
            )  # fmt: skip
        a, b = y["total_bytes"]["min"], p["total_bytes"]["min"]
        rows.append(
            (f"total request bytes, {w}, {data['steps']} steps, {talk}", num(a / 1024, "KB"),
             f"{num(b / 1024, 'KB')} ({peer_v})", ratio(a / b), "—")
        )  # fmt: skip
    return rows


def search(data: dict) -> list[tuple]:
    peer_v = data["meta"].get("peer_version")
    rows = []
    for kind in ("grep", "glob"):
        r = data["geomean_ratio"].get(kind)
        if r is not None:
            rows.append((f"{kind}, geometric mean of the per-query ratios", "—", peer_v, ratio(r),
                         goal("≤ 1.0×", r <= 1.0)))  # fmt: skip
    return rows


def startup(data: dict) -> list[tuple]:
    rows = {r["command"]: r for r in data["rows"]}
    base = rows.get("python -c pass", {}).get("median_s")
    out = []
    for cmd in ("yuyao --version", "yuyao --help"):
        r = rows.get(cmd)
        if r and r.get("median_s") and base:
            out.append((f"startup: {cmd}", num(r["median_s"] * 1e3, "ms"),
                        f"{num(base * 1e3, 'ms')} (python -c pass)", ratio(r["median_s"] / base), "—"))  # fmt: skip
    return out


def memory(data: dict) -> list[tuple]:
    rows = []
    for name, r in data.get("recall_at_3", {}).items():
        # Every component measured counts (bm25, embeddings and, since the re-ranking, encoder).
        best = max(v for k, v in r.items() if k != "hybrid" and v is not None)
        rows.append((f"memory search recall@3 (hybrid), {name}", f"{r['hybrid']:.3f}",
                     f"{best:.3f} (its best component alone)", ratio(r["hybrid"] / best),
                     goal("≥ 0.95 and ≥ each component",
                          r["hybrid"] >= 0.95 and r["hybrid"] >= best)))  # fmt: skip
    return rows


# In the order of the table.
ROWS = {
    "repomap-session": repomap_session,
    "repomap": repomap,
    "harness": harness,
    "requests": requests,
    "files": files,
    "search": search,
    "spawn": spawn,
    "startup": startup,
    "memory": memory,
}


# The peer agent's package name stays in the bench code and the results files; the docs call it
# "peer harness", as the harness bench already records it (the product's docs never carry it).
# The name is read from the bench's pin, so it is written in one place only.
_PIN = re.search(
    r'^PEER_PACKAGE = "([^"=]+)', (ROOT / "benches" / "bench_harness.py").read_text(), re.M
)
PEER_SHOWN = {_PIN.group(1): "peer harness"} if _PIN else {}


def cell(text: str) -> str:
    text = str(text)
    for name, shown in PEER_SHOWN.items():
        text = text.replace(name, shown)
    return text.replace("|", "\\|").replace("\n", " ")


def table(results: Path = RESULTS) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    order = list(ROWS)
    found = sorted(newest(results).items(), key=lambda kv: (
        order.index(kv[1]["meta"].get("bench")) if kv[1]["meta"].get("bench") in order else len(order),
        kv[0]))  # fmt: skip
    for _, data in found:
        meta = data["meta"]
        make = ROWS.get(meta.get("bench", ""))
        if make is None:
            continue
        for what, ours, peer, r, goal in make(data):
            row = (what, ours, peer, r, goal, load_cell(meta), meta.get("tree") or "—",
                   meta.get("date") or "—")  # fmt: skip
            lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def splice(doc: str, body: str) -> str:
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"the markers {BEGIN} / {END} are missing")
    return doc[: start + len(BEGIN)] + "\n" + body + doc[end:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the doc's table is stale")
    mode.add_argument("--print", action="store_true", help="print the table only")
    ap.add_argument("--doc", type=Path, default=DOC, help="the document (docs/PERFORMANCE.md)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="benches/results")
    args = ap.parse_args(argv)
    body = table(args.results)
    if args.print:
        sys.stdout.write(body)
        return 0
    doc = args.doc.read_text()
    new = splice(doc, body)
    if args.check:
        if new != doc:
            print(f"{args.doc}: the table differs from the results files;"
                  " run python scripts/perf_table.py", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    if new != doc:
        args.doc.write_text(new)
    print(f"{args.doc}: table of {body.count(chr(10)) - 2} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
