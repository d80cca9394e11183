"""Session start with MCP servers configured: the prompt must not wait for them.

    .venv/bin/python benches/bench_mcp.py [-n 7]

Opens an agent_api session (what every front does before it shows a prompt) in a project with
no MCP server, then with 3 user-level servers: two real stdio servers built with the `mcp` SDK
(tests/mcp_fixture_server.py) and one that never answers. The servers start in the
background; the figure is the time until `create_session` returns and a slash command
(`/status`) answers — the prompt is usable then. Rounds alternate (none, three, none, …); the
table gives min and median of each and the difference of the medians, which the issue bounds
at 0.5 s. Also shown: the first turn's wall time with the three servers (it waits for servers
still starting, up to `mcp.startup_timeout_ms`, here 5000 ms, so the hanging one costs that).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benches"))

from _record import Recorder  # noqa: E402
from fakellm import FAKE_MODEL, FakeLLM, say  # noqa: E402

FIXTURE = ROOT / "tests" / "mcp_fixture_server.py"


def servers() -> dict:
    fixture = {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}
    hang = {"command": sys.executable, "args": ["-c", "import time; time.sleep(600)"]}
    return {"mcpServers": {"one": fixture, "two": fixture, "hang": hang}}


def open_once(project: Path, home: Path) -> float:
    from yuyao.agent_api import create_session

    t0 = time.perf_counter()
    s = create_session(cwd=str(project))
    s.dispatch("/status")
    elapsed = time.perf_counter() - t0
    s.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=7)
    n = ap.parse_args().n
    rec = Recorder("mcp")
    with tempfile.TemporaryDirectory() as tmp, FakeLLM([say("ok")] * (n + 2)) as llm:
        tmp = Path(tmp)
        project = tmp / "project"
        project.mkdir()
        homes = {"none": tmp / "home-none", "three": tmp / "home-three"}
        for name, home in homes.items():
            home.mkdir()
            (home / "config.toml").write_text("[mcp]\nstartup_timeout_ms = 5000\n")
            if name == "three":
                (home / "mcp.json").write_text(json.dumps(servers()))
        os.environ.update(
            D2A_MODEL_BASE_URL=llm.url, D2A_MODEL_NAME=FAKE_MODEL, D2A_MODEL_API_KEY="k"
        )
        times = {"none": [], "three": []}
        for _ in range(n):
            for name, home in homes.items():
                os.environ["YUYAO_HOME"] = str(home)
                times[name].append(open_once(project, home))
        os.environ["YUYAO_HOME"] = str(homes["three"])
        from yuyao.agent_api import create_session

        s = create_session(cwd=str(project))
        t0 = time.perf_counter()
        s.chat("hi")
        first_turn = time.perf_counter() - t0
        tools = [t for t in llm.tool_names(-1) if t.startswith("mcp__")]
        listing = s.dispatch("/mcp list")
        s.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"session open + first slash command, {n} rounds (s):")
    for k, v in times.items():
        print(f"  {k:<6} min {min(v):.3f}  median {med[k]:.3f}")
    print(
        f"  three servers (one hanging) - none: {med['three'] - med['none']:+.3f} s (bound 0.5 s)"
    )
    print(
        f"first turn with the three (hanging one bounded by 5000 ms): {first_turn:.2f} s; "
        f"MCP tools in the request: {len(tools)}"
    )
    print(listing)
    out = rec.save(
        {"rounds": n, "open_s": times, "first_turn_s": first_turn, "mcp_tools": len(tools)},
        peer="the same session with no MCP server",
        peer_version=None,
        tree="empty temp project; tests/mcp_fixture_server.py (three servers, one hanging)",
    )
    print(f"raw figures: {out}")


if __name__ == "__main__":
    main()
