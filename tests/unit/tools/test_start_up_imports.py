"""web_fetch's libraries stay out of start-up: the tool modules load when a session builds its
tools, and the shared helpers the start-up path imports (search/ignore.py, procfs.py,
command_env.py, iaccode/checks.py) import none of them."""

from __future__ import annotations

import subprocess
import sys


def test_web_libraries_are_not_imported_at_start_up() -> None:
    code = ("import sys, iaccode.cli, iaccode.server.agent, iaccode.session.session, "
            "iaccode.turn.tool_runner, iaccode.iac.inventory, iaccode.iac.diagnostics; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('bs4', 'markdownify', 'h11')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, iaccode.tools.registry as r; r.builtin_tools(); "
                               "print('bs4' in sys.modules, 'h11' in sys.modules)"],
        capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.split() == ["True", "True"]  # the check above can fail
