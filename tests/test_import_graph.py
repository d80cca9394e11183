"""The import graph check (scripts/import_graph.py, the `imports` stage of .ci/run): the workspace
as it is passes, and a cycle planted in a copy (a crate's dev-dependency, a Python module's
top-level, deferred or type-only import) fails it and is named. Also: the TUI's parts reach the
App only through the interfaces of python/yuyao/tui/actions.py, and the App has all of them."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "import_graph.py"
PACKAGE = ROOT / "python" / "yuyao"
TUI = PACKAGE / "tui"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def copy_package(tmp_path: Path) -> Path:
    dest = tmp_path / "yuyao"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return dest


def plant(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_the_workspace_has_no_import_cycle():
    result = run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "crates: " in result.stdout and "no cycle" in result.stdout
    assert re.search(r"python: \d+ modules, \d+ arrows, no cycle", result.stdout)
    assert re.search(
        r"core: \d+ top-level modules, \d+ arrows, largest cycle group \d+", result.stdout
    )


def test_a_planted_python_cycle_is_caught_and_named(tmp_path):
    root = copy_package(tmp_path)
    assert run("--skip-crates", "--python-root", str(root)).returncode == 0
    # A type-only import back to the App: the cycle the TUI's parts used to have.
    plant(root / "tui" / "settings.py", "\nif TYPE_CHECKING:\n    from .app import App\n")
    result = run("--skip-crates", "--python-root", str(root))
    assert result.returncode == 1
    assert "python: import cycle among 2: yuyao.tui.app, yuyao.tui.settings" in result.stdout
    assert "yuyao.tui.app -> yuyao.tui.settings -> yuyao.tui.app" in result.stdout
    assert "import graph: FAILED" in result.stderr


def test_a_deferred_import_in_a_function_is_still_a_cycle(tmp_path):
    root = copy_package(tmp_path)
    # headless imports stream_json, which imports print_handler: a function-level import of
    # headless from print_handler closes a loop of three, through two modules' `from yuyao...`.
    plant(root / "print_handler.py", "\n\ndef _late():\n    from yuyao import headless\n")
    result = run("--skip-crates", "--python-root", str(root))
    assert result.returncode == 1
    assert "yuyao.headless, yuyao.print_handler" in result.stdout


def test_relative_imports_are_resolved(tmp_path):
    root = copy_package(tmp_path)
    # `from .. import background` in tui/theme.py names yuyao.background, which imports theme.
    plant(root / "tui" / "theme.py", "\n\ndef _late():\n    from .. import background\n")
    result = run("--skip-crates", "--python-root", str(root))
    assert result.returncode == 1
    assert "yuyao.background" in result.stdout and "yuyao.tui.theme" in result.stdout


def metadata(deps: dict[str, list[tuple[str, str | None]]]) -> dict:
    """A cargo metadata document for workspace crates name -> [(dependency, kind)]."""
    packages = [
        {
            "name": name,
            "id": f"path+file:///w/{name}#0.1.0",
            "dependencies": [{"name": d, "kind": kind} for d, kind in wanted]
            + [{"name": "serde", "kind": None}],
        }
        for name, wanted in deps.items()
    ]
    return {"packages": packages, "workspace_members": [p["id"] for p in packages]}


def test_a_dev_dependency_cycle_between_crates_fails(tmp_path):
    meta = tmp_path / "metadata.json"
    meta.write_text(json.dumps(metadata({"a": [("b", None)], "b": [("c", "build")], "c": []})))
    result = run("--metadata", str(meta))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "crates: 3 workspace crates, 2 arrows (0 dev-only), no cycle" in result.stdout
    meta.write_text(json.dumps(metadata({"a": [("b", None)], "b": [("a", "dev")], "c": []})))
    result = run("--metadata", str(meta))
    assert result.returncode == 1
    assert "crates: import cycle among 2: a, b" in result.stdout
    assert "crates: dev-dependency arrows: b -> a" in result.stdout


def test_max_core_scc_pins_the_core_cycle_group():
    largest = int(re.search(r"largest cycle group (\d+)", run("--skip-crates").stdout).group(1))
    assert largest > 1  # the core still has one (its split is later work): the pin is real
    assert run("--skip-crates", "--max-core-scc", str(largest)).returncode == 0
    tighter = run("--skip-crates", "--max-core-scc", str(largest - 1))
    assert tighter.returncode == 1
    assert f"(limit {largest - 1}: EXCEEDED)" in tighter.stdout


def test_core_arrows_follow_crate_super_groups_and_inline_modules(tmp_path):
    src = tmp_path / "src"
    (src / "b").mkdir(parents=True)
    (src / "lib.rs").write_text("mod a;\nmod b;\nmod c;\nmod d;\npub use d::{Thing, Other};\n")
    # a -> b through a group, and -> d through lib.rs's re-export; the comment and the string
    # name c but are no arrows.
    (src / "a.rs").write_text(
        'use crate::{b::x, Thing};\n// crate::c::y\nconst S: &str = "crate::c::z";\n'
    )
    # b/inner.rs: super:: is b itself, super::super:: the root, so -> c.
    (src / "b" / "mod.rs").write_text("mod inner;\n")
    (src / "b" / "inner.rs").write_text("use super::thing;\nuse super::super::c::Y;\n")
    # c's inline test module: its super:: is c, not the root; c -> a through crate::.
    (src / "c.rs").write_text("fn f() { crate::a::g() }\nmod tests {\n    use super::d;\n}\n")
    (src / "d.rs").write_text("pub struct Thing;\npub struct Other;\n")
    result = run("--skip-crates", "--core-src", str(src), "--max-core-scc", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    # a -> b, a -> d, b -> c, c -> a: one group of three, four arrows.
    assert "core: 4 top-level modules, 4 arrows, largest cycle group 3 (limit 3)" in result.stdout


def test_a_call_of_a_session_method_defined_elsewhere_is_an_arrow(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "lib.rs").write_text("mod a;\nmod b;\nmod session;\n")
    (src / "session.rs").write_text("pub struct Session;\n")
    # b defines a method of the session; a calls it with no `use` of b: a -> b. `len` is
    # defined nowhere in an `impl Session`, so `v.len()` is no arrow.
    (src / "b.rs").write_text(
        "impl crate::session::Session {\n    pub(crate) fn skill_triggers(&self) {}\n}\n"
    )
    (src / "a.rs").write_text(
        "fn f(s: &crate::session::Session, v: Vec<u8>) {\n"
        "    s.skill_triggers();\n    let _ = v.len();\n}\n"
    )
    result = run("--skip-crates", "--core-src", str(src))
    assert result.returncode == 0, result.stdout + result.stderr
    # a -> session (path), a -> b (method), b -> session (path).
    assert "core: 3 top-level modules, 3 arrows" in result.stdout


def test_an_arrow_from_the_kernel_into_a_registered_feature_is_counted_and_pinned(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "lib.rs").write_text(
        "mod entry;\nmod feature;\nmod memory;\nmod turn;\n"
        "static FEATURES: &[&feature::Feature] = &[&memory::FEATURE];\n"
    )
    (src / "feature.rs").write_text("pub struct Feature;\n")
    # The feature names the kernel (fine); the kernel's turn names the feature (counted); an
    # entrance nobody names may start the feature (not counted).
    (src / "memory.rs").write_text(
        "pub static FEATURE: crate::feature::Feature = crate::feature::Feature;\nfn f() { crate::turn::g() }\n"
    )
    (src / "turn.rs").write_text("pub fn g() {}\nfn h() { crate::memory::f() }\n")
    (src / "entry.rs").write_text("fn run() { crate::memory::f() }\n")
    info = run("--skip-crates", "--core-src", str(src))
    assert info.returncode == 0, info.stdout + info.stderr
    assert "features registered, entrances entry; 1 arrows from the kernel" in info.stdout
    # The kernel's lines: turn.rs, feature.rs and lib.rs (the feature and entrance are not).
    assert "kernel: 2 modules (8 lines with lib.rs)" in info.stdout
    over = run("--skip-crates", "--core-src", str(src), "--max-kernel-lines", "7")
    assert over.returncode == 1
    assert "kernel lines 8 (limit 7: EXCEEDED)" in over.stdout
    assert "  turn -> memory" in info.stdout
    assert run("--skip-crates", "--core-src", str(src), "--max-kernel-arrows", "1").returncode == 0
    tighter = run("--skip-crates", "--core-src", str(src), "--max-kernel-arrows", "0")
    assert tighter.returncode == 1
    assert "(limit 0: EXCEEDED)" in tighter.stdout


# ---------------------------------------------------------------------------------------------
# The TUI's parts and the App: one narrow door (tui/actions.py)
# ---------------------------------------------------------------------------------------------

PARTS = {"input.py": "ComposerHost", "fullscreen.py": "ScreenHost", "settings.py": "SettingsHost"}


def protocol_members() -> dict[str, set[str]]:
    """Each Protocol of actions.py -> the members it declares, with its bases' members."""
    tree = ast.parse((TUI / "actions.py").read_text(encoding="utf-8"))
    own: dict[str, set[str]] = {}
    bases: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.FunctionDef):
                    names.add(item.name)
            own[node.name] = names
            bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]

    def closed(name: str) -> set[str]:
        return own[name].union(*(closed(b) for b in bases[name] if b in own))

    return {name: closed(name) for name in own}


