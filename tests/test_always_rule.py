"""An "always" answer grants exactly what the prompt showed (seed 000 behaviour 11).

Approving `python3 test_calc.py` "always for this project" once saved `Bash(python3)`, and a
later `python3 -c …` that wiped a file ran unasked. Now the permission request carries the
rule it would save, the prompt shows it, and the saved rule matches only that command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

RULE = "Bash(python3 test_calc.py)"


class Handler:
    """A front that answers every permission question with `answer`, recording them."""

    def __init__(self, answer: str):
        self.answer = answer
        self.requests: list[dict] = []

    def event(self, _):
        pass

    def request(self, text):
        self.requests.append(json.loads(text))
        return self.answer


@pytest.fixture
def calc_repo(repo: Path) -> Path:
    (repo / "test_calc.py").write_text(
        "from pathlib import Path\nPath('ran.txt').write_text(Path('ran.txt').read_text() + 'x'"
        " if Path('ran.txt').exists() else 'x')\n"
    )
    (repo / "victim.txt").write_text("precious data\n")
    return repo


def session(calc_repo: Path, handler, **extra):
    from yuyao import _core

    opts = {"cwd": str(calc_repo), "mode": "ask", "stream": False, **extra}
    return _core.Session(json.dumps(opts), handler)


def saved_rules(calc_repo: Path) -> list[str]:
    return json.loads((calc_repo / ".yuyao" / "permissions.json").read_text())["allow"]


def test_always_saves_the_exact_command_and_nothing_broader(
    fake_llm, use_env, calc_repo, yuyao_home, expect_refused
):
    server = fake_llm([calls([("bash", {"command": "python3 test_calc.py"}, "t")]), say("ok")])
    use_env(server)
    h = Handler("allow_project")
    s = session(calc_repo, h)
    s.chat("run the tests")
    s.close()
    assert (calc_repo / "ran.txt").read_text() == "x"
    # The request shown to the front names the rule before the user picks it.
    assert len(h.requests) == 1, h.requests
    assert h.requests[0]["type"] == "permission"
    assert h.requests[0]["rules"] == [RULE]
    assert saved_rules(calc_repo) == [RULE]
    # The trajectory records the rule offered and the rule saved.
    traj = "\n".join(p.read_text() for p in (calc_repo / ".trajectory").glob("*.jsonl"))
    assert "permission_saved" in traj and RULE in traj

    # Unattended, in ask mode: the approved command runs; its siblings are refused.
    hostile = [
        'python3 -c \'open("victim.txt","w")\'',
        'python3 test_calc.py; python3 -c \'open("victim.txt","w")\'',
        "python3 test_calc.py --evil",
        "python3 test_calc.py > victim.txt",
        "PYTHONPATH=. python3 test_calc.py",
        "python3",
    ]
    items = [("bash", {"command": "python3 test_calc.py"}, "ok")]
    items += [("bash", {"command": c}, f"h{i}") for i, c in enumerate(hostile)]
    server2 = fake_llm([calls(items), say("done")])
    use_env(server2)
    s2 = session(calc_repo, None, headless=True)
    s2.chat("again")
    s2.close()
    assert (calc_repo / "ran.txt").read_text() == "xx"
    for i in range(len(hostile)):
        expect_refused(server2, f"h{i}")
    assert (calc_repo / "victim.txt").read_text() == "precious data\n"


def test_always_for_an_edit_saves_that_file_only(fake_llm, use_env, calc_repo, expect_refused):
    edit = {"file_path": "calc.py", "old_string": "a + b", "new_string": "b + a"}
    read = ("read", {"file_path": "calc.py"}, "r")
    server = fake_llm([calls([read, ("edit", edit, "e")]), say("ok")])
    use_env(server)
    h = Handler("allow_project")
    s = session(calc_repo, h)
    s.chat("edit")
    s.close()
    assert h.requests, server.tool_result("e")
    assert h.requests[0]["rules"] == ["Edit(/calc.py)"]
    assert saved_rules(calc_repo) == ["Edit(/calc.py)"]
    assert "b + a" in (calc_repo / "calc.py").read_text(), server.tool_result("e")
    back = {"file_path": "calc.py", "old_string": "b + a", "new_string": "a + b"}
    other = {"file_path": "README.md", "old_string": "toy", "new_string": "owned"}
    read2 = ("read", {"file_path": "README.md"}, "r2")
    server2 = fake_llm(
        [calls([read, read2, ("edit", back, "ok"), ("edit", other, "no")]), say("done")]
    )
    use_env(server2)
    s2 = session(calc_repo, None, headless=True)
    s2.chat("again")
    s2.close()
    assert "a + b" in (calc_repo / "calc.py").read_text()
    expect_refused(server2, "no")
    assert (calc_repo / "README.md").read_text() == "# toy\n"


def test_subcommand_tools_save_the_subcommand(fake_llm, use_env, calc_repo):
    server = fake_llm(
        [calls([("bash", {"command": "git commit --allow-empty -q -m x"}, "g")]), say("ok")]
    )
    use_env(server)
    h = Handler("allow_session")
    s = session(calc_repo, h)
    s.chat("commit")
    s.close()
    assert h.requests[0]["rules"] == ["Bash(git commit:*)"]


def test_the_prompt_shows_the_rule():
    from rich.console import Console
    from yuyao.tui import prompts, theme

    console = Console(record=True, width=120, color_system=None, theme=theme.THEME)
    prompts.show_permission(
        console,
        {
            "tool": "bash",
            "summary": "bash: python3 test_calc.py",
            "detail": "python3 test_calc.py",
            "reason": "ask mode asks before every change",
            "rules": [RULE],
        },
    )
    text = console.export_text()
    assert f"Always allow for this project: {RULE}" in text
    console = Console(record=True, width=120, color_system=None, theme=theme.THEME)
    prompts.show_permission(console, {"tool": "bash", "detail": "python3", "rules": []})
    assert "allow it once" in console.export_text()


def test_always_for_a_loop_offers_rules_naming_real_programs(fake_llm, use_env, calc_repo):
    """A compound command's loop variable is no program: "always" for `for i in $(seq …)`
    offers `Bash(seq)` and `Bash(echo)`, never `Bash(i= seq 1 400)`, and saves exactly those."""
    loop = "for i in $(seq 1 400); do echo $i >> out.txt; done"
    server = fake_llm([calls([("bash", {"command": loop}, "l")]), say("Wrote 400 lines.")])
    use_env(server)
    h = Handler("allow_project")
    s = session(calc_repo, h)
    s.chat("write the numbers")
    s.close()
    assert len((calc_repo / "out.txt").read_text().splitlines()) == 400
    offered = h.requests[0]["rules"]
    assert offered == ["Bash(seq)", "Bash(echo)"], offered
    assert not any("=" in r for r in offered), offered
    assert saved_rules(calc_repo) == offered
