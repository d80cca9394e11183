"""What snapshots cost on disk (docs/snapshots.md): several one-line edits of a large file
store about one compressed copy of it, /undo puts every version back byte for byte, and a
damaged object fails the restore, naming the file, with the file left as it is.

Driven through yuyao.agent_api with the scripted model: each edit is its own turn, so its own
batch with its own pre-image.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest
from fakellm import Events, call, calls, say

pytestmark = pytest.mark.core

EDITS = 7

CODE = """
import json, os, sys
from pathlib import Path
from yuyao.agent_api import create_session

home = Path(os.environ["YUYAO_HOME"])
def store_bytes():
    return sum(p.stat().st_size for p in home.glob("snapshots/*.git/yuyao-cas/**/*")
               if p.is_file())

out = {"sizes": [], "undo": []}
edits = int(sys.argv[2])
with create_session(cwd=sys.argv[1], mode="yolo") as s:
    for _ in range(edits):
        s.chat("edit it")
        out["sizes"].append(store_bytes())
    if sys.argv[3] == "damage":
        chunks = sorted(p for p in home.glob("snapshots/*.git/yuyao-cas/c/*/*") if p.is_file())
        victim = chunks[len(chunks) // 2]
        data = victim.read_bytes()
        victim.write_bytes(data[: len(data) // 2])
        try:
            out["undo"].append(s.dispatch("/undo"))
        except Exception as e:
            out["undo"].append("ERROR: " + str(e))
    else:
        for _ in range(edits):
            out["undo"].append(s.dispatch("/undo"))
print(json.dumps(out))
"""


def big_text(mb: int) -> bytes:
    """Source-like lines: compresses about as code does, never repeats."""
    rng = random.Random(34)
    words = ["value", "count", "index", "result", "buffer", "offset", "config", "name"]
    lines = []
    size = 0
    i = 0
    while size < mb * 1024 * 1024:
        line = (
            f"    let {rng.choice(words)}_{i} = {rng.choice(words)}({rng.randrange(10**6)}, "
            f'"{rng.getrandbits(48):012x}");  // {rng.choice(words)}\n'
        )
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines).encode()


def edit_script(body: bytes, edits: int):
    """A read, then one turn per edit: line k*len/edits+1 gets a comment appended."""
    lines = body.decode().splitlines(keepends=True)
    steps = [call("read", file_path="big.rs")]
    for k in range(edits):
        line = lines[(k + 1) * len(lines) // (edits + 1)]
        new = line.rstrip("\n") + f" // edited {k}\n"
        steps += [
            call("edit", file_path="big.rs", old_string=line, new_string=new),
            say(f"edit {k} done"),
        ]
    return steps


def run(fake_llm, python, env, repo: Path, edits: int, mode: str):
    body = big_text(20)
    (repo / "big.rs").write_bytes(body)
    server = fake_llm(edit_script(body, edits))
    proc = python(CODE, str(repo), str(edits), mode, env=env(server), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return body, server, json.loads(proc.stdout.strip().splitlines()[-1])


def test_seven_edits_of_a_20_mb_file_store_about_one_compressed_copy(fake_llm, python, env, repo):
    body, server, out = run(fake_llm, python, env, repo, EDITS, "undo")
    for k in range(EDITS):
        result = server.tool_result(f"call_{1 + 2 * k}_0")
        assert "error" not in result.lower()[:200], result[:300]
    sizes = out["sizes"]
    # After the first edit the store holds one pre-image: one compressed copy of the file.
    one_copy = sizes[0]
    assert 0 < one_copy < len(body) / 2, sizes
    # Six more pre-images, each one line away from the previous one, cost a few chunks each.
    assert sizes[-1] < 1.5 * one_copy, sizes
    # Every /undo restored the file; the last one put the original back byte for byte.
    assert all("big.rs" in u for u in out["undo"]), out["undo"]
    assert (repo / "big.rs").read_bytes() == body


def test_a_damaged_snapshot_object_fails_the_undo_naming_the_file(fake_llm, python, env, repo):
    _, _, out = run(fake_llm, python, env, repo, 1, "damage")
    (message,) = out["undo"]
    assert "big.rs" in message and "damaged" in message, message
    # Nothing was written: the file is still the edited version.
    assert b" // edited 0\n" in (repo / "big.rs").read_bytes()


def test_a_large_file_changed_behind_the_agent_between_two_edits_is_not_edited(fake_llm, api, repo):
    """The second edit's content comes from the bytes its snapshot read (seed 002 §3: one
    read of a large file per edit); the stale check still judges them against what the agent
    last saw. Here the user changes one line in place between the two edits, same size,
    modification time put back: the edit is refused, and /undo of the first edit leaves the
    user's version alone."""
    big = repo / "big.rs"
    body = big_text(3)
    big.write_bytes(body)
    lines = body.decode().splitlines(keepends=True)
    first, second, theirs = lines[100], lines[len(lines) // 2], lines[len(lines) - 100]
    user = theirs.replace("let ", "LET ", 1)
    assert len(user) == len(theirs) and user != theirs

    def change_behind_the_agent():
        st = big.stat()
        data = big.read_bytes()
        with big.open("r+b") as f:
            f.write(data.replace(theirs.encode(), user.encode(), 1))
        os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))

    def responder(_body, index):
        if index == 0:
            return calls([("read", {"file_path": "big.rs"}, "r")])
        if index == 1:
            edit = {"file_path": "big.rs", "old_string": first, "new_string": "// one\n"}
            return calls([("edit", edit, "e1")])
        if index == 2:
            change_behind_the_agent()
            # Settled before the edit runs: the snapshot's stamp vouches for its bytes, so
            # the edit uses them rather than reading the file again.
            time.sleep(0.2)
            edit = {"file_path": "big.rs", "old_string": second, "new_string": "// two\n"}
            return calls([("edit", edit, "e2")])
        return say("done")

    server = fake_llm(responder)
    session = api(server, mode="yolo")
    session.chat("edit it twice")
    assert server.tool_result("e1").startswith("Edited"), server.tool_result("e1")
    assert "changed on disk" in server.tool_result("e2"), server.tool_result("e2")
    now = big.read_bytes()
    assert b"// one\n" in now and b"// two\n" not in now and user.encode() in now
    out = session.dispatch("/undo")
    assert "left alone" in out, out
    assert big.read_bytes() == now


KILLED = """
import os, signal, sys
from yuyao.agent_api import create_session

s = create_session(cwd=sys.argv[1], mode="yolo")
s.chat("first")
s.chat("second")
os.kill(os.getpid(), signal.SIGKILL)  # no close: the journal's log is never folded
"""


def test_a_killed_session_loses_no_batch_and_a_closed_one_leaves_one_journal_file(
    fake_llm, python, env, use_env, repo, yuyao_home
):
    """The journal is a base and an append-only log (docs/snapshots.md): each batch is a
    synced line, so a session killed without closing loses none of them; a session's end
    folds the log into the one JSON file."""
    from yuyao.agent_api import create_session

    original = (repo / "calc.py").read_text()
    server = fake_llm(
        [
            call("read", file_path="calc.py"),
            call("write", file_path="calc.py", content="v1 = 1\n"),
            say("one"),
            call("write", file_path="calc.py", content="v2 = 2\n"),
            say("two"),
        ]
    )
    proc = python(KILLED, str(repo), env=env(server), timeout=120)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert (repo / "calc.py").read_text() == "v2 = 2\n"
    snapshots = yuyao_home / "snapshots"
    (log,) = snapshots.glob("*.log")
    assert len(log.read_text().splitlines()) >= 2  # two checkpoints and two batches at least

    use_env(fake_llm([say("ok")]))
    with create_session(cwd=str(repo), mode="yolo") as s:
        first = s.dispatch("/undo")
        assert (repo / "calc.py").read_text() == "v1 = 1\n", first
        second = s.dispatch("/undo")
        assert (repo / "calc.py").read_text() == original, second
    assert log.stat().st_size == 0
    (journal,) = snapshots.glob("*.json")
    j = json.loads(journal.read_text())
    assert [b["undone"] for b in j["batches"]] == [True, True], j
    assert j["redo"] == [b["id"] for b in reversed(j["batches"])], j


def test_an_unreadable_journal_is_kept_aside_and_said_not_overwritten(
    fake_llm, use_env, repo, yuyao_home
):
    """Bad input loses nothing: a snapshot journal that no longer parses (cut in half here)
    is renamed aside with its bytes at the session's first change, the user is told where,
    and a new journal works."""
    from yuyao import _core

    def session(server, events=None):
        use_env(server)
        opts = {"cwd": str(repo), "mode": "yolo", "stream": False}
        return _core.Session(json.dumps(opts), events or Events())

    def write(content: str):
        return fake_llm(
            [
                call("read", file_path="calc.py"),
                call("write", file_path="calc.py", content=content),
                say("ok"),
            ]
        )

    first = session(write("v1 = 1\n"))
    first.chat("change it")
    first.close()  # the journal is folded into its one file
    (journal,) = (yuyao_home / "snapshots").glob("*.json")
    damaged = journal.read_bytes()[: journal.stat().st_size // 2]
    journal.write_bytes(damaged)

    events = Events()
    second = session(write("v2 = 2\n"), events)
    try:
        second.chat("change it again")
        (aside,) = journal.parent.glob(journal.name + ".damaged-*")
        assert aside.read_bytes() == damaged
        said = [n for n in events.notices() if "could not be read" in n]
        assert len(said) == 1 and str(aside) in said[0], events.notices()
        # The new journal holds the second batch: /undo puts v1 back.
        second.dispatch("/undo")
        assert (repo / "calc.py").read_text() == "v1 = 1\n"
    finally:
        second.close()
