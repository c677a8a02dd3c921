"""Store operations off the event loop, their errors turned into answers the user can read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import trio

from iaccode.store.store import SessionLocked, SessionNotFound, StoreError
from iaccode.wire import errors

T = TypeVar("T")


async def store_call(function: Callable[..., T], *args: Any) -> T:
    """Run a store operation in a thread; its errors become answers the user can read."""
    try:
        return await trio.to_thread.run_sync(function, *args)
    except SessionNotFound as exc:
        raise errors.invalid_params({"params.sessionId": str(exc)}) from exc
    except SessionLocked as exc:
        raise errors.invalid_params({"params.sessionId": str(exc)}) from exc
    except StoreError as exc:
        # The message is what an editor shows: it says what failed and why ("No space
        # left on device", "Read-only file system").
        raise errors.RpcError(
            errors.INTERNAL_ERROR, f"Session store error: {exc}", {"detail": str(exc)}
        ) from exc
