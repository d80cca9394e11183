"""The browser tool against a real headless Chromium: the scripted model drives a page served
by a local HTTP server through `yuyao -p`, and the tests check what came back (text, links,
console messages and page errors, a screenshot as an image part), what reached the server,
that only loopback is reachable with the network off, and that the browser ends with the
session.

Chromium comes from Debian's `chromium` package (.ci/run installs it and sets
YUYAO_REQUIRE_CHROMIUM=1, so a missing browser fails there instead of skipping)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from fakellm import calls, say

pytestmark = pytest.mark.core

CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)
if CHROMIUM is None and not os.environ.get("YUYAO_REQUIRE_CHROMIUM"):
    pytest.skip(
        "no Chromium on PATH (apt-get install chromium); set YUYAO_REQUIRE_CHROMIUM=1 to fail instead",
        allow_module_level=True,
    )


def own_address() -> str | None:
    """A non-loopback address of this machine (no packet is sent), or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))
        ip = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") else ip


class Site:
    def __init__(self, pixel_host: str | None = None):
        self.requests: list[str] = []
        site = self
        self.pixel_host = pixel_host

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                site.requests.append(self.path)
                url = urlparse(self.path)
                if url.path == "/":
                    pixel = (
                        f'<img src="http://{site.pixel_host}:{site.port}/pixel">'
                        if site.pixel_host
                        else ""
                    )
                    body = f"""<!DOCTYPE html><html><head><title>Todo app</title></head><body>
<h1>Todo</h1><p id="out">nothing yet</p>
<button id="btn" onclick="document.getElementById('out').textContent = 'clicked!'; console.log('button pressed')">Add</button>
<form action="/result" method="get"><input id="q" name="q"></form>
<a href="/about">About us</a> <a href="/help">Help</a>
{pixel}
<script>console.warn('page ready'); setTimeout(() => {{ throw new Error('boom from the page'); }}, 0);</script>
</body></html>"""
                elif url.path == "/result":
                    q = parse_qs(url.query).get("q", [""])[0]
                    body = f"<html><head><title>Result</title></head><body><p id='r'>you searched {q}</p></body></html>"
                elif url.path == "/pixel":
                    body = ""
                else:
                    body = "<html><body>other</body></html>"
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    s = Site()
    yield s
    s.close()


def browser(cid: str, action: str, **args):
    return ("browser", {"action": action, **args}, cid)


def _proc(pid: int) -> dict | None:
    base = Path("/proc", str(pid))
    try:
        status = dict(
            line.split(":", 1) for line in (base / "status").read_text().splitlines() if ":" in line
        )
        return {
            "ppid": int(status["PPid"]),
            "uid": int(status["Uid"].split()[0]),
            "seccomp": status.get("Seccomp", "").strip(),
            "cmdline": (base / "cmdline")
            .read_bytes()
            .replace(b"\0", b" ")
            .decode(errors="replace"),
            "environ": (base / "environ").read_bytes(),
        }
    except (OSError, KeyError, ValueError):
        return None


