"""The values infrastructure files mark secret, read out of them (pure; no I/O).

    document_values(doc, sensitive_variables)  a state (file or ``state pull``), a ``show
                                               -json`` of a plan or a state, ``output -json``
    tfvars_values(data, names)                 a ``*.tfvars``'s values of sensitive variables
    template_values(doc)                       ROS / CloudFormation ``NoEcho`` defaults
    parameter_values(doc, names)               a CloudFormation parameter file's NoEcho ones
    sensitive_names(tf_text)                   the variables and outputs a ``.tf`` file marks

What counts is what Terraform itself marks: ``sensitive: true`` outputs, the state's
``sensitive_attributes`` paths, a plan's ``before_sensitive`` / ``after_sensitive`` /
``sensitive_values`` masks, variables declared ``sensitive = true``; and the ``NoEcho``
parameters of ROS and CloudFormation templates. A value is given as the strings it holds (a
map's or a list's leaves); numbers and booleans are not (too short to hide by value).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

MIN_CHARS = 4
"""Shorter strings are not hidden by value: ``"1"`` or ``"yes"`` would blank half the text."""


def leaves(value: Any) -> Iterator[str]:
    """The strings ``value`` holds, however nested."""
    if isinstance(value, str):
        if len(value) >= MIN_CHARS:
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)


def masked(value: Any, mask: Any) -> Iterator[str]:
    """The strings of ``value`` that ``mask`` (Terraform's ``sensitive_values`` shape: true,
    or an object / array of masks) marks."""
    if mask is True:
        yield from leaves(value)
    elif isinstance(mask, dict) and isinstance(value, dict):
        for key, inner in mask.items():
            if key in value:
                yield from masked(value[key], inner)
    elif isinstance(mask, list) and isinstance(value, list):
        for item, inner in zip(value, mask, strict=False):
            yield from masked(item, inner)


def document_values(document: Any, sensitive_variables: Iterable[str] = ()) -> set[str]:
    """The sensitive values of a Terraform JSON document, whichever it is: a state, a ``show
    -json`` of a plan or of a state, ``output -json``. ``sensitive_variables``: variable
    names declared sensitive (their values in a plan's ``variables``)."""
    found: set[str] = set()
    if not isinstance(document, dict):
        return found
    if isinstance(document.get("resources"), list) or "lineage" in document:
        _state(document, found)
    if "format_version" in document:
        _shown(document, found, set(sensitive_variables))
    elif document and all(
        isinstance(v, dict) and "sensitive" in v and "value" in v for v in document.values()
    ):
        for output in document.values():  # output -json
            if output.get("sensitive") is True:
                found.update(leaves(output.get("value")))
    return found


def _state(state: dict[str, Any], found: set[str]) -> None:
    """A state file (``terraform.tfstate``, ``state pull``), format version 4."""
    for output in (state.get("outputs") or {}).values():
        if isinstance(output, dict) and output.get("sensitive") is True:
            found.update(leaves(output.get("value")))
    for resource in state.get("resources") or []:
        if not isinstance(resource, dict):
            continue
        for instance in resource.get("instances") or []:
            if not isinstance(instance, dict):
                continue
            attributes = instance.get("attributes")
            for path in instance.get("sensitive_attributes") or []:
                found.update(leaves(_at_path(attributes, path)))


def _typed(value: Any) -> Any:
    """Terraform 1.15 writes some attributes as ``{"value": ..., "type": ...}``."""
    if isinstance(value, dict) and set(value) == {"value", "type"}:
        return value["value"]
    return value


def _at_path(value: Any, path: Any) -> Any:
    """The part of a state instance's attributes that a ``sensitive_attributes`` path names
    (``[{"type": "get_attr", "value": "password"}, {"type": "index", ...}]``)."""
    if not isinstance(path, list):
        return None
    value = _typed(value)
    for step in path:
        if not isinstance(step, dict):
            return None
        key = _typed(step.get("value"))
        if step.get("type") == "get_attr" and isinstance(value, dict):
            value = _typed(value.get(key))
        elif step.get("type") == "index" and isinstance(value, list) and isinstance(key, int):
            value = _typed(value[key]) if 0 <= key < len(value) else None
        elif step.get("type") == "index" and isinstance(value, dict):
            value = _typed(value.get(key))
        else:
            return None
    return value


def _shown(document: dict[str, Any], found: set[str], variables: set[str]) -> None:
    """``show -json``: a plan (``planned_values``, ``resource_changes``, ...) or a state
    (``values``)."""
    configuration = (document.get("configuration") or {}).get("root_module") or {}
    declared = configuration.get("variables") or {}
    variables |= {
        name
        for name, body in declared.items()
        if isinstance(body, dict) and body.get("sensitive") is True
    }
    for name in variables:
        found.update(leaves(((document.get("variables") or {}).get(name) or {}).get("value")))
        found.update(leaves((declared.get(name) or {}).get("default")))
    for key in ("values", "planned_values"):
        _values(document.get(key), found)
    _values((document.get("prior_state") or {}).get("values"), found)
    for change in document.get("resource_changes") or []:
        if isinstance(change, dict):
            _change(change.get("change"), found)
    for change in (document.get("output_changes") or {}).values():
        _change(change, found)


def _values(values: Any, found: set[str]) -> None:
    if not isinstance(values, dict):
        return
    for output in (values.get("outputs") or {}).values():
        if isinstance(output, dict) and output.get("sensitive") is True:
            found.update(leaves(output.get("value")))
    _module(values.get("root_module"), found)


def _module(module: Any, found: set[str]) -> None:
    if not isinstance(module, dict):
        return
    for resource in module.get("resources") or []:
        if isinstance(resource, dict):
            found.update(masked(resource.get("values"), resource.get("sensitive_values")))
    for child in module.get("child_modules") or []:
        _module(child, found)


def _change(change: Any, found: set[str]) -> None:
    if isinstance(change, dict):
        found.update(masked(change.get("before"), change.get("before_sensitive")))
        found.update(masked(change.get("after"), change.get("after_sensitive")))


def tfvars_values(data: Any, names: Iterable[str]) -> set[str]:
    """The values a parsed ``*.tfvars`` (or ``.tfvars.json``) gives the variables ``names``."""
    if not isinstance(data, dict):
        return set()
    return {value for name in names if name in data for value in leaves(data[name])}


def template_values(document: Any) -> set[str]:
    """The ``Default`` of each ``NoEcho`` parameter of a ROS / CloudFormation template."""
    return {
        value
        for parameter in _noecho(document).values()
        for value in leaves(parameter.get("Default"))
    }


def noecho_names(document: Any) -> set[str]:
    return set(_noecho(document))


def _noecho(document: Any) -> dict[str, dict[str, Any]]:
    parameters = document.get("Parameters") if isinstance(document, dict) else None
    if not isinstance(parameters, dict):
        return {}
    return {
        str(name): body
        for name, body in parameters.items()
        if isinstance(body, dict) and str(body.get("NoEcho")).lower() == "true"
    }


def parameter_values(document: Any, names: Iterable[str]) -> set[str]:
    """A CloudFormation / ROS parameter file's values for the parameters ``names``:
    ``[{"ParameterKey": k, "ParameterValue": v}]`` or ``{"Parameters": {k: v}}``."""
    wanted = set(names)
    if isinstance(document, list):
        return {
            value
            for item in document
            if isinstance(item, dict) and item.get("ParameterKey") in wanted
            for value in leaves(item.get("ParameterValue"))
        }
    if isinstance(document, dict) and isinstance(document.get("Parameters"), dict):
        return {
            value
            for key, item in document["Parameters"].items()
            if key in wanted
            for value in leaves(item)
        }
    return set()


_BLOCK = re.compile(r'^\s*(variable|output)\s+"([^"]+)"\s*\{', re.MULTILINE)
_SENSITIVE = re.compile(r"^\s*sensitive\s*=\s*true\b", re.MULTILINE)


def sensitive_names(text: str) -> tuple[set[str], set[str]]:
    """(variables, outputs) a ``.tf`` file declares ``sensitive = true``: read from the text
    (a block's body is to its closing brace), so no HCL parser runs over every file."""
    variables: set[str] = set()
    outputs: set[str] = set()
    for found in _BLOCK.finditer(text):
        body = _body(text, found.end())
        if _SENSITIVE.search(body):
            (variables if found.group(1) == "variable" else outputs).add(found.group(2))
    return variables, outputs


def _body(text: str, start: int) -> str:
    """The text from ``start`` (just inside a ``{``) to its closing brace, strings skipped."""
    depth, index, quote = 1, start, False
    while index < len(text) and depth:
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == '"':
                quote = False
        elif char == '"':
            quote = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        index += 1
    return text[start:index]
