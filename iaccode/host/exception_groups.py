"""Unwrapping the exception groups a tool's own nursery makes.

A nursery wraps what ends it in an ExceptionGroup, while a tool's caller expects a bare
``trio.Cancelled`` (or the tool's own error): :func:`sole` finds it.
"""

from __future__ import annotations


def leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions in ``group`` and in the groups inside it, in order."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


def sole(
    group: BaseExceptionGroup[BaseException], kind: type[BaseException]
) -> BaseException | None:
    """The first exception in ``group`` when all of them are ``kind``; else None (raise the
    group: something else went wrong too)."""
    found = leaves(group)
    return found[0] if found and all(isinstance(exc, kind) for exc in found) else None
