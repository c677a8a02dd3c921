"""Command line: ``iaccode acp`` serves ACP on stdio; ``iaccode serve`` over HTTP and WebSocket
(``iaccode/remote/``); ``iaccode login`` / ``logout`` save or forget an API key
(``iaccode/login.py``; ``iaccode acp login`` too, as terminal auth runs it); ``iaccode replay``
checks a recorded
transcript against the current build; ``iaccode demo`` shows a recorded task; ``--version``.

What the editor waits for is its first session, so ``iaccode acp`` loads only what opening one
needs (``run_acp``) and imports the rest in the background (``iaccode/preload.py``): keep this
module's own imports to the standard library's lightest, and import the rest inside the
functions that need it.
"""

from __future__ import annotations

import sys

import iaccode

TYPE_CHECKING = False  # not typing's, for the same reason: type checkers know the name
if TYPE_CHECKING:
    import argparse

    from iaccode.config import Config


def build_parser() -> argparse.ArgumentParser:
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="iaccode", description=iaccode.__doc__)
    parser.add_argument("--version", action="version", version=f"iaccode {iaccode.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    acp = commands.add_parser("acp", help="serve the Agent Client Protocol on stdin/stdout")
    acp.add_argument(
        "--model-script",
        type=Path,
        metavar="PATH",
        help="play a scripted model from PATH instead of calling the API "
        "(same as IAC_CODE_MODEL_SCRIPT)",
    )
    acp.add_argument("--model", help="model id for new sessions (same as IAC_CODE_MODEL)")
    acp.add_argument(
        "--provider",
        help="the model API: anthropic, openai, dashscope, deepseek, "
        "openrouter, ollama or openai_compatible (same as IAC_CODE_PROVIDER)",
    )
    acp.add_argument(
        "--record",
        type=Path,
        metavar="PATH",
        help="write a transcript of the whole session to PATH (docs/transcripts.md)",
    )
    acp.add_argument(
        "account",
        nargs="?",
        choices=["login", "logout"],
        help="run `iaccode login` / `logout` instead of serving (editors with "
        "terminal auth append `login` to the agent's arguments)",
    )
    for name, verb in (
        (
            "login",
            "save an API key for the agent (the OS keyring, or credentials.toml in IAC_CODE_HOME)",
        ),
        ("logout", "forget the API key `iaccode login` saved"),
    ):
        account = commands.add_parser(name, help=verb)
        account.add_argument(
            "--provider",
            help="the provider whose key it is (default: ask "
            "for login, the configured one for logout)",
        )
    serve = commands.add_parser(
        "serve", help="serve ACP over Streamable HTTP and WebSocket on /acp (remote editors)"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other needs "
        "IAC_CODE_SERVE_TOKEN or [serve] token_file)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=8765,
        help="port to listen on (default 8765; 0 picks a free one)",
    )
    serve.add_argument(
        "--model-script",
        type=Path,
        metavar="PATH",
        help="play a scripted model from PATH (same as IAC_CODE_MODEL_SCRIPT)",
    )
    serve.add_argument("--model", help="model id for new sessions (same as IAC_CODE_MODEL)")
    replay = commands.add_parser(
        "replay", help="replay a recorded transcript offline and compare every agent message"
    )
    replay.add_argument("transcript", type=Path)
    replay.add_argument(
        "--agent", metavar="CMD", help="the agent command to replay against (default: this iaccode)"
    )
    replay.add_argument(
        "--update", action="store_true", help="rewrite the transcript with what the agent sends now"
    )
    demo = commands.add_parser("demo", help="watch iac-code do a recorded task (no key needed)")
    demo.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="pace relative to the recording (2 = twice as fast)",
    )
    demo.add_argument("--transcript", type=Path, help="another transcript to show")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.command in ("login", "logout") or getattr(args, "account", None):
        return run_account(args)
    if args.command == "acp":
        return run_acp(args)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "replay":
        from iaccode.transcript.command import run_replay

        return run_replay(args.transcript, args.agent, args.update)
    if args.command == "demo":
        from iaccode.transcript.demo import run_demo

        return run_demo(args.speed, args.transcript)
    return 2  # argparse enforces a command; kept for type checkers


def run_account(args: argparse.Namespace) -> int:
    """``iaccode login`` / ``logout``, or ``iaccode acp [options] login`` (terminal auth)."""
    from iaccode.login import run_login, run_logout

    if args.command == "acp":  # the agent's own options: its provider is the default
        return (
            run_login(None, configured=args.provider)
            if args.account == "login"
            else run_logout(args.provider)
        )
    return run_login(args.provider) if args.command == "login" else run_logout(args.provider)


