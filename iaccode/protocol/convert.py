"""The one cattrs converter: camelCase on the wire, snake_case in Python, and strict.

Strict means no silent coercion: ``"5"`` where an integer belongs is an error, not 5, and
``1`` is not a boolean. ``None`` fields are omitted on output; unknown input fields are ignored
(the peer may be newer than us). Structuring errors become a dict that maps the wire path of
each bad field (``params.sessionId``) to what is wrong with it, ready for a -32602 ``data``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, get_args

import attrs
import cattrs
from cattrs.cols import is_sequence, list_structure_factory
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from iaccode.checks import is_number, type_name
from iaccode.protocol.content import (
    CONTENT_TYPES,
    BlobResourceContents,
    ContentBlock,
    ResourceContents,
    TextContent,
    TextResourceContents,
)
from iaccode.protocol.tool_calls import (
    PERMISSION_OUTCOMES,
    TOOL_CALL_CONTENT_TYPES,
    DiffContent,
    FlatPermissionOutcome,
    PermissionOutcome,
    ToolCallContent,
)

T = TypeVar("T")


@functools.cache
def wire_name(name: str) -> str:
    """``session_id`` -> ``sessionId``; ``meta`` -> ``_meta`` (ACP's extension field)."""
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _strict(kind: type, expected: str) -> Any:
    def check(value: Any, _: Any) -> Any:
        # bool is an int subclass in Python, never on the wire.
        if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
            return value
        raise TypeError(f"expected {expected}, got {type_name(value)}")

    return check


def _structure_float(value: Any, _: Any) -> float:
    if is_number(value):
        return float(value)
    raise TypeError(f"expected a number, got {type_name(value)}")


def _structure_object(value: Any, _: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise TypeError(f"expected an object, got {type_name(value)}")


def _make_converter(
    rename: Callable[[str], str], forbid_extra_keys: bool = False
) -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=forbid_extra_keys)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(bool, _strict(bool, "a boolean"))
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], _structure_object)

    def renames(cls: type) -> dict[str, Any]:
        # A field's ``wire_name`` metadata overrides the rule (an older shape's snake_case).
        return {
            a.name: override(rename=a.metadata.get("wire_name") or rename(a.name))
            for a in attrs.fields(cls)
        }

    def structure_factory(cls: type) -> Any:
        inner: Any = make_dict_structure_fn(cls, conv, **renames(cls))

        def structure(value: Any, _: Any) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"expected an object, got {type_name(value)}")
            return inner(value, cls)

        return structure

    def unstructure_factory(cls: type) -> Any:
        inner: Any = make_dict_unstructure_fn(cls, conv, **renames(cls))

        def unstructure(obj: Any) -> dict[str, Any]:
            return {k: v for k, v in inner(obj).items() if v is not None}

        return unstructure

    def list_factory(type_: Any) -> Any:
        inner = list_structure_factory(type_, conv)

        def structure(value: Any, _: Any) -> Any:
            if not isinstance(value, list):  # a string is iterable, not an array
                raise TypeError(f"expected an array, got {type_name(value)}")
            return inner(value, type_)

        return structure

    conv.register_structure_hook_factory(is_sequence, list_factory)
    conv.register_structure_hook_factory(attrs.has, structure_factory)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)

    def structure_content(value: Any, _: Any) -> ContentBlock:
        kind = value.get("type") if isinstance(value, dict) else None
        cls = CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            if not isinstance(value, dict):
                raise TypeError(f"expected a content block object, got {type_name(value)}")
            raise ValueError(f"unknown content block type {kind!r}")
        result: ContentBlock = conv.structure(value, cls)
        return result

    def structure_resource(value: Any, _: Any) -> ResourceContents:
        if isinstance(value, dict) and "text" in value:
            return conv.structure(value, TextResourceContents)
        if isinstance(value, dict) and "blob" in value:
            return conv.structure(value, BlobResourceContents)
        raise ValueError("expected resource contents with 'text' or 'blob'")

    def structure_tool_content(value: Any, _: Any) -> Any:
        kind = value.get("type") if isinstance(value, dict) else None
        cls = TOOL_CALL_CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unknown tool call content type {kind!r}")
        return conv.structure(value, cls)

    def structure_permission_outcome(value: Any, _: Any) -> PermissionOutcome:
        if isinstance(value, str):  # the older flat answer
            if value in get_args(FlatPermissionOutcome):
                return value  # type: ignore[return-value]
            raise ValueError(f"unknown outcome {value!r}")
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type_name(value)}")
        kind = value.get("outcome")
        cls = PERMISSION_OUTCOMES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise ValueError(f"unknown outcome {kind!r}")
        outcome: PermissionOutcome = conv.structure(value, cls)
        return outcome

    conv.register_structure_hook_func(
        lambda t: t == PermissionOutcome, structure_permission_outcome
    )
    conv.register_structure_hook_func(lambda t: t == ToolCallContent, structure_tool_content)
    conv.register_structure_hook_func(lambda t: t == ContentBlock, structure_content)
    conv.register_structure_hook_func(lambda t: t == ResourceContents, structure_resource)
    return conv


converter = _make_converter(wire_name)
"""ACP messages: camelCase wire names."""

_diff_fields = converter.get_unstructure_hook(DiffContent)


