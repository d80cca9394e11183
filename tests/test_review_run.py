"""`/review`, `/security-review` and `/run` (seed 002 §5.1), through agent_api `dispatch`."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest
from conftest import git
from fakellm import call, say

pytestmark = pytest.mark.core

BUGGY = "def add(a, b):\n    return a - b\n"


def test_review_finds_a_planted_bug_read_only(fake_llm, api, repo):
    (repo / "calc.py").write_text(BUGGY)
    server = fake_llm(
        [
            call("write", file_path=str(repo / "calc.py"), content="fixed?"),  # refused
            say("calc.py:2 — high — add subtracts: `a - b` should be `a + b`\nFindings: 1"),
        ]
    )
    session = api(server, mode="yolo")
    answer = session.dispatch("/review")
    assert "calc.py:2" in answer and "high" in answer
    prompt = server.user_text(0)
    assert "-    return a + b" in prompt and "+    return a - b" in prompt  # the diff vs HEAD
    assert "path:line" in prompt
    assert (repo / "calc.py").read_text() == BUGGY  # read-only even in yolo
    assert json.loads(session._core.status_json())["role"] == "execute"  # role restored


def test_review_fix_applies_with_normal_permissions(fake_llm, api, repo):
    (repo / "calc.py").write_text(BUGGY)
    server = fake_llm(
        [
            say("calc.py:2 — high — subtracts instead of adding\nFindings: 1"),
            call("read", file_path=str(repo / "calc.py")),
            call("edit", file_path=str(repo / "calc.py"), old_string="a - b", new_string="a + b"),
            say("Fixed calc.py:2."),
        ]
    )
    session = api(server, mode="yolo")
    answer = session.dispatch("/review --fix")
    assert "Fixed" in answer
    assert "a + b" in (repo / "calc.py").read_text()


def test_review_focus_flags_and_empty_diff(fake_llm, api, repo):
    server = fake_llm([say("Findings: 0")])
    session = api(server)
    assert "nothing to review" in session.dispatch("/review")
    (repo / "calc.py").write_text(BUGGY)
    session.dispatch("/review --security")
    assert "injection" in server.user_text(0)
    with pytest.raises(ValueError):
        session.dispatch("/review --bogus")


def test_review_outside_git_uses_the_session_changes(fake_llm, api, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "m.py").write_text("x = 1\n")
    server = fake_llm(
        [
            call("read", file_path=str(plain / "m.py")),
            call("edit", file_path=str(plain / "m.py"), old_string="x = 1", new_string="x = 2"),
            say("changed"),
            say("m.py:1 — low — magic number\nFindings: 1"),
        ]
    )
    session = api(server, mode="yolo", cwd=plain)
    session.chat("change it")
    session.dispatch("/review")
    assert "+x = 2" in server.user_text(-1) and "session's changes" in server.user_text(-1)


def test_security_review_ranks_the_branch_changes(fake_llm, api, repo):
    git(repo, "branch", "-M", "main")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "db.py").write_text("def q(name):\n    return f\"SELECT * FROM t WHERE n='{name}'\"\n")
    git(repo, "add", "db.py")
    git(repo, "commit", "-q", "-m", "query")
    server = fake_llm([say("1. db.py:2 — critical — SQL injection — use parameters\nRisks: 1")])
    session = api(server)
    answer = session.dispatch("/security-review")
    assert "SQL injection" in answer
    prompt = server.user_text(0)
    assert "merge base" in prompt and "SELECT * FROM t" in prompt and "ranked" in prompt


# ---------------------------------------------------------------------------------------------
# /run

APP = """import http.server, socketserver, sys

class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello from the app")

if __name__ == "__main__":
    with socketserver.TCPServer(("127.0.0.1", 0), H) as srv:
        print(f"Serving on http://127.0.0.1:{srv.server_address[1]}", flush=True)
        srv.serve_forever()
"""


def test_run_starts_a_tiny_http_app_and_reports_its_port(fake_llm, api, repo):
    (repo / "app.py").write_text(APP)
    session = api(fake_llm([]), trust_project=True)
    report = session.dispatch("/run")
    assert "python3 app.py" in report and "ready at http://127.0.0.1:" in report
    url = report.split("ready at ", 1)[1].split()[0]
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.read() == b"hello from the app"
    tasks = session.dispatch("/tasks")
    assert "python3 app.py" in tasks and "running" in tasks
    job = report.split("as job ", 1)[1].split(":")[0]
    session.dispatch(f"/tasks stop {job}")
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_run_of_an_untrusted_projects_command_needs_a_yes(fake_llm, api, repo):
    (repo / "app.py").write_text(APP)
    session = api(fake_llm([]), project_extensions=False)  # nobody to ask, nothing trusted
    with pytest.raises(ValueError, match="not trusted"):
        session.dispatch("/run")
    assert "app.py" not in session.dispatch("/tasks")
    # A command the user types is theirs.
    assert "ended" in session.dispatch("/run echo mine")


def test_run_reports_a_command_that_ends(fake_llm, api, repo):
    session = api(fake_llm([]))
    report = session.dispatch("/run echo built; exit 3")
    assert "ended" in report and "built" in report


def test_run_without_a_known_start_command(fake_llm, api, repo):
    session = api(fake_llm([]))
    with pytest.raises(ValueError, match="cannot tell how this project starts"):
        session.dispatch("/run")
