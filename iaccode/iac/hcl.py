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
    "RBRACE": '"}"', "LBRACE": '"{"', "RSQB": '"]"', "LSQB": '"["', "RPAR": '")"',
    "LPAR": '"("', "COMMA": '","', "EQ": '"="', "COLON": '":"', "DBLQUOTE": "a closing '\"'",
    "NAME": "a name", "NL_OR_COMMENT": "a new line", "QMARK": '"?"', "DOT": '"."',
}
_EXPRESSION_START = frozenset({"INT_LITERAL", "FLOAT_LITERAL", "TRUE", "FALSE", "NULL",
                               "HEREDOC_TEMPLATE", "TEMPLATE_STRING"})


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

    options = hcl2.SerializationOptions(with_comments=False, explicit_blocks=False,
                                        strip_string_quotes=True)
    try:
        data = hcl2.loads(text, serialization_options=options)
    except UnexpectedToken as exc:
        raise ParseError(exc.line, exc.column, _unexpected_token(exc)) from None
    except UnexpectedCharacters as exc:
        raise ParseError(exc.line, exc.column,
                       f"unexpected character {exc.char!r}") from None
    except UnexpectedInput as exc:
        raise ParseError(getattr(exc, "line", 0), getattr(exc, "column", 0),
                       "the file does not parse as HCL") from None
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
    if token.type == "$END" and "RBRACE" in expected:
        message += " (a block is not closed: a \"}\" is missing)"
    return message


def unquote(value: Any) -> Any:
    """A block label or value without the quotes python-hcl2 may leave on it."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value
