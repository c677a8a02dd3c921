"""The machine the agent runs on: files read and written without following links, process trees
and ``/proc``, the .gitignore rules and ripgrep, exception groups unwrapped. Plumbing only: it
knows nothing of tools, IaC or the editor, and everything that acts on the machine (the tools,
the IaC checks, the gates, MCP servers) builds on it."""
