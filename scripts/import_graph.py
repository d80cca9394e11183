#!/usr/bin/env python3
"""The workspace's import graph: every arrow must point one way (DESIGN: rooms with one-way doors).

Three graphs, from the sources alone (no build):

  crates   the workspace crates and their path dependencies, from
           `cargo metadata --format-version 1 --no-deps`. Cargo itself refuses a cycle of normal
           or build dependencies, but not one that closes through a dev-dependency; any cycle
           fails this check.
  python   every module under the Python package (default python/yuyao), parsed with `ast`:
           imports at the top, in functions and under `if TYPE_CHECKING:` all count (a deferred
           import that only dodges a cycle is still a cycle). Any strongly connected component
           of more than one module fails the check and is printed as a cycle.
  core     the top-level modules of rust/core and their arrows: `crate::` / `super::` paths, and
           calls of the session's methods defined in another module (`impl Session` is spread
           over the crate, so `s.skill_triggers(…)` depends on skills.rs as much as a path
           would). The size of the largest strongly connected component and the arrow count are
           printed for information; `--max-core-scc N` fails when that component grows past N.
  kernel   the modules lib.rs registers in `FEATURES` are features, modules no other module
           names are the fronts' entrances (the headless run), the rest the kernel
           (feature.rs): every arrow from a kernel module into a feature is printed, and
           `--max-kernel-arrows N` fails when there are more than N. The kernel's lines of
           Rust (tests included) are counted too; `--max-kernel-lines N` fails past N. CI pins
           the figures, so they can only go down.

Usage: scripts/import_graph.py [--python-root DIR] [--core-src DIR] [--max-core-scc N]
                               [--max-kernel-arrows N] [--max-kernel-lines N]
                               [--metadata FILE | --skip-crates]
Exit status: 0 when no check failed, 1 when one did, 2 on a usage or tool error.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# --- strongly connected components (Tarjan, iterative: no recursion limit on deep graphs) --------
def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of `graph` (node -> successors), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                out.append(sorted(comp))
    return out


def cycle_in(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One concrete cycle through the component's first node, as a path that returns to it."""
    members = set(comp)
    start = comp[0]
    # Breadth-first from start's successors back to start, inside the component: the shortest loop.
    previous: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = node
                    following.append(nxt)
        frontier = following
    return comp


def report_cycles(kind: str, graph: dict[str, set[str]]) -> bool:
    """Print every cycle of `graph`; True when there was none."""
    bad = [c for c in sccs(graph) if len(c) > 1 or c[0] in graph[c[0]]]
    for comp in bad:
        print(f"{kind}: import cycle among {len(comp)}: {', '.join(comp)}")
        print(f"{kind}:   e.g. {' -> '.join(cycle_in(graph, comp))}")
    return not bad


# --- crates -------------------------------------------------------------------------------------
def crate_graph(metadata: dict) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]]]:
    """Workspace crate -> workspace crates it depends on (any kind), and each arrow's kinds."""
    members = {p["name"] for p in metadata["packages"] if p["id"] in metadata["workspace_members"]}
    graph: dict[str, set[str]] = {name: set() for name in members}
    kinds: dict[tuple[str, str], set[str]] = {}
    for package in metadata["packages"]:
        if package["name"] not in members:
            continue
        for dep in package["dependencies"]:
            if dep["name"] in members:
                graph[package["name"]].add(dep["name"])
                kinds.setdefault((package["name"], dep["name"]), set()).add(dep["kind"] or "normal")
    return graph, kinds


def cargo_metadata() -> dict:
    try:
        proc = subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        print("crates: cargo not found (--skip-crates checks the rest)", file=sys.stderr)
        raise SystemExit(2) from None
    if proc.returncode != 0:
        print(f"crates: cargo metadata failed:\n{proc.stderr}", file=sys.stderr)
        raise SystemExit(2)
    return json.loads(proc.stdout)


def check_crates(metadata: dict) -> bool:
    graph, kinds = crate_graph(metadata)
    ok = report_cycles("crates", graph)
    if not ok:
        dev = sorted(f"{a} -> {b}" for (a, b), k in kinds.items() if k == {"dev"})
        if dev:
            print(f"crates: dev-dependency arrows: {', '.join(dev)}")
    ok &= check_feature_crates_removable(graph)
    arrows = sum(len(v) for v in graph.values())
    dev_only = sum(1 for k in kinds.values() if k == {"dev"})
    print(
        f"crates: {len(graph)} workspace crates, {arrows} arrows ({dev_only} dev-only),"
        f" {'no cycle' if ok else 'CYCLE'}"
    )
    return ok


