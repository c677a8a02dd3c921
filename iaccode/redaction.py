"""Every secret value the agent holds, replaced by ``[secret NAME]`` wherever it would show.

The values are those of :func:`iaccode.secret_env.secret_items` (the secret variables of our
environment, passwords inside URLs). A :class:`Redactor` finds each value as it is, and in the
forms a command or a server can hand it back in without trying hard:

- percent-encoded (``%2B`` ...) and JSON-escaped, when those differ from the value;
- base64 (standard and URL-safe alphabet, at any of the three alignments of a longer stream,
  so ``env | base64`` is caught too) and hex (lower and upper case);
- any of them broken across lines (``base64`` wraps at 76 columns, ``xxd -p`` at 60, ``fold``).

Not covered, and not coverable: what a program computes from the value on purpose (reversed,
split into pieces far apart, rot13, encrypted). What stands in the way of such a command is the
permission question, and the agent's environment no longer holding the value
(:mod:`iaccode.process_secrets`).

A URL is held to more (:meth:`Redactor.find_spread`, for web_fetch): there a value may also
come in base32, and spread out by the separators a URL has (``/`` between path segments, ``.``
between DNS labels, ``&`` and ``=`` between parameters), in any case; so the URL and each form
are compared as their letters and digits alone, lower case. Only values of
``SPREAD_MIN_CHARS`` or more are looked for so: a shorter one would turn up in innocent URLs.

Output is redacted whole, once the tool is done with it, so a secret a command writes in pieces
(``printf sk-; printf ant-...``) is whole again by then. Where output was cut before that (the
head and tail of a long command output, the start the editor's terminal dropped), the piece of
a secret left at the cut goes too (:meth:`Redactor.ends`). Cheap when nothing matches: a few
substring searches per value decide whether the regular expression runs at all.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from iaccode.secret_env import secret_items

_BREAK = "(?:\r?\n)?"
"""What may stand between two characters of a form: a line break."""


SPREAD_MIN_CHARS = 16
"""Letters and digits a form must have to be looked for spread over a URL."""
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def _squashed(text: str) -> str:
    """``text`` as its letters and digits alone, lower case (a URL's separators gone)."""
    return _NOT_ALNUM.sub("", text.lower())


def marker(name: str) -> str:
    return f"[secret {name}]"


def _base64_cores(value: bytes) -> list[str]:
    """The base64 text that ``value`` encodes to wherever it sits in a longer stream: for each
    alignment (0, 1 or 2 bytes before it in its group of three), the characters that depend on
    its bytes alone."""
    cores = []
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + value).decode()
        first = -(-pad * 8 // 6)  # the first character wholly inside value's bits
        last = (pad + len(value)) * 8 // 6  # one past the last such character
        cores.append(encoded[first:last])
    return cores


def _base32_cores(value: bytes) -> list[str]:
    """As :func:`_base64_cores`, for base32 (five alignments in a group of five bytes)."""
    cores = []
    for pad in range(5):
        encoded = base64.b32encode(b"\0" * pad + value).decode()
        first = -(-pad * 8 // 5)
        last = (pad + len(value)) * 8 // 5
        cores.append(encoded[first:last])
    return cores


def forms(value: str) -> list[str]:
    """The texts ``value`` may come back as (itself first)."""
    raw = value.encode("utf-8")
    found = [value, quote(value, safe=""), json.dumps(value)[1:-1], raw.hex(), raw.hex().upper()]
    for core in _base64_cores(raw):
        found += [core, core.replace("+", "-").replace("/", "_")]
    return [form for form in dict.fromkeys(found) if len(form) >= 4]


class Redactor:
    """Replaces the given secrets (``(name, value)`` pairs) in text."""

    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        self._names: dict[str, str] = {}
        """Each form (without line breaks) -> the name it stands for."""
        self._probes: list[tuple[str, str]] = []
        """(a piece of a form, the form): a form can be in a text only if one of its pieces
        is (three pieces: whichever two places a form is broken at, one piece stays whole)."""
        self._spread: dict[str, str] = {}
        """Each form and base32 core, squashed (:func:`_squashed`) -> the name it stands for."""
        for name, value in items:
            for form in forms(value):
                if self._names.setdefault(form, name) != name:
                    continue
                third = max(len(form) // 3, 1)
                self._probes += [(form[i : i + third], form) for i in (0, third, len(form) - third)]
            for form in [*forms(value), *_base32_cores(value.encode("utf-8"))]:
                if len(squashed := _squashed(form)) >= SPREAD_MIN_CHARS:
                    self._spread.setdefault(squashed, name)

    def __bool__(self) -> bool:
        return bool(self._names)

    def _pattern(self, text: str) -> re.Pattern[str] | None:
        candidates = frozenset(form for piece, form in self._probes if piece in text)
        return _compiled(candidates) if candidates else None

    def __call__(self, text: str) -> str:
        """``text`` with every secret in it replaced by ``[secret NAME]``."""
        pattern = self._pattern(text) if self._names else None
        if pattern is None:
            return text
        return pattern.sub(self._replacement, text)

    def _replacement(self, match: re.Match[str]) -> str:
        return marker(self._names[match.group().replace("\r", "").replace("\n", "")])

    def find(self, text: str) -> str | None:
        """The name of the first secret in ``text`` (None: there is none)."""
        pattern = self._pattern(text) if self._names else None
        match = pattern.search(text) if pattern is not None else None
        return self._names[re.sub("[\r\n]", "", match.group())] if match else None

    def find_spread(self, url: str) -> str | None:
        """The name of the first secret ``url`` carries, as :meth:`find` sees it or spread
        over it (see the module docstring: base32 too, any case, separators between)."""
        if (found := self.find(url)) is not None:
            return found
        squashed = _squashed(url)
        return next((name for form, name in self._spread.items() if form in squashed), None)

    def value(self, data: Any) -> Any:
        """``data`` (JSON-like: dicts, lists, strings) with its strings redacted, the keys of
        its dicts too (a server's structured content may hold a secret as a key)."""
        if isinstance(data, str):
            return self(data)
        if isinstance(data, dict):
            return {
                self(key) if isinstance(key, str) else key: self.value(item)
                for key, item in data.items()
            }
        if isinstance(data, list | tuple):
            return [self.value(item) for item in data]
        return data

    def ends(self, text: str, *, start: bool = False, end: bool = False) -> str:
        """``text`` redacted, and, where it was cut from a longer one (its ``start`` or its
        ``end``), without the piece of a secret the cut left there (a form's last or first
        characters, at least a quarter of it and six)."""
        text = self(text)
        for form in self._names if (start or end) else ():
            least = max(6, len(form) // 4)
            for size in range(len(form) - 1, least - 1, -1):
                if start and text.startswith(form[-size:]):
                    text = marker(self._names[form]) + text[size:]
                if end and text.endswith(form[:size]):
                    text = text[:-size] + marker(self._names[form])
        return text


@functools.lru_cache(maxsize=64)
def _compiled(forms: frozenset[str]) -> re.Pattern[str]:
    ordered = sorted(forms, key=lambda form: (-len(form), form))  # a longer form wins
    return re.compile("|".join(_BREAK.join(map(re.escape, form)) for form in ordered))


@functools.lru_cache(maxsize=8)
def _redactor(items: tuple[tuple[str, str], ...]) -> Redactor:
    return Redactor(items)


def current() -> Redactor:
    """The redactor for the secrets our environment holds now (built once per set)."""
    return _redactor(tuple(secret_items()))


def redact(text: str) -> str:
    """``text`` with every secret we hold replaced by ``[secret NAME]``."""
    return current()(text)
