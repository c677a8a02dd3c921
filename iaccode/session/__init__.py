"""Live sessions: one agent runtime each."""