def app_uses(path: Path) -> set[str]:
    """The members a part reads or calls on the App it was handed (`app.x`, `self.app.x`)."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        holder = node.value
        if (isinstance(holder, ast.Name) and holder.id == "app") or (
            isinstance(holder, ast.Attribute)
            and holder.attr == "app"
            and isinstance(holder.value, ast.Name)
            and holder.value.id == "self"
        ):
            used.add(node.attr)
    return used


def class_members(name: str) -> set[str]:
    """What a class of app.py defines: its methods and properties, and every `self.x = ...`."""
    tree = ast.parse((TUI / "app.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    names = set()
    for item in ast.walk(cls):
        if isinstance(item, ast.FunctionDef) and item in cls.body:
            names.add(item.name)
        targets = (
            item.targets
            if isinstance(item, ast.Assign)
            else [item.target]
            if isinstance(item, ast.AnnAssign)
            else []
        )
        for t in targets:
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
            ):
                names.add(t.attr)
    return names


def test_the_tui_parts_use_only_their_declared_interface():
    members = protocol_members()
    for part, protocol in PARTS.items():
        used = app_uses(TUI / part)
        assert used, f"{part}: no use of the App found (the scan is broken)"
        undeclared = used - members[protocol]
        assert not undeclared, f"{part} uses {sorted(undeclared)}, not declared in {protocol}"
        source = (TUI / part).read_text(encoding="utf-8")
        assert not re.search(r"from \.app import|from yuyao\.tui\.app import", source)


def test_the_app_implements_every_interface_of_its_parts():
    members = class_members("App")
    protocols = protocol_members()
    for protocol, declared in protocols.items():
        if protocol == "TurnRelay":
            continue  # the App's handler (app.Handler) is the relay
        missing = declared - members
        assert not missing, f"App lacks {sorted(missing)} of {protocol}"
    missing = protocols["TurnRelay"] - class_members("Handler")
    assert not missing, f"app.Handler lacks {sorted(missing)} of TurnRelay"
