"""The browser in plan mode and the read-only role may only read (no form submission, no
request other than GET/HEAD, from the page or from `evaluate`), and WebRTC is off in every
mode (no STUN packet leaves past the request guard). A real headless Chromium drives pages
served by a local HTTP server; what reached the server (and a UDP port) decides."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

import pytest
from fakellm import calls, say
from test_browser import CHROMIUM  # noqa: F401  (skips the module without a Chromium)

pytestmark = pytest.mark.core

FORMS = """<!DOCTYPE html><html><head><title>Shop</title></head><body>
<form id="get" action="/result" method="get"><input id="q" name="q"></form>
<form id="post" action="/order" method="post"><input name="item" value="tea">
<button id="buy" type="submit">Buy</button></form>
</body></html>"""


def rtc_page(udp_port: int) -> str:
    """A page that gathers ICE candidates against a STUN server on the test's UDP port, in
    the page and in a child frame, before anything else runs."""
    script = f"""
async function gather() {{
  const pc = new RTCPeerConnection({{iceServers: [{{urls: 'stun:127.0.0.1:{udp_port}'}}]}});
  pc.createDataChannel('x');
  await pc.setLocalDescription(await pc.createOffer());
  return 'gathering';
}}
window.rtc = gather().catch(e => 'refused: ' + e);
"""
    frame = f"<script>{script}</script>".replace('"', "&quot;")
    return f"""<!DOCTYPE html><html><head><title>Call</title><script>{script}</script></head>
<body><p>call page</p><iframe srcdoc="{frame}"></iframe></body></html>"""


class Site:
    """Records every request as (method, path); serves the forms and the WebRTC page."""

    def __init__(self, udp_port: int = 0):
        self.requests: list[tuple[str, str]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self):
                site.requests.append((self.command, self.path))
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                path = urlparse(self.path).path
                body = {
                    "/": FORMS,
                    "/rtc": rtc_page(udp_port),
                }.get(path, "<html><body>done</body></html>")
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = reply

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def sent(self) -> list[tuple[str, str]]:
        """Every request that is not a plain read."""
        return [(m, p) for m, p in self.requests if m not in ("GET", "HEAD") or "?q=" in p]

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


SENDS = [
    browser("open", "open", url="{url}"),
    browser("type", "type", selector="#q", text="secret"),
    browser("press", "press", key="Enter", selector="#q"),
    browser("back", "open", url="{url}"),
    browser("click", "click", selector="#buy"),
    browser("back2", "open", url="{url}"),
    # A plain read still works (before a refused submission leaves an error page).
    browser(
        "read",
        "evaluate",
        expression="fetch('/data').then(r => 'status ' + r.status, e => 'failed: ' + e)",
    ),
    browser(
        "post",
        "evaluate",
        expression="fetch('/api', {method: 'POST', body: 'x'}).then(r => 'status ' + r.status, e => 'failed: ' + e)",
    ),
    browser(
        "put",
        "evaluate",
        expression="fetch('/api', {method: 'PUT', body: 'x'}).then(r => 'status ' + r.status, e => 'failed: ' + e)",
    ),
    browser("beacon", "evaluate", expression="navigator.sendBeacon('/beacon', 'data')"),
    browser(
        "submit", "evaluate", expression="document.getElementById('post').submit(); 'submitted'"
    ),
]


def drive(fake_llm, yuyao, env, site, *flags):
    items = [
        (tool, {k: v.replace("{url}", site.url()) for k, v in args.items()}, cid)
        for tool, args, cid in SENDS
    ]
    server = fake_llm([calls(items), say("Done.")])
    proc = yuyao("-p", "try the shop", *flags, env=env(server), timeout=180)
    assert "panicked" not in proc.stderr, proc.stderr
    return server


@pytest.mark.parametrize("flags", [("--mode", "plan"), ("--role", "ask")])
def test_read_only_sessions_browse_but_send_nothing(fake_llm, yuyao, env, site, flags):
    server = drive(fake_llm, yuyao, env, site, *flags)
    assert "Title: Shop" in (server.tool_result("open") or "")
    assert site.sent() == [], site.requests
    # Reading still works.
    assert "status 200" in (server.tool_result("read") or "")
    assert ("GET", "/data") in site.requests


def test_a_working_session_may_submit(fake_llm, yuyao, env, site):
    """The control: the same calls in a mode that may change things do send (the test above
    can fail)."""
    drive(fake_llm, yuyao, env, site, "--mode", "yolo")
    methods = {m for m, _ in site.sent()}
    assert "POST" in methods and "PUT" in methods, site.requests


@pytest.fixture
def stun():
    """A UDP port on loopback that counts the datagrams it receives."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def listen():
        while not stop.is_set():
            try:
                got.append(sock.recv(2048))
            except OSError:
                continue

    t = threading.Thread(target=listen, daemon=True)
    t.start()
    yield sock.getsockname()[1], got
    stop.set()
    t.join()
    sock.close()


@pytest.mark.parametrize("flags", [(), ("--network", "on"), ("--mode", "yolo", "--network", "on")])
def test_webrtc_sends_no_packet_in_any_mode(fake_llm, yuyao, env, stun, flags):
    port, got = stun
    site = Site(udp_port=port)
    try:
        wait = "new Promise(r => setTimeout(() => r(String(window.rtc)), 3000))"
        direct = (
            "(async () => { try { const pc = new RTCPeerConnection({iceServers: [{urls: "
            f"'stun:127.0.0.1:{port}'}}]}}); pc.createDataChannel('y'); "
            "await pc.setLocalDescription(await pc.createOffer()); "
            "await new Promise(r => setTimeout(r, 3000)); return 'gathered'; } "
            "catch (e) { return 'refused: ' + e; } })()"
        )
        items = [
            browser("open", "open", url=site.url("/rtc")),
            browser("wait", "evaluate", expression=wait),
            browser("direct", "evaluate", expression=direct),
        ]
        server = fake_llm([calls(items), say("Done.")])
        proc = yuyao("-p", "try a call", *flags, env=env(server), timeout=180)
        assert "panicked" not in proc.stderr, proc.stderr
        assert "call page" in (server.tool_result("open") or ""), server.tool_result("open")
        assert got == [], (
            f"{len(got)} STUN packet(s) reached the test's port: "
            f"{server.tool_result('wait')} / {server.tool_result('direct')}"
        )
    finally:
        site.close()


@pytest.mark.parametrize("network", ["off", "on"])
def test_a_loopback_deny_holds_for_every_spelling_in_the_browser(
    fake_llm, yuyao, env, site, network
):
    hosts = ["2130706433", "0x7f000001", "127.1", "0177.0.0.1", "[::ffff:127.0.0.1]"]
    items = [browser(f"o{i}", "open", url=f"http://{h}:{site.port}/") for i, h in enumerate(hosts)]
    server = fake_llm([calls(items), say("Refused, as configured.")])
    proc = yuyao(
        "-p",
        "check",
        "--network",
        network,
        "--deny",
        "Browser(domain:localhost)",
        env=env(server),
        timeout=180,
    )
    assert "panicked" not in proc.stderr, proc.stderr
    for i, h in enumerate(hosts):
        assert "denied by rule Browser(domain:localhost)" in (server.tool_result(f"o{i}") or ""), h
    assert site.requests == []