FRONT_CRATE = "yuyao-py"
KERNEL_CRATE = "yuyao-core"


def check_feature_crates_removable(graph: dict[str, set[str]]) -> bool:
    """A feature crate (one the Python extension depends on that itself depends on the core)
    is removed by deleting it and its one registration line: the extension's sources name it
    exactly once (`yuyao_x::FEATURES` in the registration), every other call goes through the
    kernel's `front_call` door."""
    if FRONT_CRATE not in graph:
        return True
    features = sorted(c for c in graph[FRONT_CRATE] if KERNEL_CRATE in graph.get(c, set()))
    sources = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "rust/py/src").rglob("*.rs"))
    )
    ok = True
    for crate in features:
        ident = crate.replace("-", "_")
        uses = re.findall(rf"\b{ident}::", sources)
        if len(uses) != 1:
            ok = False
            print(
                f"crates: {FRONT_CRATE} names feature crate {crate} {len(uses)} times"
                " (only its registration line may: call it through yuyao_core::front_call)"
            )
    print(f"crates: {len(features)} feature crates, each named once by {FRONT_CRATE}" if ok else "")
    return ok


# --- python -------------------------------------------------------------------------------------
def python_modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under the package directory."""
    base = package_dir.parent
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def python_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that `name` imports, wherever in the file the import statement is."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()

    def longest_module(dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                return candidate
            parts.pop()
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found = longest_module(alias.name)
                if found:
                    targets.add(found)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                if node.level - 1 > len(package):
                    continue  # beyond the top: Python would refuse it too
                package = package[: len(package) - (node.level - 1)]
                source = ".".join(package + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                # `from pkg import mod` imports the module pkg.mod; `from mod import name` the module.
                found = longest_module(f"{source}.{alias.name}") or longest_module(source)
                if found:
                    targets.add(found)
    targets.discard(name)
    return targets


def python_graph(package_dir: Path) -> dict[str, set[str]]:
    modules = python_modules(package_dir)
    return {name: python_imports(name, path, modules) for name, path in modules.items()}


def check_python(package_dir: Path) -> bool:
    if not package_dir.is_dir():
        print(f"python: {package_dir} is not a directory", file=sys.stderr)
        raise SystemExit(2)
    graph = python_graph(package_dir)
    ok = report_cycles("python", graph)
    arrows = sum(len(v) for v in graph.values())
    print(f"python: {len(graph)} modules, {arrows} arrows, {'no cycle' if ok else 'CYCLE'}")
    return ok


# --- rust/core's modules ------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
      (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<raw>b?r(?P<hashes>\#*)"(?:.|\n)*?"(?P=hashes))
    | (?P<string>b?"(?:\\.|[^"\\])*")
    | (?P<char>b?'(?:\\.|[^'\\])')
    | (?P<lifetime>'[A-Za-z_]\w*)
    | (?P<ident>[A-Za-z_]\w*)
    | (?P<path>::)
    | (?P<punct>[{}();,])
    | (?P<space>\s+|.)
    """,
    re.VERBOSE | re.DOTALL,
)


