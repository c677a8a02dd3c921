"""What ``iaccode acp`` imports in the background from the process start, while it waits.

Opening a session needs trio, attrs/cattrs, the protocol layer and the store; a prompt needs
much more: the model SDK (``anthropic`` alone takes 0.5-2 s to import), the turn loop, the
tools, the IaC checks, the system prompt's sections and, when config.toml names MCP servers,
the ``mcp`` SDK. ``iaccode acp`` answers ``initialize`` and ``session/new`` with only the
first part loaded and imports the rest here, in a thread of its own started at the process
start (``cli.run_acp``), so that the first prompt finds it loaded.

Python runs one thread at a time (the GIL): a thread importing beside the main one takes half
of the processor from the answers the editor waits for. So the thread starts only once the
main thread has waited for the editor for ``QUIET`` seconds (the trio loop says when it waits
for I/O: :meth:`Preload.instrument`), which is after the first ``session/new`` has been
answered when the editor opens one at once. While it imports, the interpreter switches threads
every millisecond instead of every 5 ms, so a request that comes meanwhile waits at most that
for the processor (and then shares it).

The garbage collector is off while it imports: the imports make hundreds of thousands of
objects that live as long as the process (modules, classes, functions, the SDK's pydantic
models above all), and each collection on the way walked all of them again: a third of the
imports' time (0.9 s of 2.5 s of CPU for the Anthropic SDK and the turn's modules, measured
2026-12-02 on Python 3.11 and 3.13). Once done, one collection takes the imports' own
garbage, and everything loaded so far is frozen out of the collector (``gc.freeze``): a heap
of them made each full collection, and the last one at exit, take seconds on a busy machine
(an agent asked to stop took over 2 s to exit).

A module that fails to import is logged and left: whoever needs it later gets the error
(``iaccode.llm`` reports a broken SDK on the prompt).
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
import threading
import time

TYPE_CHECKING = False  # not typing's: this runs before anything else is imported
if TYPE_CHECKING:
    from collections.abc import Sequence

    import trio

    from iaccode.config import Config

log = logging.getLogger(__name__)

QUIET = 0.05
"""Seconds the trio loop must have waited for I/O before the thread starts."""


SWITCH_INTERVAL = 0.001
"""The interpreter's thread switch interval while the thread imports (Python's default: 5 ms)."""

TURN_MODULES = (
    "iaccode.turn.turn",
    "iaccode.tools.bash",
    "iaccode.tools.edit_file",
    "iaccode.tools.glob",
    "iaccode.tools.grep",
    "iaccode.tools.list_files",
    "iaccode.tools.read_file",
    "iaccode.tools.todo_write",
    "iaccode.tools.web_fetch",
    "iaccode.tools.write_file",
    "iaccode.context",
)
"""What the first prompt needs that opening a session does not (``tools.registry`` names the
tools)."""


def modules_for(config: Config) -> list[str]:
    """What to preload for this configuration: the turn's modules, the MCP client when
    config.toml names servers, the provider's SDK."""
    from iaccode.llm.providers import sdk_module
    from iaccode.mcp import SDK_MODULES

    modules = list(TURN_MODULES)
    if config.mcp_servers:
        modules += ["iaccode.mcp.connection", *SDK_MODULES]
    sdk = sdk_module(config)
    if sdk is not None:
        modules.append(sdk)
    return modules


class Preload:
    """The importing thread; :meth:`start` it, then run trio with :meth:`instrument`."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = tuple(modules)
        self.started = threading.Event()
        """Set when the thread begins to import."""
        self.done = threading.Event()
        """Set when every module was imported (or failed)."""
        self._idle = threading.Event()
        """Set while the trio loop waits for I/O."""
        self._idle_since = 0.0
        """When the trio loop began its current wait (``time.monotonic``)."""
        self._thread = threading.Thread(target=self._run, name="iaccode-preload", daemon=True)

    def start(self) -> Preload:
        self._interval = sys.getswitchinterval()
        self._thread.start()
        return self

    def instrument(self) -> trio.abc.Instrument:
        """The trio instrument that tells the thread when the loop waits (it removes itself
        once the thread has started: it is called at every turn of the loop)."""
        import trio

        preload = self

        class WaitsForIo(trio.abc.Instrument):
            def before_io_wait(self, timeout: float) -> None:
                if preload.started.is_set():
                    trio.lowlevel.remove_instrument(self)
                elif timeout > 0:  # 0: tasks are ready, the loop only polls
                    preload._idle_since = time.monotonic()
                    preload._idle.set()

            def after_io_wait(self, timeout: float) -> None:
                preload._idle.clear()

        return WaitsForIo()

    def _wait_for_quiet(self) -> None:
        while True:
            self._idle.wait()
            left = self._idle_since + QUIET - time.monotonic()
            if left <= 0 and self._idle.is_set():
                return
            time.sleep(max(left, 0.001))

    def _run(self) -> None:
        try:
            self._wait_for_quiet()
            self.started.set()
            sys.setswitchinterval(SWITCH_INTERVAL)
            gc.disable()  # see the module docstring
            for name in self.modules:
                try:
                    importlib.import_module(name)
                except Exception as exc:  # the module's user meets the error and reports it
                    log.warning("preloading %s failed: %s: %s", name, type(exc).__name__, exc)
            gc.collect()  # the imports' own garbage, not to be frozen with the rest
            gc.freeze()  # what lives as long as the process: no collection looks at it again
        finally:
            gc.enable()
            sys.setswitchinterval(self._interval)
            self.done.set()
