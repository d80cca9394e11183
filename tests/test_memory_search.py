"""memory-search and its index, `yuyao memory …`, /dream and dreaming, driven through the public
surfaces (agent_api, the `yuyao` CLI, `-p`) against the scripted fake model server.

What a user observes: the hits the model receives (file, line range, score, text), the files
MEMORY.md / DREAMS.md after a dream, exit codes and output of `yuyao memory`, the requests the
endpoint received with the gateway provider.
"""

from __future__ import annotations

import datetime
import json
import re
import sys
from pathlib import Path

import pytest
from fakellm import call, say

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]

MEMORY = (
    "# Project memory\n"
    "\n"
    '- Use bun, not npm. <!-- id:m7f3a when:2026-11-30 scope:project why:"user said: use bun not npm" src:correction -->\n'
    "- The HTTP API handlers live in src/api/handlers.\n"
    "- Never deploy to production on Fridays.\n"
)
DAILY = (
    "- Looked into flaky CI: the cache key missed the lockfile.\n"
    "- Alice owns the billing service; ask her before changing invoices.\n"
)


def write_memory(repo: Path) -> None:
    (repo / "MEMORY.md").write_text(MEMORY)
    (repo / "memory").mkdir(exist_ok=True)
    (repo / "memory" / "2026-11-30.md").write_text(DAILY)


def today() -> str:
    return datetime.date.today().isoformat()


def hit_lines(result: str) -> list[str]:
    """The `N. file:a-b (score …, id …)` head lines of a memory-search result."""
    return [line for line in result.splitlines() if re.match(r"^\d+\. ", line)]


# ---------------------------------------------------------------------------------------------
# The tool, end to end


def test_memory_search_finds_a_paraphrased_note(fake_llm, api, repo):
    write_memory(repo)
    server = fake_llm(
        [call("memory-search", query="which package manager do we use", k=3), say("bun")]
    )
    s = api(server)
    s.chat("which package manager?")
    assert "memory-search" in server.tool_names(0)
    result = server.tool_result("call_0_0")
    heads = hit_lines(result)
    assert len(heads) == 3, result
    # Found within the three hits asked for (the bench's recall@3; in this five-entry memory
    # "Never deploy to production on Fridays" comes out a hair closer, docs/memory.md), in
    # the hit format: file:lines, score, id, then the text.
    lines = result.splitlines()
    at = next((i for i, line in enumerate(lines) if "id m7f3a)" in line), None)
    assert at is not None, result
    assert re.match(r"^[123]\. MEMORY\.md:3-3 \(score 0\.\d{4}, id m7f3a\)$", lines[at]), result
    assert lines[at + 1].strip() == "Use bun, not npm.", result
    assert re.match(r"^1\. \S+:\d+-\d+ \(score 0\.\d{4}, id \w+\)$", heads[0]), result
    server.assert_well_formed()


def test_memory_search_covers_daily_notes_and_the_global_memory(fake_llm, api, repo, yuyao_home):
    write_memory(repo)
    (yuyao_home / "MEMORY.md").write_text("- Answer in British English.\n")
    server = fake_llm(
        [
            call("memory-search", query="who is responsible for payments", k=1),
            call("memory-search", query="spelling conventions for english", k=1),
            say("ok"),
        ]
    )
    api(server).chat("look up")
    billing = server.tool_result("call_0_0")
    assert hit_lines(billing)[0].startswith("1. memory/2026-11-30.md:2-2 "), billing
    spelling = server.tool_result("call_1_0")
    assert hit_lines(spelling)[0].startswith(f"1. {yuyao_home}/MEMORY.md:1-1 "), spelling


def test_bad_arguments_are_a_tool_error_that_says_what_to_send(fake_llm, api, repo):
    write_memory(repo)
    server = fake_llm(
        [call("memory-search", question="x"), call("memory-search", query="x", k=0), say("ok")]
    )
    api(server).chat("search")
    assert "invalid arguments for memory-search" in server.tool_result("call_0_0")
    assert "k must be a whole number" in server.tool_result("call_1_0")


def test_no_memory_removes_the_tool(fake_llm, yuyao, env, repo):
    write_memory(repo)
    server = fake_llm([say("a"), say("b")])
    assert yuyao("-p", "hi", env=env(server)).returncode == 0
    assert "memory-search" in server.tool_names(0)
    assert yuyao("-p", "hi", "--no-memory", env=env(server)).returncode == 0
    assert "memory-search" not in server.tool_names(1)


