"""The agent loop of one prompt."""
