"""Recorded transcripts: record a session (``iaccode acp --record``), replay it offline
(``iaccode replay``), and play the bundled demo (``iaccode demo``). Format: docs/transcripts.md.
"""
