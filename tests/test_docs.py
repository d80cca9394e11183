"""The docs a newcomer reads: README.md stays short, every link in README.md and docs/ leads to a
file (and heading) that exists, and code and docs say what and why instead of citing tracker
numbers a reader of the repository cannot see (the seed section or DESIGN is the citation)."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 260

# A Markdown inline link or image: [text](target) — target without spaces, optional "title".
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
# A tracker number in prose: the word, an optional space and "#", then digits.
TRACKER_REF = re.compile(r"issue ?#?[0-9]+", re.IGNORECASE)
SWEPT_SUFFIXES = {".rs", ".py", ".md", ".sh", ".toml"}
NOT_OURS = {"target", "wheels", ".git", "node_modules", ".venv"}


def _prose(path: Path) -> list[tuple[int, str]]:
    """The lines of a Markdown file outside fenced code blocks, with their numbers."""
    out, fenced = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for _, line in _prose(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _broken_links(doc: Path) -> list[str]:
    broken = []
    for n, line in _prose(doc):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, …
                continue
            file_part, _, anchor = target.partition("#")
            dest = (doc.parent / file_part).resolve() if file_part else doc
            shown = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name
            where = f"{shown}:{n}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{where} (no heading #{anchor} in {dest.name})")
    return broken


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail into the "
        "docs/ page of its topic and link it from the feature table"
    )


def test_readme_links_lead_somewhere():
    broken = _broken_links(ROOT / "README.md")
    assert not broken, "README.md links to what does not exist:\n" + "\n".join(broken)
    linked = {
        t.partition("#")[0] for _, line in _prose(ROOT / "README.md") for t in LINK.findall(line)
    }
    # Every topic page is reachable from the README.
    for page in (
        "tools",
        "listening",
        "permissions",
        "planning",
        "memory",
        "sessions",
        "parallel",
        "extensions",
        "headless",
        "configuration",
        "commands",
    ):
        assert f"docs/{page}.md" in linked, f"README.md does not link docs/{page}.md"


def test_docs_links_lead_somewhere():
    broken = [b for doc in sorted((ROOT / "docs").glob("*.md")) for b in _broken_links(doc)]
    assert not broken, "docs/ links to what does not exist:\n" + "\n".join(broken)


def test_topic_pages_open_with_a_runnable_example():
    for page in (
        "tools",
        "listening",
        "permissions",
        "planning",
        "memory",
        "sessions",
        "parallel",
        "extensions",
        "headless",
        "configuration",
        "commands",
    ):
        text = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
        first_block = re.search(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
        before = text[: first_block.start()] if first_block else text
        assert first_block and first_block.group(1) in ("bash", "sh"), f"docs/{page}.md"
        assert before.count("\n") <= 3, f"docs/{page}.md: the example is not at the top"
        assert re.search(
            r"^(yuyao|\./run_agent\.sh|cat|export|mkdir)\b", first_block.group(2), re.M
        ), f"docs/{page}.md: the first block runs no command"


def _swept_files():
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in NOT_OURS and d != "__pycache__")
        for name in sorted(files):
            path = here / name
            rel = path.relative_to(ROOT)
            if path.suffix in SWEPT_SUFFIXES or rel == Path(".ci/run"):
                yield path, rel


def test_no_tracker_numbers_in_code_or_docs():
    hits = []
    for path, rel in _swept_files():
        if TRACKER_REF.search(str(rel)):
            hits.append(f"{rel} (file name)")
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            if TRACKER_REF.search(line):
                hits.append(f"{rel}:{n}: {line.strip()[:120]}")
    assert not hits, (
        "say what and why, citing the seed section or DESIGN, not a tracker number:\n"
        + "\n".join(hits)
    )


def test_the_checks_catch_what_they_guard(tmp_path):
    """The link and tracker checks are not vacuous: a broken link, a missing heading and a
    tracker number are each found."""
    (tmp_path / "tools.md").write_text(
        (ROOT / "docs" / "tools.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    doc = tmp_path / "probe.md"
    doc.write_text(
        "# Probe\n\n[gone](nowhere.md) [bad anchor](tools.md#no-such-heading) "
        "[ok](#probe) [ok too](tools.md#repo-map-and-symbolname)\n",
        encoding="utf-8",
    )
    broken = _broken_links(doc)
    assert len(broken) == 2 and "no such file" in broken[0] and "no heading" in broken[1], broken
    assert TRACKER_REF.search("as in " + "issue" + " 7") and TRACKER_REF.search("Issue" + "#12")
    assert not TRACKER_REF.search("seed 002 §6, DESIGN §5")