# recall@3 of the hybrid each set must keep: with the encoder re-ranking the static hybrid's
# best 20 (docs/memory.md, "The re-ranking encoder"), 0.950 on each of the four sets (the
# static ranking alone: 0.975, 0.875, 0.875, 0.750), so a change that loses a paraphrase shows.
RECALL_FLOOR = {
    "memory_paraphrase": 0.95,
    "memory_heldout": 0.95,
    "memory_heldout2": 0.95,
    "memory_heldout3": 0.95,
}
FIRST_KEYWORD_QUESTION = {
    "memory_heldout": "E1042",
    "memory_heldout2": "wasm-pack",
    "memory_heldout3": "KRB5KDC_ERR_PREAUTH_FAILED",
}


@pytest.mark.parametrize("name", sorted(RECALL_FLOOR))
def test_recall_of_the_hybrid_is_never_below_its_components(use_env, name):
    """The bench's four sets (worded differently from their notes; the held-out ones also ask
    for identifiers and error codes): recall@3 of the hybrid and of each component alone."""
    use_env()
    sys.path.insert(0, str(ROOT / "benches"))
    try:
        import bench_memory
    finally:
        sys.path.pop(0)
    r = bench_memory.recalls(bench_memory.SETS[name])
    # The held-out sets were never used for tuning or choosing; the re-ranked hybrid must not
    # lose anything the encoder or BM25 finds, and finds every keyword-exact question on top.
    assert r["hybrid"] >= RECALL_FLOOR[name], r
    assert r["hybrid"] >= r["encoder"], r
    assert r["hybrid"] >= r["bm25"], r
    # The static embeddings alone are above the hybrid on one set by one question
    # ("address of the pre-production environment": static third, re-ranked fourth;
    # docs/memory.md); nowhere by more.
    assert r["hybrid"] >= r["embeddings"] - 1 / len(bench_memory.SETS[name]["queries"]), r
    if name in FIRST_KEYWORD_QUESTION:
        data = bench_memory.SETS[name]
        keyword = {**data, "queries": data["queries"][28:]}
        assert keyword["queries"][0]["q"] == FIRST_KEYWORD_QUESTION[name], "the last 12"
        assert bench_memory.recalls(keyword)["hybrid"] == 1.0


def heldout_memory(repo: Path) -> None:
    """The 40 notes of benches/memory_heldout.json as the project's MEMORY.md."""
    data = json.loads((ROOT / "benches" / "memory_heldout.json").read_text())
    notes = "".join(f"- {n['text']}\n" for n in data["notes"])
    (repo / "MEMORY.md").write_text("# Notes\n\n" + notes)


DNS_NOTE = "Cloudflare"
DNS_QUESTION = ("who", "hosts", "our", "name", "servers")


def top3(out: str) -> str:
    """The text of the first three hits of `yuyao memory search`."""
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if re.match(r"^\d+\. ", line)]
    return "\n".join(lines[i + 1] for i in heads[:3])


def test_the_encoder_brings_a_paraphrase_the_static_ranking_misses_into_the_top_three(
    yuyao, env, repo, tmp_path
):
    """ "who hosts our name servers" shares no word with the Cloudflare note: the static
    ranking has it fourth; the installed encoder (the yuyao_memory_encoder package of the test
    venv, as install.sh installs it) re-orders the best 20 and puts it in the top three.
    Without the package (the override pointing at a folder with no encoder) the search still
    answers, with the static ranking, and the status says so."""
    heldout_memory(repo)
    with_encoder = env()
    status = yuyao("memory", "status", env=with_encoder).stdout
    assert "reranker: local encoder" in status, status
    r = yuyao("memory", "search", *DNS_QUESTION, env=with_encoder)
    assert r.returncode == 0, r.stderr
    assert DNS_NOTE in top3(r.stdout), r.stdout
    # One component alone, the flag before or after the query (as `/memory search` takes it).
    r = yuyao("memory", "search", *DNS_QUESTION, "--ranking", "encoder", env=with_encoder)
    assert r.returncode == 0, r.stderr
    assert DNS_NOTE in top3(r.stdout), r.stdout
    r = yuyao("memory", "search", "--ranking", "bm25", *DNS_QUESTION, env=with_encoder)
    assert r.returncode == 0, r.stderr
    assert DNS_NOTE not in top3(r.stdout), "no word in common: BM25 alone misses it"

    without = env(YUYAO_MEMORY_ENCODER_DIR=str(tmp_path / "no-encoder"))
    status = yuyao("memory", "status", env=without).stdout
    assert "reranker: not installed" in status, status
    assert "no-encoder" in status, "the status says why"
    r = yuyao("memory", "search", *DNS_QUESTION, env=without)
    assert r.returncode == 0, r.stderr
    assert re.match(r"^1\. MEMORY\.md:\d+-\d+ \(score", r.stdout), r.stdout
    assert DNS_NOTE not in top3(r.stdout), r.stdout


