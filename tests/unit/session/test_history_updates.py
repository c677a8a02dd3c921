"""``session/load`` shows each model message with the ``messageId`` its chunks had live."""

from __future__ import annotations

from typing import Any

from iaccode.session.history_updates import history_updates

RECORDS: list[dict[str, Any]] = [
    {
        "type": "message",
        "message": {"role": "user", "content": "hi"},
        "prompt": [{"type": "text", "text": "hi"}],
    },
    {
        "type": "message",
        "message_id": "msg_live",
        "message": {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "hello"}],
        },
    },
    {
        "type": "message",  # saved before ids were kept
        "message": {"role": "assistant", "content": [{"type": "text", "text": "older"}]},
    },
]


def test_the_saved_id_and_for_older_records_one_made_of_their_place() -> None:
    shown = [(u["sessionUpdate"], u.get("messageId")) for u in history_updates(RECORDS)]
    assert shown == [
        ("user_message_chunk", None),
        ("agent_thought_chunk", "msg_live"),
        ("agent_message_chunk", "msg_live"),
        ("agent_message_chunk", "msg_record_2"),
    ]
    assert [u.get("messageId") for u in history_updates(RECORDS)] == [
        u.get("messageId") for u in history_updates(RECORDS)
    ]  # the same at every load
