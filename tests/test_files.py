"""File tools and the edit engine end to end: the scripted model issues read / write / edit /
multi-edit / apply-patch / notebook-edit calls through yuyao.agent_api, and the tests check the
bytes on disk, the tool results the model received, and /undo /redo /rewind /diff."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from conftest import git
from fakellm import calls, say

pytestmark = pytest.mark.core


@pytest.fixture
def session(api_env, repo):
    """``session(server=None, cwd=repo, mode="yolo")`` -> an AgentSession."""
    from yuyao.agent_api import create_session

    opened = []

    def open_session(server=None, **kwargs):
        api_env(server)
        kwargs.setdefault("cwd", str(repo))
        kwargs.setdefault("mode", "yolo")
        opened.append(create_session(**kwargs))
        return opened[-1]

    yield open_session
    for s in opened:
        s.close()


def turn(*batches, final="Finished."):
    """A script: each batch is a list of (name, args, id) tool calls in one reply."""
    return [calls(list(b)) for b in batches] + [say(final)]


def run_turn(fake_llm, session, *batches, prompt="do it", s=None):
    server = fake_llm(turn(*batches))
    s = s or session(server)
    s.chat(prompt)
    return server, s


# ---------------------------------------------------------------------------------------------
# read


def test_read_numbers_lines_and_paginates(fake_llm, session, repo):
    big = repo / "big.txt"
    big.write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    long_line = repo / "long.txt"
    long_line.write_text("x" * 5000 + "\n")
    server, _ = run_turn(
        fake_llm,
        session,
        [
            ("read", {"file_path": "big.txt"}, "r1"),
            ("read", {"file_path": str(big), "offset": 2001, "limit": 10}, "r2"),
            ("read", {"file_path": "long.txt"}, "r3"),
        ],
    )
    first = server.tool_result("r1")
    assert first.startswith("1\tline 1\n")
    assert "2000\tline 2000" in first and "2001\tline 2001" not in first
    assert "offset=2001" in first and "of 2500" in first
    second = server.tool_result("r2")
    assert second.startswith("2001\tline 2001") and "2010\tline 2010" in second
    assert "offset=2011" in second
    third = server.tool_result("r3")
    assert "cut at 2000 characters" in third and len(third) < 2100


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"offset": -3}, "offset must be 1 or more"),
        ({"offset": "abc"}, "whole number"),
        ({"limit": 0}, "limit must be 1 or more"),
        ({"offset": 99}, "has 2 lines"),
        ({"pages": "3-1"}, "PDF"),
    ],
)
def test_read_rejects_malformed_input(fake_llm, session, repo, args, expected):
    server, _ = run_turn(fake_llm, session, [("read", {"file_path": "calc.py", **args}, "r")])
    result = server.tool_result("r")
    assert expected in result
    assert "\t" not in result  # no content pretending to be a page


def test_read_errors_say_what_to_do(fake_llm, session, repo):
    (repo / "data.bin").write_bytes(b"\x00\x01\x02binary")
    (repo / "sub").mkdir()
    server, _ = run_turn(
        fake_llm,
        session,
        [
            ("read", {"file_path": "calc.pyy"}, "missing"),
            ("read", {"file_path": "sub"}, "dir"),
            ("read", {"file_path": "data.bin"}, "bin"),
            ("read", {}, "noarg"),
        ],
    )
    assert "does not exist" in server.tool_result("missing")
    assert "calc.py" in server.tool_result("missing")  # near name suggested
    assert "directory" in server.tool_result("dir")
    assert "binary" in server.tool_result("bin")
    assert "file_path" in server.tool_result("noarg")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_read_permission_denied(fake_llm, session, repo):
    secret = repo / "secret.txt"
    secret.write_text("s\n")
    secret.chmod(0)
    server, _ = run_turn(fake_llm, session, [("read", {"file_path": "secret.txt"}, "r")])
    assert "permission denied" in server.tool_result("r")


# ---------------------------------------------------------------------------------------------
# write / edit / multi-edit


def test_write_needs_a_fresh_read(fake_llm, session, repo):
    calc = repo / "calc.py"
    before = calc.read_bytes()
    server, _ = run_turn(
        fake_llm,
        session,
        [("write", {"file_path": "calc.py", "content": "x = 1\n"}, "w1")],
        [("write", {"file_path": "new/dir/fresh.txt", "content": "fresh\n"}, "w2")],
    )
    assert "has not been read" in server.tool_result("w1")
    assert calc.read_bytes() == before
    assert (repo / "new/dir/fresh.txt").read_text() == "fresh\n"


def test_external_change_is_detected(fake_llm, session, repo):
    calc = repo / "calc.py"

    def responder(body, index):
        if index == 0:
            return calls([("read", {"file_path": "calc.py"}, "r")])
        if index == 1:
            calc.write_text("def add(a, b):\n    return b + a  # user\n")
            return calls(
                [
                    (
                        "edit",
                        {"file_path": "calc.py", "old_string": "a + b", "new_string": "a+b"},
                        "e",
                    )
                ]
            )
        return say("Finished.")

    server = fake_llm(responder)
    session(server).chat("edit")
    assert "changed on disk" in server.tool_result("e")
    assert calc.read_text().endswith("# user\n")


def test_edit_keeps_crlf_bom_and_invalid_utf8(fake_llm, session, repo):
    path = repo / "w.txt"
    original = b"\xef\xbb\xbfalpha\r\nbeta \xe9\xff\r\ngamma\r\ndelta"
    path.write_bytes(original)
    server, _ = run_turn(
        fake_llm,
        session,
        [("read", {"file_path": "w.txt"}, "r")],
        [
            (
                "edit",
                {"file_path": "w.txt", "old_string": "alpha\n", "new_string": "ALPHA\nnew\n"},
                "e1",
            )
        ],
        [("edit", {"file_path": "w.txt", "old_string": "gamma", "new_string": "GAMMA"}, "e2")],
    )
    assert "Edited" in server.tool_result("e1")
    assert "Edited" in server.tool_result("e2")  # no re-read needed after our own edit
    assert path.read_bytes() == b"\xef\xbb\xbfALPHA\r\nnew\r\nbeta \xe9\xff\r\nGAMMA\r\ndelta"


def test_edit_contracts(fake_llm, session, repo):
    (repo / "dup.txt").write_text("x = 1\nx = 1\n")
    (repo / "empty.txt").write_text("")
    server, _ = run_turn(
        fake_llm,
        session,
        [("read", {"file_path": "dup.txt"}, "r")],
        [
            ("edit", {"file_path": "dup.txt", "old_string": "x = 1", "new_string": "y"}, "ambig"),
            ("edit", {"file_path": "dup.txt", "old_string": "x=1", "new_string": "y"}, "miss"),
            (
                "edit",
                {"file_path": "dup.txt", "old_string": "x = 1", "new_string": "x = 1"},
                "same",
            ),
            ("edit", {"file_path": "dup.txt", "old_string": "", "new_string": "z"}, "nonempty"),
            ("edit", {"file_path": "made.txt", "old_string": "", "new_string": "made\n"}, "create"),
            (
                "edit",
                {"file_path": "empty.txt", "old_string": "", "new_string": "filled\n"},
                "fill",
            ),
            (
                "edit",
                {
                    "file_path": "dup.txt",
                    "old_string": "x = 1",
                    "new_string": "y = 2",
                    "replace_all": True,
                },
                "all",
            ),
        ],
    )
    assert "replace_all" in server.tool_result("ambig")
    assert "line 1" in server.tool_result("miss")  # the near miss is shown
    assert "identical" in server.tool_result("same")
    assert "not empty" in server.tool_result("nonempty")
    assert (repo / "made.txt").read_text() == "made\n"
    assert (repo / "empty.txt").read_text() == "filled\n"
    assert (repo / "dup.txt").read_text() == "y = 2\ny = 2\n"


def test_multi_edit_is_atomic(fake_llm, session, repo):
    calc = repo / "calc.py"
    before = calc.read_bytes()
    server, _ = run_turn(
        fake_llm,
        session,
        [("read", {"file_path": "calc.py"}, "r")],
        [
            (
                "multi-edit",
                {
                    "file_path": "calc.py",
                    "edits": [
                        {"old_string": "add", "new_string": "plus"},
                        {"old_string": "nowhere", "new_string": "x"},
                    ],
                },
                "bad",
            ),
            (
                "multi-edit",
                {
                    "file_path": "calc.py",
                    "edits": [
                        {"old_string": "add", "new_string": "plus"},
                        {"old_string": "plus(a, b)", "new_string": "plus(a, b, c=0)"},
                    ],
                },
                "good",
            ),
        ],
    )
    assert "edit 2 of 2" in server.tool_result("bad")
    assert calc.read_bytes() != before
    assert calc.read_text() == "def plus(a, b, c=0):\n    return a + b\n"


def test_write_then_delete_in_one_reply(fake_llm, session, repo):
    run_turn(
        fake_llm,
        session,
        [
            ("write", {"file_path": "tmp.txt", "content": "t\n"}, "w"),
            ("bash", {"command": "rm tmp.txt"}, "rm"),
        ],
    )
    assert not (repo / "tmp.txt").exists()


# ---------------------------------------------------------------------------------------------
# apply-patch


def test_undo_removes_folders_the_batch_created(fake_llm, session, repo):
    (repo / "keep").mkdir()
    (repo / "keep" / "mine.txt").write_text("mine\n")
    _, s = run_turn(
        fake_llm,
        session,
        [
            ("write", {"file_path": "deep/er/new.txt", "content": "n\n"}, "a"),
            ("write", {"file_path": "keep/other.txt", "content": "o\n"}, "b"),
        ],
    )
    s.dispatch("/undo")
    assert not (repo / "deep").exists()
    assert (repo / "keep" / "mine.txt").read_text() == "mine\n"
    assert not (repo / "keep" / "other.txt").exists()
    s.dispatch("/redo")
    assert (repo / "deep/er/new.txt").read_text() == "n\n"


def test_apply_patch_envelope(fake_llm, session, repo):
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    (repo / "old.txt").write_text("bye\n")
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Add File: pkg/new.py",
            "+print('new')",
            "*** Update File: calc.py",
            "@@ def add(a, b):",
            "-    return a + b",
            "+    return a + b  # checked",
            "*** Update File: crlf.txt",
            "*** Move to: moved.txt",
            "@@",
            " one",
            "-two",
            "+TWO",
            "*** Delete File: old.txt",
            "*** End Patch",
        ]
    )
    server, _ = run_turn(fake_llm, session, [("apply-patch", {"patch": patch}, "p")])
    assert "Applied" in server.tool_result("p")
    assert (repo / "pkg/new.py").read_text() == "print('new')\n"
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b  # checked\n"
    assert (repo / "moved.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    assert not (repo / "crlf.txt").exists() and not (repo / "old.txt").exists()


def test_apply_patch_is_all_or_nothing(fake_llm, session, repo):
    before = (repo / "calc.py").read_bytes()
    patch = (
        "*** Begin Patch\n*** Update File: calc.py\n-    return a + b\n+    return 0\n"
        "*** Add File: extra.txt\n+x\n"
        "*** Update File: README.md\n-# not there\n+# x\n*** End Patch\n"
    )
    server, _ = run_turn(fake_llm, session, [("apply-patch", {"patch": patch}, "p")])
    result = server.tool_result("p")
    assert "README.md" in result and "not applied" in result
    assert (repo / "calc.py").read_bytes() == before
    assert not (repo / "extra.txt").exists()


def test_apply_unified_diff_with_leniency_note(fake_llm, session, repo):
    (repo / "ws.py").write_text("a = 1   \nb = 2\n")
    diff = "--- a/ws.py\n+++ b/ws.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    server, _ = run_turn(fake_llm, session, [("apply-patch", {"patch": diff}, "p")])
    assert "trailing whitespace" in server.tool_result("p")
    assert (repo / "ws.py").read_text() == "a = 1   \nb = 3\n"


# ---------------------------------------------------------------------------------------------
# notebooks

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
        {
            "cell_type": "code",
            "execution_count": 2,
            "id": "calc",
            "metadata": {"tags": ["keep"]},
            "outputs": [
                {"name": "stdout", "output_type": "stream", "text": ["3\n"]},
                {
                    "data": {"image/png": "iVBORw0KGgo=", "text/plain": ["<Figure>"]},
                    "metadata": {},
                    "output_type": "display_data",
                },
            ],
            "source": ["print(1 + 2)"],
        },
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "last",
            "metadata": {},
            "outputs": [],
            "source": [],
        },
    ],
    "metadata": {"kernelspec": {"language": "python", "name": "python3"}, "a_key": 1},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def cell_json(nb_text: str, i: int) -> dict:
    return json.loads(nb_text)["cells"][i]


def test_notebook_read_and_edit(fake_llm, session, repo):
    nb = repo / "nb.ipynb"
    text = json.dumps(NOTEBOOK, indent=1, ensure_ascii=False) + "\n"
    nb.write_text(text)
    server, _ = run_turn(
        fake_llm,
        session,
        [("read", {"file_path": "nb.ipynb"}, "r")],
        [
            (
                "notebook-edit",
                {"notebook_path": "nb.ipynb", "cell_id": "calc", "new_source": "print(2 * 3)"},
                "rep",
            )
        ],
        [
            (
                "notebook-edit",
                {
                    "notebook_path": "nb.ipynb",
                    "cell_index": 1,
                    "new_source": "## Notes",
                    "cell_type": "markdown",
                    "edit_mode": "insert",
                },
                "ins",
            )
        ],
        [
            (
                "notebook-edit",
                {"notebook_path": "nb.ipynb", "cell_id": "last", "edit_mode": "delete"},
                "del",
            )
        ],
        [
            (
                "notebook-edit",
                {"notebook_path": "nb.ipynb", "cell_id": "nope", "new_source": "x"},
                "bad",
            )
        ],
    )
    shown = server.tool_result("r")
    assert "print(1 + 2)" in shown and "[stdout]" in shown and "3" in shown
    assert "image/png" in shown and "<Figure>" in shown
    after = nb.read_text()
    data = json.loads(after)
    assert [c["id"] for c in data["cells"]][0] == "intro"
    assert len(data["cells"]) == 3
    inserted = data["cells"][1]
    assert inserted["cell_type"] == "markdown" and inserted["source"] == ["## Notes"]
    assert len(inserted["id"]) == 8
    replaced = data["cells"][2]
    assert replaced["source"] == ["print(2 * 3)"]
    assert replaced["outputs"] == [] and replaced["execution_count"] is None
    assert replaced["metadata"] == {"tags": ["keep"]}
    # The untouched cell and the metadata keep their exact text.
    first_cell = json.dumps(NOTEBOOK["cells"][0], indent=1, ensure_ascii=False).replace(
        "\n", "\n  "
    )
    assert first_cell in after
    assert after.endswith('"nbformat_minor": 5\n}\n')
    assert list(data["metadata"]) == ["kernelspec", "a_key"]
    assert "no cell has id" in server.tool_result("bad")


# ---------------------------------------------------------------------------------------------
# images and PDFs


def png(width: int, height: int) -> bytes:
    raw = b"".join(b"\x00" + bytes([200, 30, 30]) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def pdf(pages: list[str]) -> bytes:
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out


def test_read_image_is_downscaled_and_sent_as_image(fake_llm, session, repo):
    (repo / "wide.png").write_bytes(png(2000, 50))
    server, _ = run_turn(fake_llm, session, [("read", {"file_path": "wide.png"}, "img")])
    assert "2000x50" in server.tool_result("img") and "1568x" in server.tool_result("img")
    msgs = server.messages()
    assert isinstance(msgs[-2]["content"], str) and msgs[-2]["role"] == "tool"
    parts = msgs[-1]["content"]  # the image follows the tool results, from the user role
    assert msgs[-1]["role"] == "user" and isinstance(parts, list)
    urls = [p["image_url"]["url"] for p in parts if p.get("type") == "image_url"]
    assert urls and urls[0].startswith("data:image/")


def test_read_pdf_by_page_range(fake_llm, session, repo):
    (repo / "doc.pdf").write_bytes(pdf([f"Page number {i}" for i in range(1, 16)]))
    server, _ = run_turn(
        fake_llm,
        session,
        [
            ("read", {"file_path": "doc.pdf", "pages": "2-3"}, "range"),
            ("read", {"file_path": "doc.pdf"}, "default"),
            ("read", {"file_path": "doc.pdf", "pages": "5-2"}, "inverted"),
            ("read", {"file_path": "doc.pdf", "pages": "1-25"}, "toomany"),
            ("read", {"file_path": "doc.pdf", "pages": "40"}, "past"),
        ],
    )
    ranged = server.tool_result("range")
    assert "Page number 2" in ranged and "Page number 3" in ranged and "Page number 4" not in ranged
    default = server.tool_result("default")
    assert "Page number 10" in default and "Page number 11" not in default
    assert 'pages="11-' in default
    assert "inverted" in server.tool_result("inverted")
    assert "at most 20" in server.tool_result("toomany")
    assert "15 pages" in server.tool_result("past")


# ---------------------------------------------------------------------------------------------
# snapshots: /undo, /redo, /rewind, /diff


def repo_state(repo: Path) -> tuple:
    """Refs, index entries and stash of the user's repository (must never change)."""
    refs = git(repo, "for-each-ref")
    index = git(repo, "ls-files", "--stage")
    stash = git(repo, "stash", "list")
    return refs, index, stash, git(repo, "rev-parse", "HEAD")


