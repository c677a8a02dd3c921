"""Which code may import which: the layers, read from the source with ``ast``.

Every import counts, wherever it is: at module level, inside a function (the lazy imports of
heavy libraries) and under ``if TYPE_CHECKING:``. A failure names the file, the line and the
import. The layers (README, "Map of the code"): ``wire`` is JSON-RPC and knows nothing of ACP;
``protocol`` is ACP's messages, no I/O; ``store`` is sessions on disk; ``llm`` the providers;
``tools`` act on the workspace and reach the editor only through what ``session`` hands them;
only ``server`` speaks JSON-RPC errors. ``conformance/`` is a suite people run on any agent, so
it stands alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from attrs import field, frozen

ROOT = Path(__file__).resolve().parents[2]


@frozen
class Import:
    path: Path
    line: int
    module: str
    """The module imported, absolute: ``from iaccode.wire import errors`` and ``from
    iaccode.wire.errors import RpcError`` both import ``iaccode.wire.errors``."""
    root: Path = field(eq=False)

    def __str__(self) -> str:
        return f"{self.path.relative_to(self.root)}:{self.line} imports {self.module}"


def imports(path: Path, root: Path = ROOT) -> Iterator[Import]:
    """Every import in one file, relative ones made absolute."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name, root)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = path.relative_to(root).parts[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            modules = dict.fromkeys(  # each module once per statement, in order
                f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}", root) else base
                for alias in node.names)
            for module in modules:
                yield Import(path, node.lineno, module, root)


def _is_module(dotted: str, root: Path) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def leaf_modules(root: Path = ROOT) -> frozenset[str]:
    """The top-level modules of iaccode that import nothing of iaccode (the package's
    ``__init__``, stdlib-only helpers like ``logs.py``): the bottom layers may use them."""
    leaves = set()
    for path in (root / "iaccode").glob("*.py"):
        if not any(_under(item.module, "iaccode") for item in imports(path, root)):
            leaves.add("iaccode" if path.name == "__init__.py" else f"iaccode.{path.stem}")
    return frozenset(leaves)


@frozen
class Rule:
    folders: tuple[str, ...]
    """Where the importing files are, relative to the repository."""
    forbidden: tuple[str, ...]
    """Modules they must not import, with everything under them."""
    allowed: tuple[str, ...] = ()
    """Exceptions to ``forbidden``, with everything under them."""
    leaves: bool = False
    """The leaf modules (``leaf_modules``) are allowed too."""

    def offences(self, root: Path = ROOT) -> list[Import]:
        leaves = leaf_modules(root) if self.leaves else frozenset()
        return [item
                for folder in self.folders
                for path in sorted((root / folder).rglob("*.py"))
                for item in imports(path, root)
                if any(_under(item.module, prefix) for prefix in self.forbidden)
                and not any(_under(item.module, prefix) for prefix in self.allowed)
                and item.module not in leaves]


def bottom(package: str) -> Rule:
    """``iaccode/<package>/`` imports nothing of iaccode but itself and the leaf modules."""
    return Rule((f"iaccode/{package}",), ("iaccode",), (f"iaccode.{package}",), leaves=True)



RULES = {
    "tools, turn and session do not import wire: only server speaks JSON-RPC": Rule(
        ("iaccode/tools", "iaccode/turn", "iaccode/session"), ("iaccode.wire",)),
    "tools do not import session, server or turn": Rule(
        ("iaccode/tools",), ("iaccode.session", "iaccode.server", "iaccode.turn")),
    "conformance imports nothing of iaccode or tests": Rule(
        ("conformance",), ("iaccode", "tests")),
    "wire imports nothing above it: it knows nothing of ACP": bottom("wire"),
    "protocol imports nothing above it": bottom("protocol"),
    "store imports nothing above it": bottom("store"),
    # config and transcript are not above llm: make_provider reads the Config and wraps the
    # provider for --record (and plays a recorded transcript's model answers).
    "llm imports nothing above it": Rule(
        ("iaccode/llm",),
        ("iaccode.server", "iaccode.remote", "iaccode.cli", "iaccode.session", "iaccode.turn",
         "iaccode.tools", "iaccode.mcp", "iaccode.context", "iaccode.iac", "iaccode.wire",
         "iaccode.protocol")),
    "server and remote build the provider only through llm.providers.make_provider": Rule(
        ("iaccode/server", "iaccode/remote"),
        ("iaccode.llm.anthropic_provider", "iaccode.llm.openai_provider", "iaccode.llm.offline",
         "iaccode.llm.script")),
    "protocol never imports trio: ACP's messages are plain data, no I/O": Rule(
        ("iaccode/protocol",), ("trio",)),
    "gate sits below tools and turn: it knows the iac tables and the /proc reader only": Rule(
        ("iaccode/gate",),
        ("iaccode.tools", "iaccode.turn", "iaccode.session", "iaccode.server", "iaccode.remote",
         "iaccode.mcp", "iaccode.llm", "iaccode.context", "iaccode.transcript", "iaccode.wire"),
        ("iaccode.host.procfs",)),
}