def run_acp(args: argparse.Namespace) -> int:
    """Serve ACP on stdio: claim stdio, read the configuration, take the secrets out of the
    process environment, start the preload, then load what a first session needs and serve."""
    protocol_in, protocol_out = claim_stdio()  # first: nothing but protocol may reach stdout
    import logging

    from iaccode.config import Config, ConfigError

    try:
        config = Config.from_env(
            model_script=args.model_script,
            model=args.model,
            provider=args.provider,
            record_path=args.record,
        )
    except ConfigError as exc:
        print(f"iaccode: {exc}", file=sys.stderr)
        return 2
    from iaccode.logs import setup_logging

    setup_logging(config.log_level, config.log_file)
    # What changes the process or its environment goes here: after the config (the secret
    # names are in it), before any thread starts (the preload's, trio's workers).
    seal_secrets(config)
    from iaccode.preload import Preload, modules_for

    preload = Preload(modules_for(config)).start()  # while the rest loads and the editor talks

    import trio

    from iaccode.server.stdio import serve_stdio

    log = logging.getLogger("iaccode")
    log.info(
        "iaccode %s serving ACP on stdio (%s, model %s%s)",
        iaccode.__version__,
        config.provider,
        config.model,
        f", script {config.model_script}" if config.model_script else "",
    )
    from iaccode.llm.script import ScriptError

    try:
        trio.run(serve_stdio, config, protocol_in, protocol_out, instruments=[preload.instrument()])
    except ScriptError as exc:  # the user's file: say what is wrong with it, not where we were
        log.error("the model script cannot be played: %s", exc)
        return 1
    except Exception:
        log.exception("the server failed")
        return 1
    return 0


def seal_secrets(config: Config) -> None:
    """The one place a server takes the secrets out of its own process environment
    (``iaccode/process_secrets.py``), once the config (and its secret names) is read and
    before any thread starts (``iaccode/preload.py``'s, trio's workers): the C environment is
    changed while nothing else can read it. The data dir becomes private (0700) here too. The
    cloud credentials the gates hold back (``iaccode/iac/credentials.py``) are secrets too:
    they leave the process environment, and their values are replaced in output, also when a
    gate handed them to a real CLI."""
    import logging

    from iaccode.private_files import private_home
    from iaccode.process_secrets import seal

    seal(secret_names(config))
    try:
        private_home(config.home)  # 0700: the sessions, the log, the saved output are in it
    except OSError as exc:  # a read-only home: the store says what it cannot do
        logging.getLogger("iaccode").warning("cannot make %s private: %s", config.home, exc)


def secret_names(config: Config) -> list[str]:
    """The names :func:`seal_secrets` adds to the secret rule: config.toml's ``[secrets]``, the
    provider's ``api_key_env``, the cloud credentials the gates hold back. (An agent in a
    test's process declares the same names, without the seal: ``tests/support/in_process.py``.)
    """
    import os

    from iaccode.iac.credentials import held

    return [*config.secret_names, config.api_key_env or "", *held(os.environ)]


def claim_stdio() -> tuple[int, int]:
    """Take stdin/stdout for the protocol and point fd 1 at stderr.

    After this, a stray ``print`` (ours or a library's, even from C) lands on stderr instead of
    corrupting the protocol stream.
    """
    import os

    protocol_in = os.dup(0)
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    return protocol_in, protocol_out


def run_serve(args: argparse.Namespace) -> int:
    import logging

    from iaccode.config import Config, ConfigError

    try:
        config = Config.from_env(model_script=args.model_script, model=args.model)
    except ConfigError as exc:
        print(f"iaccode: {exc}", file=sys.stderr)
        return 2
    from iaccode.logs import setup_logging
    from iaccode.remote import serve

    setup_logging(config.log_level, config.log_file)
    seal_secrets(config)
    logging.getLogger("iaccode").info(
        "iaccode %s serving ACP over HTTP (model %s%s)",
        iaccode.__version__,
        config.model,
        f", script {config.model_script}" if config.model_script else "",
    )
    from iaccode.llm.script import ScriptError

    try:
        return serve.run(config, args.host, args.port)
    except ScriptError as exc:
        logging.getLogger("iaccode").error("the model script cannot be played: %s", exc)
        return 1
    except Exception:
        logging.getLogger("iaccode").exception("the server failed")
        return 1