def rust_tokens(text: str) -> list[str]:
    """Identifiers, `::` and the punctuation the scan needs; comments and literals dropped."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("ident", "path", "punct"):
            out.append(m.group())
        elif kind in ("string", "raw", "char"):
            out.append('""')  # a literal is an expression: it ends a path
    return out


def _group_heads(tokens: list[str], i: int) -> tuple[list[str], int]:
    """The first identifier of each item of a `{a, b::c, d as e}` group starting at tokens[i]."""
    heads, depth, expect = [], 0, True
    while i < len(tokens):
        tok = tokens[i]
        if tok == "{":
            depth += 1
            expect = depth == 1
        elif tok == "}":
            depth -= 1
            if depth == 0:
                return heads, i
        elif tok == "," and depth == 1:
            expect = True
        elif expect and depth == 1 and re.match(r"\w", tok):
            heads.append(tok)
            expect = False
        i += 1
    return heads, i


def rust_file_arrows(path: Path, module_path: list[str]) -> set[tuple[str, ...]]:
    """Absolute module paths (from the crate root) that `crate::` / `super::` paths name."""
    tokens = rust_tokens(path.read_text(encoding="utf-8"))
    found: set[tuple[str, ...]] = set()
    inline: list[tuple[str, int]] = []  # inline `mod name {` blocks open at a brace depth
    depth = 0
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if inline and inline[-1][1] == depth:
                inline.pop()
        elif tok == "mod" and i + 2 < len(tokens) and tokens[i + 2] == "{":
            inline.append((tokens[i + 1], depth))
        elif tok in ("crate", "super") and i + 1 < len(tokens) and tokens[i + 1] == "::":
            if i > 0 and tokens[i - 1] == "::":
                i += 1
                continue  # `$crate::`-like or a path already counted
            here = module_path + [name for name, _ in inline]
            if tok == "crate":
                base: list[str] = []
                j = i + 2
            else:
                ups, j = 0, i
                while j + 1 < len(tokens) and tokens[j] == "super" and tokens[j + 1] == "::":
                    ups += 1
                    j += 2
                base = here[: max(0, len(here) - ups)]
            if j < len(tokens) and tokens[j] == "{":
                heads, _ = _group_heads(tokens, j)
                for head in heads:
                    found.add(tuple(base + [head]))
            elif j < len(tokens) and re.match(r"\w", tokens[j]):
                found.add(tuple(base + [tokens[j]]))
        i += 1
    return found


def core_graph(crate_src: Path) -> dict[str, set[str]]:
    """Top-level module of the crate -> top-level modules its files name."""
    lib = crate_src / "lib.rs"
    lib_text = lib.read_text(encoding="utf-8")
    top = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", lib_text, re.M))
    # Names lib.rs re-exports (`pub use session::{Session, ...}`) lead to the module they come from.
    reexport: dict[str, str] = {}
    for module, rest in re.findall(r"^\s*pub\s+use\s+(\w+)::(\{[^}]*\}|\w+)\s*;", lib_text, re.M):
        for item in re.findall(r"\w+", rest):
            reexport[item] = module
    graph: dict[str, set[str]] = {name: set() for name in top}
    for path in sorted(crate_src.rglob("*.rs")):
        rel = path.relative_to(crate_src).with_suffix("").parts
        if rel[0] not in top:
            continue
        module_path = list(rel[:-1]) if rel[-1] == "mod" else list(rel)
        for target in rust_file_arrows(path, module_path):
            if not target:
                continue
            head = target[0] if target[0] in top else reexport.get(target[0])
            if head and head != rel[0]:
                graph[rel[0]].add(head)
    return graph


_IMPL_SESSION = re.compile(r"^impl(?:<[^>]*>)?\s+(?:\w+::)*Session\s*\{", re.M)
_FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)", re.M)


def _impl_session_bodies(text: str) -> list[str]:
    """The bodies of the file's `impl Session { … }` blocks (braces counted on raw text)."""
    bodies = []
    for m in _IMPL_SESSION.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    bodies.append(text[m.end() : i])
                    break
            i += 1
    return bodies


def method_arrows(crate_src: Path, top: set[str]) -> dict[str, set[str]]:
    """Arrows a `use` cannot show: the session type's methods are defined across the crate
    (`impl Session` in many modules), so a call `s.run_skill_tool(…)` in module A of a method
    module B defines depends on B as much as a path would. A method name defined in one
    top-level module only (in an `impl Session` block there) and called as `.name(` elsewhere
    is an arrow."""
    files = {}
    for path in sorted(crate_src.rglob("*.rs")):
        rel = path.relative_to(crate_src).with_suffix("").parts
        if rel[0] in top:
            files[path] = (rel[0], path.read_text(encoding="utf-8"))
    defined: dict[str, list[str]] = {}
    for _, (head, text) in files.items():
        for name in _FN.findall(text):
            defined.setdefault(name, []).append(head)
    owner: dict[str, str] = {}
    for _, (head, text) in files.items():
        for body in _impl_session_bodies(text):
            for name in _FN.findall(body):
                # Rust allows one inherent method of a name; a name defined (as any fn) in one
                # top-level module only is that module's, even when the module also has a
                # free function of the same name (memory's `memory()` and `/memory`).
                if len(set(defined.get(name, []))) == 1:
                    owner[name] = head
    if not owner:
        return {}
    call = re.compile(r"\.(" + "|".join(sorted(map(re.escape, owner))) + r")\s*(?:::<[^>]*>)?\(")
    arrows: dict[str, set[str]] = {}
    for _, (head, text) in files.items():
        code = "".join(rust_tokens_keep_dots(text))
        for name in call.findall(code):
            if owner[name] != head:
                arrows.setdefault(head, set()).add(owner[name])
    return arrows


def rust_tokens_keep_dots(text: str) -> list[str]:
    """The file without comments and literals (method calls stay `.name(`)."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind in ("string", "raw", "char"):
            out.append('""')
        elif kind not in ("line_comment", "block_comment", "comment"):
            out.append(m.group())
    return out


def full_core_graph(crate_src: Path) -> dict[str, set[str]]:
    """Path arrows and method-call arrows of the crate's top-level modules."""
    graph = core_graph(crate_src)
    for head, targets in method_arrows(crate_src, set(graph)).items():
        graph[head] |= targets
    return graph


