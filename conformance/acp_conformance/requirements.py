"""Requirement ids and tiers, the results table printed at the end, and the JSON report.

Every conformance test carries ``@requirement(ID, TIER, SUMMARY)``; its pytest outcome becomes
the requirement's status:

* ``pass``, ``fail``; ``n/a`` when the test called :func:`not_applicable` (the agent does not
  advertise the capability, no tool profile is known, ...); ``skip`` for any other skip.
* MUST and CAPABILITY failures fail the run. A CAPABILITY test checks first that the agent
  advertises the capability (else ``n/a``), so a failure there always counts.
* SHOULD failures are reported and never fail the run: the plugin turns the failed test into
  a skip ("SHOULD not met: ...") and records ``fail`` in the table.

Tests can record further rows themselves (:func:`note`): the ``check.should`` fixture method
for SHOULD-level sub-checks, and the harness for the whole-wire requirements (schema, stdout
hygiene, client capabilities) it watches in every test. Outcomes travel in the reports'
``user_properties``, so the table is also right under pytest-xdist (``-n 2``).

The JSON report (``--report PATH``, default ``.conformance/report.json``) has every row and,
for each failure, the reason, the test's traceback and the wire transcript of every agent
process the test ran (both directions), with the tail of the agent's stderr.
"""

from __future__ import annotations

import datetime
import json
import os
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

from acp_conformance.schema import SDK_PACKAGE, SDK_VERSION

TIERS = ("MUST", "CAPABILITY", "SHOULD")
NA_PREFIX = "n/a: "
SHOULD_PREFIX = "SHOULD not met: "
DEFAULT_REPORT = ".conformance/report.json"
PROPERTY = "acp-conformance"

requirement = pytest.mark.requirement
"""``@requirement("PROMPT-TURN", "MUST", "a text prompt is answered with a stopReason")``"""

EvidenceSource = Callable[[], list[dict[str, Any]]]
EVIDENCE = pytest.StashKey[list[EvidenceSource]]()
"""Per test: callables returning transcripts, attached to the report when the test fails."""


_skip_reasons: list[str] = []


def not_applicable(reason: str) -> NoReturn:
    """End the test as ``n/a`` (the scenario does not apply to this agent)."""
    # pytest-trio re-raises a skip from inside trio without its message: keep it here.
    _skip_reasons.append(NA_PREFIX + reason)
    pytest.skip(NA_PREFIX + reason)


@dataclass
class Outcome:
    nodeid: str
    status: str
    reason: str
    details: str = ""
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Row:
    id: str
    tier: str
    summary: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = [o.status for o in self.outcomes]
        for status in ("fail", "pass", "skip", "n/a"):
            if status in statuses:
                return status
        return "skip"

    @property
    def reason(self) -> str:
        status = self.status
        chosen = [o for o in self.outcomes if o.status == status]
        reason = chosen[0].reason if chosen else "not run"
        if status == "fail" and len(chosen) > 1:
            reason += f" (+{len(chosen) - 1} more)"
        return reason

    @property
    def counts(self) -> bool:
        return self.tier != "SHOULD"


def note(
    properties: list[tuple[str, object]],
    req_id: str,
    tier: str,
    summary: str,
    nodeid: str,
    status: str,
    reason: str,
    details: str = "",
    evidence: list[dict[str, Any]] | None = None,
) -> None:
    """Add one outcome to a test's (or a report's) ``user_properties``: they travel with the
    reports, to the :class:`Recorder` of this process or of the pytest-xdist controller."""
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r} for {req_id}")
    properties.append(
        (
            PROPERTY,
            {
                "uid": uuid.uuid4().hex,
                "req_id": req_id,
                "tier": tier,
                "summary": summary,
                "nodeid": nodeid,
                "status": status,
                "reason": _one_line(reason),
                "details": details,
                "evidence": evidence or [],
            },
        )
    )


