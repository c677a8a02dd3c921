"""``iaccode serve``: the ``/acp`` endpoint on Hypercorn's trio worker until SIGTERM / SIGINT.

The bearer token is IAC_CODE_SERVE_TOKEN or config.toml's ``[serve] token_file``; without one
the server makes a random token and prints it, with the URL, once on stderr (never to the log
file). Listening on an address other than loopback needs a token of one's own: a generated
one could be read off a shared terminal or log, and the port would be open to the network.
SIGTERM / SIGINT close every connection (turns cancelled and answered, streams flushed, bounded
by SHUTDOWN_TIMEOUT) before Hypercorn stops.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import secrets
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from functools import partial

import trio

from iaccode.config import Config
from iaccode.remote.access import ENDPOINT
from iaccode.remote.app import AcpApp
from iaccode.remote.connections import ConnectionRegistry
from iaccode.remote.listener import Doorman, bind_sockets, serve_guarded
from iaccode.server.provider import make_provider

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
SHUTDOWN_TIMEOUT = 5.0
"""Seconds the connections get to answer and flush at shutdown before Hypercorn stops."""
HARD_STOP_AFTER = 10.0
"""Seconds after a signal when the process exits even if Hypercorn has not finished: its
writes to a client are shielded from cancellation, so a client that stopped reading would
hold the shutdown forever. The agents have ended by then; only that write is abandoned."""


class ServeError(Exception):
    """The server cannot start as asked (the message says why)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def choose_token(config: Config, host: str) -> tuple[str, bool]:
    """(the token, whether we made it); ServeError for a non-loopback bind without one."""
    if config.serve.token is not None:
        return config.serve.token, False
    if not is_loopback(host):
        raise ServeError(
            f"refusing to listen on {host} without a token of your own: set "
            "IAC_CODE_SERVE_TOKEN, or [serve] token_file in config.toml"
        )
    return secrets.token_urlsafe(32), True


def _bind(host: str, port: int) -> str:
    return f"[{host.strip('[]')}]:{port}" if ":" in host else f"{host}:{port}"


async def serve_remote(
    config: Config,
    host: str,
    port: int,
    token: str,
    announce_token: bool,
    *,
    stop: trio.Event | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until SIGTERM / SIGINT, or, when ``stop`` is given, until it is set (the same
    shutdown; the caller owns the signals then: a server inside another program, the tests).
    Once listening, the URLs go to stderr (with a generated token) and to ``task_status``.
    OSError before anything else when the address cannot be bound."""
    from hypercorn.config import Config as HypercornConfig

    settings = HypercornConfig()
    settings.bind = [_bind(host, port)]
    settings.accesslog = None
    settings.errorlog = logging.getLogger("iaccode.remote.hypercorn")
    settings.websocket_max_message_size = config.serve.max_body_bytes
    settings.include_server_header = False
    settings.graceful_timeout = 1.0
    sockets = bind_sockets(settings)
    provider = make_provider(config)
    on_signal = stop is None
    stop = trio.Event() if stop is None else stop

    async with trio.open_nursery() as nursery:
        registry = ConnectionRegistry(config, provider, nursery, Doorman())
        app = AcpApp(registry, config.serve, token)

        async def shutdown_trigger() -> None:
            await stop.wait()
            registry.close_all("the server is shutting down")
            with trio.move_on_after(SHUTDOWN_TIMEOUT):
                await registry.wait_all_closed()

        async def serve_http(task_status: trio.TaskStatus[list[str]]) -> None:
            await serve_guarded(
                app, settings, sockets, registry.doorman, shutdown_trigger, task_status=task_status
            )
            nursery.cancel_scope.cancel()

        if on_signal:
            nursery.start_soon(_stop_on_signal, stop)
        binds = await nursery.start(serve_http)
        app.access.allow_own_origins(binds)
        nursery.start_soon(registry.reap_idle)
        preload = getattr(provider, "preload", None)
        if preload is not None:
            nursery.start_soon(_preload, preload)
        for url in binds:
            log.info("serving ACP on %s%s", url, ENDPOINT)
            print(f"iaccode: serving ACP on {url}{ENDPOINT}", file=sys.stderr, flush=True)
        if announce_token:
            print(
                f"iaccode: bearer token (shown once; set IAC_CODE_SERVE_TOKEN to choose "
                f"one): {token}",
                file=sys.stderr,
                flush=True,
            )
        task_status.started([f"{url}{ENDPOINT}" for url in binds])
    # Its pooled connections closed: a program that goes on after the server (the tests run
    # it in their own process) would find them open.
    aclose = getattr(provider, "aclose", None)
    if aclose is not None:
        with trio.CancelScope(shield=True):
            await aclose()
    log.info("server stopped")


async def _preload(preload: Callable[[], Awaitable[None]]) -> None:
    """Load the model SDK ahead of the first prompt; a failure (out of file descriptors under
    a flood of connections, say) leaves that to the first prompt, not the server ended."""
    try:
        await preload()
    except (OSError, ImportError) as exc:
        log.warning("the model SDK could not be loaded ahead of the first prompt: %s", exc)


async def _stop_on_signal(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s; shutting down", signal.Signals(signum).name)
            stop.set()
            timer = threading.Timer(HARD_STOP_AFTER, _hard_stop)
            timer.daemon = True
            timer.start()
            return


def _hard_stop() -> None:
    log.warning("a client is not reading what it was sent; exiting without it")
    logging.shutdown()
    os._exit(0)


def run(config: Config, host: str, port: int) -> int:
    """The ``iaccode serve`` command after the config is read: 0, or 2 when refused."""
    try:
        token, made = choose_token(config, host)
    except ServeError as exc:
        print(f"iaccode: {exc}", file=sys.stderr)
        return 2
    try:
        trio.run(partial(serve_remote, config, host, port, token, made))
    except OSError as exc:  # the port is taken, the address is not ours
        print(
            f"iaccode: cannot listen on {_bind(host, port)}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    return 0
