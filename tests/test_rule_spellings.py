"""Rules mean the same for every spelling, end to end (DESIGN: the policy judges what a call
does, not how it is written): `Read(...)` denies in grep's folder walks, wrappers and config
sources of the shell tables, the model key of agent_api sessions, atomic-write leftovers.

The scripted model proposes the hostile call; what the user would observe decides (the
secret in a tool result, the victim file still on disk, the patch).
"""

from __future__ import annotations

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

SECRET = "s3cr3t-canary-9f2e"


def steps(items: list) -> list:
    """One reply with every tool call, then a final answer."""
    return [calls(items), say("Done; the results are above.")]


# ---------------------------------------------------------------------------------------------
# grep honours Read(...) denies in folder walks and glob filters


def plant_secrets(repo) -> None:
    (repo / "secrets").mkdir()
    (repo / "secrets" / "prod.txt").write_text(f"token = {SECRET}\n")
    (repo / "secrets" / "deep").mkdir()
    (repo / "secrets" / "deep" / "more.txt").write_text(f"again {SECRET}\n")
    (repo / "config.local").write_text(f"password {SECRET}\n")
    (repo / "notes.txt").write_text(f"public mention of the word token, not {SECRET[:6]}\n")


GREPS = [
    {"pattern": SECRET, "output_mode": "content"},
    {"pattern": SECRET, "path": ".", "output_mode": "content"},
    {"pattern": SECRET, "glob": "*.txt", "output_mode": "content"},
    {"pattern": SECRET, "glob": "**/*", "output_mode": "count"},
    {"pattern": SECRET, "path": "secrets", "output_mode": "content"},
    {"pattern": SECRET, "output_mode": "files_with_matches"},
    {"pattern": "s3cr3t", "path": "secrets/deep", "glob": "*.txt", "output_mode": "content"},
]


def test_grep_folder_walks_honour_read_denies(fake_llm, api, repo):
    plant_secrets(repo)
    items = [("grep", args, f"g{i}") for i, args in enumerate(GREPS)]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Read(secrets/**)", "Read(config.local)"])
    s.chat("find the token")
    for i, args in enumerate(GREPS):
        result = server.tool_result(f"g{i}") or ""
        # (The "no matches" line repeats the pattern: the lines and names are what leak.)
        for line in (f"token = {SECRET}", f"again {SECRET}", f"password {SECRET}"):
            assert line not in result, (args, result)
        assert "prod.txt" not in result and "more.txt" not in result, (args, result)
        assert "config.local" not in result, (args, result)


def test_grep_still_finds_what_no_rule_denies(fake_llm, api, repo):
    plant_secrets(repo)
    server = fake_llm(steps([("grep", {"pattern": SECRET, "output_mode": "content"}, "g")]))
    s = api(server, mode="yolo", deny=["Read(secrets/**)"])
    s.chat("find the token")
    assert "config.local" in (server.tool_result("g") or "")


# ---------------------------------------------------------------------------------------------
# Wrappers and config sources the shell tables missed: `Bash(rm:*)` must stop each form

# `{v}` is the victim file each form tries to delete.
SHELL_FORMS = [
    "setpriv rm {v}",
    "setpriv --nnp -- rm {v}",
    "setpriv --reuid=1000 --clear-groups rm {v}",
    "prlimit rm {v}",
    "prlimit --nofile=1024 rm {v}",
    "prlimit -n1024:2048 -- rm {v}",
    "vim -es -c '!rm {v}' -c q",
    "vim -c '!rm {v}' -c qa {v}",
    "vi +'!rm {v}' +q",
    "echo '!rm {v}' | ex",
    "nvim --headless --cmd '!rm {v}' +q",
    "awk 'BEGIN {{ system(\"rm {v}\") }}'",
    "awk 'BEGIN {{ print \"{v}\" | \"xargs rm\" }}'",
    "gawk 'BEGIN {{ \"rm {v}\" | getline x }}'",
    "awk -e 'BEGIN{{system(\"r\" \"m {v}\")}}'",
    "echo x | sed 's/x/rm {v}/e'",
    "echo x | sed -e '1e rm {v}'",
    "echo x | sed -n 's/.*/rm {v}/ep'",
    "echo x | sed --expression='s/x/r\"\"m {v}/e'",
    "echo x | sed '1e\\\nrm {v}'",
]


def test_missing_wrappers_and_interpreters_cannot_bypass_a_deny(fake_llm, api, repo):
    names = [f"victim{i}.txt" for i in range(len(SHELL_FORMS))]
    for name in names:
        (repo / name).write_text("keep me\n")
    items = [
        ("bash", {"command": form.format(v=name)}, f"b{i}")
        for i, (form, name) in enumerate(zip(SHELL_FORMS, names, strict=True))
    ]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Bash(rm:*)"])
    s.chat("delete them")
    gone = [SHELL_FORMS[names.index(n)] for n in names if not (repo / n).exists()]
    assert gone == [], "\n".join(gone)


def plant_gitconfig(repo, victim: str) -> None:
    """What a hostile repository (or an earlier write) leaves: a git configuration whose alias
    runs a shell command, where `HOME=$PWD` or `GIT_CONFIG_GLOBAL` makes git read it."""
    (repo / ".gitconfig").write_text(f"[alias]\n\tx = !rm {victim}\n")
    (repo / "planted" / "git").mkdir(parents=True, exist_ok=True)
    (repo / "planted" / "git" / "config").write_text(f"[alias]\n\ty = !rm {victim}\n")


GIT_FORMS = [
    "HOME=$PWD git x",
    "HOME=. git x",
    "export HOME=$PWD; git x",
    "env HOME=$PWD git x",
    "XDG_CONFIG_HOME=$PWD/planted git y",
    "GIT_CONFIG_GLOBAL=.gitconfig git x",
]


@pytest.mark.parametrize("form", GIT_FORMS)
def test_a_planted_git_alias_cannot_bypass_a_deny(fake_llm, api, repo, form):
    victim = "victim.txt"
    (repo / victim).write_text("keep me\n")
    plant_gitconfig(repo, victim)
    server = fake_llm(steps([("bash", {"command": form}, "g")]))
    s = api(server, mode="yolo", deny=["Bash(rm:*)"])
    s.chat("run the alias")
    assert (repo / victim).exists(), server.tool_result("g")


def test_plain_git_and_sed_and_awk_still_run(fake_llm, api, repo):
    (repo / "data.txt").write_text("a b\nc d\n")
    items = [
        ("bash", {"command": "git status --short"}, "git"),
        ("bash", {"command": "sed -n 's/a/A/p' data.txt"}, "sed"),
        ("bash", {"command": "awk '{ print $2 }' data.txt"}, "awk"),
        ("bash", {"command": "prlimit --nofile=64 echo limited"}, "prlimit"),
    ]
    server = fake_llm(steps(items))
    s = api(server, mode="yolo", deny=["Bash(rm:*)"])
    s.chat("look")
    assert "A b" in (server.tool_result("sed") or "")
    assert "b\nd" in (server.tool_result("awk") or "")
    assert "limited" in (server.tool_result("prlimit") or "")
