"""Heavy parsers stay out of start-up: `iaccode acp` answers `initialize` without the IaC ones
(hcl2, yaml) and without web_fetch's (bs4, markdownify, h11), which load with the tools."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

START_UP = (
    "iaccode.cli, iaccode.server.agent, iaccode.session.session, "
    "iaccode.turn.tool_runner, iaccode.iac.inventory, iaccode.iac.diagnostics"
)


def _loaded(imports: str, packages: tuple[str, ...]) -> list[str]:
    code = (
        f"import json, sys, {imports}; print(json.dumps(sorted("
        f"{{m.split('.')[0] for m in sys.modules}} & {set(packages)!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    found: list[str] = json.loads(done.stdout)
    return found


@pytest.mark.parametrize("packages", [("hcl2", "lark", "yaml"), ("bs4", "markdownify", "h11")])
def test_parsers_are_not_imported_at_start_up(packages: tuple[str, ...]) -> None:
    assert _loaded(START_UP, packages) == []


def test_web_fetch_loads_its_parsers_itself() -> None:  # so the check above can fail
    assert _loaded("iaccode.tools.web_fetch", ("bs4", "markdownify", "h11")) == [
        "bs4",
        "h11",
        "markdownify",
    ]
