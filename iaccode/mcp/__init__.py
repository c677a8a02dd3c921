"""MCP servers for a session, on the official ``mcp`` SDK (imported only once a session has a
server): ``config`` (where servers come from), ``names`` (tool names for the model),
``transport`` (stdio with the whole process tree ended), ``connection`` (one server),
``servers`` (a session's set, its ``/mcp`` listing and prompts), ``tool`` (an MCP tool as one
of ours), ``section`` (the system prompt's list of MCP tools)."""
