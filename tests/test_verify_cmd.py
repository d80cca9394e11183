"""`/verify` (seed 002 §5.2): start the app like `/run`, then a turn that drives it and reports what
it observed against the request — a web app through the real browser tool (Chromium), a
command-line app through bash — through agent_api `dispatch`."""

from __future__ import annotations

import os
import shutil
import socket

import pytest
from fakellm import call, calls, say

pytestmark = pytest.mark.core

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("YUYAO_REQUIRE_CHROMIUM"),
    reason="no Chromium on PATH (apt-get install chromium)",
)

APP = """import http.server, socketserver

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        body = b"<html><head><title>Greeter</title></head><body><h1>Hello, visitor</h1></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

if __name__ == "__main__":
    socketserver.TCPServer.allow_reuse_address = True
    with socketserver.TCPServer(("127.0.0.1", PORT), H) as srv:
        print(f"Serving on http://127.0.0.1:{srv.server_address[1]}", flush=True)
        srv.serve_forever()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_closed(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def browser(cid: str, action: str, **args):
    return ("browser", {"action": action, **args}, cid)


@needs_chromium
def test_verify_drives_a_web_app_in_the_browser(fake_llm, api, repo):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    (repo / "app.py").write_text(APP.replace("PORT", str(port)))
    server = fake_llm(
        [
            calls([browser("open", "open", url=url), browser("shot", "screenshot")]),
            say("Verdict: works\nthe page greets the visitor — it shows 'Hello, visitor'"),
        ]
    )
    session = api(server, trust_project=True)
    answer = session.dispatch("/verify the page greets the visitor")
    assert "Verdict: works" in answer
    assert f"ready at {url}" in answer  # the start line comes with the answer
    prompt = server.user_text(0)
    assert "[/verify]" in prompt and "the page greets the visitor" in prompt
    assert url in prompt and "browser" in prompt and "screenshot" in prompt
    # The model really saw the running page and its screenshot.
    assert "Hello, visitor" in server.tool_result("open")
    assert "Screenshot" in server.tool_result("shot")
    assert any(
        isinstance(m.get("content"), list)
        and any(p.get("type") == "image_url" for p in m["content"])
        for m in server.messages(-1)
    )
    tasks = session.dispatch("/tasks")
    assert "python3 app.py" in tasks and "running" in tasks
    session.close()
    assert port_closed(port)  # the app went with the session


def test_verify_reuses_the_app_run_started(fake_llm, api, repo):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    (repo / "app.py").write_text(APP.replace("PORT", str(port)))
    server = fake_llm([say("Verdict: works")])
    session = api(server, trust_project=True)
    assert f"ready at {url}" in session.dispatch("/run")
    answer = session.dispatch("/verify the greeting")
    assert "reusing the app already running" in answer and "Verdict: works" in answer
    assert url in server.user_text(0)
    tasks = session.dispatch("/tasks")
    assert tasks.count("python3 app.py") == 1  # not started twice


def test_verify_reuses_a_running_app_without_a_port(fake_llm, api, repo):
    server = fake_llm([say("Verdict: partly")])
    session = api(server)
    report = session.dispatch("/run echo worker ready; sleep 60")
    job = report.split("as job ", 1)[1].split(":")[0]
    answer = session.dispatch("/verify the worker starts")
    assert f"reusing the app already running as job {job}" in answer
    prompt = server.user_text(0)
    assert "command-line" in prompt and f"background job {job}" in prompt
    assert "worker ready" in prompt
    assert session.dispatch("/tasks").count("sleep 60") == 1


CLI = """import sys

if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: main.py NAME", file=sys.stderr)
        sys.exit(2)
    print(f"Hello, {sys.argv[1]}!")
"""


def test_verify_runs_a_cli_with_sample_input(fake_llm, api, repo):
    (repo / "main.py").write_text(CLI)
    server = fake_llm(
        [
            say("It does: main.py greets the name it is given."),
            call("bash", command="python3 main.py Ada"),
            say("Verdict: works\ngreets the given name — printed 'Hello, Ada!'"),
        ]
    )
    session = api(server, mode="yolo", trust_project=True)
    session.chat("main.py should greet the name given on the command line")
    answer = session.dispatch("/verify")
    assert "Verdict: works" in answer
    prompt = server.user_text(1)
    # The session's last request is what is checked; the program is run as a CLI.
    assert "Verify at runtime that this works: main.py should greet the name" in prompt
    assert "command-line" in prompt and "python3 main.py" in prompt
    assert "usage: main.py NAME" in prompt  # what it printed when started without input
    assert any("Hello, Ada!" in text for text in server.tool_results(-1).values())


def test_verify_with_nothing_to_run_names_what_it_looked_for(fake_llm, api, repo):
    server = fake_llm([])
    session = api(server)
    with pytest.raises(ValueError, match="nothing to run") as err:
        session.dispatch("/verify")
    assert "package.json" in str(err.value) and "Procfile" in str(err.value)
    assert server.requests == []  # no model turn


def test_tui_verify_asks_then_reports(fake_llm, env, repo):
    from test_tui import CTRL_D, yuyao_term

    (repo / "main.py").write_text(CLI)
    server = fake_llm([say("Verdict: broken\ngreets a name — VERIFY-OBSERVED usage error")])
    term = yuyao_term(env(server), repo)
    try:
        term.wait_ready()
        term.line("/verify greets a name")
        # An untrusted project's start command runs with the user's rights: asked first.
        term.wait_for(r"comes from this project")
        term.settle(0.3)
        term.send("y")
        term.wait_for(r"started `python3 main\.py`", timeout=30)
        term.wait_for(r"VERIFY-OBSERVED", timeout=30)
        term.send(CTRL_D)
        assert term.wait_exit() == 0
    finally:
        term.close()
    prompt = server.user_text(0)
    assert "greets a name" in prompt and "command-line" in prompt
    assert "usage: main.py NAME" in prompt
