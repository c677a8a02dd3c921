"""The project's IaC inventory: a short, capped system-prompt section saying what it declares.

    inventory_section(cwd) -> "Infrastructure as code in this project ..." | None

Per folder, with real parsers (python-hcl2, the template loader of :mod:`.templates`; what each
file declares is read by :mod:`.declarations`):

- Terraform / OpenTofu modules: resources by address, data sources, variables (type, whether
  they have a default), outputs, providers and their version constraints, the backend, module
  calls and their source;
- ROS and CloudFormation templates: resources (``Vpc: ALIYUN::ECS::VPC``), parameters, outputs;
- Kubernetes manifests (kind/name), Helm charts (``Chart.yaml`` and the kinds its templates
  make), Pulumi projects (``Pulumi.yaml``).

The walk respects ``.gitignore`` (the walker list_files, glob and grep share), skips
``.terraform/`` and ``node_modules/``, and is bounded in time; files are parsed in a child
process, each bounded in size, depth and time (:mod:`.reader`: a file it cannot read is left
out, and the section says so), and kept by (mtime, size), so a refresh re-reads only what
changed. Nothing here can fail a prompt: a build that fails keeps the last text. The text is
at most ``MAX_CHARS``, biggest folders first. Each project's inventory is built once (in a worker
thread, started by the first call) and rebuilt in the background when its IaC files change; at
most ``BUILD_THREADS`` builds run at once, and the last ``MAX_PROJECTS`` projects used are kept.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio
from trio.lowlevel import RunVar

from iaccode.host.search.ignore import GitIgnores, walk_files
from iaccode.iac.declarations import Entry, Reading, entries, is_candidate
from iaccode.iac.reader import FileReader, Skipped

log = logging.getLogger(__name__)

MAX_CHARS = 8 * 1024
"""The section's size limit (characters); folders that do not fit are counted, not shown."""
WALK_SECONDS = 3.0
"""Longest a walk of the project may take; a tree too big for it gets a partial inventory."""
PARSE_SECONDS = 10.0
"""Longest parsing the files may take in one build."""
FIRST_BUILD_WAIT = 5.0
"""How long the first call waits for the first build (later calls never wait)."""
SKIPPED_DIRS = frozenset({".terraform", ".terragrunt-cache", "node_modules", ".git"})
NOTE_CHARS = 600
"""Room for the note naming the files that could not be read."""
BUILD_THREADS = 2
"""Background builds that may run at once (under ``iaccode serve``, one per folder opened)."""
MAX_PROJECTS = 32
"""Projects whose inventories are kept (least recently used first out): a server that opens
sessions in many folders keeps the ones in use, not every folder it ever saw."""


class _Ignores(GitIgnores):
    """.gitignore, plus the folders of tools' caches (``.terraform/``: provider binaries and
    copies of modules, not the project's own code)."""

    def ignored(self, rel: str, is_dir: bool, check_parents: bool = True) -> bool:
        if is_dir and rel.rsplit("/", 1)[-1] in SKIPPED_DIRS:
            return True
        return super().ignored(rel, is_dir, check_parents)


def find_files(root: Path, seconds: float = WALK_SECONDS) -> tuple[list[str], bool]:
    """The candidate files under ``root`` (relative) and whether the walk was complete."""
    deadline = time.monotonic() + seconds
    found: list[str] = []
    for rel in walk_files(root, _Ignores(root, root)):
        if time.monotonic() > deadline:
            return found, False
        if is_candidate(rel):
            found.append(rel)
    return found, True


def render(
    found: list[Entry],
    complete: bool = True,
    limit: int = MAX_CHARS,
    skipped: dict[str, str] | None = None,
) -> str | None:
    """The section text, biggest entries first, at most ``limit`` characters (and a note
    naming the files ``skipped``: path -> why); None if empty."""
    note = _skipped_note(skipped or {})
    if not found and not note:
        return None
    limit -= len(note)
    head = (
        "# Infrastructure as code in this project\n"
        "What its files declare (read with real parsers; biggest folders first"
        + ("" if complete else "; the project is too big to read whole, this is part of it")
        + "). Read a file before relying on a detail."
    )
    parts = [head]
    size = len(head)
    ordered = sorted(found, key=lambda e: (-e.weight, e.where))
    for shown, entry in enumerate(ordered):
        block = "\n".join(
            [f"\n{entry.where} ({entry.what})", *(f"  {line}" for line in entry.lines)]
        )
        rest = len(ordered) - shown
        tail = f"\n[... {rest} more not shown: the inventory is capped at {limit} characters]"
        if size + len(block) + len(tail) > limit:
            if shown == 0:  # one entry bigger than all the room: its start
                parts.append(block[: limit - size - len(tail) - 4] + " ...")
                rest -= 1
                tail = (
                    (
                        f"\n[... {rest} more not shown: the inventory is capped at {limit} "
                        "characters]"
                    )
                    if rest
                    else ""
                )
            parts.append(tail)
            break
        parts.append(block)
        size += len(block)
    return "\n".join(parts) + note


