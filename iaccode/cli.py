"""Command line: ``iaccode acp`` serves ACP on stdio; ``iaccode --version``."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import iaccode
from iaccode.config import Config, ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iaccode", description=iaccode.__doc__)
    parser.add_argument("--version", action="version", version=f"iaccode {iaccode.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    acp = commands.add_parser("acp", help="serve the Agent Client Protocol on stdin/stdout")
    acp.add_argument("--model-script", type=Path, metavar="PATH",
                     help="play a scripted model from PATH instead of calling the API "
                          "(same as IAC_CODE_MODEL_SCRIPT)")
    acp.add_argument("--model", help="model id for new sessions (same as IAC_CODE_MODEL)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "acp":
        return run_acp(args)
    return 2  # argparse enforces a command; kept for type checkers


def run_acp(args: argparse.Namespace) -> int:
    # First thing: nothing but protocol may reach stdout.
    from iaccode.server.stdio import claim_stdio

    protocol_in, protocol_out = claim_stdio()
    try:
        config = Config.from_env(model_script=args.model_script, model=args.model)
    except ConfigError as exc:
        print(f"iaccode: {exc}", file=sys.stderr)
        return 2

    import trio

    from iaccode.logs import setup_logging
    from iaccode.server.stdio import serve_stdio

    setup_logging(config.log_level, config.log_file)
    log = logging.getLogger("iaccode")
    log.info("iaccode %s serving ACP on stdio (model %s%s)", iaccode.__version__, config.model,
             f", script {config.model_script}" if config.model_script else "")
    try:
        trio.run(serve_stdio, config, protocol_in, protocol_out)
    except Exception:
        log.exception("the server failed")
        return 1
    return 0
