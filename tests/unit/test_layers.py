"""Which code may import which: the layers, read from the source with ``ast``.

Every import counts, wherever it is: at module level, inside a function (the lazy imports of
heavy libraries) and under ``if TYPE_CHECKING:``. A failure names the file, the line and the
import. :data:`LAYERS` is the order, written once (docs/architecture.md says what each layer
is): every top-level module and package of ``iaccode`` is in it, and each may import its own
layer and those below it, never one above.
The rules after it say what the order alone does not: only ``server`` (and ``remote``) speak
JSON-RPC; ``protocol`` is ACP's messages, no I/O; ``store`` and ``protocol`` use only the leaf
modules; ``llm`` knows nothing of ACP or JSON-RPC. ``conformance/`` is a suite people run on
any agent, so it stands alone.
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
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, *([base] if base else [])])
            modules = dict.fromkeys(  # each module once per statement, in order
                f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}", root) else base
                for alias in node.names
            )
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
    exempt: tuple[str, ...] = ()
    """Files (relative to the repository) the rule does not apply to."""

    def offences(self, root: Path = ROOT) -> list[Import]:
        leaves = leaf_modules(root) if self.leaves else frozenset()
        return [
            item
            for folder in self.folders
            for path in sorted((root / folder).rglob("*.py"))
            if path.relative_to(root).as_posix() not in self.exempt
            for item in imports(path, root)
            if any(_under(item.module, prefix) for prefix in self.forbidden)
            and not any(_under(item.module, prefix) for prefix in self.allowed)
            and item.module not in leaves
        ]


def bottom(package: str) -> Rule:
    """``iaccode/<package>/`` imports nothing of iaccode but itself and the leaf modules."""
    return Rule((f"iaccode/{package}",), ("iaccode",), (f"iaccode.{package}",), leaves=True)


LAYERS: tuple[tuple[str, ...], ...] = (
    ("cli", "__main__", "login", "preload"),  # the entry points: the command line, its helpers
    ("remote",),  # iaccode serve: ACP over HTTP and WebSocket, one server per connection
    ("server",),  # the composition root: the JSON-RPC methods, the provider built, stdio
    ("session",),  # one ACP session: its turns, its editor, its store, its MCP servers
    ("turn",),  # one prompt's loop: model requests, permissions, tool calls run
    ("transcript",),  # --record and replay: sessions written down and played back
    ("config",),  # the frozen Config from config.toml, the environment and the command line
    ("context",),  # the system prompt's sections: environment, git, instructions
    ("mcp",),  # MCP servers: their connections, and their tools as ours
    ("tools",),  # the tools the model calls, and what they get to work with
    ("gate",),  # the gates in front of every infrastructure CLI, and their channel
    ("iac",),  # IaC knowledge: the CLIs' tables, the readers, the checks, the credentials
    ("host",),  # the machine: local files, process trees, /proc, .gitignore, ripgrep
    ("tool_result",),  # what a tool call ends in: a result or a failure for the model
    ("llm",),  # the model providers: presets, requests, streams, prices
    ("store",),  # sessions on disk
    ("protocol",),  # ACP's messages, plain data
    ("wire",),  # JSON-RPC over newline-delimited streams, nothing of ACP
    # The stdlib-only helpers, each above those it uses:
    ("logs",),  # logging to stderr and the log file, secrets redacted
    ("process_secrets",),  # our own environment, emptied of its secrets once read
    ("redaction",),  # secret values replaced in any text
    ("secret_env",),  # which environment variables hold credentials
    ("secret_files",),  # which files hold secrets, by their names
    ("printable",),  # text from the model or a server made safe to show
    ("private_files",),  # files and folders only the user can read
    ("installed",),  # programs the user installed: on the PATH, never in the project
    ("choices",),  # the modes and thinking levels
    ("checks",),  # checks of parsed JSON and TOML data, with messages a person acts on
    ("__init__",),  # the package itself: its version
)
"""The layers of ``iaccode``, top to bottom: a top-level module or package may import its own
layer and any below it. docs/architecture.md describes each."""


def layer_of(module: str) -> str:
    """The layer name of an ``iaccode`` module: its top-level package or module (``__init__``
    for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def top_level(root: Path = ROOT) -> list[str]:
    """The top-level modules and packages of ``iaccode`` (layer names, as in :data:`LAYERS`)."""
    package = root / "iaccode"
    return sorted(
        path.stem if path.is_file() else path.name
        for path in package.iterdir()
        if (path.suffix == ".py" and path.is_file()) or (path / "__init__.py").is_file()
    )


def unplaced(layers: tuple[tuple[str, ...], ...] = LAYERS, root: Path = ROOT) -> list[str]:
    """What the order and the tree disagree on: modules not in it, and names of it with no
    module."""
    placed = {name for layer in layers for name in layer}
    found = set(top_level(root))
    return [
        f"iaccode/{name}: place it in LAYERS (tests/unit/test_layers.py), above what it "
        f"imports and below what imports it"
        for name in sorted(found - placed)
    ] + [f"LAYERS names {name}, which iaccode does not have" for name in sorted(placed - found)]


def upward_imports(layers: tuple[tuple[str, ...], ...] = LAYERS, root: Path = ROOT) -> list[str]:
    """Every import of ``iaccode`` that points to a layer above the importing one."""
    rank = {name: index for index, layer in enumerate(layers) for name in layer}
    found = []
    for path in sorted((root / "iaccode").rglob("*.py")):
        source = layer_of(".".join(path.relative_to(root).with_suffix("").parts))
        for item in imports(path, root):
            if not _under(item.module, "iaccode"):
                continue
            target = layer_of(item.module)
            if source in rank and target in rank and rank[target] < rank[source]:
                found.append(f"{item}: {source} may not import {target}, a layer above it")
    return found


def all_but(*packages: str) -> tuple[str, ...]:
    """The folders of every package of ``iaccode`` in :data:`LAYERS` but ``packages``."""
    return tuple(
        f"iaccode/{name}"
        for layer in LAYERS
        for name in layer
        if name not in packages and (ROOT / "iaccode" / name).is_dir()
    )


RULES = {
    "only server and remote speak JSON-RPC: nothing else imports wire": Rule(
        all_but("server", "remote", "wire"), ("iaccode.wire",)
    ),
    "conformance imports nothing of iaccode or tests": Rule(("conformance",), ("iaccode", "tests")),
    "protocol imports nothing of iaccode but the leaf modules": bottom("protocol"),
    "store imports nothing of iaccode but the leaf modules": bottom("store"),
    "llm knows nothing of ACP or JSON-RPC": Rule(
        ("iaccode/llm",), ("iaccode.protocol", "iaccode.wire")
    ),
    "gate knows the iac tables and the machine, not the model or JSON-RPC": Rule(
        ("iaccode/gate",), ("iaccode.llm", "iaccode.wire")
    ),
    "server and remote build the provider only through server.provider.make_provider": Rule(
        ("iaccode/server", "iaccode/remote"),
        ("iaccode.llm.anthropic_provider", "iaccode.llm.openai_provider", "iaccode.llm.offline"),
        exempt=("iaccode/server/provider.py",),
    ),
    "protocol never imports trio: ACP's messages are plain data, no I/O": Rule(
        ("iaccode/protocol",), ("trio",)
    ),
}


def test_every_top_level_module_has_its_place_in_the_order() -> None:
    problems = unplaced()
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def test_no_import_points_up_the_order() -> None:
    found = upward_imports()
    if found:
        pytest.fail("\n".join(found), pytrace=False)


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
    for package in [
        "iaccode",
        "iaccode/tools",
        "iaccode/tools/search",
        "iaccode/wire",
        "iaccode/session",
    ]:
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
        "    from iaccode.wire import errors, framing\n"
    )
    found = [(item.line, item.module) for item in imports(tools / "probe.py", tmp_path)]
    assert found == [
        (1, "typing"),
        (3, "iaccode.wire.errors"),
        (5, "iaccode.session"),
        (6, "iaccode.server.agent"),
        (7, "iaccode.tools.base"),
        (8, "iaccode.tools.search.rg"),
        (9, "iaccode.tools.base"),
        (10, "iaccode.wire.errors"),
        (10, "iaccode.wire"),
    ]
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
        "from iaccode.config import Config\n"
    )
    assert leaf_modules(tmp_path) == {"iaccode", "iaccode.helpers"}
    assert [str(item) for item in bottom("wire").offences(tmp_path)] == [
        "iaccode/wire/connection.py:4 imports iaccode.config"
    ]