def _skipped_note(skipped: dict[str, str]) -> str:
    """ "Not read: a.json (nested over 256 levels deep), ..." within NOTE_CHARS; "" for none."""
    if not skipped:
        return ""
    note = "\n\nNot read (left out of this inventory): "
    shown: list[str] = []
    for rel, why in sorted(skipped.items()):
        item = f"{rel} ({why})"
        if len(note) + sum(len(s) + 2 for s in shown) + len(item) > NOTE_CHARS - 20:
            shown.append(f"{len(skipped) - len(shown)} more")
            break
        shown.append(item)
    return note + ", ".join(shown) + "."


# --- building and keeping it current -----------------------------------------------------------


class ProjectInventory:
    """One project's inventory, built in a worker thread and rebuilt when files change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        """One build at a time (the background one, or a caller's)."""
        self._parsed: dict[str, Reading] = {}
        self._skipped: dict[str, tuple[tuple[int, int], str]] = {}
        """Files that could not be read -> (their stamp then, why): not tried again until
        they change."""
        self._text: str | None = None
        self._stamps: dict[str, tuple[int, int]] | None = None
        self._complete = True
        self._building = False
        self.ready = threading.Event()
        """Set once the first build is done."""
        self.version = 0
        """Counts the builds that changed the text (a prompt built from an older one is stale)."""

    def current(self) -> str | None:
        """The latest text (None: no IaC, or not built yet); starts a rebuild check in the
        background. Never blocks."""
        self.start()
        return self._text

    def start(self) -> None:
        """Start a build in the background unless one is running. From any thread: a Trio
        run's own, or one of its worker threads (the sections run there); a thread outside
        any Trio run (a synchronous test) builds right away instead."""
        with self._lock:
            if self._building:
                return
            self._building = True
        try:
            _in_background(self._build_in_worker)
        except RuntimeError:  # no Trio run to hand it to (RunFinishedError too): build here
            self._build_logged()
        except BaseException:  # the caller was cancelled first: nothing was started
            with self._lock:
                self._building = False
            raise

    async def _build_in_worker(self) -> None:
        """The build in a worker thread, ``BUILD_THREADS`` at most at once. A system task: it
        outlives the call that started it; when the run ends the thread is left to finish."""
        started = False

        def build() -> None:
            nonlocal started
            started = True
            self._build_logged()

        try:
            await trio.to_thread.run_sync(build, limiter=_builders(), abandon_on_cancel=True)
        finally:
            if not started:  # the run ended before a thread was free: the next call retries
                with self._lock:
                    self._building = False

    def _build_logged(self) -> None:
        try:
            self.build()
        except Exception:  # a bug here must not take the session down; the log says what
            log.exception("building the IaC inventory of %s failed", self.root)
        finally:
            with self._lock:
                self._building = False
            self.ready.set()

    def build(self, wait: float | None = None) -> str | None:
        """Walk, read what changed, render. Blocking: run it in a worker thread. With ``wait``,
        a build already running gets that many seconds before the last text is returned."""
        if not self._build_lock.acquire(timeout=-1 if wait is None else wait):
            return self._text
        try:
            return self._build()
        finally:
            self._build_lock.release()

    def _build(self) -> str | None:
        if self._stamps is not None and not self._complete:
            files = list(self._stamps)  # a huge tree: only look at the files we know again
            complete = False
        else:
            files, complete = find_files(self.root)
        stamps = {rel: stamp for rel in files if (stamp := _stamp(self.root / rel))}
        unread = any(rel not in self._parsed and rel not in self._skipped for rel in stamps)
        if stamps == self._stamps and not unread:  # (a build cut short left files unread)
            return self._text
        deadline = time.monotonic() + PARSE_SECONDS
        parsed: dict[str, Reading] = {}
        skipped: dict[str, tuple[tuple[int, int], str]] = {}
        reader = FileReader(self.root)
        try:
            for rel, stamp in stamps.items():
                known = self._parsed.get(rel)
                failed = self._skipped.get(rel)
                if known is not None and known.stamp == stamp:
                    parsed[rel] = known
                elif failed is not None and failed[0] == stamp:
                    skipped[rel] = failed
                elif time.monotonic() < deadline:
                    reading = reader.read(rel)
                    if isinstance(reading, Skipped):
                        log.info("IaC inventory: %s left out: %s", rel, reading.why)
                        skipped[rel] = (stamp, reading.why)
                    elif reading is not None:
                        parsed[rel] = reading
                else:
                    complete = False
        finally:
            reader.close()
        self._parsed, self._stamps, self._complete = parsed, stamps, complete
        self._skipped = skipped
        text = render(
            entries(parsed), complete, skipped={rel: why for rel, (_, why) in skipped.items()}
        )
        if text != self._text:
            self._text = text
            self.version += 1
        return self._text


def _in_background(task: Callable[[], Awaitable[None]]) -> None:
    """Start ``task`` as a system task of this thread's Trio run: called in the run's own
    thread or in one of its worker threads. RuntimeError: this thread has no run."""
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:  # not the Trio thread: a worker thread, or no run at all
        trio.from_thread.run_sync(trio.lowlevel.spawn_system_task, task)
    else:
        trio.lowlevel.spawn_system_task(task)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size)


