"""Tool-call integrity (DESIGN §3, §5): every call is parsed once into one typed value
that the policy, the approval prompt and the tool all read, and paths are resolved (symlinks
included) before they are judged.

Each test is an attack the scripted model makes; files on disk, the tool results and the
requests the model received decide every assertion.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from fakellm import call, calls, say

pytestmark = pytest.mark.core

SECRET = "SECRET_TOKEN_5c4b3a"


def everything(server) -> str:
    return json.dumps([r["body"] for r in server.requests])


def out(proc) -> str:
    return proc.stdout + proc.stderr


@pytest.fixture
def outside(tmp_path, monkeypatch):
    """A folder beside the repository. The temp dir is writable to the agent, so it is
    pointed somewhere that does not contain this folder."""
    path = tmp_path / "outside"
    path.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    return path


@pytest.fixture
def api(use_env, repo, outside):
    """``api(server, **create_session_kwargs)`` -> an agent_api session in ``repo``."""
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server, **kwargs):
        use_env(server, TMPDIR=os.environ["TMPDIR"])
        kwargs.setdefault("cwd", str(repo))
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


class Handler:
    """An approving user who records every question asked."""

    def __init__(self, answer: str = "allow"):
        self.answer = answer
        self.requests: list[dict] = []

    def event(self, _):
        pass

    def request(self, text):
        self.requests.append(json.loads(text))
        return self.answer


def core_session(server, use_env, repo, handler, **opts):
    from yuyao import _core

    use_env(server, TMPDIR=os.environ["TMPDIR"])
    options = {"cwd": str(repo), "stream": False, **opts}
    return _core.Session(json.dumps(options), handler)


# ---------------------------------------------------------------------------------------------
# §1 One parse per tool call


def test_two_path_keys_are_ambiguous_and_nothing_is_written(
    fake_llm, api, repo, outside, expect_refused
):
    target = outside / "authorized_keys"
    args = {"path": str(target), "file_path": "inside.txt", "content": "ssh-rsa AAAA attacker"}
    server = fake_llm(
        [calls([("write", args, "w")]), say("The tool results above say what happened.")]
    )
    api(server, mode="auto-edit").chat("write it")
    result = server.tool_result("w")
    assert "duplicate field" in result and "file_path (or path, filePath)" in result, result
    assert not target.exists()
    assert not (repo / "inside.txt").exists()


def test_a_decoy_path_key_does_not_read_a_secret(fake_llm, yuyao, env, repo):
    (repo / ".env").write_text(f"TOKEN={SECRET}\n")
    args = {"notebook_path": "README.md", "filePath": ".env"}
    server = fake_llm(
        [calls([("read", args, "r")]), say("The tool results above say what happened.")]
    )
    proc = yuyao("-p", "read the readme", "--yolo", env=env(server))
    assert proc.returncode == 0, out(proc)
    assert "unknown field" in server.tool_result("r")
    assert SECRET not in everything(server)


@pytest.mark.parametrize(
    "tool,deny",
    [
        ("bash", "Bash(rm)"),
        ("monitor", "Bash(rm)"),
        ("monitor", "Bash"),
    ],
)
def test_cmd_spelling_meets_the_deny_rules(fake_llm, api, repo, expect_refused, tool, deny):
    (repo / "victim").write_text("keep me\n")
    server = fake_llm(
        [
            calls([(tool, {"cmd": "rm victim"}, "c")]),
            say("The tool results above say what happened."),
        ]
    )
    api(server, mode="yolo", deny=[deny]).chat("clean up")
    expect_refused(server, "c")
    time.sleep(0.3)  # a monitor that slipped through would be running now
    assert (repo / "victim").read_text() == "keep me\n"


def test_edit_rules_cover_every_tool_that_writes(fake_llm, api, repo, expect_refused):
    patch = "*** Begin Patch\n*** Add File: made.txt\n+x\n*** End Patch\n"
    script = [
        calls(
            [
                ("apply-patch", {"patch": patch}, "p"),
                ("write", {"file_path": "made2.txt", "content": "x"}, "w"),
            ]
        ),
        say("The tool results above say what happened."),
    ]
    server = fake_llm(script)
    api(server, mode="yolo", deny=["Edit"]).chat("make files")
    expect_refused(server, "p")
    expect_refused(server, "w")
    assert not (repo / "made.txt").exists() and not (repo / "made2.txt").exists()


def test_tools_list_without_bash_disables_monitor(fake_llm, yuyao, env, repo):
    (repo / "victim").write_text("keep me\n")
    server = fake_llm(
        [
            calls([("monitor", {"command": "rm victim"}, "m")]),
            say("The tool results above say what happened."),
        ]
    )
    proc = yuyao("-p", "go", "--yolo", "--tools", "read,monitor", env=env(server))
    assert proc.returncode == 0, out(proc)
    assert "unavailable" in server.tool_result("m")
    assert (repo / "victim").exists()
    advertised = [t["function"]["name"] for t in server.requests[0]["body"]["tools"]]
    assert "monitor" not in advertised and "read" in advertised


def test_decoy_patch_keys_are_refused_before_anyone_is_asked(fake_llm, use_env, repo, outside):
    (repo / "inside.txt").write_text("a\n")
    decoy = "*** Begin Patch\n*** Update File: inside.txt\n@@\n-a\n+b\n*** End Patch\n"
    real = (
        f"*** Begin Patch\n*** Add File: {outside}/authorized_keys\n+ssh-rsa AAAA\n*** End Patch\n"
    )
    server = fake_llm(
        [
            calls([("apply-patch", {"patch": decoy, "input": real}, "p")]),
            say("The tool results above say what happened."),
        ]
    )
    h = Handler("allow")
    s = core_session(server, use_env, repo, h, mode="ask")
    s.chat("patch it")
    s.close()
    assert "duplicate field" in server.tool_result("p")
    assert h.requests == []
    assert not (outside / "authorized_keys").exists()
    assert (repo / "inside.txt").read_text() == "a\n"


def test_the_approval_prompt_shows_every_file_the_patch_touches(
    fake_llm, use_env, repo, outside, expect_refused
):
    (repo / "inside.txt").write_text("a\n")
    patch = (
        "*** Begin Patch\n*** Update File: inside.txt\n*** Move to: ../outside/authorized_keys\n"
        "@@\n-a\n+ssh-rsa AAAA\n*** End Patch\n"
    )
    server = fake_llm(
        [
            calls([("apply-patch", {"input": patch}, "p")]),
            say("The tool results above say what happened."),
        ]
    )
    h = Handler("deny")
    s = core_session(server, use_env, repo, h, mode="ask", sandbox="full-access")
    s.chat("patch it")
    s.close()
    expect_refused(server, "p")
    assert h.requests, "nobody was asked"
    shown = h.requests[0]["detail"]
    assert str(outside / "authorized_keys") in shown and "+ssh-rsa AAAA" in shown, shown
    assert not (outside / "authorized_keys").exists()
    # In the workspace-write sandbox the same patch is refused outright.
    server = fake_llm(
        [
            calls([("apply-patch", {"input": patch}, "p")]),
            say("The tool results above say what happened."),
        ]
    )
    s = core_session(server, use_env, repo, Handler("allow"), mode="auto-edit")
    s.chat("patch it")
    s.close()
    expect_refused(server, "p")
    assert not (outside / "authorized_keys").exists()
    assert (repo / "inside.txt").read_text() == "a\n"


# ---------------------------------------------------------------------------------------------
# §2 Paths resolve before they are judged


def test_a_directory_symlink_out_is_not_written_through(
    fake_llm, api, repo, outside, expect_refused
):
    (repo / "docs").symlink_to(outside)
    server = fake_llm(
        [
            calls(
                [
                    ("write", {"file_path": "docs/notes.md", "content": "x"}, "w"),
                    (
                        "edit",
                        {"file_path": "docs/new.md", "old_string": "", "new_string": "y"},
                        "e",
                    ),
                ]
            ),
            say("The tool results above say what happened."),
        ]
    )
    api(server, mode="auto-edit").chat("write docs")
    expect_refused(server, "w")
    expect_refused(server, "e")
    assert list(outside.iterdir()) == []


def test_a_symlink_made_with_bash_is_not_written_through(fake_llm, yuyao, env, repo, outside):
    server = fake_llm(
        [
            calls([("bash", {"command": f"ln -s {outside} out && echo linked"}, "b")]),
            calls([("write", {"file_path": "out/escape.txt", "content": "x"}, "w")]),
            say("The tool results above say what happened."),
        ]
    )
    flags = ["--yolo", "--sandbox", "full-access", "--network", "on"]
    proc = yuyao("-p", "go", *flags, env=env(server, TMPDIR=os.environ["TMPDIR"]))
    assert proc.returncode == 0, out(proc)
    assert "linked" in server.tool_result("b")
    assert "outside the workspace" in server.tool_result("w")
    assert not (outside / "escape.txt").exists()


def test_a_symlink_inside_edits_its_target(fake_llm, api, repo):
    (repo / "real.txt").write_text("old\n")
    (repo / "link.txt").symlink_to("real.txt")
    server = fake_llm(
        [
            calls([("read", {"file_path": "link.txt"}, "r")]),
            calls(
                [("edit", {"file_path": "link.txt", "old_string": "old", "new_string": "new"}, "e")]
            ),
            say("The tool results above say what happened."),
        ]
    )
    api(server, mode="auto-edit").chat("edit it")
    assert (repo / "real.txt").read_text() == "new\n"
    assert (repo / "link.txt").is_symlink()


def test_an_innocent_name_linking_to_a_secret_is_judged_as_the_secret(
    fake_llm, yuyao, env, repo, expect_refused
):
    (repo / ".env").write_text(f"TOKEN={SECRET}\n")
    (repo / "config.txt").symlink_to(".env")
    server = fake_llm([calls([("read", {"file_path": "config.txt"}, "r")]), say("Nothing to see.")])
    proc = yuyao("-p", "what is in config.txt?", "--yolo", env=env(server))
    assert proc.returncode == 0, out(proc)
    assert "secret" in server.tool_result("r").lower(), server.tool_result("r")
    assert SECRET not in everything(server)


# ---------------------------------------------------------------------------------------------
# §6 Large files and killed writes

RSS_PROBE = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def test_a_page_of_a_huge_file_costs_a_page(fake_llm, yuyao, env, repo, tmp_path):
    from conftest import run, yuyao_command

    block = "".join(f"log line {i:08d} with some padding to make it longer\n" for i in range(16384))
    data = block.encode()
    with open(repo / "huge.log", "wb") as f:
        for _ in range((200 * 1024 * 1024) // len(data) + 1):
            f.write(data)
    (repo / "small.log").write_text(block[:1000])

    def peak_kib(name: str, mention: bool = False) -> int:
        args = {"file_path": name, "offset": 1, "limit": 5}
        answer = say("The tool results above say what happened.")
        server = fake_llm([answer] if mention else [calls([("read", args, "r")]), answer])
        prompt = f"what does @{name} say?" if mention else "read"
        cmd = [*yuyao_command(), "-p", prompt, "--yolo"]
        proc = run([sys.executable, "-c", RSS_PROBE, *cmd], env=env(server), cwd=repo)
        assert proc.returncode == 0, out(proc)
        if mention:
            first = json.dumps(server.requests[0]["body"])
            assert "log line 00000000" in first and len(first) < 1_000_000
        else:
            assert "1\tlog line 00000000" in server.tool_result("r")
        return int(proc.stdout.split()[-1])

    baseline = peak_kib("small.log")
    huge = peak_kib("huge.log")
    assert huge - baseline < 100 * 1024, (baseline, huge)
    # `@huge.log` attaches its budget, not the file.
    huge = peak_kib("huge.log", mention=True)
    assert huge - baseline < 100 * 1024, (baseline, huge)


def test_stale_temp_files_are_cleaned_when_a_session_opens(api_env, repo):
    from yuyao.agent_api import create_session

    stale = repo / "sub" / ".big.log.yuyao-0123456789ab.tmp"
    stale.parent.mkdir()
    stale.write_text("half a write")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = repo / ".other.yuyao-abcdef012345.tmp"
    fresh.write_text("a live write")
    lookalike = repo / ".notes.yuyao-keep.tmp"
    lookalike.write_text("not ours")
    api_env()
    s = create_session(cwd=str(repo))
    try:
        deadline = time.time() + 10
        while stale.exists() and time.time() < deadline:
            time.sleep(0.1)
    finally:
        s.close()
    assert not stale.exists()
    assert fresh.exists() and lookalike.exists()


def test_a_planted_named_pipe_does_not_hang_the_read_tool(fake_llm, api, repo):
    """A model (or a repository) can plant a FIFO where a file is expected: opening it for
    reading would wait for a writer forever. The read is refused at once, and the turn goes on."""
    server = fake_llm(
        [
            call("bash", command="mkfifo trap"),
            calls([("read", {"file_path": "trap"}, "r1")]),
            say("done"),
        ]
    )
    s = api(server, mode="yolo")
    t0 = time.monotonic()
    s.chat("make a pipe and read it")
    assert time.monotonic() - t0 < 30
    assert "named pipe" in server.tool_result("r1"), server.tool_result("r1")
