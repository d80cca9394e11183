"""An MCP server for the tests, written with the official `mcp` Python SDK (MCPServer).

    python tests/mcp_fixture_server.py stdio
    python tests/mcp_fixture_server.py http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp

Tools: ``add_note`` (changes something: appends to $NOTES_FILE), ``count_notes`` (read-only),
``model_key`` (what this process sees of D2A_MODEL_API_KEY), ``picture`` (an image),
``header`` (a request header, over HTTP), ``pid``, ``big`` (a long text), ``crash`` (the process exits mid-call).
"""

from __future__ import annotations

import base64
import os
import sys

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp_types import ToolAnnotations

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

app = MCPServer("notes")


def _notes() -> str:
    return os.environ.get("NOTES_FILE", os.path.join(os.getcwd(), "notes.txt"))


@app.tool(description="Append a note to the notes file")
def add_note(text: str) -> str:
    with open(_notes(), "a") as f:
        f.write(text + "\n")
    return f"noted: {text}"


@app.tool(description="Count the notes", annotations=ToolAnnotations(readOnlyHint=True))
def count_notes() -> str:
    try:
        with open(_notes()) as f:
            return f"{sum(1 for _ in f)} notes"
    except FileNotFoundError:
        return "0 notes"


@app.tool(
    description="Report the model key variable", annotations=ToolAnnotations(readOnlyHint=True)
)
def model_key() -> str:
    return "model key: " + os.environ.get("D2A_MODEL_API_KEY", "absent")


@app.tool(description="A picture", annotations=ToolAnnotations(readOnlyHint=True))
def picture() -> Image:
    return Image(data=PNG, format="png")


@app.tool(description="An HTTP request header", annotations=ToolAnnotations(readOnlyHint=True))
def header(name: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return f"{name}: " + str({k.lower(): v for k, v in headers.items()}.get(name.lower(), "none"))


@app.tool(description="This process's id", annotations=ToolAnnotations(readOnlyHint=True))
def pid() -> str:
    return str(os.getpid())


@app.tool(description="A long text", annotations=ToolAnnotations(readOnlyHint=True))
def big() -> str:
    return "".join(f"line {i} of a long result\n" for i in range(20000))


@app.tool(
    description="Exit in the middle of the call", annotations=ToolAnnotations(readOnlyHint=True)
)
def crash() -> str:
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1] == "http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run("stdio")