def edit_calc_and_create(repo):
    return [
        ("read", {"file_path": "calc.py"}, "r"),
        ("edit", {"file_path": "calc.py", "old_string": "a + b", "new_string": "a - b"}, "e"),
        ("write", {"file_path": "made.txt", "content": "made\n"}, "w"),
    ]


def test_undo_and_redo(fake_llm, session, repo, git_status):
    (repo / "mine.txt").write_text("user's own uncommitted work\n")
    state = repo_state(repo)
    calc_before = (repo / "calc.py").read_bytes()
    _, s = run_turn(fake_llm, session, edit_calc_and_create(repo))
    assert (repo / "calc.py").read_text().endswith("a - b\n")
    diff = s.dispatch("/diff")
    assert "-    return a + b" in diff and "+    return a - b" in diff and "made.txt" in diff
    out = s.dispatch("/undo")
    assert "calc.py" in out and "made.txt" in out
    assert (repo / "calc.py").read_bytes() == calc_before
    assert not (repo / "made.txt").exists()
    assert (repo / "mine.txt").read_text() == "user's own uncommitted work\n"
    assert repo_state(repo) == state
    assert git_status(repo) == {"?? mine.txt"}
    assert "/undo" in s.messages[-1]["content"]  # the model is told its edits were reverted
    out = s.dispatch("/redo")
    assert "made.txt" in out
    assert (repo / "calc.py").read_text().endswith("a - b\n")
    assert (repo / "made.txt").read_text() == "made\n"
    assert repo_state(repo) == state
    assert "nothing to redo" in s.dispatch("/redo")


