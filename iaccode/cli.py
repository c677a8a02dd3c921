"""Command line: ``iaccode acp`` serves ACP on stdio; ``iaccode serve`` over HTTP and WebSocket
(``iaccode/remote/``); ``iaccode login`` / ``logout`` save or forget an API key
(``iaccode/login.py``; ``iaccode acp login`` too, as terminal auth runs it); ``iaccode replay``
checks a recorded
transcript against the current build; ``iaccode demo`` shows a recorded task; ``--version``.

``iaccode acp`` answers ``initialize`` before anything else is imported
(``iaccode/server/handshake.py``): keep this module's own imports to the standard library's
lightest (not even pathlib or typing, which cost milliseconds), and import the rest inside
the functions that need it.
"""

from __future__ import annotations

import sys

import iaccode

TYPE_CHECKING = False  # not typing's, for the same reason: type checkers know the name
if TYPE_CHECKING:
    import argparse

    from iaccode.config import Config
    from iaccode.server.handshake import Early


def build_parser() -> argparse.ArgumentParser:
    # Here, as pathlib: ``iaccode acp`` answers initialize before it parses its options.
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(prog="iaccode", description=iaccode.__doc__)
    parser.add_argument("--version", action="version", version=f"iaccode {iaccode.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    acp = commands.add_parser("acp", help="serve the Agent Client Protocol on stdin/stdout")
    acp.add_argument("--model-script", type=Path, metavar="PATH",
                     help="play a scripted model from PATH instead of calling the API "
                          "(same as IAC_CODE_MODEL_SCRIPT)")
    acp.add_argument("--model", help="model id for new sessions (same as IAC_CODE_MODEL)")
    acp.add_argument("--provider", help="the model API: anthropic, openai, dashscope, deepseek, "
                     "openrouter, ollama or openai_compatible (same as IAC_CODE_PROVIDER)")
    acp.add_argument("--record", type=Path, metavar="PATH",
                     help="write a transcript of the whole session to PATH (docs/transcripts.md)")
    acp.add_argument("account", nargs="?", choices=["login", "logout"],
                     help="run `iaccode login` / `logout` instead of serving (editors with "
                          "terminal auth append `login` to the agent's arguments)")
    for name, verb in (("login", "save an API key for the agent (the OS keyring, or "
                                 "credentials.toml in IAC_CODE_HOME)"),
                       ("logout", "forget the API key `iaccode login` saved")):
        account = commands.add_parser(name, help=verb)
        account.add_argument("--provider", help="the provider whose key it is (default: ask "
                             "for login, the configured one for logout)")
    serve = commands.add_parser(
        "serve", help="serve ACP over Streamable HTTP and WebSocket on /acp (remote editors)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1; any other needs "
                            "IAC_CODE_SERVE_TOKEN or [serve] token_file)")
    serve.add_argument("--port", type=int, default=8765,
                       help="port to listen on (default 8765; 0 picks a free one)")
    serve.add_argument("--model-script", type=Path, metavar="PATH",
                       help="play a scripted model from PATH (same as IAC_CODE_MODEL_SCRIPT)")
    serve.add_argument("--model", help="model id for new sessions (same as IAC_CODE_MODEL)")
    replay = commands.add_parser(
        "replay", help="replay a recorded transcript offline and compare every agent message")
    replay.add_argument("transcript", type=Path)
    replay.add_argument("--agent", metavar="CMD",
                        help="the agent command to replay against (default: this iaccode)")
    replay.add_argument("--update", action="store_true",
                        help="rewrite the transcript with what the agent sends now")
    demo = commands.add_parser("demo", help="watch iac-code do a recorded task (no key needed)")
    demo.add_argument("--speed", type=float, default=1.0,
                      help="pace relative to the recording (2 = twice as fast)")
    demo.add_argument("--transcript", type=Path, help="another transcript to show")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    early = None
    if argv[:1] == ["acp"]:
        from iaccode.server.handshake import answer_early

        early = answer_early(argv[1:])
        if early is not None and early.stopped:
            return 0  # SIGTERM or SIGINT before the editor said anything
    args = build_parser().parse_args(argv)
    if args.command in ("login", "logout") or getattr(args, "account", None):
        return run_account(args)
    if args.command == "acp":
        return run_acp(args, early)
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
        return (run_login(None, configured=args.provider) if args.account == "login"
                else run_logout(args.provider))
    return run_login(args.provider) if args.command == "login" else run_logout(args.provider)


def run_acp(args: argparse.Namespace, early: Early | None = None) -> int:
    import logging

    from iaccode.config import Config, ConfigError

    if early is None:
        # First thing: nothing but protocol may reach stdout.
        from iaccode.server.handshake import claim_stdio

        protocol_in, protocol_out = claim_stdio()
    else:
        protocol_in, protocol_out = early.protocol_in, early.protocol_out
    try:
        config = Config.from_env(model_script=args.model_script, model=args.model,
                                 provider=args.provider, record_path=args.record)
    except ConfigError as exc:
        print(f"iaccode: {exc}", file=sys.stderr)
        return 2

    import trio

    from iaccode.logs import setup_logging
    from iaccode.server.stdio import serve_stdio

    setup_logging(config.log_level, config.log_file)
    seal_secrets(config)
    log = logging.getLogger("iaccode")
    log.info("iaccode %s serving ACP on stdio (%s, model %s%s)", iaccode.__version__,
             config.provider, config.model,
             f", script {config.model_script}" if config.model_script else "")
    from iaccode.llm.script import ScriptError

    try:
        trio.run(serve_stdio, config, protocol_in, protocol_out, early)
    except ScriptError as exc:  # the user's file: say what is wrong with it, not where we were
        log.error("the model script cannot be played: %s", exc)
        return 1
    except Exception:
        log.exception("the server failed")
        return 1
    return 0


def seal_secrets(config: Config) -> None:
    """The one place a server takes the secrets out of its own process environment
    (``iaccode/process_secrets.py``), once the config (and its secret names) is read; after
    the early ``initialize`` answer, so it costs that answer nothing. The data dir becomes
    private (0700) here too."""
    import logging

    from iaccode.private_files import private_home
    from iaccode.process_secrets import seal

    seal([*config.secret_names, config.api_key_env or ""])
    try:
        private_home(config.home)  # 0700: the sessions, the log, the saved output are in it
    except OSError as exc:  # a read-only home: the store says what it cannot do
        logging.getLogger("iaccode").warning("cannot make %s private: %s", config.home, exc)


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
        "iaccode %s serving ACP over HTTP (model %s%s)", iaccode.__version__, config.model,
        f", script {config.model_script}" if config.model_script else "")
    from iaccode.llm.script import ScriptError

    try:
        return serve.run(config, args.host, args.port)
    except ScriptError as exc:
        logging.getLogger("iaccode").error("the model script cannot be played: %s", exc)
        return 1
    except Exception:
        logging.getLogger("iaccode").exception("the server failed")
        return 1