def registered_features(crate_src: Path) -> set[str]:
    """Top-level modules whose `FEATURE` lib.rs lists in its `FEATURES` (`&memory::FEATURE`,
    `&subagents::team::FEATURE`)."""
    text = (crate_src / "lib.rs").read_text(encoding="utf-8")
    m = re.search(r"static\s+FEATURES\b[^=]*=\s*&\[(.*?)\];", text, re.S)
    if not m:
        return set()
    return set(re.findall(r"&\s*(\w+)(?:::\w+)*::FEATURE\b", m.group(1)))


def module_lines(crate_src: Path, module: str) -> int:
    """Lines of a top-level module: `name.rs` and everything under `name/`."""
    files = [crate_src / f"{module}.rs"] + sorted((crate_src / module).rglob("*.rs"))
    return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files if f.is_file())


def check_kernel(crate_src: Path, max_arrows: int | None, max_lines: int | None = None) -> bool:
    features = registered_features(crate_src)
    graph = full_core_graph(crate_src)
    # A module no other module names is an entrance for the fronts (lib.rs re-exports it,
    # e.g. the headless run): it may start any feature.
    named = set().union(*graph.values()) if graph else set()
    entries = {m for m in graph if m not in named and m not in features}
    kernel = set(graph) - features - entries
    arrows = sorted((k, f) for k in kernel for f in graph[k] & features)
    lines = sum(module_lines(crate_src, k) for k in kernel) + module_lines(crate_src, "lib")
    line = (
        f"kernel: {len(kernel)} modules ({lines} lines with lib.rs), {len(features)} features"
        " registered, entrances"
        f" {', '.join(sorted(entries)) or 'none'}; {len(arrows)} arrows from the kernel into a"
        " feature"
    )
    for k, f in arrows:
        line += f"\n  {k} -> {f}"
    ok = True
    if max_arrows is None:
        line += "\n  (information)"
    else:
        ok = len(arrows) <= max_arrows
        line += f"\n  (limit {max_arrows}{'' if ok else ': EXCEEDED'})"
    if max_lines is not None:
        fits = lines <= max_lines
        ok &= fits
        line += f"\n  kernel lines {lines} (limit {max_lines}{'' if fits else ': EXCEEDED'})"
    print(line)
    return ok


def check_core(crate_src: Path, max_scc: int | None) -> bool:
    graph = full_core_graph(crate_src)
    largest = max((len(c) for c in sccs(graph)), default=0)
    arrows = sum(len(v) for v in graph.values())
    line = f"core: {len(graph)} top-level modules, {arrows} arrows, largest cycle group {largest}"
    if max_scc is None:
        print(f"{line} (information)")
        return True
    ok = largest <= max_scc
    print(f"{line} (limit {max_scc}{'' if ok else ': EXCEEDED'})")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--python-root",
        type=Path,
        default=ROOT / "python" / "yuyao",
        help="the Python package directory to check (default python/yuyao)",
    )
    parser.add_argument(
        "--core-src",
        type=Path,
        default=ROOT / "rust" / "core" / "src",
        help="the crate whose modules are counted (default rust/core/src)",
    )
    parser.add_argument(
        "--max-core-scc",
        type=int,
        metavar="N",
        help="fail when the core's largest group of mutually importing modules exceeds N",
    )
    parser.add_argument(
        "--max-kernel-arrows",
        type=int,
        metavar="N",
        help="fail when more than N arrows go from a kernel module into a registered feature",
    )
    parser.add_argument(
        "--max-kernel-lines",
        type=int,
        metavar="N",
        help="fail when the kernel's modules (with lib.rs) hold more than N lines",
    )
    parser.add_argument(
        "--metadata",
        type=Path,
        metavar="FILE",
        help="read cargo metadata's JSON from FILE instead of running cargo",
    )
    parser.add_argument(
        "--skip-crates",
        action="store_true",
        help="do not run cargo metadata (the crate graph is not checked)",
    )
    args = parser.parse_args(argv)
    ok = True
    if args.metadata is not None:
        ok &= check_crates(json.loads(args.metadata.read_text(encoding="utf-8")))
    elif not args.skip_crates:
        ok &= check_crates(cargo_metadata())
    ok &= check_python(args.python_root.resolve())
    ok &= check_core(args.core_src.resolve(), args.max_core_scc)
    ok &= check_kernel(args.core_src.resolve(), args.max_kernel_arrows, args.max_kernel_lines)
    print(
        "import graph: ok" if ok else "import graph: FAILED", file=sys.stdout if ok else sys.stderr
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