def _unstructure_diff(diff: DiffContent) -> dict[str, Any]:
    # A new file's diff says ``"oldText": null`` rather than leaving the key out: some clients
    # (Toad) recognise a diff only when the key is there; the schema allows null.
    wire: dict[str, Any] = _diff_fields(diff)
    wire.setdefault("oldText", None)
    return wire


converter.register_unstructure_hook(DiffContent, _unstructure_diff)

tool_input_converter = _make_converter(lambda name: name, forbid_extra_keys=True)
"""Tool inputs from the model: snake_case names as the model sees them, equally strict, and
stricter: a field the tool's schema does not have is an error (the schemas forbid them)."""


def _os_string(value: Any, _: Any) -> str:
    """A string in a tool input: text the OS can take (no NUL, no unpaired surrogate)."""
    text: str = _strict(str, "a string")(value, _)
    if "\0" in text:
        raise ValueError("contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("contains an unpaired surrogate (not valid Unicode)") from None
    return text


tool_input_converter.register_structure_hook(str, _os_string)


def tool_input(value: Any, cls: type[T]) -> T:
    """Structure a tool's input from the model, or raise ParamsError (paths like ``input.path``)."""
    return from_wire(value, cls, "input", tool_input_converter, lambda name: name)


def to_wire(obj: Any) -> Any:
    """An attrs message (or list of them) as JSON-ready data with wire names.

    Plain text chunks (one per model delta while streaming, one per message in a replay) are
    built directly, in the converter's exact form: the converter costs several times more.
    """
    kind = _TEXT_CHUNKS.get(type(obj), _UNSEEN)
    if kind is _UNSEEN:
        kind = _text_chunk_kind(type(obj))
    if kind is not None:
        content = obj.content
        if (
            type(content) is TextContent
            and obj.meta is None
            and content.annotations is None
            and content.meta is None
        ):
            return _text_chunk(kind, content.text, getattr(obj, "message_id", None))
    return converter.unstructure(obj)


_UNSEEN = object()
_TEXT_CHUNKS: dict[type, Any] = {}
"""Class -> its ``sessionUpdate`` if ``to_wire`` builds its plain text form directly, else
None; filled as classes are met."""
_CHUNK_CLASSES = ("AgentMessageChunk", "AgentThoughtChunk", "UserMessageChunk")


def _text_chunk(kind: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    if message_id is None:
        return {"content": {"text": text, "type": "text"}, "sessionUpdate": kind}
    return {
        "content": {"text": text, "type": "text"},
        "sessionUpdate": kind,
        "messageId": message_id,
    }


def _text_chunk_kind(cls: type) -> str | None:
    """For a chunk class whose plain text form ``_text_chunk`` builds exactly as the converter
    does (checked the first time it is met), its ``sessionUpdate``; None for other classes."""
    kind = None
    if cls.__module__ == "iaccode.protocol.messages" and cls.__name__ in _CHUNK_CLASSES:
        sample = cls(TextContent("sample"))
        shape = _text_chunk(sample.session_update, "sample")
        with_id = attrs.evolve(sample, message_id="m") if hasattr(sample, "message_id") else sample
        id_shape = _text_chunk(
            sample.session_update, "sample", getattr(with_id, "message_id", None)
        )
        if list(converter.unstructure(sample).items()) == list(shape.items()) and list(
            converter.unstructure(with_id).items()
        ) == list(id_shape.items()):
            kind = sample.session_update
    _TEXT_CHUNKS[cls] = kind
    return kind


class ParamsError(Exception):
    """Params did not fit the expected type; ``problems`` maps wire paths to reasons."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__(problems)
        self.problems = problems

    def __str__(self) -> str:
        """``path: reason; path: reason``, for a person (the model, the log)."""
        return "; ".join(f"{path}: {why}" for path, why in self.problems.items())


def from_wire(
    value: Any,
    cls: type[T],
    path: str = "params",
    conv: cattrs.Converter = converter,
    names: Callable[[str], str] = wire_name,
) -> T:
    """Structure wire data into ``cls``, or raise ParamsError naming every bad field."""
    if value is None:
        value = {}
    try:
        return conv.structure(value, cls)
    except Exception as exc:  # cattrs raises plain and grouped errors of many kinds
        problems: dict[str, str] = {}
        _collect(exc, path, problems, names)
        raise ParamsError(problems or {path: str(exc)}) from exc


def _collect(
    exc: BaseException, path: str, out: dict[str, str], name: Callable[[str], str] = wire_name
) -> None:
    if isinstance(exc, ClassValidationError | IterableValidationError):
        for sub in exc.exceptions:
            _collect(sub, _child_path(sub, path, name), out, name)
    elif isinstance(exc, ForbiddenExtraKeysError):
        out[path] = f"unexpected fields {sorted(exc.extra_fields)}"
    elif isinstance(exc, KeyError):
        out[path] = "is required"
    else:
        out[path] = str(exc)


def _child_path(exc: BaseException, path: str, name: Callable[[str], str]) -> str:
    for note in getattr(exc, "__notes__", ()):
        if isinstance(note, AttributeValidationNote):
            return f"{path}.{name(note.name)}"
        if isinstance(note, IterableValidationNote):
            return f"{path}[{note.index}]"
    return path