def test_the_encoder_ranking_alone_needs_the_package_and_says_so(use_env, tmp_path, monkeypatch):
    """`/memory search --ranking encoder` (the encoder's cosine over every entry, the bench's
    "encoder only" column) answers with the package and fails naming what is missing without."""
    use_env()
    sys.path.insert(0, str(ROOT / "benches"))
    try:
        import bench_memory
    finally:
        sys.path.pop(0)
    project = tmp_path / "project"
    project.mkdir()
    heldout_memory(project)
    s = bench_memory.open_session(project)
    try:
        question = " ".join(DNS_QUESTION)
        assert DNS_NOTE in top3(s.dispatch(f"/memory search --ranking encoder {question}"))
        monkeypatch.setenv("YUYAO_MEMORY_ENCODER_DIR", str(tmp_path / "no-encoder"))
        with pytest.raises(Exception, match="encoder.bin"):
            s.dispatch(f"/memory search --ranking encoder {question}")
        # The hybrid still answers, with the static ranking.
        assert "MEMORY.md" in s.dispatch(f"/memory search {question}")
    finally:
        s.close()


def test_encoder_vectors_are_cached_beside_the_index_for_the_current_notes_only(
    yuyao, env, repo, yuyao_home
):
    """The notes that reached a re-ranking are encoded once: their vectors are kept in
    encoder-cache.bin beside the index (a record per note: a 16-byte key and 384 f32), a
    second query over the same notes adds none, and a removed note's vector goes."""
    heldout_memory(repo)
    e = env()
    assert yuyao("memory", "search", *DNS_QUESTION, env=e).returncode == 0
    status = yuyao("memory", "status", env=e).stdout
    cache = Path(re.search(r"index path: (.+)", status).group(1)).parent / "encoder-cache.bin"
    record = 16 + 384 * 4
    first = cache.stat().st_size
    assert (first - 12) % record == 0 and (first - 12) // record == 20, first
    assert yuyao("memory", "search", *DNS_QUESTION, env=e).returncode == 0
    assert cache.stat().st_size == first
    # Half the notes gone: a query re-ranks the 20 left, and only current notes are kept.
    lines = (repo / "MEMORY.md").read_text().splitlines()
    (repo / "MEMORY.md").write_text("\n".join(lines[:22]) + "\n")
    assert (
        yuyao("memory", "search", "where", "do", "crashes", "get", "tracked", env=e).returncode == 0
    )
    assert (cache.stat().st_size - 12) // record == 20, cache.stat().st_size


# ---------------------------------------------------------------------------------------------
# Providers and the index


def test_provider_switch_gateway_then_bm25(fake_llm, yuyao, env, repo, yuyao_home):
    write_memory(repo)
    server = fake_llm([])
    e = env(server)
    assert yuyao("config", "set", "memorySearch.provider", "gateway", env=e).returncode == 0
    assert yuyao("config", "set", "memorySearch.model", "embed-small", env=e).returncode == 0
    r = yuyao("memory", "search", "who", "owns", "billing", env=e)
    assert r.returncode == 0, r.stderr
    assert "Alice owns the billing service" in r.stdout.splitlines()[1], r.stdout
    assert server.embedding_requests, "the gateway's /embeddings was never called"
    assert {q["body"]["model"] for q in server.embedding_requests} == {"embed-small"}
    assert all(q["path"] == "/v1/embeddings" for q in server.embedding_requests)
    texts = [t for q in server.embedding_requests for t in q["body"]["input"]]
    assert "Use bun, not npm." in texts and "who owns billing" in texts
    status = yuyao("memory", "status", env=e).stdout
    assert "provider: gateway" in status and "index: ready" in status, status

    asked = len(server.embedding_requests)
    assert yuyao("config", "set", "memorySearch.provider", "bm25", env=e).returncode == 0
    r = yuyao("memory", "search", "billing", "service", env=e)
    assert r.returncode == 0, r.stderr
    assert "Alice owns the billing service" in r.stdout.splitlines()[1], r.stdout
    assert len(server.embedding_requests) == asked, "bm25 must not call the endpoint"
    assert "provider: bm25" in yuyao("memory", "status", env=e).stdout


