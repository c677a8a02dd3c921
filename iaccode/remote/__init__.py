"""``iaccode serve``: ACP over Streamable HTTP and WebSocket (the ACP RFD "Streamable HTTP &
WebSocket Transport"), on Hypercorn's trio worker.

A remote connection is one more pair of byte streams for the same ``wire.Connection`` and its
own ``Agent`` (``server.stdio.serve_agent``); nothing below ``server`` knows it is remote.

| module | what it is |
|---|---|
| ``pipes.py`` | the two streams: client messages in, agent messages out (bounded, routed) |
| ``connections.py`` | one remote connection (its agent, idle and stall handling); the registry |
| ``app.py`` | the ASGI app: the ``/acp`` endpoint, auth, origin check, statuses, SSE, WebSocket |
| ``serve.py`` | the command: token, binding, Hypercorn, signals |

Hypercorn is imported only here, so ``iaccode acp`` never loads it.
"""
