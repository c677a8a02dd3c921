"""The background imports of ``iaccode acp`` (iaccode/preload.py): they wait for the trio loop
to be quiet, then run; a module that fails is logged, the rest still load. Each case runs in a
fresh interpreter, as the preload runs at a process start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from iaccode.config import Config
from iaccode.preload import TURN_MODULES, modules_for

SCRIPT = r"""
import gc, json, sys, time

from iaccode.preload import Preload

sys.path.insert(0, sys.argv[1])  # collector_probe: notes whether the collector ran
wanted = ["tabnanny", "no_such_module_for_the_preload", "pyclbr", "collector_probe"]
preload = Preload(wanted).start()
time.sleep(0.3)  # the main thread busy (not waiting in trio): nothing is imported yet
before = [name for name in wanted if name in sys.modules]
interval = sys.getswitchinterval()

import trio


async def main():
    await trio.to_thread.run_sync(preload.done.wait, 10)


trio.run(main, instruments=[preload.instrument()])
print(json.dumps({"before": before, "after": [name for name in wanted if name in sys.modules],
                  "interval": [interval, sys.getswitchinterval()],
                  "collecting": [sys.modules["collector_probe"].COLLECTING, gc.isenabled()],
                  "frozen": gc.get_freeze_count()}))
"""


def test_the_preload_waits_for_a_quiet_loop_then_imports(tmp_path: Path) -> None:
    root = Path(__file__).parents[2]
    (tmp_path / "collector_probe.py").write_text("import gc\nCOLLECTING = gc.isenabled()\n")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["before"] == []
    assert seen["after"] == ["tabnanny", "pyclbr", "collector_probe"]  # past the one that failed
    assert seen["interval"][0] == seen["interval"][1]  # restored once done
    # The collector is off while it imports, on again after; what was loaded is frozen.
    assert seen["collecting"] == [False, True] and seen["frozen"] > 0
    assert "preloading no_such_module_for_the_preload failed: ModuleNotFoundError" in done.stderr


def test_what_is_preloaded_follows_the_configuration(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    plain = Config.from_env({"IAC_CODE_HOME": str(home)})
    assert modules_for(plain) == [*TURN_MODULES, "anthropic"]
    scripted = Config.from_env(
        {"IAC_CODE_HOME": str(home), "IAC_CODE_MODEL_SCRIPT": str(tmp_path / "script.json")}
    )
    assert modules_for(scripted) == list(TURN_MODULES)
    (home / "config.toml").write_text('provider = "openai"\n[mcp_servers.db]\ncommand = "db"\n')
    with_servers = Config.from_env({"IAC_CODE_HOME": str(home)})
    assert "mcp" in modules_for(with_servers) and modules_for(with_servers)[-1] == "openai"