def test_gateway_without_an_endpoint_is_an_error_not_a_crash(yuyao, env, repo):
    write_memory(repo)
    e = env()
    yuyao("config", "set", "memorySearch.provider", "gateway", env=e)
    r = yuyao("memory", "search", "billing", env=e)
    assert r.returncode == 1
    assert "no endpoint is configured" in r.stderr
    assert "Traceback" not in r.stderr


def test_index_survives_a_restart_and_updates_by_mtime(yuyao, env, repo, yuyao_home):
    write_memory(repo)
    e = env()
    first = yuyao("memory", "index", env=e)
    assert first.returncode == 0, first.stderr
    assert "indexed 2 files, 5 entries (2 files read, 5 entries embedded" in first.stdout
    status = yuyao("memory", "status", env=e).stdout
    assert "index: ready" in status and "entries: 5" in status and "files: 2" in status
    path = Path(re.search(r"index path: (.+)", status).group(1))
    assert path.is_file() and path.is_relative_to(yuyao_home / "memory-index")

    again = yuyao("memory", "index", env=e)  # a new process: the saved index is reused
    assert "(0 files read, 0 entries embedded" in again.stdout, again.stdout

    with (repo / "memory" / "2026-11-30.md").open("a") as f:
        f.write("- The staging database is wiped and reseeded every night.\n")
    assert "index: not ready" in yuyao("memory", "status", env=e).stdout
    hit = yuyao("memory", "search", "when", "is", "the", "staging", "db", "reset", env=e).stdout
    assert hit.startswith("1. memory/2026-11-30.md:3-3 "), hit
    assert "(0 files read, 0 entries embedded" in yuyao("memory", "index", env=e).stdout
    update = yuyao("memory", "status", env=e).stdout
    assert "index: ready" in update and "entries: 6" in update


def test_index_force_shows_a_determinate_progress_bar(yuyao, env, repo):
    write_memory(repo)
    r = yuyao("memory", "index", "--force", env=env())
    assert r.returncode == 0, r.stderr
    assert f"indexing memory [{'#' * 30}] 100% (2/2)" in r.stderr, r.stderr
    assert "2 files read, 5 entries embedded" in r.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "frob"],
        ["memory", "search"],
        ["memory", "search", "--ranking"],
        ["memory", "search", "--ranking", "rrf", "bun"],
        ["memory", "search", "--ranking", "bm25"],
        ["memory", "index", "--rollback"],
        ["memory", "rem-backfill", "--force"],
    ],
    ids=" ".join,
)
def test_unknown_or_malformed_memory_actions_exit_2(yuyao, env, args):
    r = yuyao(*args, env=env())
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr


def test_status_of_a_project_without_memory(yuyao, env):
    r = yuyao("memory", "status", env=env())
    assert r.returncode == 0, r.stderr
    assert "files: 0" in r.stdout and "provider: local" in r.stdout
    assert "no memory entry matches" in yuyao("memory", "search", "anything", env=env()).stdout


# ---------------------------------------------------------------------------------------------
# rem-backfill


def test_rem_backfill_stages_candidates_and_rollback_removes_exactly_them(
    fake_llm, yuyao, env, repo
):
    (repo / "memory").mkdir()
    (repo / "memory" / "2026-11-01.md").write_text(
        "- Deploys happen on Fridays after 3pm.\n- Read the logs\n"
    )
    (repo / "memory" / "2026-11-02.md").write_text("- deploys happen on fridays after 3pm\n")
    (repo / "MEMORY.md").write_text("- Use bun, not npm.\n")
    dreams = "# Dreams\n\n## Dream 2026-11-20\n\nNothing promoted.\n"
    (repo / "DREAMS.md").write_text(dreams)
    server = fake_llm([say("Noted: pytest runs with -q here.")] * 2)
    for _ in range(2):  # the same durable prompt in two sessions
        assert yuyao("-p", "always run pytest with -q", env=env(server)).returncode == 0
    r = yuyao("memory", "rem-backfill", env=env())
    assert r.returncode == 0, r.stderr
    assert "2 promotion candidate(s) staged" in r.stdout, r.stdout
    staged = (repo / "DREAMS.md").read_text()
    assert staged.startswith(dreams)
    section = staged[len(dreams) :]
    assert f"## REM backfill {today()}: promotion candidates" in section
    assert (
        "- Deploys happen on Fridays after 3pm. <!-- staged from: memory/2026-11-01.md, memory/2026-11-02.md -->"
        in section
    )
    assert "- always run pytest with -q <!-- staged from: session " in section
    assert "Read the logs" not in section and "bun" not in section
    assert "0 promotion candidate(s)" in yuyao("memory", "rem-backfill", env=env()).stdout

    back = yuyao("memory", "rem-backfill", "--rollback", env=env())
    assert back.returncode == 0 and "removed 1 staged" in back.stdout, back.stdout
    assert (repo / "DREAMS.md").read_text() == dreams


