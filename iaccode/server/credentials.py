"""Whether the configured provider has its key, and the ACP auth method that says where it goes.

A missing key is not an error at start-up: ``initialize`` offers the auth method instead, and the
requests that need the model (opening a session, a prompt) answer -32000 (auth required).
"""

from __future__ import annotations

from iaccode.config import Config
from iaccode.llm.base import MissingCredentials, Provider
from iaccode.llm.providers import auth_method_text
from iaccode.protocol import messages as m
from iaccode.wire import errors


def auth_method(config: Config) -> m.AuthMethod:
    """The configured provider's auth method: which variable to set."""
    return m.AuthMethod(*auth_method_text(config))


class Credentials:
    def __init__(self, config: Config, provider: Provider) -> None:
        self.method = auth_method(config)
        """Where the configured provider's key goes (offered while it is missing)."""
        self._provider = provider

    def present(self) -> bool:
        try:
            self._provider.check_credentials()
        except MissingCredentials:
            return False
        return True

    def require(self) -> None:
        """Raise -32000 (auth required, saying what to set) while the key is missing."""
        try:
            self._provider.check_credentials()
        except MissingCredentials as exc:
            raise errors.auth_required(str(exc)) from exc