def test_the_gate_program_imports_only_what_starts_fast() -> None:
    """The gate runs before every infrastructure CLI: the interpreter's built-in modules only
    (and subprocess for a handler's helper command, imported when one is asked for)."""
    found = {item.module for item in imports(ROOT / "iaccode" / "gate" / "shim.py")}
    assert found <= {"sys", "posix", "marshal", "_socket", "_json", "subprocess"}, found


@pytest.mark.parametrize("rule", RULES.values(), ids=RULES.keys())
def test_layer(rule: Rule) -> None:
    found = rule.offences()
    if found:
        pytest.fail("\n".join(map(str, found)), pytrace=False)


# -- the reader itself, on a tree of its own ---------------------------------------------------


def test_every_import_counts_and_is_named_by_file_and_line(tmp_path: Path) -> None:
    tools = tmp_path / "iaccode" / "tools"
    for package in ["iaccode", "iaccode/tools", "iaccode/host/search", "iaccode/wire",
                    "iaccode/session"]:
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tools / "base.py").write_text("")
    (tools / "search" / "rg.py").write_text("")
    (tmp_path / "iaccode" / "wire" / "errors.py").write_text("")
    (tools / "probe.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from iaccode.wire.errors import RpcError\n"
        "def f():\n"
        "    from iaccode import session\n"
        "    import iaccode.server.agent\n"
        "    from . import base\n"
        "    from .search import rg\n"
        "    from .base import Tool, ToolResult\n"
        "    from iaccode.wire import errors, framing\n")
    found = [(item.line, item.module) for item in imports(tools / "probe.py", tmp_path)]
    assert found == [(1, "typing"), (3, "iaccode.wire.errors"), (5, "iaccode.session"),
                     (6, "iaccode.server.agent"), (7, "iaccode.tools.base"),
                     (8, "iaccode.host.search.rg"), (9, "iaccode.tools.base"),
                     (10, "iaccode.wire.errors"), (10, "iaccode.wire")]
    rule = Rule(("iaccode/tools",), ("iaccode.session", "iaccode.server", "iaccode.wire"))
    assert [str(item) for item in rule.offences(tmp_path)] == [
        "iaccode/tools/probe.py:3 imports iaccode.wire.errors",
        "iaccode/tools/probe.py:5 imports iaccode.session",
        "iaccode/tools/probe.py:6 imports iaccode.server.agent",
        "iaccode/tools/probe.py:10 imports iaccode.wire.errors",
        "iaccode/tools/probe.py:10 imports iaccode.wire",
    ]


def test_a_bottom_layer_may_use_only_itself_and_the_leaf_modules(tmp_path: Path) -> None:
    package = tmp_path / "iaccode"
    (package / "wire").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '1'\n")
    (package / "helpers.py").write_text("import json\n")  # a leaf
    (package / "config.py").write_text("from iaccode import helpers\n")  # not a leaf
    (package / "wire" / "__init__.py").write_text("")
    (package / "wire" / "framing.py").write_text("")
    (package / "wire" / "connection.py").write_text(
        "from iaccode import __version__\n"
        "from iaccode.helpers import x\n"
        "from iaccode.wire.framing import LineReader\n"
        "from iaccode.config import Config\n")
    assert leaf_modules(tmp_path) == {"iaccode", "iaccode.helpers"}
    assert [str(item) for item in bottom("wire").offences(tmp_path)] == [
        "iaccode/wire/connection.py:4 imports iaccode.config"]