def test_redo_is_a_no_op_after_a_new_change(fake_llm, session, repo):
    _, s = run_turn(fake_llm, session, edit_calc_and_create(repo))
    s.dispatch("/undo")
    calc = (repo / "calc.py").read_bytes()
    (repo / "later.txt").write_text("created after the undo\n")
    out = s.dispatch("/redo")
    assert "nothing was redone" in out
    assert (repo / "calc.py").read_bytes() == calc
    assert not (repo / "made.txt").exists()


def test_redo_sees_an_edit_made_at_once_after_the_undo_but_not_an_ignored_file(
    fake_llm, session, repo
):
    """/redo compares change times with the moment the undo ended (DESIGN: snapshots): an
    edit of a file the batch never touched, made right after the undo, stops it; a file the
    ignore rules leave out (a bytecode cache a test run writes) does not."""
    (repo / ".gitignore").write_text("*.pyc\n")
    (repo / "notes.md").write_text("mine\n")
    _, s = run_turn(fake_llm, session, edit_calc_and_create(repo))
    s.dispatch("/undo")
    (repo / "calc.cpython-311.pyc").write_bytes(b"cache")
    out = s.dispatch("/redo")
    assert "made.txt" in out and (repo / "made.txt").read_text() == "made\n"
    s.dispatch("/undo")
    (repo / "notes.md").write_text("mine, edited at once\n")
    out = s.dispatch("/redo")
    assert "nothing was redone" in out
    assert not (repo / "made.txt").exists()
    assert (repo / "notes.md").read_text() == "mine, edited at once\n"