def test_the_order_refuses_an_upward_import_and_an_unplaced_module(tmp_path: Path) -> None:
    package = tmp_path / "iaccode"
    for name in ["tools", "iac"]:
        (package / name).mkdir(parents=True)
        (package / name / "__init__.py").write_text("")
    (package / "__init__.py").write_text("__version__ = '1'\n")
    (package / "checks.py").write_text("")
    (package / "tools" / "base.py").write_text(
        "from iaccode import __version__\nfrom iaccode.iac import reader\nimport iaccode.checks\n"
    )
    (package / "iac" / "reader.py").write_text("")
    (package / "iac" / "diagnostics.py").write_text(
        "import json\nfrom iaccode.iac import reader\nfrom iaccode.tools.base import Tool\n"
    )
    (package / "newcomer.py").write_text("")
    layers = (("tools",), ("iac",), ("checks",), ("__init__",), ("gone",))
    assert upward_imports(layers, tmp_path) == [
        "iaccode/iac/diagnostics.py:3 imports iaccode.tools.base: iac may not import tools, "
        "a layer above it"
    ]
    assert unplaced(layers, tmp_path) == [
        "iaccode/newcomer: place it in LAYERS (tests/unit/test_layers.py), above what it imports "
        "and below what imports it",
        "LAYERS names gone, which iaccode does not have",
    ]
    exempted = Rule(("iaccode/iac",), ("iaccode.tools",), exempt=("iaccode/iac/diagnostics.py",))
    assert exempted.offences(tmp_path) == []