def session_browsers(yuyao_home: Path) -> dict[int, dict]:
    """The Chromium processes of the yuyao run whose environment names this test's YUYAO_HOME
    (found by ancestry: the browser's own environment is cleared)."""
    marker = f"YUYAO_HOME={yuyao_home}".encode()
    procs = {int(p.name): _proc(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    procs = {pid: info for pid, info in procs.items() if info}

    def under_session(pid: int) -> bool:
        seen = set()
        while pid in procs and pid not in seen and pid > 1:
            seen.add(pid)
            if marker in procs[pid]["environ"].split(b"\0"):
                return True
            pid = procs[pid]["ppid"]
        return False

    return {
        pid: info
        for pid, info in procs.items()
        if ("chromium" in info["cmdline"] or "chrome" in info["cmdline"])
        and marker not in info["environ"].split(b"\0")
        and under_session(pid)
    }


def test_a_page_is_driven_end_to_end(fake_llm, yuyao, env, site, yuyao_home):
    steps = [
        browser("open", "open", url=site.url()),
        browser("click", "click", selector="#btn"),
        browser("out", "extract", selector="#out"),
        browser("links", "extract", what="links"),
        browser("type", "type", selector="#q", text="yuyao docs"),
        browser("press", "press", key="Enter"),
        browser("eval", "evaluate", expression="document.getElementById('r').textContent"),
        browser("shot", "screenshot"),
        browser("console", "console"),
        browser("missing", "click", selector="#nope"),
    ]
    server = fake_llm([calls(steps), say("Checked.")])
    proc = yuyao("-p", "check the page", env=env(server), timeout=150)
    assert proc.returncode == 0, proc.stderr
    opened = server.tool_result("open")
    assert "Title: Todo app" in opened and "nothing yet" in opened, opened
    assert "clicked!" in server.tool_result("out")
    links = server.tool_result("links")
    assert f"[About us]({site.url('/about')})" in links and "[Help]" in links, links
    pressed = server.tool_result("press")
    assert "/result?q=yuyao+docs" in pressed, pressed
    assert server.tool_result("eval") == "you searched yuyao docs"
    assert "Screenshot 1280x800" in server.tool_result("shot")
    last = server.messages()[-1]
    assert last["role"] == "user" and any(p.get("type") == "image_url" for p in last["content"])
    console = server.tool_result("console")
    assert "[console.log] button pressed" in console, console
    assert "[console.warning] page ready" in console or "page ready" in console, console
    assert "boom from the page" in console, console
    assert "no element matches" in server.tool_result("missing")
    assert "/result?q=yuyao+docs" in site.requests


def test_chromium_runs_unprivileged_with_its_own_sandbox(fake_llm, yuyao, env, site, yuyao_home):
    """A page that broke out of a renderer would land in Chromium's process: as root with
    `--no-sandbox` that is root on the host. The browser runs as an unprivileged user with its
    own sandbox on, sees none of yuyao's environment, and goes (profile too) with the session."""
    seen: dict[int, dict] = {}

    def look(_request, _index):
        seen.update(session_browsers(yuyao_home))
        return calls([browser("text", "extract")])

    server = fake_llm([calls([browser("open", "open", url=site.url())]), look, say("Checked.")])
    e = env(server)
    e["AWS_SECRET_ACCESS_KEY"] = "aws-secret-for-the-test"
    proc = yuyao("-p", "check the page", env=e, timeout=150)
    assert proc.returncode == 0, proc.stderr
    assert "nothing yet" in server.tool_result("text")
    assert seen, "the session's browser processes were found while it ran"
    for info in seen.values():
        assert b"aws-secret-for-the-test" not in info["environ"], info["cmdline"]
        assert b"D2A_MODEL_API_KEY" not in info["environ"], info["cmdline"]
    unsandboxed = "sandbox cannot start" in server.tool_result("open")
    if not unsandboxed:
        assert all("--no-sandbox" not in i["cmdline"] for i in seen.values())
        renderers = [i for i in seen.values() if "--type=renderer" in i["cmdline"]]
        assert renderers and all(i["seccomp"] == "2" for i in renderers), renderers
    if os.geteuid() == 0:
        assert all(i["uid"] != 0 for i in seen.values()), [
            (i["uid"], i["cmdline"]) for i in seen.values()
        ]
    profiles = {
        arg.split("=", 1)[1]
        for i in seen.values()
        for arg in i["cmdline"].split()
        if arg.startswith("--user-data-dir=")
    }
    assert profiles
    # The browser and its profile went with the session.
    time.sleep(0.5)
    still = [pid for pid, i in seen.items() if (_proc(pid) or {}).get("cmdline") == i["cmdline"]]
    assert still == []
    assert [p for p in profiles if Path(p).exists()] == []


@pytest.mark.parametrize("network", ["off", "on"])
def test_the_network_switch_holds_inside_chromium(fake_llm, yuyao, env, network):
    ip = own_address()
    if ip is None:
        pytest.skip("this machine has no non-loopback address to play a remote host")
    site = Site(pixel_host=ip)
    try:
        steps = [
            browser("open", "open", url=site.url()),
            browser("direct", "open", url=site.url("/other", host=ip)),
            browser("console", "console"),
        ]
        server = fake_llm([calls(steps), say("Checked.")])
        proc = yuyao("-p", "check", "--network", network, env=env(server), timeout=150)
        assert proc.returncode == 0, proc.stderr
        assert "Title: Todo app" in server.tool_result("open")
        if network == "off":
            # The page's own request to a non-loopback host never left Chromium...
            assert "/pixel" not in site.requests
            assert "[blocked]" in server.tool_result("console")
            # ...and neither did a navigation there.
            assert "only loopback" in server.tool_result("direct")
            assert "/other" not in site.requests
        else:
            assert "/pixel" in site.requests and "/other" in site.requests
    finally:
        site.close()


def test_a_missing_chromium_says_how_to_install(fake_llm, yuyao, env, yuyao_home, site):
    (yuyao_home / "config.toml").write_text('[browser]\nexecutable = "/nonexistent/chromium"\n')
    server = fake_llm([calls([browser("open", "open", url=site.url())]), say("No browser here.")])
    assert yuyao("-p", "x", env=env(server)).returncode in (0, 1)
    assert "apt-get install chromium" in server.tool_result("open")
    assert site.requests == []


def test_one_browser_per_session_until_close(fake_llm, yuyao, env, site):
    steps = [
        browser("open", "open", url=site.url()),
        browser("set", "evaluate", expression="localStorage.setItem('k', 'kept'); 'set'"),
        browser("same", "evaluate", expression="localStorage.getItem('k')"),
        browser("close", "close"),
        browser("reopen", "open", url=site.url()),
        browser("fresh", "evaluate", expression="String(localStorage.getItem('k'))"),
        browser("close2", "close"),
        browser("close3", "close"),
    ]
    server = fake_llm([calls(steps), say("Checked the storage.")])
    proc = yuyao("-p", "check", env=env(server), timeout=150)
    assert proc.returncode == 0, proc.stderr
    assert server.tool_result("same") == "kept", "the second call talks to the same browser"
    assert server.tool_result("close") == "The browser is closed."
    assert server.tool_result("fresh") == "null", "after close a new browser starts, fresh"
    assert server.tool_result("close3") == "No browser was running."


def test_browser_domain_rules(fake_llm, yuyao, env, site):
    steps = [browser("open", "open", url=site.url(host="localhost"))]
    server = fake_llm([calls(steps), say("Refused, as configured.")])
    proc = yuyao("-p", "check", "--deny", "Browser(domain:localhost)", env=env(server))
    assert proc.returncode in (0, 1), proc.stderr
    assert "denied by rule Browser(domain:localhost)" in server.tool_result("open")
    assert site.requests == []
