"""The system prompt of one live session: built when it opens, rebuilt only when an
instruction file changed, or the project's IaC inventory did (an IaC file changed).

The prompt is the prefix every request of the session starts with, so it must not change
between requests (a changed byte invalidates the prompt cache from there on): the facts are
gathered once, and before each prompt only the instruction files' mtimes and the inventory's
version are checked.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import trio

from iaccode.context import environment, instructions
from iaccode.context.sections import SessionFacts, SystemPrompt, build
from iaccode.iac.inventory import inventory_version

log = logging.getLogger(__name__)


def _build(
    cwd: Path, home: Path, session: Any, additional: tuple[Path, ...] = ()
) -> tuple[SystemPrompt, list[Path], tuple[Any, ...]]:
    env = environment.gather(cwd, additional)
    paths = instructions.candidates(cwd, env.git.root, home)
    stamp = _signature(cwd, paths)
    found = instructions.read(cwd, env.git.root, home)
    facts = SessionFacts(cwd=cwd, home=home, environment=env, instructions=found, session=session)
    return build(facts), paths, stamp


def _signature(cwd: Path, paths: list[Path]) -> tuple[Any, ...]:
    """What the prompt is built from and may change: the instruction files (their mtimes) and
    the project's IaC inventory (its version: it changes when the IaC files do). Blocking."""
    return (instructions.signature(paths), inventory_version(cwd))


class SessionContext:
    def __init__(
        self, cwd: Path, home: Path, session: Any = None, additional: tuple[Path, ...] = ()
    ) -> None:
        self._cwd = cwd
        self._additional = additional
        """The client's extra project folders (the environment section names them)."""
        self._home = home
        self._session = session
        self._lock = trio.Lock()
        self._prompt: SystemPrompt | None = None
        self._paths: list[Path] = []
        self._stamp: tuple[Any, ...] = ()
        self._stale = False
        self.builds = 0
        """How many times the prompt was built (tests check it is not per request)."""

    @property
    def current(self) -> SystemPrompt:
        """The prompt as last built (empty before the first build)."""
        return self._prompt or SystemPrompt("", "", {})

    def set_additional(self, additional: tuple[Path, ...]) -> None:
        """The client's extra project folders changed: build again at the next ``refresh``."""
        self._additional = additional
        self.invalidate()

    def invalidate(self) -> None:
        """Build again at the next ``refresh``: a fact a section reads changed (the session's
        MCP tools, say). The current prompt stays in use until then."""
        self._stale = True

    async def refresh(self) -> SystemPrompt:
        """The prompt, built now if never built or if an instruction file changed.

        Blocking work (git, file reads, stats) runs in a worker thread. Cancellation: a build
        cut short leaves the previous prompt in place.
        """
        async with self._lock:
            if self._prompt is not None and not self._stale:
                stamp = await trio.to_thread.run_sync(
                    _signature, self._cwd, self._paths, abandon_on_cancel=True
                )
                if stamp == self._stamp:
                    return self._prompt
                log.info("instruction or IaC files changed: rebuilding the system prompt")
            prompt, self._paths, self._stamp = await trio.to_thread.run_sync(
                _build,
                self._cwd,
                self._home,
                self._session,
                self._additional,
                abandon_on_cancel=True,
            )
            self._prompt = prompt
            self._stale = False
            self.builds += 1
            return prompt
