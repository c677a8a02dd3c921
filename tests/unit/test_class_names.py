"""One name per thing: no two classes in ``iaccode/`` share a name, read from the source with
``ast`` (nested classes too), so a reader who meets a class name knows which one it is."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def class_definitions(package: Path) -> dict[str, list[str]]:
    """Class name -> where each class of that name is defined (``path:line``)."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def test_no_two_classes_share_a_name() -> None:
    shared = {
        name: places
        for name, places in class_definitions(ROOT / "iaccode").items()
        if len(places) > 1
    }
    assert shared == {}


def test_the_reader_finds_nested_and_repeated_classes(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("class Thing:\n    class Inner:\n        pass\n")
    (package / "sub" / "b.py").write_text("def f():\n    class Thing:\n        pass\n")
    assert class_definitions(package) == {
        "Thing": ["pkg/a.py:1", "pkg/sub/b.py:2"],
        "Inner": ["pkg/a.py:2"],
    }
