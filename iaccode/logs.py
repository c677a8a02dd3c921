"""Logging to stderr and to a file under the data dir. Never to stdout: stdout is protocol.

Every line, on stderr and in the file, has the secret values we hold replaced by ``[secret
NAME]`` (:mod:`iaccode.redaction`: an MCP server's stderr tail, a traceback quoting a URL, a
command line). The file is readable by its owner only (0600), in a 0700 folder.

A log file that cannot be written (disk full, read-only home) does not stop the agent or flood
stderr: the first failure is reported on stderr once, the lines keep going to stderr, and the
file is written again as soon as it can be (what its buffer held meanwhile included).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from pathlib import Path

from iaccode.private_files import open_private, private_dir
from iaccode.redaction import redact

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
NOISY_LOGGERS = ("httpx", "httpx2", "httpcore", "anthropic")
"""Libraries whose chatter (the HTTP client logs every request at INFO) stays out of the way:
WARNING at least."""


class _Redacting(logging.Formatter):
    """The standard format, with the secrets we hold replaced in the whole line (traceback
    included)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class _LogFile(logging.FileHandler):
    """A FileHandler that reports a failing file once instead of a traceback per line."""

    failing = False
    _failed = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        self._failed = True
        if not self.failing:
            self.failing = True
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(
                    f"iaccode: cannot write the log file {self.baseFilename}: "
                    f"{sys.exc_info()[1]}; logging to stderr only until it can\n"
                )

    def emit(self, record: logging.LogRecord) -> None:  # under the handler's lock
        self._failed = False
        super().emit(record)  # calls handleError on failure
        if self.failing and not self._failed:
            self.failing = False


def setup_logging(level: str, log_file: Path) -> None:
    root = logging.getLogger()
    root.setLevel(level)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(_Redacting(FORMAT))
    root.addHandler(stderr)
    try:
        private_dir(log_file.parent)
        os.close(open_private(log_file, os.O_WRONLY | os.O_APPEND))  # 0600 before it is used
        to_file = _LogFile(log_file, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:  # a read-only home must not stop the agent
        root.warning("cannot write the log file %s: %s", log_file, exc)
        return
    to_file.setFormatter(_Redacting(FORMAT))
    root.addHandler(to_file)
    for noisy in NOISY_LOGGERS:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
