"""Prompt-cache accounting as the Messages API does it, computed from the request bytes.

The request is read as a sequence of cacheable blocks, in the API's order: the tools, the
system blocks, then every content block of every message. A block with ``cache_control`` is a
breakpoint. For each breakpoint the cache is looked up at that block and up to ``LOOKBACK - 1``
blocks before it (the API's 20-block lookback); a hit is a prefix some earlier request wrote.
Prefixes at breakpoints past the hit are written, if they reach ``min_tokens``.

    usage = cache.account(body)
    # {"input_tokens": ..., "cache_read_input_tokens": ..., "cache_creation_input_tokens": ...}

Tokens are estimated from bytes (``BYTES_PER_TOKEN``) of each block's canonical JSON, without
its ``cache_control``. The model is part of the key, as the API keeps caches per model.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from typing import Any

BYTES_PER_TOKEN = 4
LOOKBACK = 20
MIN_CACHE_TOKENS = 1024
"""The API's minimum cacheable prompt for Sonnet and Opus; shorter prefixes are not cached."""


def _blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """(canonical bytes, is a breakpoint) for each block of the prompt, in order."""
    out: list[tuple[bytes, bool]] = []

    def add(kind: str, block: Any) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        if marked:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((json.dumps([kind, block], sort_keys=True).encode(), marked))

    add("model", body.get("model"))
    for tool in body.get("tools") or []:
        add("tool", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system", {"type": "text", "text": system})
    for block in system if isinstance(system, list) else []:
        add("system", block)
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            add(str(message.get("role")), block)
    return out


class PromptCache:
    def __init__(self, min_tokens: int = MIN_CACHE_TOKENS) -> None:
        self._min_tokens = min_tokens
        self._written: set[bytes] = set()
        self._lock = threading.Lock()

    def account(self, body: dict[str, Any]) -> dict[str, int]:
        blocks = _blocks(body)
        hashes: list[bytes] = []
        tokens: list[int] = []
        running = hashlib.sha256()
        size = 0
        for data, _ in blocks:
            running.update(len(data).to_bytes(8, "big") + data)
            hashes.append(running.copy().digest())
            size += len(data)
            tokens.append(math.ceil(size / BYTES_PER_TOKEN))
        breakpoints = [index for index, (_, marked) in enumerate(blocks) if marked]
        with self._lock:
            hit = -1
            for point in breakpoints:
                for index in range(point, max(point - LOOKBACK, -1), -1):
                    if hashes[index] in self._written:
                        hit = max(hit, index)
                        break
            written = hit
            for point in breakpoints:
                if point > hit and tokens[point] >= self._min_tokens:
                    self._written.add(hashes[point])
                    written = max(written, point)
        read = tokens[hit] if hit >= 0 else 0
        created = tokens[written] - read if written > hit else 0
        total = tokens[-1] if tokens else 0
        return {
            "input_tokens": total - read - created,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
        }