# ---------------------------------------------------------------------------------------------
# /dream and dreaming


def test_dream_promotes_recalled_notes_and_removes_repeated_entries(fake_llm, api, repo):
    memory = MEMORY + "- Never deploy to production on Fridays.\n"
    (repo / "MEMORY.md").write_text(memory)
    (repo / "memory").mkdir()
    (repo / "memory" / "2026-11-30.md").write_text(
        "- The staging database is wiped and reseeded every night.\n"
        "- Alice owns the billing service.\n"
    )
    server = fake_llm(
        [
            call("memory-search", query="when is the staging db reset", k=1),
            call("memory-search", query="nightly reseed of staging data", k=1),
            call("memory-search", query="who owns billing", k=1),
            say("searched"),
            say("One note about the staging database was promoted; a repeated entry was dropped."),
        ]
    )
    s = api(server)
    s.chat("look things up")
    answer = s.dispatch("/dream")
    assert "1 promoted to MEMORY.md, 1 removed as stale" in answer, answer

    after = (repo / "MEMORY.md").read_text()
    lines = after.splitlines(keepends=True)
    # The first copy of the repeated entry is gone; every other byte is as it was.
    assert "".join(lines[:-1]) == MEMORY
    assert re.fullmatch(
        r"- The staging database is wiped and reseeded every night\. <!-- id:m[0-9a-f]{5} "
        rf"when:{today()} scope:project why:\"dreaming: recalled 2 times by 2 queries, from "
        r"memory/2026-11-30\.md\" src:dream -->\n",
        lines[-1],
    ), lines[-1]
    assert "Alice" not in after, "one recall is below the thresholds"

    journal = (repo / "DREAMS.md").read_text()
    assert journal.startswith(f"## Dream {today()}\n\n")
    assert "One note about the staging database was promoted" in journal
    assert '- promoted: "The staging database is wiped and reseeded every night."' in journal
    # The model only worded the summary: it was given the decided facts, no tools.
    summary_request = server.body(-1)
    assert not summary_request.get("tools")
    assert "1 promoted to MEMORY.md" in server.user_text(-1)


def test_dreaming_enabled_runs_at_session_end(fake_llm, use_env, repo, yuyao_home):
    from yuyao.agent_api import create_session

    write_memory(repo)
    server = fake_llm([say("one"), say("Nothing needed promoting."), say("two")])
    use_env(server)
    s = create_session(cwd=str(repo))
    s.chat("hello")
    s.close()
    assert not (repo / "DREAMS.md").exists(), "dreaming is off by default"

    (yuyao_home / "config.toml").write_text("[dreaming]\nenabled = true\n")
    s = create_session(cwd=str(repo))
    s.chat("hello again")
    s.close()
    journal = (repo / "DREAMS.md").read_text()
    assert journal.startswith(f"## Dream {today()}\n\n"), journal
    assert "0 promoted to MEMORY.md" in journal
    s.close()  # a second close does not dream again
    assert (repo / "DREAMS.md").read_text() == journal


def test_headless_dreaming_writes_into_the_out_dir(
    fake_llm, run_agent, env, repo, tmp_path, yuyao_home
):
    from fakellm import FAKE_MODEL

    write_memory(repo)
    (yuyao_home / "config.toml").write_text("[dreaming]\nenabled = true\n")
    out = tmp_path / "out"
    (tmp_path / "task.txt").write_text("say hi")
    (tmp_path / "budget.json").write_text('{"max_steps": 5}')
    server = fake_llm([say("done"), say("Nothing to promote.")])
    files = [p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts]
    before = {p: p.read_bytes() for p in files}
    r = run_agent(
        *("--task-file", str(tmp_path / "task.txt"), "--repo-dir", str(repo)),
        *("--model-base-url", server.url, "--model-name", FAKE_MODEL),
        *("--model-api-key", server.api_key or "k"),
        *("--budget-file", str(tmp_path / "budget.json")),
        *("--out-dir", str(out)),
        env=env(),
    )
    assert (out / "status.json").is_file(), r.stderr
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before, "nothing is written into --repo-dir"
    journal = (out / "memory" / "DREAMS.md").read_text()
    assert journal.startswith(f"## Dream {today()}"), journal
    assert "Nothing to promote." in journal
