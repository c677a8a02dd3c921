"""The conversation of one session: the model's history in memory, records on disk.

Records (one JSON object per line in the session's history file, see docs/session-store.md):

    {"type": "message", "message": {role, content}, "prompt": [ACP blocks]?,
     "message_id": "msg_..."?}
        a finished message; a user prompt keeps the ACP blocks the user sent, for a load; a
        model message keeps the ``messageId`` its chunks carried (a load shows the same)
    {"type": "tool_call", "start": {...tool_call...}, "end": {...tool_call_update...}}
        how a finished tool call looked in the editor, for a load
    {"type": "prompt", "prompt": [ACP blocks]}
        a prompt the model did not see (``/compact``, ``/clear``, ``/mcp``), for a load
    {"type": "notice", "text": "..."}      something we told the user (an error, a compaction,
        the ``/mcp`` listing)
    {"type": "plan", "entries": [...]}     the plan todo_write showed (ACP plan entries); a
        load shows the last one again
    {"type": "compaction", "messages": [...], "notice": "..."?}
        from here on the model's history is these messages (a summary plus recent turns, or
        nothing after /clear); the records before it stay, so a load still shows what the user
        saw; ``notice`` is what the user was told (a load shows it at this point)

The history only grows by whole messages, so a crash loses at most the message being written,
and ``repair`` makes any prefix of the records a history the API accepts. The file therefore
always holds a prefix of the records: when one cannot be written (disk full, a write error) it
and every later one wait in memory, in order, and each later write tries them all again; never
is a record written while an earlier one is missing (a ``tool_result`` saved without the
``tool_use`` it answers would make the history one the API refuses).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from iaccode.store.store import SessionFile, StoreError, encode_record
from iaccode.turn.stored_images import externalize

log = logging.getLogger(__name__)

INTERRUPTED = "Session interrupted before tool execution completed."
"""The result of a tool call a crash or a cancel cut short (the model reads it, a load shows
it): the one text for it, used by ``repair`` and a history shown on load."""


class Transcript:
    def __init__(
        self,
        file: SessionFile | None = None,
        on_store_error: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.messages: list[dict[str, Any]] = []
        """The model's view of the conversation (after any compaction)."""
        self._file = file
        self._on_store_error = on_store_error
        self.message_count = 0
        """Messages appended in all (compaction does not reduce it)."""
        self._unsaved = bytearray()
        """Encoded records not written yet (a write failed): the next write tries them first."""

    # -- writing ----------------------------------------------------------------------------

    def append(
        self,
        message: dict[str, Any],
        prompt: list[Any] | None = None,
        *,
        message_id: str | None = None,
    ) -> None:
        self.messages.append(message)
        self.message_count += 1
        record: dict[str, Any] = {"type": "message", "message": message}
        if prompt is not None:
            record["prompt"] = prompt
        if message_id is not None:
            record["message_id"] = message_id
        self._write(record)

    def tool_call(self, start: dict[str, Any], end: dict[str, Any]) -> None:
        self._write({"type": "tool_call", "start": start, "end": end})

    def plan(self, entries: list[dict[str, Any]]) -> None:
        """The model's plan (``todo_write``), as the ACP plan entries shown."""
        self._write({"type": "plan", "entries": entries})

    def prompt(self, blocks: list[Any]) -> None:
        """A prompt the model does not see (a command we answered ourselves), kept so that a
        load shows it where the user typed it."""
        self._write({"type": "prompt", "prompt": blocks})

    def notice(self, text: str) -> None:
        self._write({"type": "notice", "text": text})

    def replace(self, messages: list[dict[str, Any]], notice: str | None = None) -> None:
        """Compaction or /clear: the model sees these messages from now on. ``notice``, what
        the user was told of it, is kept with the record (a load shows it there)."""
        self.messages = list(messages)
        record: dict[str, Any] = {"type": "compaction", "messages": self.messages}
        if notice is not None:
            record["notice"] = notice
        self._write(record)

    @property
    def unsaved_bytes(self) -> int:
        """Size of the records waiting to be written (0: the file holds everything)."""
        return len(self._unsaved)

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        try:
            record = externalize(record, self._file.save_image)
        except StoreError as exc:  # the image goes inline, in the line itself
            log.warning("%s", exc)
        try:
            line = encode_record(record)
        except StoreError as exc:
            log.error("cannot save session history: %s", exc)
            self._on_store_error(f"Could not save the session history: {exc}")
            return
        failing = bool(self._unsaved)
        self._unsaved += line
        try:
            self._file.append_encoded(bytes(self._unsaved))
        except StoreError as exc:
            # The session goes on in memory; the user hears (once) that it is not being saved.
            if not failing:
                log.error("cannot save session history: %s", exc)
                self._on_store_error(
                    f"Could not save the session history: {exc}. The conversation goes on; "
                    "what is not saved yet is kept in memory and saved as soon as writing "
                    "works again (it is lost if iac-code exits before)."
                )
            return
        if failing:
            log.info("session history saved again (%d bytes had waited)", len(self._unsaved))
        self._unsaved.clear()

    def flush(self) -> None:
        """Try once more to write what is waiting (the session is closing)."""
        if self._file is None or not self._unsaved:
            return
        try:
            self._file.append_encoded(bytes(self._unsaved))
        except StoreError as exc:
            log.error("%d bytes of session history are lost: %s", len(self._unsaved), exc)
            return
        self._unsaved.clear()

    def repair(self, text: str = INTERRUPTED) -> None:
        """Answer tool calls a crash or a cancel left unanswered (records the answer too), so
        the API accepts the history."""
        dangling = unanswered_tool_uses(self.messages)
        if dangling:
            self.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tool_id,
                            "content": text,
                            "is_error": True,
                        }
                        for tool_id in dangling
                    ],
                }
            )

    # -- reading ----------------------------------------------------------------------------

    @classmethod
    def from_records(
        cls,
        records: list[dict[str, Any]],
        file: SessionFile | None = None,
        on_store_error: Callable[[str], None] = lambda message: None,
    ) -> Transcript:
        transcript = cls(file, on_store_error)
        for record in records:
            kind = record.get("type")
            if kind == "message" and isinstance(record.get("message"), dict):
                transcript.messages.append(record["message"])
                transcript.message_count += 1
            elif kind == "compaction" and isinstance(record.get("messages"), list):
                transcript.messages = list(record["messages"])
        return transcript


