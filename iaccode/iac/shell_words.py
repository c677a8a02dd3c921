"""Splitting a bash command line into words, as the shell would: quotes, escapes, ANSI-C
strings, comments, new lines, the operators between simple commands, and the command
substitutions (``$( )``, backquotes, ``<( )``, ``>( )``) lifted out of it before it is split
(:func:`lift_substitutions`). What the words run is :mod:`iaccode.iac.shell`'s.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

_SEPARATORS = frozenset(
    {";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "{", "}", "$", "\n", "<(", ">("}
)
_REDIRECTS = re.compile(r"^\d*(<<<|<<-?|<>|<&|>&|&>>?|>>?|<|>\|)$")
PLACEHOLDER = re.compile("\0(\\d+)\0")
"""Where :func:`lift_substitutions` took a substitution out of a command line."""


def lift_substitutions(command: str) -> tuple[str, list[str]]:
    """``command`` with each ``$( )``, ``<( )``, ``>( )`` and backquoted span that the shell
    would run replaced by a placeholder, and the spans in order (unclosed: to the end).

    Quotes are followed as the shell follows them: nothing in single quotes (or ``$'...'``) is
    a substitution, so ``bash -c 'echo $(terraform apply)'`` is read once the string is
    unquoted (the ``-c`` string, one level down), and a quote trick such as ``echo '$(';
    terraform apply; echo ')'`` cannot swallow the command between."""
    out: list[str] = []
    spans: list[str] = []
    index = 0
    quote: str | None = None

    def lift(end: int) -> int:
        out.append(f"\0{len(spans)}\0")
        spans.append(command[index:end])
        return end

    while index < len(command):
        char = command[index]
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\" and index + 1 < len(command):
            out.append(command[index : index + 2])
            index += 2
            continue
        elif quote is None and command.startswith("$'", index):
            end = _ansi_c_end(command, index + 2)
            out.append(command[index:end])
            index = end
            continue
        elif char == "'" and quote is None:
            quote = "'"
        elif char == '"':
            quote = None if quote == '"' else '"'
        elif (
            command.startswith(("$(", "<(", ">("), index)
            and not command.startswith("$((", index)
            and (quote is None or char == "$")
        ):
            index = lift(_closing(command, index + 2))
            continue
        elif char == "`":
            close = command.find("`", index + 1)
            index = lift(len(command) if close < 0 else close + 1)
            continue
        out.append(char)
        index += 1
    return "".join(out), spans


def _closing(command: str, index: int) -> int:
    """Where the substitution whose body starts at ``index`` ends (after its ``)``), its
    quotes and nested parentheses followed; the end of the line when it is not closed."""
    depth = 1
    quote: str | None = None
    while index < len(command):
        char = command[index]
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            index += 1
        elif char in "'\"" and quote is None:
            quote = char
        elif char == '"' and quote == '"':
            quote = None
        elif quote is None and char == "(":
            depth += 1
        elif quote is None and char == ")":
            depth -= 1
            if not depth:
                return index + 1
        index += 1
    return len(command)


def _ansi_c_end(command: str, index: int) -> int:
    """Where ``$'...'`` whose body starts at ``index`` ends (its ``\\'`` is no end)."""
    while index < len(command) and command[index] != "'":
        index += 2 if command[index] == "\\" else 1
    return min(index + 1, len(command))


def inside(substitution: str) -> str:
    """The command line of ``$(...)``, ``<(...)``, ``>(...)`` or ```...```."""
    if substitution.startswith(("$(", "<(", ">(")):
        return substitution[2:-1] if substitution.endswith(")") else substitution[2:]
    return (
        substitution[1:-1]
        if len(substitution) > 1 and substitution.endswith("`")
        else substitution[1:]
    )


def split_commands(command: str) -> Iterator[list[str]]:
    """The words of each simple command in ``command``, redirections left out."""
    try:
        lexer = shlex.shlex(_without_comments(command), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""  # shlex would start a comment at a "#" inside a word (a#b)
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the words as they stand
        tokens = re.split(r"\s+|(?=[;&|()])|(?<=[;&|()])", command)
        tokens = [token for token in tokens if token]
    words: list[str] = []
    skip_target = False
    for token in tokens:
        if skip_target:
            skip_target = False
            continue
        # shlex gives a run of operators as one token: ")&&", "((", ";;"
        if token in _SEPARATORS or (token and not token.strip("();|&")):
            if words:
                yield words
            words = []
        elif _REDIRECTS.match(token):
            skip_target = True
        else:
            words.extend(_function_body(token))
    if words:
        yield words


def _function_body(token: str) -> list[str]:
    """``f(){`` (a function definition glued to its brace) is no word of the command."""
    return [] if re.fullmatch(r"[\w.:-]+\(\)\{?", token) else [token]


def _without_comments(line: str) -> str:
    """``line`` without its shell comments (from a ``#`` that starts a word, outside quotes,
    to the end of that line), its new lines outside quotes as ``;`` (shlex would take them for
    spaces) and its backslash-newline continuations joined."""
    out: list[str] = []
    quote: str | None = None
    previous = " "
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\" and quote != "'" and index + 1 < len(line):
            out.append(" " if line[index + 1] == "\n" else line[index : index + 2])
            previous, index = "x", index + 2
            continue
        if quote is None and line.startswith("$'", index):
            end, text = _ansi_c(line, index + 2)
            out.append(shlex.quote(text))
            previous, index = "x", end
            continue
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (previous.isspace() or previous in ";&|()"):
            end = line.find("\n", index)
            if end < 0:
                break
            index = end
            continue
        elif char == "\n":
            char = ";"
        out.append(char)
        previous, index = char, index + 1
    return "".join(out)


_ANSI_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


def _ansi_c(line: str, index: int) -> tuple[int, str]:
    """The text of the ANSI-C string ``$'...'`` whose body starts at ``index`` (its escapes
    decoded, ``\\'`` included, which a plain quote reader takes for the end), and where it ends."""
    text: list[str] = []
    while index < len(line) and line[index] != "'":
        char = line[index]
        if char == "\\" and index + 1 < len(line):
            escape = line[index + 1]
            if escape in "xX" and (hexa := re.match(r"[0-9a-fA-F]{1,2}", line[index + 2 :])):
                text.append(chr(int(hexa.group(), 16)))
                index += 2 + len(hexa.group())
                continue
            if escape in "01234567" and (octal := re.match(r"[0-7]{1,3}", line[index + 1 :])):
                text.append(chr(int(octal.group(), 8)))
                index += 1 + len(octal.group())
                continue
            text.append(_ANSI_ESCAPES.get(escape, "\\" + escape))
            index += 2
            continue
        text.append(char)
        index += 1
    return index + 1, "".join(text)


def split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()
