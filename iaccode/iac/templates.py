"""Reading ROS and CloudFormation templates (YAML or JSON), and Kubernetes-style YAML.

PyYAML is imported on first use. The loader is a ``SafeLoader`` that knows the short-form
intrinsic functions (``!Ref Vpc``, ``!GetAtt Vpc.VpcId``, ``!Sub``, ``!Join``, ...: each becomes
its long form, ``{"Ref": "Vpc"}``), and keeps line numbers: every mapping it builds is a
:class:`Located` dict that knows the line of each of its keys.

JSON is checked with :mod:`json` first (its errors give line and column), then read with the
same loader (JSON is YAML), for the line numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from iaccode.iac.parse_error import ParseError, TooDeep, check_depth

ROS_VERSIONS = frozenset({"2015-09-01"})
AWS_VERSIONS = frozenset({"2010-09-09"})
TEMPLATE_SUFFIXES = (".yaml", ".yml", ".json", ".template")
_LOADER: Any = None


class Located(dict[Any, Any]):
    """A mapping from a template, with the 1-based line of itself and of each key."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


def _loader() -> Any:
    """The SafeLoader subclass (built once, on first use: it imports yaml)."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    class TemplateLoader(yaml.SafeLoader):
        pass

    def mapping(loader: Any, node: Any, deep: bool = False) -> Located:
        loader.flatten_mapping(node)
        located = Located()
        located.line = node.start_mark.line + 1
        located.key_lines = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool) and key is not None:
                key = str(key)
            located[key] = loader.construct_object(value_node, deep=True)
            located.key_lines[key] = key_node.start_mark.line + 1
        return located

    def intrinsic(loader: Any, suffix: str, node: Any) -> Located:
        name = (
            "Ref" if suffix == "Ref" else "Condition" if suffix == "Condition" else f"Fn::{suffix}"
        )
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if suffix == "GetAtt" and isinstance(value, str):
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = mapping(loader, node)
        located = Located({name: value})
        located.line = node.start_mark.line + 1
        located.key_lines = {name: located.line}
        return located

    TemplateLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    TemplateLoader.add_multi_constructor("!", intrinsic)
    _LOADER = TemplateLoader
    return _LOADER


def load_documents(text: str, name: str) -> list[Any]:
    """Every document in the file (one for JSON). Raises ParseError with the line (also for
    a file nested too deep to parse: flow brackets are counted first, and the block style's
    ``- - - x`` ends in a RecursionError here, not in the caller)."""
    import yaml

    check_depth(text)
    if name.endswith(".json"):
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(exc.lineno, exc.colno, f"not valid JSON: {exc.msg}") from None
    try:
        return list(yaml.load_all(text, Loader=_loader()))  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        problem = exc.problem or "a syntax error"
        if exc.context:
            problem += f" ({exc.context})"
        if "<block end>" in problem or "indentation" in problem:
            problem += "; check the indentation of this line and the one before"
        raise ParseError(line, column, f"not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ParseError(0, 0, f"not valid YAML: {exc}") from None
    except RecursionError:
        raise TooDeep(0, 0, "nested too deep to read") from None


def template_family(document: Any) -> str | None:
    """ "ros", "cloudformation", or None when ``document`` is not such a template."""
    if not isinstance(document, dict):
        return None
    if "ROSTemplateFormatVersion" in document:
        return "ros"
    if "AWSTemplateFormatVersion" in document:
        return "cloudformation"
    resources = document.get("Resources")
    if isinstance(resources, dict):
        types = [r.get("Type") for r in resources.values() if isinstance(r, dict)]
        if any(isinstance(t, str) and t.startswith("ALIYUN::") for t in types):
            return "ros"
        if any(isinstance(t, str) and t.startswith("AWS::") for t in types):
            return "cloudformation"
    return None


def section(document: dict[str, Any], name: str) -> dict[str, Any]:
    value = document.get(name)
    return value if isinstance(value, dict) else {}


def walk(value: Any) -> Iterator[Located]:
    """Every mapping in ``value``, depth first, each once (YAML aliases share objects: a
    "billion laughs" template must not be walked a billion times)."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, Located):
            yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def kube_objects(documents: list[Any]) -> list[tuple[str, str]]:
    """(kind, name) of each Kubernetes object in the documents (``List`` items too)."""
    found: list[tuple[str, str]] = []
    for document in documents:
        if not isinstance(document, dict):
            continue
        if document.get("kind") == "List" and isinstance(document.get("items"), list):
            found.extend(kube_objects(document["items"]))
        elif isinstance(document.get("kind"), str) and "apiVersion" in document:
            metadata = document.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            found.append((document["kind"], str(name) if name is not None else "?"))
    return found
