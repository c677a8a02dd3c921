"""Logging to stderr and to a file under the data dir. Never to stdout: stdout is protocol."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: str, log_file: Path) -> None:
    root = logging.getLogger()
    root.setLevel(level)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(stderr)
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(log_file, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:  # a read-only home must not stop the agent
        root.warning("cannot write the log file %s: %s", log_file, exc)
        return
    to_file.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(to_file)
    # Library chatter (the HTTP client logs every request at INFO) stays out of the way.
    for noisy in ("httpx", "httpx2", "httpcore", "anthropic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
