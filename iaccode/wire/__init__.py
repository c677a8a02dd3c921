"""JSON-RPC 2.0 over newline-delimited JSON. Knows nothing about ACP."""
