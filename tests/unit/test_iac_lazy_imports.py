"""The IaC parsers stay out of start-up: `iaccode acp` answers `initialize` without them."""

from __future__ import annotations

import subprocess
import sys


def test_hcl2_and_yaml_are_not_imported_at_start_up() -> None:
    code = ("import sys, iaccode.cli, iaccode.server.agent, iaccode.session.session, "
            "iaccode.turn.tool_runner, iaccode.iac.inventory, iaccode.iac.diagnostics; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('hcl2', 'lark', 'yaml')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"
