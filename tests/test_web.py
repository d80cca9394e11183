"""web-fetch and web-search end to end: the scripted model calls them through `yuyao -p`, a
local HTTP server (loopback only) plays the web and counts every request it receives, and the
tests check the tool results the model got back and the requests that reached the server —
none at all with the network off."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from fakellm import calls, say
from test_files import pdf, png

pytestmark = pytest.mark.core

PAGE = """<!DOCTYPE html><html><head><title>Widget docs</title>
<style>body{color:red}</style><script>window.secret = "tracking";</script></head>
<body><nav><a href="/">Home</a> menu-entry</nav>
<main><h1>Widgets</h1><p>A widget turns <b>gears</b>. See <a href="/guide/setup.html">the setup guide</a>.</p>
<ul><li>first</li><li>second</li></ul></main>
<footer>footer-text</footer></body></html>"""


class Web:
    """A loopback HTTP server that records every request path."""

    def __init__(self, host: str = "127.0.0.1"):
        self.requests: list[str] = []
        self.search_hits: list[dict] = []
        web = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, status, body: bytes, ctype: str, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                web.requests.append(self.path)
                url = urlparse(self.path)
                path = url.path
                if path == "/page":
                    self.send(200, PAGE.encode(), "text/html; charset=utf-8")
                elif path == "/data.json":
                    self.send(200, b'{"name":"yuyao","tags":["a","b"]}', "application/json")
                elif path == "/doc.pdf":
                    self.send(200, pdf(["Quarterly numbers rose"]), "application/pdf")
                elif path == "/pic":
                    self.send(200, png(40, 20), "image/png")
                elif path == "/blob":
                    self.send(200, bytes(range(256)) * 8, "application/octet-stream")
                elif path == "/moved":
                    self.send(301, b"", "text/plain", {"Location": "/page"})
                elif path.startswith("/hop"):
                    n = int(path[4:] or 0)
                    self.send(302, b"", "text/plain", {"Location": f"/hop{n + 1}"})
                elif path == "/elsewhere":
                    target = parse_qs(url.query)["to"][0]
                    self.send(302, b"", "text/plain", {"Location": target})
                elif path == "/search":
                    q = parse_qs(url.query)
                    body = {
                        "query": q.get("q", [""])[0],
                        "results": [
                            {
                                "title": f"Result {i} for {q.get('q', [''])[0]}",
                                "url": f"https://example.org/{i}",
                                "content": f"snippet number {i}",
                            }
                            for i in range(1, 13)
                        ],
                    }
                    if q.get("format") != ["json"]:
                        self.send(403, b"json format not enabled", "text/plain")
                    else:
                        self.send(200, json.dumps(body).encode(), "application/json")
                else:
                    self.send(404, b"<html><body><p>no such page</p></body></html>", "text/html")

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def web():
    w = Web()
    yield w
    w.close()


def run(fake_llm, yuyao, env, batch, *flags):
    server = fake_llm([calls(batch), say("The page was read; here is what it says.")])
    proc = yuyao("-p", "look it up", *flags, env=env(server))
    # A turn whose every call was refused did no work: exit 1 is its honest status.
    assert proc.returncode in (0, 1), proc.stderr
    assert "panicked" not in proc.stderr, proc.stderr
    return server


def fetch(call_id, url, **extra):
    return ("web-fetch", {"url": url, **extra}, call_id)


def test_network_off_sends_no_request(fake_llm, yuyao, env, web):
    server = run(
        fake_llm,
        yuyao,
        env,
        [fetch("f1", web.url("/page")), fetch("f2", web.url("/page", "localhost"))],
        "--network",
        "off",
    )
    for cid in ("f1", "f2"):
        result = server.tool_result(cid)
        assert "network access is off" in result and "--network on" in result, result
    assert web.requests == [], "no request may leave with the network off (loopback included)"


def test_html_becomes_markdown_and_redirects_are_followed(fake_llm, yuyao, env, web):
    server = run(
        fake_llm,
        yuyao,
        env,
        [
            fetch("html", web.url("/moved")),
            fetch("json", web.url("/data.json")),
            fetch("pdf", web.url("/doc.pdf")),
            fetch("img", web.url("/pic")),
        ],
        "--network",
        "on",
    )
    page = server.tool_result("html")
    assert "Title: Widget docs" in page
    assert "# Widgets" in page and "**gears**" in page
    # Links are kept, made absolute so the model can fetch them next.
    assert f"[the setup guide]({web.url('/guide/setup.html')})" in page
    assert "Redirected: " + web.url("/page") in page
    for noise in ("tracking", "color:red", "menu-entry", "footer-text"):
        assert noise not in page, noise
    assert '"name": "yuyao"' in server.tool_result("json")
    assert "Quarterly numbers rose" in server.tool_result("pdf")
    assert "Image 40x20" in server.tool_result("img")
    last = server.messages()[-1]
    assert last["role"] == "user" and any(p.get("type") == "image_url" for p in last["content"]), (
        "the fetched image reaches the model as an image part"
    )
    assert web.requests.count("/moved") == 1 and "/page" in web.requests


def test_refusals_say_why(fake_llm, yuyao, env, web):
    server = run(
        fake_llm,
        yuyao,
        env,
        [
            fetch("bin", web.url("/blob")),
            fetch("loop", web.url("/hop0")),
            fetch("file", "file:///etc/passwd"),
            fetch("bad", "not a url"),
            fetch("missing", web.url("/nope")),
        ],
        "--network",
        "on",
    )
    assert "binary content" in server.tool_result("bin")
    assert "application/octet-stream" in server.tool_result("bin")
    loop = server.tool_result("loop")
    assert "more than 5 times" in loop, loop
    assert len([r for r in web.requests if r.startswith("/hop")]) == 6
    assert "only http and https" in server.tool_result("file")
    assert "not a valid URL" in server.tool_result("bad")
    assert "HTTP error 404" in server.tool_result("missing")


def test_max_chars_and_prompt_keep_the_relevant_part(fake_llm, yuyao, env, web):
    server = run(
        fake_llm,
        yuyao,
        env,
        [
            fetch("short", web.url("/page"), max_chars=30),
            fetch("focused", web.url("/page"), max_chars=120, prompt="what do widgets turn?"),
        ],
        "--network",
        "on",
    )
    short = server.tool_result("short")
    assert "content cut to 30 of" in short
    focused = server.tool_result("focused")
    assert "Fetched for: what do widgets turn?" in focused
    assert "gears" in focused, focused


def test_domain_rules_judge_every_hop(fake_llm, yuyao, env, web):
    deny = run(
        fake_llm,
        yuyao,
        env,
        [fetch("denied", web.url("/page"))],
        "--network",
        "on",
        "--deny",
        "WebFetch(domain:127.0.0.1)",
    )
    assert "denied by rule WebFetch(domain:127.0.0.1)" in deny.tool_result("denied")
    assert web.requests == []
    # Only localhost is allowed: the first request goes, the redirect to 127.0.0.1 does not.
    hop = web.url("/elsewhere?to=" + web.url("/page"), "localhost")
    allow = run(
        fake_llm,
        yuyao,
        env,
        [fetch("hop", hop), fetch("other", web.url("/page"))],
        "--network",
        "on",
        "--allow",
        "WebFetch(domain:localhost)",
    )
    result = allow.tool_result("hop")
    assert "redirects to" in result and "not among the allowed domains" in result, result
    assert "not among the allowed domains" in allow.tool_result("other")
    assert web.requests == ["/elsewhere?to=" + web.url("/page")]


def test_a_denied_host_is_not_reached_by_another_spelling(fake_llm, yuyao, env, web):
    # A hostile model respells the denied host: case, a trailing dot, userinfo that names an
    # allowed-looking host before the real one. The rule judges the host the request goes to.
    spellings = {
        "case": f"http://LocalHost:{web.port}/page",
        "dot": f"http://localhost.:{web.port}/page",
        "userinfo": f"http://docs.rs@localhost:{web.port}/page",
    }
    server = run(
        fake_llm,
        yuyao,
        env,
        [fetch(cid, url) for cid, url in spellings.items()],
        "--network",
        "on",
        "--deny",
        "WebFetch(domain:localhost)",
    )
    for cid in spellings:
        assert "denied by rule WebFetch(domain:localhost)" in server.tool_result(cid), cid
    assert web.requests == []


# ---------------------------------------------------------------------------------------------
# web-search


def test_search_through_a_searxng_provider(fake_llm, yuyao, env, web, yuyao_home):
    (yuyao_home / "config.toml").write_text(f'[search]\nprovider = "searxng:{web.url("")}"\n')
    server = run(
        fake_llm,
        yuyao,
        env,
        [("web-search", {"query": "rust async", "max_results": 3}, "s")],
        "--network",
        "on",
    )
    result = server.tool_result("s")
    assert "1. Result 1 for rust async" in result
    assert "https://example.org/3" in result and "snippet number 3" in result
    assert "Result 4" not in result
    assert web.requests and web.requests[0].startswith("/search?q=rust+async&format=json")


def test_search_not_configured_or_network_off(fake_llm, yuyao, env, web, yuyao_home):
    server = run(
        fake_llm,
        yuyao,
        env,
        [("web-search", {"query": "x"}, "s")],
        "--network",
        "on",
    )
    result = server.tool_result("s")
    assert "search.provider" in result and "search.api_key_env" in result, result
    (yuyao_home / "config.toml").write_text(f'[search]\nprovider = "searxng:{web.url("")}"\n')
    off = run(fake_llm, yuyao, env, [("web-search", {"query": "x"}, "s")])
    assert "network access is off" in off.tool_result("s")
    assert web.requests == []


def test_web_tools_are_advertised(fake_llm, yuyao, env, yuyao_home):
    # Offered when they can work (tool_offer.rs): network on, a search provider, a Chromium.
    (yuyao_home / "config.toml").write_text(
        f'[search]\nprovider = "brave"\n[browser]\nexecutable = "{sys.executable}"\n'
    )
    server = fake_llm([say("hi")])
    assert yuyao("-p", "hi", "--network", "on", env=env(server)).returncode == 0
    names = server.tool_names()
    for name in ("web-fetch", "web-search", "browser", "read-media"):
        assert name in names
