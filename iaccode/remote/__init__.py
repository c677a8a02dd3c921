"""``iaccode serve``: ACP over Streamable HTTP and WebSocket (the ACP RFD "Streamable HTTP &
WebSocket Transport", as revised on 2026-05-04), on Hypercorn's protocols.

A remote connection is one more pair of byte streams for the same ``wire.Connection`` and its
own ``Agent`` (``server.serve.serve_agent``); nothing below ``server`` knows it is remote.

| module | what it is |
|---|---|
| ``access.py`` | what every request passes on its headers alone: Host, Origin, token, path |
| ``app.py`` | the ASGI app: the ``/acp`` endpoint, statuses, the streams, WebSocket |
| ``pumps.py`` | bytes in and out: bodies (bounded in size and time), SSE events, frames |
| ``routing.py`` | which stream each agent message belongs on (connection or session scope) |
| ``outbox.py`` | the lanes waiting for those streams: one session's order, shared room |
| ``pipes.py`` | the two streams ``Connection`` gets: client messages in, agent messages out |
| ``connections.py`` | one remote connection (its agent, idle and stall handling); the registry |
| ``listener.py`` | the accept loop: each TCP connection guarded, the untrusted ones capped |
| ``serve.py`` | the command: token, binding, signals |

Hypercorn is imported only here, so ``iaccode acp`` never loads it.
"""
