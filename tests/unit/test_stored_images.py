"""Large images beside the history: saved on write, read back on open, never a broken history."""

from __future__ import annotations

import base64
from pathlib import Path

from iaccode.store.meta import SessionMeta, utc_now
from iaccode.store.store import SessionStore, new_session_id
from iaccode.turn.stored_images import INLINE_LIMIT, externalize, restore

BIG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(INLINE_LIMIT)).decode()


def record(data: str) -> dict:
    return {
        "type": "message",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": data},
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": data},
                        }
                    ],
                },
            ],
        },
        "prompt": [{"type": "image", "mimeType": "image/png", "data": data}],
    }


def session_file(tmp_path: Path):  # type: ignore[no-untyped-def]
    stamp = utc_now()
    meta = SessionMeta(
        session_id=new_session_id(),
        cwd=str(tmp_path),
        created_at=stamp,
        updated_at=stamp,
        model="m",
        mode="default",
        thought_level="off",
    )
    return SessionStore(tmp_path / "sessions").create(meta)


def test_round_trip_and_one_file_per_image(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    original = record(BIG)
    saved = externalize(original, file.save_image)
    assert BIG not in str(saved) and original == record(BIG)  # a copy; the input is kept
    assert len(list((file.folder / "images").iterdir())) == 1  # the same bytes, one file
    assert restore(saved, file.load_image) == original
    file.close()


def test_small_images_stay_inline(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    small = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    assert externalize(record(small), file.save_image) == record(small)
    file.close()


def test_a_missing_or_foreign_file_becomes_a_marker(tmp_path: Path) -> None:
    file = session_file(tmp_path)
    saved = externalize(record(BIG), file.save_image)
    for image in (file.folder / "images").iterdir():
        image.unlink()
    back = restore(saved, file.load_image)
    assert back["message"]["content"][0]["type"] == "text"
    assert "is gone" in back["prompt"][0]["text"]
    assert file.load_image("../meta.json") is None
    assert file.load_image("images/../../../etc/passwd") is None
    file.close()