class SubAgentTranscript(Transcript):
    """A sub-agent's conversation: in memory (its own context, never saved), but its tool
    calls are saved in the parent's history, so a load shows them under the parent call."""

    def __init__(self, parent: Transcript) -> None:
        super().__init__()
        self._parent = parent

    def tool_call(self, start: dict[str, Any], end: dict[str, Any]) -> None:
        self._parent.tool_call(start, end)


def new_message_id() -> str:
    """A model message's ``messageId``: unique in the session (and beyond)."""
    return "msg_" + uuid.uuid4().hex


def unanswered_tool_uses(messages: list[dict[str, Any]]) -> list[str]:
    """Ids of the last assistant message's tool_use blocks that have no tool_result after."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            ids = [b["id"] for b in _blocks(messages[index]) if b.get("type") == "tool_use"]
            answered = {
                b.get("tool_use_id")
                for later in messages[index + 1 :]
                for b in _blocks(later)
                if b.get("type") == "tool_result"
            }
            return [i for i in ids if i not in answered]
    return []


def api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as the API wants it: roles alternate (consecutive messages of one role,
    e.g. a prompt after a turn cancelled before any answer, are merged)."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {
                "role": message["role"],
                "content": [*_blocks(merged[-1]), *_blocks(message)],
            }
        else:
            merged.append(message)
    return merged


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]
