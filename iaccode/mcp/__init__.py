"""MCP servers for a session, on the official ``mcp`` SDK (imported only once a session has a
server): ``config`` (where servers come from), ``names`` (tool names for the model),
``transport`` (stdio with the whole process tree ended), ``connection`` (one server),
``servers`` (a session's set, its ``/mcp`` listing and prompts), ``tool`` (an MCP tool as one
of ours), ``section`` (the system prompt's list of MCP tools)."""

SDK_MODULES = (
    "anyio",
    "mcp",
    "mcp_types",
    "mcp_types.version",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client.subscriptions",
    "mcp.shared.message",
    "mcp.shared.exceptions",
    "mcp.shared._httpx_utils",
)
"""Everything of the SDK a connection uses. Importing it takes seconds on a loaded machine, so
it is imported in a worker thread (``connection.load_sdk``), or at start-up when config.toml
names servers (``iaccode/preload.py``), never on the trio thread: the loop would stop for it."""
