"""The ACP method table, params validation, and errors -> responses, in one place."""