def test_undo_leaves_a_file_the_user_changed_since(fake_llm, session, repo):
    _, s = run_turn(fake_llm, session, edit_calc_and_create(repo))
    (repo / "calc.py").write_text("user rewrote it\n")
    out = s.dispatch("/undo")
    assert "left alone" in out and "calc.py" in out
    assert (repo / "calc.py").read_text() == "user rewrote it\n"
    assert not (repo / "made.txt").exists()


def test_undo_across_a_new_session_and_outside_git(fake_llm, session, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f.txt").write_text("v1\n")
    server = fake_llm(
        turn(
            [("read", {"file_path": "f.txt"}, "r")],
            [("write", {"file_path": "f.txt", "content": "v2\n"}, "w")],
        )
    )
    first = session(server, cwd=str(plain))
    first.chat("change it")
    first.close()
    assert (plain / "f.txt").read_text() == "v2\n"
    second = session(cwd=str(plain))
    assert "f.txt" in second.dispatch("/undo")
    assert (plain / "f.txt").read_text() == "v1\n"
    assert not (plain / ".git").exists()
    assert "f.txt" in second.dispatch("/redo")
    assert (plain / "f.txt").read_text() == "v2\n"


def test_rewind_code_and_conversation(fake_llm, session, repo):
    script = [
        calls([("write", {"file_path": "one.txt", "content": "1\n"}, "a")]),
        say("first done"),
        calls([("write", {"file_path": "two.txt", "content": "2\n"}, "b")]),
        say("second done"),
    ]
    server = fake_llm(script)
    s = session(server)
    s.chat("first prompt")
    s.chat("second prompt")
    listing = s.dispatch("/rewind")
    assert "first prompt" in listing and "second prompt" in listing
    assert "bash" in listing
    ids = [
        line.split()[0]
        for line in listing.splitlines()
        if "prompt" in line and line.strip()[0].isdigit()
    ]
    first_id, second_id = ids[0], ids[1]
    out = s.dispatch(f"/rewind {second_id} code")
    assert "two.txt" in out and "bash" in out
    assert (repo / "one.txt").exists() and not (repo / "two.txt").exists()
    n_before = len(s.messages)
    out = s.dispatch(f"/checkpoint {first_id} conversation")
    assert "first prompt" in out
    assert len(s.messages) == 0 < n_before
    assert (repo / "one.txt").exists()
    s.dispatch(f"/rewind {first_id} both")
    assert not (repo / "one.txt").exists()
    with pytest.raises(ValueError):
        s.dispatch("/rewind 999")


def test_checkpoints_survive_a_new_session(fake_llm, session, repo):
    server = fake_llm(turn([("write", {"file_path": "kept.txt", "content": "k\n"}, "w")]))
    first = session(server)
    first.chat("make kept.txt")
    first.close()
    second = session()
    listing = second.dispatch("/rewind list")
    assert "make kept.txt" in listing
    cp = next(line.split()[0] for line in listing.splitlines() if "make kept.txt" in line)
    with pytest.raises(ValueError):
        second.dispatch(f"/rewind {cp} conversation")
    out = second.dispatch(f"/rewind {cp} code")
    assert "kept.txt" in out
    assert not (repo / "kept.txt").exists()


def test_no_snapshot_objects_in_the_user_repo(fake_llm, session, repo, yuyao_home):
    objects_before = subprocess.run(
        ["git", "count-objects", "-v"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    _, s = run_turn(fake_llm, session, edit_calc_and_create(repo))
    s.dispatch("/undo")
    objects_after = subprocess.run(
        ["git", "count-objects", "-v"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert objects_before == objects_after
    assert list((yuyao_home / "snapshots").glob("*.git"))


def test_rewind_summarizes_up_to_a_checkpoint(fake_llm, session, repo):
    script = [
        calls([("write", {"file_path": "one.txt", "content": "1\n"}, "a")]),
        say("first done"),
        say("second done"),
        say("SUMMARY: the agent wrote one.txt"),
    ]
    server = fake_llm(script)
    s = session(server)
    s.chat("first prompt")
    s.chat("second prompt")
    listing = s.dispatch("/rewind")
    cp = next(line.split()[0] for line in listing.splitlines() if "second prompt" in line)
    out = s.dispatch(f"/rewind {cp} summarize-up-to")
    assert "SUMMARY" in out
    msgs = s.messages
    assert "SUMMARY: the agent wrote one.txt" in msgs[0]["content"]
    assert msgs[1]["content"] == "second prompt"
    assert "first prompt" in server.user_text(-1)  # the summary request saw the old part
    assert (repo / "one.txt").exists()  # summarizing changes no file


@pytest.mark.parametrize("how", ["summarize-from", "summarize-up-to", "conversation"])
def test_rewind_is_what_a_resume_replays(fake_llm, session, repo, how):
    """/rewind rewrites the conversation in the session file too: the request the model
    receives after `resume=` carries the summarized (or rewound) path, not the old one."""
    summary = [] if how == "conversation" else [say("SUMMARY-OF-PART")]
    script = [say("first done"), say("second done"), *summary, say("third done")]
    server = fake_llm(script)
    s = session(server)
    s.chat("first prompt")
    s.chat("second prompt")
    listing = s.dispatch("/rewind")
    cp = next(line.split()[0] for line in listing.splitlines() if "second prompt" in line)
    s.dispatch(f"/rewind {cp} {how}")
    in_memory = [m["content"] for m in s.messages]
    sid = s.session_id
    s.close()
    resumed = session(server, resume=sid)
    assert [m["content"] for m in resumed.messages] == in_memory
    assert resumed.chat("third prompt") == "third done"
    sent = server.user_text(-1)
    assert "third prompt" in sent
    if how == "summarize-from":
        assert "first prompt" in sent and "SUMMARY-OF-PART" in sent
        assert "second prompt" not in sent
    elif how == "summarize-up-to":
        assert "SUMMARY-OF-PART" in sent and "second prompt" in sent
        assert "first prompt" not in sent
    else:
        assert "first prompt" in sent and "second prompt" not in sent


def test_new_tools_are_advertised_and_plan_mode_refuses_them(fake_llm, session, repo):
    nb = repo / "nb.ipynb"
    nb.write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    before = nb.read_bytes()
    patch = "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch"
    server = fake_llm(
        turn(
            [
                ("apply-patch", {"patch": patch}, "p"),
                (
                    "notebook-edit",
                    {"notebook_path": "nb.ipynb", "cell_index": 0, "new_source": "y"},
                    "n",
                ),
            ]
        )
    )
    session(server, mode="plan").chat("try")
    names = server.tool_names(0)
    assert {"apply-patch", "notebook-edit", "read-media"} <= set(names)
    assert "plan mode" in server.tool_result("p")
    assert "plan mode" in server.tool_result("n")
    assert not (repo / "x.txt").exists()
    assert nb.read_bytes() == before


def test_read_media_and_diff_outside_git(fake_llm, session, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "shot.png").write_bytes(png(40, 30))
    (plain / "notes.txt").write_text("n\n")
    server = fake_llm(
        turn(
            [("read-media", {"file_path": "shot.png"}, "img")],
            [("read-media", {"file_path": "notes.txt"}, "txt")],
            [("read", {"file_path": "notes.txt"}, "r")],
            [("edit", {"file_path": "notes.txt", "old_string": "n", "new_string": "m"}, "e")],
        )
    )
    s = session(server, cwd=str(plain))
    s.chat("look")
    assert "40x30" in server.tool_result("img")
    assert "not an image" in server.tool_result("txt")
    out = s.dispatch("/diff")
    assert "-n" in out and "+m" in out and "not a git repository" in out


def test_edits_keep_file_permissions(fake_llm, session, repo):
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o750)
    run_turn(
        fake_llm,
        session,
        [("read", {"file_path": "run.sh"}, "r")],
        [("edit", {"file_path": "run.sh", "old_string": "old", "new_string": "new"}, "e")],
        [("write", {"file_path": "run.sh", "content": "#!/bin/sh\necho newer\n"}, "w")],
    )
    assert script.read_text() == "#!/bin/sh\necho newer\n"
    assert script.stat().st_mode & 0o777 == 0o750
    assert not [p for p in repo.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------------------------------------
# big files: page reads, stamps instead of hashes, the pre-image stored once


def big_text(n_lines: int) -> str:
    return "".join(f"row {i:07d} of a large log file\n" for i in range(1, n_lines + 1))


def settle():
    """Lets a just-written file's ctime fall out of the racy window (see freshness.rs)."""
    import time

    time.sleep(0.15)


def shadow_store(yuyao_home: Path) -> Path:
    (store,) = (yuyao_home / "snapshots").glob("*.git")
    return store


def loose_objects(store: Path) -> list[Path]:
    return [p for p in (store / "objects").glob("??/*") if p.is_file()]


def test_big_file_page_read_and_a_same_size_change_with_mtime_restored(fake_llm, session, repo):
    big = repo / "big.log"
    text = big_text(400_000)  # 12 MB
    big.write_text(text)
    settle()
    mtime_ns = big.stat().st_mtime_ns

    def responder(body, index):
        if index == 0:
            return calls([("read", {"file_path": "big.log", "limit": 3}, "r1")])
        if index == 1:
            # Out of band: same size, in place, mtime put back.
            with big.open("r+") as f:
                f.seek(len(text) // 2)
                f.write("X")
            os.utime(big, ns=(mtime_ns, mtime_ns))
            return calls(
                [
                    (
                        "edit",
                        {
                            "file_path": "big.log",
                            "old_string": "row 0000002 ",
                            "new_string": "ROW 0000002 ",
                        },
                        "e1",
                    )
                ]
            )
        if index == 2:
            return calls([("read", {"file_path": "big.log", "offset": 2, "limit": 1}, "r2")])
        if index == 3:
            return calls(
                [
                    (
                        "edit",
                        {
                            "file_path": "big.log",
                            "old_string": "row 0000002 ",
                            "new_string": "ROW 0000002 ",
                        },
                        "e2",
                    )
                ]
            )
        return say("Finished.")

    server = fake_llm(responder)
    session(server).chat("edit the big log")
    first = server.tool_result("r1")
    assert first.splitlines()[:3] == [
        "1\trow 0000001 of a large log file",
        "2\trow 0000002 of a large log file",
        "3\trow 0000003 of a large log file",
    ]
    assert "(lines 1–3 of about " in first and "continue with offset=4" in first
    refused = server.tool_result("e1")
    assert "changed on disk" in refused
    assert server.tool_result("r2").startswith("2\trow 0000002 ")
    assert server.tool_result("e2").startswith("Edited")
    final = big.read_text()
    assert final.startswith("row 0000001 of a large log file\nROW 0000002 ")
    assert final[len(text) // 2] == "X"  # the out-of-band change survived


def test_big_file_edit_stores_one_copy_and_undo_redo_are_exact(fake_llm, session, repo, yuyao_home):
    big = repo / "big.log"
    big.write_text(big_text(200_000))  # 6 MB
    settle()
    original = big.read_bytes()
    edit = {"file_path": "big.log", "old_string": "row 0100000 ", "new_string": "ROW 100000 "}
    _, s = run_turn(
        fake_llm,
        session,
        [("read", {"file_path": "big.log", "limit": 1}, "r")],
        [("edit", edit, "e")],
    )
    edited = big.read_bytes()
    assert edited == original.replace(b"row 0100000 ", b"ROW 100000 ")
    store = shadow_store(yuyao_home)
    # The pre-image once, chunked and compressed (docs/snapshots.md); the post-image is the
    # file itself.
    assert len(list((store / "yuyao-cas" / "m").iterdir())) == 1
    chunks = [p for p in (store / "yuyao-cas" / "c").rglob("*") if p.is_file()]
    assert chunks and sum(p.stat().st_size for p in chunks) < len(original) / 2
    assert not (store / "yuyao-raw").exists()
    assert loose_objects(store) == []
    assert "big.log" in s.dispatch("/undo")
    assert big.read_bytes() == original
    assert "big.log" in s.dispatch("/redo")
    assert big.read_bytes() == edited
    s.dispatch("/undo")
    assert big.read_bytes() == original


def test_a_batch_of_new_files_stores_no_copies_and_undoes_exactly(
    fake_llm, session, repo, yuyao_home
):
    n = 200
    patch = ["*** Begin Patch"]
    for i in range(n):
        patch += [f"*** Add File: many/f{i:03d}.txt", f"+file {i}"]
    patch.append("*** End Patch")
    _, s = run_turn(fake_llm, session, [("apply-patch", {"patch": "\n".join(patch)}, "p")])
    assert len(list((repo / "many").iterdir())) == n
    store = shadow_store(yuyao_home)
    assert loose_objects(store) == []  # nothing existed before; the files are the post-images
    out = s.dispatch("/undo")
    assert f"{n} files" in out
    assert not (repo / "many").exists()
    s.dispatch("/redo")
    assert sorted(p.read_text() for p in (repo / "many").iterdir()) == sorted(
        f"file {i}\n" for i in range(n)
    )
