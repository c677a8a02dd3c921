"""The session's requests to the editor, on the connection: its JSON-RPC errors become the
session's EditorError (``iaccode.session.errors``), so nothing below ``server`` sees one."""

from __future__ import annotations

from typing import Any

from iaccode.session.editor import EditorRequest
from iaccode.session.errors import EditorError
from iaccode.wire.connection import Connection
from iaccode.wire.errors import RpcError


def editor_requests(connection: Connection) -> EditorRequest:
    """``connection.request``, raising EditorError for the editor's error answers and for a
    connection that is gone. Cancellation propagates (the request is forgotten)."""

    async def request(method: str, params: Any) -> Any:
        try:
            return await connection.request(method, params)
        except RpcError as exc:
            raise EditorError(exc.message, exc.data) from exc

    return request
