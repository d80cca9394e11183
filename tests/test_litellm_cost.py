"""Cost through a real litellm proxy (`litellm[proxy]`, pinned in scripts/test-requirements.txt)
in front of the scripted model: the proxy prices each response (`x-litellm-response-cost`, or
`usage.cost` in a stream's last chunk) and yuyao reports exactly that, in status.json, in
--json's total_cost_usd and in /cost. Also the price catalog and `yuyao cost`. Skipped only
where litellm's proxy cannot be installed (Python < 3.10)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import API_KEY, yuyao_command
from fakellm import FakeLLM, call, say

pytestmark = pytest.mark.core

if sys.version_info < (3, 10):
    pytest.skip("litellm's proxy needs Python >= 3.10", allow_module_level=True)

INPUT_PRICE, OUTPUT_PRICE = 1e-6, 2e-6
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CALL_COST = 1000 * INPUT_PRICE + 100 * OUTPUT_PRICE  # what the proxy charges per call
# The proxy's key is the tests' usual key: agent_api keeps the last key it hid for the whole
# process (`hide_model_key`), and later in-process sessions of other tests use it.
MASTER_KEY = API_KEY
MODEL = "litellm_proxy/priced-model"  # unknown to the catalog: only the proxy prices it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    def __init__(self, url: str, steps: list, upstream: FakeLLM):
        self.url = url
        self.steps = steps
        self.upstream = upstream

    def script(self, *steps) -> None:
        self.steps[:] = list(steps)


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    """A litellm proxy (its own process) serving `priced-model` from the scripted model,
    with prices per token set in its configuration."""
    litellm = Path(sys.executable).parent / "litellm"
    assert litellm.exists(), "litellm[proxy] from scripts/test-requirements.txt is not installed"
    steps: list = []
    upstream = FakeLLM(
        lambda body, index: steps.pop(0) if steps else say("(no step left)"), api_key=API_KEY
    ).start()
    work = tmp_path_factory.mktemp("litellm")
    port = free_port()
    config = work / "config.yaml"
    config.write_text(
        f"""model_list:
  - model_name: priced-model
    litellm_params:
      model: openai/fake-model
      api_base: {upstream.url}
      api_key: {API_KEY}
    model_info:
      input_cost_per_token: {INPUT_PRICE}
      output_cost_per_token: {OUTPUT_PRICE}
general_settings:
  master_key: {MASTER_KEY}
