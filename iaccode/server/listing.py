"""``session/list``: the stored sessions, newest first, a page at a time (``store/listing.py``)."""

from __future__ import annotations

from iaccode.protocol import messages as m
from iaccode.server.store_call import store_call
from iaccode.store.store import SessionStore, StoreError
from iaccode.wire import errors


async def list_sessions(
    store: SessionStore, params: m.ListSessionsRequest
) -> m.ListSessionsResponse:
    if params.cursor is not None:
        from iaccode.store.listing import decode_cursor  # sqlite3: not needed until a list

        try:
            decode_cursor(params.cursor)  # a cursor we did not make is bad params
        except StoreError as exc:
            raise errors.invalid_params({"params.cursor": str(exc)}) from exc
    metas, cursor = await store_call(lambda: store.list(cwd=params.cwd, cursor=params.cursor))
    return m.ListSessionsResponse(
        [
            m.SessionInfo(
                meta.session_id,
                meta.cwd,
                meta.title,
                meta.updated_at,
                list(meta.additional_directories),
            )
            for meta in metas
        ],
        cursor,
    )
