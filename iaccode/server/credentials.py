"""Whether the configured provider has its key, the ACP auth methods that say how to give it,
and ``logout``.

A missing key is not an error at start-up: ``initialize`` offers the auth methods (always, for
a provider that takes a key: after a ``logout`` the client needs them), and the requests that
need the model (opening a session, a prompt) answer -32000 (auth required). The key is the
environment's, else the one ``iaccode login`` saved (``iaccode.llm.stored_keys``), read again
at every check: a login in a terminal counts at the next request, ``authenticate`` included.
"""

from __future__ import annotations

import logging

import trio

from iaccode.config import Config
from iaccode.llm.base import MissingCredentials, Provider
from iaccode.llm.providers import LOGIN_METHOD_ID, auth_methods, env_method_id
from iaccode.protocol import messages as m
from iaccode.protocol.convert import converter
from iaccode.wire import errors

log = logging.getLogger(__name__)


def auth_method(config: Config) -> m.AuthMethod:
    """The configured provider's first auth method (where its key goes)."""
    method: m.AuthMethod = converter.structure(auth_methods(config)[0], m.AuthMethod)
    return method


class Credentials:
    def __init__(self, config: Config, provider: Provider) -> None:
        self._config = config
        self._provider = provider

    def methods(self, *, terminal: bool) -> list[dict[str, object]]:
        """The ``authMethods`` (wire form); ``terminal``: the client runs terminal auth."""
        return auth_methods(self._config, terminal=terminal)

    def known(self, method_id: str) -> bool:
        """Whether ``method_id`` is one of ours (the terminal one is accepted from any client:
        after running ``iaccode login`` some call ``authenticate`` with it)."""
        return method_id in {env_method_id(self._config), LOGIN_METHOD_ID}

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

    async def forget(self) -> None:
        """``logout``: remove the key ``iaccode login`` saved for the configured provider (the
        file's entry and the keyring's item). A key in the environment stays in use: we cannot
        unset it, and the log says so."""
        from iaccode.llm import stored_keys  # not at start-up: only a logout needs it here

        config = self._config
        try:
            removed = await trio.to_thread.run_sync(
                stored_keys.forget, config.home, config.provider
            )
        except stored_keys.StoreProblem as exc:
            raise errors.internal_error(str(exc)) from exc
        log.info(
            "logout: %s",
            f"the saved {config.provider} key is removed"
            if removed
            else f"no {config.provider} key was saved",
        )
        if self.present():
            log.info("logout: the key in the environment is still used (it cannot be unset)")
