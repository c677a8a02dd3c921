"""Checks after a write: what an editor's diagnostics would say about an IaC file just written.

After ``write_file`` / ``edit_file`` (through :mod:`iaccode.tools.write_checks`: see
:func:`annotate`), the file's new text is checked and what was found is added to the tool
result the model gets and to the tool call's content.
The write itself stands: like an editor's squiggles, the model sees the problem and fixes it in
its next step. A file that checks clean adds one short "no problems" line; a file that is not
IaC adds nothing.

- Terraform / OpenTofu (``*.tf``, ``*.tofu``, ``*.tf.json``): the syntax (python-hcl2's error
  with line and column); then, when ``terraform`` or ``tofu`` is on PATH, ``fmt -check -diff``
  of the file and ``validate -json`` when that starts only what the user installed (a module
  that needs no provider, or one whose providers come from the user's plugin cache:
  :mod:`.plugins`; else a one-line note says it was skipped), each bounded by a timeout.
- ROS / CloudFormation templates (YAML or JSON): the syntax with the line; the format version;
  each resource's type is of the template's family; every ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``
  variable and ``DependsOn`` names a parameter, a resource or a pseudo-parameter. For
  CloudFormation, ``cfn-lint`` adds its findings when it is installed (run outside the
  project, so a ``.cfnlintrc`` there cannot load rules: Python modules).

The external programs run with the environment bash commands get (no secrets), and none in
the project: a version manager's shim (asdf, mise, tfenv) runs the version that a file in its
working folder or above names, and asdf's and mise's ``path:`` versions are folders (a
repository would name its own ``bin/terraform``). Terraform starts in ``/`` and works in the
module's folder with ``-chdir``: the checks use the user's default version, not the one the
project pins. They depend on the machine, so a replay (``external=False``) leaves them out.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from pathlib import Path
from typing import Any

import trio
from attrs import Factory, evolve, frozen

from iaccode.host.local_files import display_path
from iaccode.iac.command_env import command_env
from iaccode.iac.hcl import is_terraform_file, parse_terraform
from iaccode.iac.parse_error import ParseError
from iaccode.iac.plugins import validate_verdict
from iaccode.iac.templates import (
    AWS_VERSIONS,
    ROS_VERSIONS,
    TEMPLATE_SUFFIXES,
    Located,
    load_documents,
    section,
    template_family,
    walk,
)
from iaccode.installed import outside, which
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, DiffContent
from iaccode.tool_result import ToolResult

log = logging.getLogger(__name__)

FMT_TIMEOUT = 15.0
"""Seconds ``terraform fmt -check`` may take."""
VALIDATE_TIMEOUT = 60.0
"""Seconds ``terraform validate`` may take (it loads the providers' schemas)."""
CFN_LINT_TIMEOUT = 60.0
MAX_TEMPLATE_CHARS = 4 * 1024 * 1024
"""Bigger YAML/JSON files are not read as templates (PyYAML would take seconds)."""
OUTPUT_LINES = 40
"""Lines of a program's output (a fmt diff, say) kept in the report."""

PSEUDO_PARAMETERS = {
    "cloudformation": frozenset(
        {
            "AWS::AccountId",
            "AWS::NotificationARNs",
            "AWS::NoValue",
            "AWS::Partition",
            "AWS::Region",
            "AWS::StackId",
            "AWS::StackName",
            "AWS::URLSuffix",
        }
    ),
    "ros": frozenset(
        {
            "ALIYUN::AccountId",
            "ALIYUN::NoValue",
            "ALIYUN::Region",
            "ALIYUN::StackId",
            "ALIYUN::StackName",
            "ALIYUN::TenantId",
            "ALIYUN::Index",
            "ALIYUN::ResourceGroupId",
        }
    ),
}
_FAMILY = {
    "ros": ("ROS template", "ROSTemplateFormatVersion", ROS_VERSIONS, ("ALIYUN::", "DATASOURCE::")),
    "cloudformation": (
        "CloudFormation template",
        "AWSTemplateFormatVersion",
        AWS_VERSIONS,
        ("AWS::", "Alexa::"),
    ),
}
_SUB_VARIABLE = re.compile(r"\$\{([^!}][^}]*)\}")
_TEMPLATE_HINTS = (
    "ROSTemplateFormatVersion",
    "AWSTemplateFormatVersion",
    "Resources:",
    '"Resources"',
)


@frozen
class Report:
    what: str
    """What the file was checked as: "Terraform", "ROS template", ..."""
    problems: list[str]
    notes: list[str] = Factory(list)
    """What was not checked, and why (one line each)."""

    def text(self, shown: str) -> str:
        count = len(self.problems)
        if not count:
            lines = [f"IaC check of {shown} ({self.what}): no problems."]
        else:
            lines = [
                f"IaC check of {shown} ({self.what}) found {count} "
                f"problem{'s' if count != 1 else ''}:"
            ]
        lines.extend(f"- {problem}" for problem in self.problems)
        lines.extend(self.notes)
        return "\n".join(lines)


async def annotate(result: ToolResult, cwd: Path, *, external: bool = True) -> ToolResult:
    """``result`` of a write_file / edit_file with the check of the file it wrote added to
    its text and content (unchanged when that file is not IaC)."""
    diff = next((c for c in result.content or [] if isinstance(c, DiffContent)), None)
    if diff is None:
        return result
    path = Path(diff.path)
    report = await check_file(path, diff.new_text, external=external, project=cwd)
    if report is None:
        return result
    text = report.text(display_path(path, cwd))
    content = [*(result.content or []), ContentToolCallContent(TextContent(text))]
    return evolve(result, text=f"{result.text}\n\n{text}", content=content)


async def check_file(
    path: Path, text: str, *, external: bool = True, project: Path | None = None
) -> Report | None:
    """The check of ``text``, just written to ``path`` (in the session's folder ``project``);
    None when it is not an IaC file."""
    if is_terraform_file(path.name):
        return await _check_terraform(path, text, external, project or path.parent)
    if path.name.endswith(TEMPLATE_SUFFIXES):
        return await _check_template(path, text, external, project or path.parent)
    return None


# --- Terraform / OpenTofu ------------------------------------------------------------------------


async def _check_terraform(path: Path, text: str, external: bool, project: Path) -> Report:
    what = "OpenTofu" if ".tofu" in path.name else "Terraform"
    try:
        await trio.to_thread.run_sync(parse_terraform, text, path.name, abandon_on_cancel=True)
    except ParseError as error:
        return Report(
            what, [f"line {error.line}, column {error.column}: syntax error: {error.message}"]
        )
    problems: list[str] = []
    notes: list[str] = []
    program = _terraform_program(path, project) if external else None
    if program is not None:
        if not path.name.endswith(".json"):
            problems.extend(await _fmt(program, path, project))
        verdict = await trio.to_thread.run_sync(
            validate_verdict,
            path.parent,
            _check_env(project),
            program,
            project,
            abandon_on_cancel=True,
        )
        if verdict.run:
            problems.extend(await _validate(program, path, project))
        elif verdict.note:
            notes.append(verdict.note)
    return Report(what, problems, notes)


def _terraform_program(path: Path, project: Path) -> str | None:
    # terraform refuses *.tofu files; OpenTofu reads both. The user's, never the project's.
    names = ("tofu",) if ".tofu" in path.name else ("terraform", "tofu")
    return next((found for name in names if (found := which(name, [project]))), None)


def _check_env(project: Path) -> dict[str, str]:
    """The environment the checks' programs run in: a bash command's (no secrets), without
    the PATH and PYTHONPATH folders inside the project (``terraform fmt -diff`` runs
    ``diff``; cfn-lint imports ``yaml``: the user's, never the repository's)."""
    env = {**command_env(), "TF_IN_AUTOMATION": "1"}
    for name in ("PATH", "PYTHONPATH"):
        if name in env:
            env[name] = outside(env[name], [project])
    return env


async def _run(
    argv: list[str], cwd: Path, seconds: float, project: Path, shown: str | None = None
) -> tuple[int, str, str] | str:
    """(exit code, stdout, stderr), or why the program could not give them (``shown``: the
    subcommand named then, ``argv[1]`` by default)."""
    env = _check_env(project)
    name = Path(argv[0]).name
    with trio.move_on_after(seconds):
        try:
            done = await trio.run_process(
                argv,
                cwd=cwd,
                env=env,
                check=False,
                stdin=b"",
                capture_stdout=True,
                capture_stderr=True,
            )
        except OSError as exc:
            return f"{name} could not be run: {exc.strerror or exc}"
        return (
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
        )
    return f"{name} {shown or argv[1]} did not finish within {seconds:g} s; skipped"


def _clip(text: str) -> str:
    lines = text.strip("\n").splitlines()
    if len(lines) > OUTPUT_LINES:
        lines = [*lines[:OUTPUT_LINES], f"[... {len(lines) - OUTPUT_LINES} more lines]"]
    return "\n".join("  " + line for line in lines)


async def _terraform(
    program: str, path: Path, args: list[str], seconds: float, project: Path
) -> tuple[int, str, str] | str:
    """``PROGRAM ARGS`` in the folder of ``path``, started outside the project (the module
    docstring says why)."""
    return await _run(
        [program, f"-chdir={path.parent}", *args], Path("/"), seconds, project, shown=args[0]
    )


async def _fmt(program: str, path: Path, project: Path) -> list[str]:
    name = Path(program).name
    ran = await _terraform(
        program, path, ["fmt", "-check", "-diff", "-no-color", path.name], FMT_TIMEOUT, project
    )
    if isinstance(ran, str):
        return [ran]
    code, out, err = ran
    if code == 0:
        return []
    if code == 3 or out.strip():
        return [
            f"not formatted as `{name} fmt` writes it (run `{name} fmt {path.name}`):\n{_clip(out)}"
        ]
    return [f"`{name} fmt -check` failed (exit code {code}):\n{_clip(err or out)}"]


async def _validate(program: str, path: Path, project: Path) -> list[str]:
    name = Path(program).name
    ran = await _terraform(
        program, path, ["validate", "-json", "-no-color"], VALIDATE_TIMEOUT, project
    )
    if isinstance(ran, str):
        return [ran]
    code, out, err = ran
    try:
        answer = json.loads(out)
    except ValueError:
        return [f"`{name} validate -json` gave no JSON (exit code {code}):\n{_clip(err)}"]
    problems = []
    for item in answer.get("diagnostics") or [] if isinstance(answer, dict) else []:
        if not isinstance(item, dict):
            continue
        where = item.get("range") or {}
        start = where.get("start") or {}
        place = f"{where.get('filename', '?')}:{start.get('line', '?')}: " if where else ""
        detail = str(item.get("detail") or "").strip()
        problems.append(
            f"{place}{item.get('severity', 'error')}: {item.get('summary', '')}"
            f"{': ' + detail if detail else ''} ({name} validate)"
        )
    return problems


# --- ROS / CloudFormation ------------------------------------------------------------------------


async def _check_template(path: Path, text: str, external: bool, project: Path) -> Report | None:
    if len(text) > MAX_TEMPLATE_CHARS or not any(hint in text for hint in _TEMPLATE_HINTS):
        return None  # some other YAML or JSON file (a lock file, a workflow): not ours
    found = await trio.to_thread.run_sync(_template_report, text, path.name, abandon_on_cancel=True)
    if found is None:
        return None
    family, report = found
    if family == "cloudformation" and external:
        report.problems.extend(await _cfn_lint(path, project))
    return report


def _template_report(text: str, name: str) -> tuple[str | None, Report] | None:
    """(family, report) of a template's text; None when it is not a template. Blocking."""
    try:
        documents = load_documents(text, name)
    except ParseError as error:
        return None, Report(
            "template", [f"line {error.line}, column {error.column}: {error.message}"]
        )
    document = documents[0] if len(documents) == 1 else None
    family = template_family(document)
    if family is None or not isinstance(document, dict):
        return None
    return family, Report(_FAMILY[family][0], template_problems(document, family))


def template_problems(document: dict[str, Any], family: str) -> list[str]:
    """What is wrong in a loaded template of ``family`` ("ros" or "cloudformation")."""
    _, version_key, versions, prefixes = _FAMILY[family]
    problems: list[tuple[int, str]] = []
    line_of = document.line_of if isinstance(document, Located) else (lambda key: 0)
    version = document.get(version_key)
    if version_key in document and str(version) not in versions:
        problems.append(
            (
                line_of(version_key),
                f"{version_key} {str(version)!r} is not a "
                f"known version (it is {' or '.join(sorted(versions))})",
            )
        )
    parameters = section(document, "Parameters")
    resources = section(document, "Resources")
    if not resources:
        problems.append(
            (
                line_of("Resources") if "Resources" in document else 1,
                "the template declares no Resources",
            )
        )
    for logical_id, resource in resources.items():
        line = resources.line_of(logical_id) if isinstance(resources, Located) else 0
        kind = resource.get("Type") if isinstance(resource, dict) else None
        if not isinstance(kind, str):
            problems.append((line, f"resource {logical_id} has no Type"))
        elif not kind.startswith((*prefixes, "Custom::")):
            problems.append(
                (
                    line,
                    f"resource {logical_id} has type {kind}, which is not a "
                    f"{_FAMILY[family][0].split()[0]} type (those start with "
                    f"{' or '.join(prefixes)})",
                )
            )
    names = set(parameters) | set(resources) | PSEUDO_PARAMETERS[family]
    for mapping in walk(document):
        problems.extend(_reference_problems(mapping, names, set(resources)))
    return [f"line {line}: {text}" if line else text for line, text in sorted(problems)]


def _reference_problems(
    mapping: Located, names: set[str], resources: set[str]
) -> list[tuple[int, str]]:
    """What ``mapping``'s Ref, Fn::GetAtt, Fn::Sub and DependsOn name that is not defined."""
    found: list[tuple[int, str]] = []

    def missing(line: int, what: str, target: Any, known: set[str]) -> None:
        if isinstance(target, str) and target not in known:
            close = difflib.get_close_matches(target, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            found.append((line, f"{what} {target} is not defined{hint}"))

    defined = "a parameter, resource or pseudo-parameter"
    if "Ref" in mapping:
        missing(
            mapping.line_of("Ref"), f"Ref target (it must be {defined}):", mapping["Ref"], names
        )
    if "Fn::GetAtt" in mapping:
        target = mapping["Fn::GetAtt"]
        if isinstance(target, str):
            target = target.split(".", 1)
        if isinstance(target, list) and target:
            missing(mapping.line_of("Fn::GetAtt"), "Fn::GetAtt resource", target[0], resources)
    if "Fn::Sub" in mapping:
        value = mapping["Fn::Sub"]
        local: set[str] = set()
        if isinstance(value, list) and value:
            if len(value) > 1 and isinstance(value[1], dict):
                local = {str(key) for key in value[1]}
            value = value[0]
        if isinstance(value, str):
            for variable in _SUB_VARIABLE.findall(value):
                head = variable.strip()
                if "::" not in head:  # ${Vpc.VpcId} names the resource Vpc
                    head = head.split(".", 1)[0]
                missing(
                    mapping.line_of("Fn::Sub"),
                    f"Fn::Sub variable (it must be {defined}):",
                    head,
                    names | local,
                )
    if "DependsOn" in mapping and "Type" in mapping:
        targets = mapping["DependsOn"]
        for target in targets if isinstance(targets, list) else [targets]:
            missing(mapping.line_of("DependsOn"), "DependsOn resource", target, resources)
    return found


async def _cfn_lint(path: Path, project: Path) -> list[str]:
    program = which("cfn-lint", [project])
    if program is None:
        return []
    # In /, as Terraform: cfn-lint reads the .cfnlintrc of the folder it runs in, and its
    # append_rules are Python modules it imports (the repository's code); a version manager's
    # shim reads the folder's and its parents' (a temporary folder's parent is everyone's
    # /tmp). The user's own ~/.cfnlintrc still counts.
    ran = await _run(
        [program, "--format", "parseable", "--", str(path)], Path("/"), CFN_LINT_TIMEOUT, project
    )
    if isinstance(ran, str):
        return [ran]
    code, out, err = ran
    problems = []
    for line in out.splitlines():
        # FILE:LINE:COLUMN:END_LINE:END_COLUMN:RULE:MESSAGE
        parts = [str(path), *line.removeprefix(f"{path}:").split(":", 5)]
        if len(parts) == 7 and parts[1].isdigit():
            problems.append(f"line {parts[1]}: {parts[6].strip()} (cfn-lint {parts[5]})")
    if not problems and code % 2:  # 2, 4, 8 are its findings; an odd code, its own failure
        problems.append(f"cfn-lint failed (exit code {code}):\n{_clip(err or out)}")
    return problems
