"""Reading Terraform / OpenTofu files with ``python-hcl2``, and its errors made readable.

``hcl2`` (and the ``lark`` parser under it) is imported on first use, never when the agent
starts: these run in worker threads, for the inventory and the checks after a write.
"""

from __future__ import annotations

import json
from typing import Any

from iaccode.iac.parse_error import ParseError, TooDeep, check_depth

TERRAFORM_SUFFIXES = (".tf", ".tofu", ".tf.json", ".tofu.json")

_TOKEN_NAMES = {
    "RBRACE": '"}"',
    "LBRACE": '"{"',
    "RSQB": '"]"',
    "LSQB": '"["',
    "RPAR": '")"',
    "LPAR": '"("',
    "COMMA": '","',
    "EQ": '"="',
    "COLON": '":"',
    "DBLQUOTE": "a closing '\"'",
    "NAME": "a name",
    "NL_OR_COMMENT": "a new line",
    "QMARK": '"?"',
    "DOT": '"."',
}
_EXPRESSION_START = frozenset(
    {"INT_LITERAL", "FLOAT_LITERAL", "TRUE", "FALSE", "NULL", "HEREDOC_TEMPLATE", "TEMPLATE_STRING"}
)


def is_terraform_file(name: str) -> bool:
    return name.endswith(TERRAFORM_SUFFIXES)


def parse_terraform(text: str, name: str = "main.tf") -> dict[str, Any]:
    """The file as python-hcl2 reads it (string quotes stripped, no comments); ``*.tf.json``
    as JSON. Raises ParseError (also for a file nested too deep to parse)."""
    check_depth(text)
    if name.endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(exc.lineno, exc.colno, f"not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise TooDeep(0, 0, "nested too deep to read") from None
        if not isinstance(data, dict):
            raise ParseError(1, 1, "a Terraform JSON file must hold an object")
        return data
    import hcl2
    from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

    options = hcl2.SerializationOptions(
        with_comments=False, explicit_blocks=False, strip_string_quotes=True
    )
    try:
        data = hcl2.loads(text, serialization_options=options)
    except UnexpectedToken as exc:
        opened = _unclosed_block(text) if _missing_brace(exc) else None
        if opened is not None:  # the end of the file is no place to look for the mistake
            raise ParseError(
                *opened,
                f"unexpected end of file at line {exc.line}; expected "
                '"}" (the block that opens here is not closed: a "}" is '
                "missing)",
            ) from None
        raise ParseError(exc.line, exc.column, _unexpected_token(exc)) from None
    except UnexpectedCharacters as exc:
        raise ParseError(exc.line, exc.column, f"unexpected character {exc.char!r}") from None
    except UnexpectedInput as exc:
        raise ParseError(
            getattr(exc, "line", 0), getattr(exc, "column", 0), "the file does not parse as HCL"
        ) from None
    except RecursionError:
        raise TooDeep(0, 0, "nested too deep to read") from None
    except Exception as exc:  # python-hcl2 raises plain errors for some invalid files
        raise ParseError(0, 0, f"the file does not parse as HCL: {exc}") from None
    return data if isinstance(data, dict) else {}


def _unexpected_token(exc: Any) -> str:
    token = exc.token
    if token.type == "$END":
        found = "end of file"
    else:
        first = str(token.value).split("\n", 1)[0].strip()
        found = f"'{first[:40]}'" if first else "end of line"
    expected = set(exc.expected or ())
    if expected & _EXPRESSION_START:
        wanted = ["a value or expression"]
    else:
        wanted = sorted({_TOKEN_NAMES.get(name, name.lower()) for name in expected})
    message = f"unexpected {found}"
    if wanted:
        message += f"; expected {' or '.join(wanted[:4])}"
    if _missing_brace(exc):
        message += ' (a block is not closed: a "}" is missing)'
    return message


def _missing_brace(exc: Any) -> bool:
    return bool(exc.token.type == "$END" and "RBRACE" in set(exc.expected or ()))


def _unclosed_block(text: str) -> tuple[int, int] | None:
    """(line, column), 1-based, of the innermost ``{`` left open at the end of ``text``, by a
    scan that skips strings (but not their ``${ }``), comments and heredocs; None if all
    close."""
    opened: list[tuple[str, int, int]] = []
    """Open contexts: ("{", line, column), ("string", ...), ("${", ...) in a string."""
    lines = text.split("\n")
    number = 0
    while number < len(lines):
        line, column = lines[number], 0
        number += 1
        while column < len(line):
            char, pair = line[column], line[column : column + 2]
            column += 1
            if opened and opened[-1][0] == "string":
                if char == "\\":
                    column += 1
                elif char == '"':
                    opened.pop()
                elif pair in ("${", "%{"):
                    opened.append(("${", number, column))
                    column += 1
                continue
            if char == "#" or pair == "//":
                break
            if pair == "/*":
                end = line.find("*/", column + 1)
                while end < 0 and number < len(lines):
                    line, number = lines[number], number + 1
                    end = line.find("*/")
                column = len(line) if end < 0 else end + 2
            elif pair == "<<":
                marker = line[column + 1 :].lstrip("-").strip()
                while marker.isidentifier() and number < len(lines):
                    number += 1
                    if lines[number - 1].strip() == marker:
                        break
                break
            elif char == '"':
                opened.append(("string", number, column))
            elif char == "{":
                opened.append(("{", number, column))
            elif char == "}" and opened:
                opened.pop()
        while opened and opened[-1][0] == "string":  # a string does not go on past its line
            opened.pop()
    blocks = [(line, column) for kind, line, column in opened if kind == "{"]
    return blocks[-1] if blocks else None


def unquote(value: Any) -> Any:
    """A block label or value without the quotes python-hcl2 may leave on it."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value
