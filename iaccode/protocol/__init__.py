"""ACP message types (attrs) and the one strict converter. No I/O, no trio."""
