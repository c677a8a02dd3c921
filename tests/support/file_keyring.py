"""A keyring backend for tests: the real ``keyring`` package, its items in a JSON file.

``PYTHON_KEYRING_BACKEND=tests.support.file_keyring.FileKeyring`` and
``IAC_TEST_KEYRING_FILE=/path`` make every process of a test (``iaccode login``, the agent)
share one keyring, where the machine's own (a desktop's Secret Service, macOS's Keychain) must
never be touched. ``PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring`` is a machine
without one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1

    def _file(self) -> Path:
        return Path(os.environ["IAC_TEST_KEYRING_FILE"])

    def _items(self) -> dict[str, str]:
        try:
            items: dict[str, str] = json.loads(self._file().read_text())
        except FileNotFoundError:
            return {}
        return items

    def get_password(self, service: str, username: str) -> str | None:
        return self._items().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        items = self._items()
        items[f"{service}/{username}"] = password
        self._file().write_text(json.dumps(items))

    def delete_password(self, service: str, username: str) -> None:
        items = self._items()
        if items.pop(f"{service}/{username}", None) is None:
            raise PasswordDeleteError(f"no {service}/{username}")
        self._file().write_text(json.dumps(items))
