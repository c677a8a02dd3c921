"""What every benchmark shares: the figures (``Row``), statistics, RSS, the scratch folders, and
spawning ``iaccode acp`` with the harness's lean synchronous client
(:class:`acp_conformance.line_client.LineClient`, here ``Client``: it parses only what it is
asked to, so that the client is not the bottleneck when 100,000 updates stream).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
for _folder in (REPO, REPO / "conformance"):  # iaccode and tests; acp_conformance
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from acp_conformance.line_client import LineClient  # noqa: E402 - after the path

from tests.support.environment import agent_environment  # noqa: E402

Client = LineClient
"""The benchmarks' name for the harness's synchronous client."""

MIB = 1024 * 1024


# -- figures -------------------------------------------------------------------------------------


@dataclass
class Row:
    """One figure of the table: the value, its baseline from the same run, and the target."""

    group: str
    figure: str
    value: float
    unit: str
    baseline: float | None = None
    baseline_label: str = ""
    target: str = ""
    met: bool | None = None
    """None: no target for this figure (informational)."""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100): with fewer than 100 samples p99 is the maximum."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), -(-len(ordered) * p // 100)))
    return ordered[int(rank) - 1]


def ms(seconds: float) -> float:
    return seconds * 1000.0


# -- processes -----------------------------------------------------------------------------------


def agent_command() -> list[str]:
    """What an editor runs: the ``iaccode`` console script beside this interpreter."""
    script = Path(sys.executable).parent / "iaccode"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), "acp"]
    return [sys.executable, "-m", "iaccode", "acp"]


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    """The tests' agent environment (a private home, no real credentials), quiet logs."""
    return agent_environment(home, {"IAC_CODE_LOG_LEVEL": "WARNING", **extra})


def rss_bytes(pid: int) -> int:
    import psutil

    return int(psutil.Process(pid).memory_info().rss)


@contextmanager
def scratch(name: str) -> Iterator[Path]:
    """A temporary folder, removed afterwards (``BENCH_KEEP=1`` keeps it)."""
    root = Path(tempfile.mkdtemp(prefix=f"iaccode-bench-{name}-"))
    try:
        yield root
    finally:
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(root, ignore_errors=True)


def spawn_agent(home: Path, *args: str, **env: str) -> Client:
    home.mkdir(parents=True, exist_ok=True)
    return Client([*agent_command(), *args], agent_env(home, **env), stderr=home / "stderr.log")


# -- model scripts -------------------------------------------------------------------------------


def write_script(path: Path, exchanges: list[dict[str, Any]]) -> Path:
    """A model script file (compact JSON: ``dump_script`` indents, which is slow to read at
    millions of events)."""
    from iaccode.llm.script import SCRIPT_VERSION, validate_script

    checked = validate_script(exchanges)
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"version": SCRIPT_VERSION, "exchanges": checked}, file, separators=(",", ":"))
    return path


def text_chunks(count: int) -> list[str]:
    """``count`` short text deltas, like tokens."""
    words = ("alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta ", "eta ", "theta ")
    return [words[i % len(words)] for i in range(count)]


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