_BUILDERS: RunVar[trio.CapacityLimiter] = RunVar("iac_inventory_builders")
"""The limiter of the builds' worker threads, one per Trio run (a limiter serves one run)."""


def _builders() -> trio.CapacityLimiter:
    try:
        return _BUILDERS.get()
    except LookupError:
        limiter = trio.CapacityLimiter(BUILD_THREADS)
        _BUILDERS.set(limiter)
        return limiter


_PROJECTS: OrderedDict[Path, ProjectInventory] = OrderedDict()
"""The projects' inventories, least recently used first."""
_PROJECTS_LOCK = threading.Lock()


def project_inventory(cwd: Path) -> ProjectInventory:
    """The inventory of the project at ``cwd`` (one per folder, shared by its sessions). Of
    the folders seen, the last ``MAX_PROJECTS`` used are kept; one that dropped out is read
    again from its files when it is next used."""
    with _PROJECTS_LOCK:
        inventory = _PROJECTS.get(cwd)
        if inventory is None:
            inventory = _PROJECTS[cwd] = ProjectInventory(cwd)
            while len(_PROJECTS) > MAX_PROJECTS:
                _PROJECTS.popitem(last=False)
        else:
            _PROJECTS.move_to_end(cwd)
        return inventory


async def inventory_section(cwd: Path) -> str | None:
    """The system-prompt section for the session's project (``cwd``, a real path), or None
    when it holds no IaC. The first call waits up to FIRST_BUILD_WAIT for the first build; a
    later one returns at once what was last built, and a rebuild picks up changed files for
    the next."""
    return await trio.to_thread.run_sync(inventory_text, cwd, abandon_on_cancel=True)


def inventory_text(cwd: Path) -> str | None:
    """:func:`inventory_section`, blocking (for a caller already in a worker thread)."""
    inventory = project_inventory(cwd)
    inventory.start()
    inventory.ready.wait(FIRST_BUILD_WAIT)
    return inventory.current()


def inventory_version(cwd: Path) -> int:
    """Changes when the project's inventory text changes: a caller that built its prompt from
    an older version rebuilds it. Blocking (it looks at the files again): call it from a
    worker thread, before a prompt."""
    inventory = project_inventory(cwd)
    inventory.start()
    inventory.ready.wait(FIRST_BUILD_WAIT)
    try:
        inventory.build(wait=FIRST_BUILD_WAIT)  # a slow build must not hold the prompt up
    except Exception:  # a bug must not fail the prompt: the last text stays (the log says why)
        log.exception("rebuilding the IaC inventory of %s failed", cwd)
    return inventory.version


def iac_inventory(facts: Any) -> str | None:
    """The system-prompt section (``iaccode.context`` calls it, in a worker thread, with the
    session's facts: only ``facts.cwd`` is used)."""
    return inventory_text(Path(facts.cwd))
