"""`@path` references (spec §5.4) and the exfiltration invariant (spec §3.3), through agent_api:
what the model receives is decided by what the user referenced, nothing else."""

from __future__ import annotations

import pytest
from fakellm import call, say, without_repo_map

pytestmark = pytest.mark.core


@pytest.fixture
def session(use_env, repo):
    """``session(server, mode=None)`` -> an AgentSession in ``repo`` talking to ``server``."""
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server, mode=None):
        use_env(server)
        opened.append(create_session(cwd=str(repo), mode=mode))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


def test_a_referenced_file_is_attached_to_the_prompt(fake_llm, session, repo):
    (repo / "notes.txt").write_text("the launch code is PELICAN-7\n")
    server = fake_llm([say("It says PELICAN-7.")])
    session(server).chat("what does @notes.txt say?")
    sent = server.user_text(0)
    assert "what does @notes.txt say?" in sent
    assert "PELICAN-7" in sent


def test_mentioning_a_file_name_in_prose_attaches_nothing(fake_llm, session, repo):
    (repo / "notes.txt").write_text("the launch code is PELICAN-7\n")
    (repo / ".env").write_text("API_TOKEN=sk-very-secret\n")
    server = fake_llm([say("I have not read them.")])
    session(server).chat("look at notes.txt and .env and ~/.ssh/id_rsa")
    body = str(server.body(0))
    assert "PELICAN-7" not in body
    assert "sk-very-secret" not in body


def test_a_referenced_folder_attaches_its_files_but_never_secrets(fake_llm, session, repo):
    (repo / "pkg").mkdir()
    (repo / "pkg" / "core.py").write_text("def answer():\n    return 42\n")
    (repo / "pkg" / ".env").write_text("API_TOKEN=sk-very-secret\n")
    server = fake_llm([say("Seen.")])
    session(server).chat("review @pkg")
    sent = server.user_text(0)
    assert "return 42" in sent
    assert "core.py" in sent
    assert "sk-very-secret" not in str(server.body(0))


def test_a_referenced_file_counts_as_read_for_editing(fake_llm, session, repo):
    target = repo / "notes.txt"
    target.write_text("colour = red\n")
    edit = call(
        "edit", file_path=str(target), old_string="colour = red", new_string="colour = blue"
    )
    server = fake_llm([edit, say("Changed red to blue.")])
    session(server, mode="yolo").chat("in @notes.txt make the colour blue")
    assert target.read_text() == "colour = blue\n"


def test_an_at_word_that_is_not_a_path_stays_as_typed(fake_llm, session):
    server = fake_llm([say("ok")])
    session(server).chat("ask @reviewer about it, mail me at someone@example.com")
    typed = without_repo_map(server.user_text(0)).strip()
    assert typed == "ask @reviewer about it, mail me at someone@example.com"
