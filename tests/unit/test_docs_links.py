"""The README, docs/ and the other READMEs point only inside the repository.

Every relative Markdown link in ``README.md``, ``docs/*.md``, ``tests/README.md`` and
``conformance/README.md`` names a file of the repository
(and, with ``#anchor``, a heading of that file), and no text names a path of one machine
(``/work/...``, ``/tmp/...``, the home of whoever ran the tests): a newcomer's clone has
neither.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`((?:\.\./)+[^`\s]*[A-Za-z][^`\s]*)`")
"""A path in a code span that climbs out of its folder to a name: ``../shared/NOTES.md`` (not
``../..``, an example of a path)."""
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
MACHINE_PATHS = ("/work/", "/tmp/", "/root/", "/var/folders/", "/Users/")
"""Places on a particular machine, never in a clone: where this repository's work happened,
temporary files, root's and macOS users' homes."""


def documents(root: Path = ROOT) -> list[Path]:
    return [
        root / "README.md",
        *sorted((root / "docs").glob("*.md")),
        root / "tests" / "README.md",
        root / "conformance" / "README.md",
    ]


def anchors(path: Path) -> set[str]:
    """The ids GitHub gives the file's headings: lower case, punctuation dropped, spaces to
    hyphens (a repeated heading gets -1, -2, ...)."""
    seen: dict[str, int] = {}
    ids = set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        if not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """The relative links of one document that lead nowhere in the repository, and the paths
    in code spans that leave it."""
    problems = []
    name = path.relative_to(root).as_posix()  # three of them are README.md
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        where = (path.parent / file_part).resolve() if file_part else path
        if not where.is_relative_to(root.resolve()):
            problems.append(f"{name}: {target} leads outside the repository")
        elif not where.exists():
            problems.append(f"{name}: {target} names no file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            problems.append(f"{name}: {target} names no heading of {where.name}")
    for named in CODE_PATH.findall(text):
        if not (path.parent / named).resolve().is_relative_to(root.resolve()):
            problems.append(f"{name}: `{named}` is outside the repository")
    return problems


def machine_paths(path: Path, root: Path = ROOT) -> list[str]:
    """Lines of one document that name a path of some machine."""
    home = str(Path.home())
    places = (*MACHINE_PATHS, *([home + "/"] if home not in ("/", "/home/you") else []))
    name = path.relative_to(root).as_posix()
    return [
        f"{name}:{number}: {line.strip()}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(place in line for place in places)
    ]


@pytest.mark.parametrize("document", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve_inside_the_repository(document: Path) -> None:
    assert broken_links(document) == []


@pytest.mark.parametrize("document", documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_path_of_one_machine(document: Path) -> None:
    assert machine_paths(document) == []


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# A heading, here\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "[ok](docs/there.md) [ok](docs/there.md#a-heading-here) [web](https://example.com)\n"
        "[gone](docs/missing.md) [out](../elsewhere/NOTES.md) [no](docs/there.md#nowhere)\n"
        "```\n[in a code block](not/checked.md)\n```\n"
        "run it from /work/main or /tmp/x; notes in `../shared/NOTES.md`\n"
    )
    assert broken_links(readme, tmp_path) == [
        "README.md: docs/missing.md names no file",
        "README.md: ../elsewhere/NOTES.md leads outside the repository",
        "README.md: docs/there.md#nowhere names no heading of there.md",
        "README.md: `../shared/NOTES.md` is outside the repository",
    ]
    assert machine_paths(readme, tmp_path) == [
        "README.md:6: run it from /work/main or /tmp/x; notes in `../shared/NOTES.md`"
    ]