"""
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("D2A_", "YUYAO_"))}
    # The price list shipped in the package, not a download at start.
    environment["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    log = (work / "proxy.log").open("w")
    process = subprocess.Popen(
        [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
        cwd=work,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health/liveliness", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(
                "the litellm proxy did not start:\n" + (work / "proxy.log").read_text()[-3000:]
            )
        time.sleep(0.3)
    try:
        yield Proxy(url, steps, upstream)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
        upstream.stop()


def proxy_env(env, proxy, **extra):
    return env(
        D2A_MODEL_BASE_URL=proxy.url,
        D2A_MODEL_NAME=MODEL,
        D2A_MODEL_API_KEY=MASTER_KEY,
        **extra,
    )


def test_the_proxy_prices_a_call_as_configured(proxy):
    """The figure the tests expect is the proxy's own: one direct call's header."""
    proxy.script(say("direct", usage=USAGE))
    request = urllib.request.Request(
        f"{proxy.url}/v1/chat/completions",
        data=json.dumps(
            {"model": "priced-model", "messages": [{"role": "user", "content": "hi"}]}
        ).encode(),
        headers={"Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as r:
        assert float(r.headers["x-litellm-response-cost"]) == pytest.approx(CALL_COST)


@pytest.mark.parametrize("stream", ["off", "on"])
def test_json_total_cost_is_the_proxys(proxy, env, repo, stream):
    proxy.script(
        call("read", file_path=str(repo / "calc.py")),
        say("calc.py adds numbers"),
    )
    for step in proxy.steps:
        step["usage"] = USAGE
    proc = subprocess.run(
        [*yuyao_command(), "-p", "what does calc.py do?", "--json", "--stream", stream],
        env=proxy_env(env, proxy),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["total_cost_usd"] == pytest.approx(2 * CALL_COST, rel=1e-9)
    assert document["cost_source"].startswith("proxy header"), document["cost_source"]


def test_run_agent_status_has_the_proxys_cost_and_the_unpriced_warning(
    proxy, run_agent, env, repo, tmp_path
):
    proxy.script(
        {**call("write", file_path=str(repo / "hello.txt"), content="hello\n"), "usage": USAGE},
        say("Created hello.txt.", usage=USAGE),
    )
    (tmp_path / "task.txt").write_text("Create hello.txt containing the word hello.")
    (tmp_path / "budget.json").write_text(json.dumps({"max_steps": 10, "max_cost_usd": 5}))
    out = tmp_path / "out"
    proc = run_agent(
        "--task-file", str(tmp_path / "task.txt"),
        "--repo-dir", str(repo),
        "--model-base-url", proxy.url,
        "--model-name", MODEL,
        "--model-api-key", MASTER_KEY,
        "--budget-file", str(tmp_path / "budget.json"),
        "--out-dir", str(out),
        env=env(),
        timeout=120,
    )  # fmt: skip
    status = json.loads((out / "status.json").read_text())
    assert proc.returncode == 0, proc.stderr
    assert status["cost_usd"] == pytest.approx(2 * CALL_COST, rel=1e-9)
    assert status["pricing"]["reported_cost_usd"] == pytest.approx(2 * CALL_COST, rel=1e-9)
    assert status["pricing"]["source"] == "unknown"
    # No price per token is known, so the ceiling can only be checked after the fact: said
    # once on stderr and kept in status.json.
    assert "priced-model" in status["cost_warning"] and "ceiling" in status["cost_warning"]
    assert proc.stderr.count("cannot be enforced") == 1, proc.stderr


def test_slash_cost_says_the_proxy_priced_the_calls(proxy, use_env, repo):
    from yuyao.agent_api import create_session

    proxy.script(say("one", usage=USAGE))
    use_env(None, D2A_MODEL_BASE_URL=proxy.url, D2A_MODEL_NAME=MODEL, D2A_MODEL_API_KEY=MASTER_KEY)
    with create_session(cwd=repo) as session:
        assert session.chat("hi") == "one"
        answer = session.dispatch("/cost")
    assert f"${CALL_COST:.4f}" in answer and "x-litellm-response-cost" in answer, answer
    assert "source    proxy header" in answer, answer


def test_agent_api_warns_once_of_an_unpriced_ceiling(proxy, use_env, repo):
    from yuyao.agent_api import create_session

    proxy.script(say("one", usage=USAGE), say("two", usage=USAGE))
    use_env(None, D2A_MODEL_BASE_URL=proxy.url, D2A_MODEL_NAME=MODEL, D2A_MODEL_API_KEY=MASTER_KEY)
    with create_session(cwd=repo) as session:
        session.dispatch("/config set maxCostUsd 1")
        with pytest.warns(RuntimeWarning, match="cannot be enforced") as caught:
            session.chat("hi")
            session.chat("again")
    assert len([w for w in caught if "cannot be enforced" in str(w.message)]) == 1


def run_cost(env, repo, **extra):
    return subprocess.run(
        [*yuyao_command(), "cost"],
        env=env(**extra),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_yuyao_cost_names_each_source(env, repo):
    catalog = run_cost(
        env,
        repo,
        D2A_MODEL_NAME="litellm_proxy/anthropic/claude-sonnet-4-5",
        D2A_MODEL_BASE_URL="http://127.0.0.1:9",
    )
    assert catalog.returncode == 0, catalog.stderr
    assert "catalog (claude-sonnet-4-5)" in catalog.stdout and "$3.0000 in" in catalog.stdout
    env_prices = run_cost(
        env, repo, D2A_MODEL_NAME="gpt-4o", D2A_MODEL_BASE_URL="http://127.0.0.1:9",
        D2A_MODEL_COST=json.dumps({"input_cost_per_token": 5e-6, "output_cost_per_token": 1e-5}),
    )  # fmt: skip
    assert "D2A_MODEL_COST" in env_prices.stdout and "$5.0000 in" in env_prices.stdout
    unknown = run_cost(
        env, repo, D2A_MODEL_NAME="my-own-model", D2A_MODEL_BASE_URL="http://127.0.0.1:9"
    )
    assert "prices    unknown" in unknown.stdout, unknown.stdout


def test_a_misspelled_cost_key_is_said(env, repo):
    proc = run_cost(
        env, repo, D2A_MODEL_NAME="my-own-model", D2A_MODEL_BASE_URL="http://127.0.0.1:9",
        D2A_MODEL_COST=json.dumps({"input_cost_per_tokens": 5e-6, "output_cost_per_token": 1e-5}),
    )  # fmt: skip
    said = proc.stdout + proc.stderr
    assert "'input_cost_per_tokens' (did you mean 'input_cost_per_token'?)" in said, said


def test_print_warns_once_of_an_unpriced_ceiling(fake_llm, env, repo):
    server = fake_llm([say("one", usage=USAGE)])
    proc = subprocess.run(
        [*yuyao_command(), "-p", "hi", "--max-budget-usd", "1"],
        env=env(server),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("cannot be enforced") == 1, proc.stderr
    assert "fake-model" in proc.stderr


def test_a_catalog_model_is_priced_without_configuration(fake_llm, env, repo):
    """A model the catalog knows (behind a proxy prefix) is priced from it."""
    server = fake_llm([say("one", usage=USAGE)], model="openai/gpt-4o")
    proc = subprocess.run(
        [*yuyao_command(), "-p", "hi", "--json"],
        env=env(server, D2A_MODEL_NAME="litellm_proxy/openai/gpt-4o"),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["total_cost_usd"] == pytest.approx(1000 * 2.5e-6 + 100 * 1e-5)
    assert document["cost_source"] == "catalog (gpt-4o)"
