"""The adversarial suite's figures as the table in docs/reliability.md.

    python -m tests.adversarial.figures            print the table from .adversarial/figures.json
    python -m tests.adversarial.figures --docs     also put it in docs/reliability.md, between
                                                   the markers

``nox -s adversarial`` writes the JSON; this only formats it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / ".adversarial" / "figures.json"
RELIABILITY_DOC = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- adversarial-figures-begin -->"
END = "<!-- adversarial-figures-end -->"

ROWS: list[tuple[str, str, list[tuple[str, str]]]] = [
    (
        "protocol",
        "hostile client (raw lines, Hypothesis)",
        [
            ("cases", "{:,} cases"),
            ("lines_received", "{:,} lines checked on stdout"),
            ("methods_with_wrong_params", "wrong params for {} routed methods"),
            ("over_long_line_mib_discarded", "{} MiB over-long line discarded"),
            ("over_long_line_rss_growth_kib", "RSS +{:,} KiB meanwhile"),
            ("byte_boundaries_cut", "{:,} byte boundaries cut, same answers"),
        ],
    ),
    (
        "files_and_commands",
        "hostile model: files and commands",
        [
            ("path_escape_calls", "{} path escapes, all asked"),
            ("special_file_calls", "{} calls on special files"),
            ("command_cases", "{} hostile commands"),
            ("processes_checked_dead", "{} started processes checked dead"),
            ("secret_variables_checked", "{} secret variables kept out"),
            ("escapees_killed", "{} setsid escapees killed"),
        ],
    ),
    (
        "path_races",
        "hostile model: symlink flipped between check and use",
        [
            ("racing_calls", "{} file-tool calls on flipping links"),
            ("cases", "{} cases"),
            ("asked", "{} judged outside and asked"),
            ("link_flips", "{:,} flips meanwhile"),
        ],
    ),
    (
        "web_fetch",
        "hostile model: web_fetch",
        [
            ("urls_refused_through_the_agent", "{} internal URLs refused, 0 connections"),
            ("dns_names_refused", "{} names resolving inside refused"),
            ("redirects_into_internal_refused", "{} redirects inside refused"),
            ("capped_fetches", "{} drips, stalls and floods cut off"),
            ("address_disguises_checked", "{} IPv6 disguises checked"),
        ],
    ),
    (
        "repository_code",
        "hostile repository: code it names, files that break parsers",
        [
            ("git_programs_planted", "{} git programs planted, none run"),
            ("provider_plugins_shipped", "{} shipped provider not started"),
            ("lint_rule_files_planted", "{} cfn-lint rule configs, none loaded"),
            ("deep_files", "{} files 100,000 deep"),
            ("planted_instruction_files", "{} planted instruction files kept out"),
            ("slow_file_prompt_seconds", "first prompt {} s beside a 1 MiB module"),
        ],
    ),
    (
        "protected_writes",
        "hostile model: protected places",
        [
            ("protected_calls_in_bypass", "{} protected writes in bypass, all asked"),
            ("after_always_allow", "{} after Always allow, all asked"),
        ],
    ),
    (
        "secrets",
        "hostile model: secrets",
        [
            ("secret_names_kept_from_commands", "{} secret names kept from commands"),
            ("printers_redacted", "{} printers of a held value, all redacted"),
            ("parent_environ_secrets_hidden", "{} secrets gone from the agent's environ"),
            ("secret_urls_refused", "{} secret-carrying URLs refused"),
            ("exfiltration_questions", "{} fetches after a secrets file checked"),
        ],
    ),
    (
        "mcp_servers",
        "MCP servers that do not play fair",
        [
            ("endless_tools_kept", "endless paging: {} tools kept"),
            ("many_tools_kept", "3,000 tools: {} kept"),
            ("hung_listings_given_up", "{} hung re-listing given up"),
            ("hostile_names_shown", "{} hostile names shown printable"),
        ],
    ),
    (
        "infra_gate",
        "hostile model: infrastructure changes",
        [
            (
                "changing_lines",
                "{} changing lines (bypass and after Always allow), all asked, none ran",
            ),
            ("kinds", "{} kinds"),
            ("questions", "{} questions"),
            ("terminal_lines", "{} lines through the editor's terminal"),
            ("ordinary_lines", "{} ordinary lines run unasked"),
        ],
    ),
    (
        "malformed_tool_calls",
        "hostile model: malformed tool calls",
        [("cases", "{} kinds, none executed")],
    ),
    (
        "model_faults",
        "model faults",
        [
            ("faults_injected", "{} faults injected"),
            ("cancels", "{} cancel points"),
            ("slowest_cancel_seconds", "slowest cancel {} s"),
        ],
    ),
    (
        "persistence",
        "kill -9",
        [
            ("kills_survived", "{} kills survived"),
            ("sessions", "{} sessions"),
            ("session_loads", "{} loads"),
            ("turns_interrupted", "{} turns interrupted"),
            ("torn_history_tails_seen", "{} torn tails repaired"),
            ("compactions_interrupted", "{} compactions interrupted"),
            ("sessions_verified_on_sdk", "{} reloaded and prompted on the SDK"),
        ],
    ),
    (
        "disk_faults",
        "disk full, read-only data dir",
        [
            ("faults_injected", "{} faults injected"),
            ("prompts_on_a_full_disk", "{} prompts on a full disk, all answered"),
            ("histories_checked", "{} histories reloaded valid"),
            ("fault_method", "by {}"),
        ],
    ),
    (
        "load",
        "load",
        [
            ("sessions", "{} sessions at once"),
            ("prompts", "{:,} prompts"),
            ("updates", "{:,} updates"),
            ("model_requests", "{:,} model requests"),
            ("prompts_per_second", "{} prompts/s"),
            ("rss_growth_kib", "RSS +{:,} KiB"),
        ],
    ),
    (
        "remote_server",
        "iaccode serve before the token",
        [
            ("connection_failures_survived", "{} connection failures survived"),
            ("refused_from_the_headers", "{} refused from the headers"),
            ("dripping_bodies_cut_off", "{} dripping bodies cut off"),
            ("connections_without_the_token", "{:,} connections without the token"),
            ("most_held_without_the_token", "at most {} held"),
            ("stalled_readers_closed", "{} stalled readers' sockets closed"),
        ],
    ),
    ("regressions", "regression tests (one per bug found)", [("cases", "{} cases")]),
]


def table(data: dict[str, Any]) -> str:
    run = data.get("run", {})
    lines = [
        f"`nox -s adversarial{' -- --soak' if run.get('soak') else ''}` on "
        f"{run.get('finished', '?')} ({run.get('seconds', '?')} s, exit status "
        f"{run.get('exit_status', '?')}):",
        "",
        "| area | tests | figures |",
        "|---|---|---|",
    ]
    categories = data.get("categories", {})
    for key, title, figures in ROWS:
        category = categories.get(key)
        if category is None:
            continue
        tests = ", ".join(
            f"{n} {outcome}" for outcome, n in sorted(category.get("tests", {}).items())
        )
        shown = [form.format(category[name]) for name, form in figures if name in category]
        lines.append(f"| {title} | {tests} | {'; '.join(shown)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    data = json.loads(FIGURES.read_text())
    text = table(data)
    print(text, end="")
    if "--docs" in argv:
        content = RELIABILITY_DOC.read_text()
        if BEGIN not in content or END not in content:
            print(
                f"{RELIABILITY_DOC} has no adversarial figures markers; not updated",
                file=sys.stderr,
            )
            return 1
        head, rest = content.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        RELIABILITY_DOC.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