class Recorder:
    """Collects outcomes per requirement; prints the table and writes the JSON report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rows: dict[str, Row] = {}
        self._seen: set[str] = set()
        self.worker = hasattr(config, "workerinput")  # a pytest-xdist worker reports only

    # -- recording ---------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name != PROPERTY or not isinstance(value, dict) or value["uid"] in self._seen:
                continue
            self._seen.add(value["uid"])
            row = self.rows.setdefault(
                value["req_id"], Row(value["req_id"], value["tier"], value["summary"])
            )
            row.outcomes.append(
                Outcome(
                    value["nodeid"],
                    value["status"],
                    value["reason"],
                    value["details"],
                    value["evidence"],
                )
            )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        marker = item.get_closest_marker("requirement")
        if marker is None:
            return
        req_id, tier, summary = marker.args
        if report.when == "setup":
            _skip_reasons.clear()
        if report.when == "call" and report.skipped and _skip_reasons:
            report.longrepr = (
                str(item.path),
                item.location[1] or 0,
                "Skipped: " + _skip_reasons[-1],
            )
        if report.when == "call" or (report.when == "setup" and not report.passed):
            status, reason = _status_of(report, call)
            evidence: list[dict[str, Any]] = []
            details = ""
            if status == "fail" or self.config.getoption("--all-transcripts"):
                evidence = [e for source in item.stash.get(EVIDENCE, []) for e in source()]
            if status == "fail":
                details = str(report.longrepr)[-6000:]
                if tier == "SHOULD":
                    # Reported, never fails the run.
                    report.outcome = "skipped"
                    report.longrepr = (
                        str(item.path),
                        item.location[1] or 0,
                        "Skipped: " + SHOULD_PREFIX + reason,
                    )
            note(
                report.user_properties,
                req_id,
                tier,
                summary,
                item.nodeid,
                status,
                reason,
                details,
                evidence,
            )
        elif report.when == "teardown" and report.failed and not _is_wire_violation(call):
            note(
                report.user_properties,
                req_id,
                tier,
                summary,
                item.nodeid,
                "fail",
                "teardown: " + _crash_message(report, call),
            )

    # -- results -----------------------------------------------------------------------------

    def conformant(self) -> bool:
        return not any(row.counts and row.status == "fail" for row in self.rows.values())

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.rows or self.worker:
            return
        if not self.conformant() and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        path = Path(
            self.config.getoption("--report") or self.config.invocation_params.dir / DEFAULT_REPORT
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.report(), indent=1) + "\n")
        self.report_path = path
        markdown = self.config.getoption("--markdown")
        if markdown:
            Path(markdown).write_text(self.markdown())

    def markdown(self) -> str:
        """The results table in Markdown (``--markdown``: for a document that shows the results)."""
        rows = sorted(self.rows.values(), key=_row_order)
        lines = ["| requirement | tier | status | reason |", "|---|---|---|---|"]
        for row in rows:
            reason = row.reason if row.status != "pass" else row.summary
            reason = reason.replace("|", "\\|")
            lines.append(f"| {row.id} | {row.tier} | {row.status} | {reason} |")
        totals = ", ".join(f"{n} {status}" for status, n in _totals(rows).items() if n)
        verdict = "conformant" if self.conformant() else "not conformant"
        return "\n".join(lines) + f"\n\n**{verdict}**: {totals}\n"

    def report(self) -> dict[str, Any]:
        rows = sorted(self.rows.values(), key=_row_order)
        return {
            "agent": self.config.getoption("--agent") or self.config.getoption("--url"),
            "agentEnv": self.config.getoption("--agent-env"),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "schema": f"{SDK_PACKAGE}@{SDK_VERSION} (schema/v1)",
            "conformant": self.conformant(),
            "totals": _totals(rows),
            "requirements": [
                {
                    "id": row.id,
                    "tier": row.tier,
                    "summary": row.summary,
                    "status": row.status,
                    "reason": row.reason,
                    "tests": [
                        {
                            "nodeid": o.nodeid,
                            "status": o.status,
                            "reason": o.reason,
                            **(
                                {"transcripts": o.evidence}
                                if o.status != "fail" and o.evidence
                                else {}
                            ),
                        }
                        for o in row.outcomes
                    ],
                    "failures": [
                        {
                            "nodeid": o.nodeid,
                            "reason": o.reason,
                            "details": o.details,
                            "transcripts": o.evidence,
                        }
                        for o in row.outcomes
                        if o.status == "fail"
                    ],
                }
                for row in rows
            ],
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.rows or self.worker:
            return
        rows = sorted(self.rows.values(), key=_row_order)
        tr = terminalreporter
        tr.section("ACP conformance")
        width = max(len(row.id) for row in rows)
        tr.write_line(f"{'requirement':<{width}}  {'tier':<10}  {'status':<6}  reason")
        for row in rows:
            reason = row.reason if row.status != "pass" else row.summary
            line = f"{row.id:<{width}}  {row.tier:<10}  {row.status:<6}  {reason}"
            colour = {"fail": {"red": True}, "pass": {"green": True}}.get(row.status, {})
            if row.status == "fail" and not row.counts:
                colour = {"yellow": True}
            tr.write_line(line[:220], **colour)
        totals = ", ".join(f"{n} {status}" for status, n in _totals(rows).items() if n)
        verdict = "CONFORMANT" if self.conformant() else "NOT CONFORMANT"
        tr.write_line(
            f"{verdict}: {totals} (SHOULD failures never fail the run)",
            bold=True,
            red=not self.conformant(),
            green=self.conformant(),
        )
        path = getattr(self, "report_path", None)
        if path is not None:
            tr.write_line(f"report with failure transcripts: {os.path.relpath(path)}")


class WireViolation(AssertionError):
    """Raised at teardown when the agent broke a whole-wire requirement during the test."""


def _is_wire_violation(call: pytest.CallInfo[None]) -> bool:
    return call.excinfo is not None and isinstance(_leaf(call.excinfo.value), WireViolation)


def _leaf(error: BaseException) -> BaseException:
    """The first real exception inside (trio nurseries wrap errors in exception groups)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _status_of(report: pytest.TestReport, call: pytest.CallInfo[None]) -> tuple[str, str]:
    if report.passed:
        return "pass", "ok"
    if report.skipped:
        reason = _skip_reason(report)
        if reason.startswith(NA_PREFIX):
            return "n/a", reason.removeprefix(NA_PREFIX)
        return "skip", reason
    return "fail", _crash_message(report, call)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _crash_message(report: pytest.TestReport, call: pytest.CallInfo[None]) -> str:
    if call.excinfo is not None:
        error = _leaf(call.excinfo.value)
        text = str(error).split("\nassert ")[0]
        if text.startswith("assert "):  # a bare assert: its first line says enough
            text = text.splitlines()[0]
        if not isinstance(error, AssertionError) or not text:
            text = f"{type(error).__name__}: {text}" if text else type(error).__name__
        return text
    crash = getattr(report.longrepr, "reprcrash", None)
    return str(getattr(crash, "message", report.longrepr))


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _row_order(row: Row) -> tuple[int, str]:
    return (0 if row.id.startswith("WIRE-") else 1, row.id)


def _totals(rows: list[Row]) -> dict[str, int]:
    totals = {"pass": 0, "fail": 0, "skip": 0, "n/a": 0}
    for row in rows:
        totals[row.status] += 1
    return totals
