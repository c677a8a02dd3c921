"""Checks after a write, on real IaC files: HCL syntax, terraform fmt / validate (a stand-in
first on PATH; the real one too when installed), ROS and CloudFormation templates, cfn-lint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from iaccode.iac.diagnostics import annotate, check_file
from iaccode.protocol.content import TextContent
from iaccode.protocol.tool_calls import ContentToolCallContent, DiffContent
from iaccode.tool_result import ToolResult

PROJECT = Path(__file__).parents[1] / "fixtures" / "iac" / "project"

STAND_IN_TERRAFORM = f"""#!{sys.executable}
import json, os, pathlib, sys
args = sys.argv[1:]
if args[0].startswith("-chdir="):  # as terraform does, first
    os.chdir(args.pop(0).removeprefix("-chdir="))
with open(pathlib.Path(__file__).with_name("calls.log"), "a") as log:
    log.write(" ".join(args) + "\\n")
if args[0] == "fmt":
    text = pathlib.Path(args[-1]).read_text()
    if "bucket=" in text:
        print("--- old/" + args[-1])
        print("+++ new/" + args[-1])
        print('-  bucket="acme-logs"')
        print('+  bucket = "acme-logs"')
        sys.exit(3)
elif args[0] == "validate":
    bad = "var.regon" in pathlib.Path("main.tf").read_text()
    print(json.dumps({{"valid": not bad, "error_count": int(bad), "diagnostics": [{{
        "severity": "error", "summary": "Reference to undeclared input variable",
        "detail": "An input variable with the name \\"regon\\" has not been declared.",
        "range": {{"filename": "main.tf", "start": {{"line": 2, "column": 12}}}},
    }}] if bad else []}}))
    sys.exit(int(bad))
"""

STAND_IN_CFN_LINT = f"""#!{sys.executable}
import sys
name = sys.argv[-1]
print(f"{{name}}:9:7:9:22:E3012:Property Resources/Queue/Properties/DelaySeconds should be of "
      "type Integer")
sys.exit(2)
"""


def stand_in(folder: Path, name: str, text: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


@pytest.fixture
def no_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH with neither terraform, tofu nor cfn-lint on it."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only a stand-in terraform and cfn-lint; returns their call log. The
    folder is beside the files checked, not among them: the checks run no program from a
    PATH folder inside the project."""
    folder = tmp_path.with_name(f"{tmp_path.name}-bin")
    stand_in(folder, "terraform", STAND_IN_TERRAFORM)
    stand_in(folder, "cfn-lint", STAND_IN_CFN_LINT)
    monkeypatch.setenv("PATH", str(folder))
    return folder / "calls.log"


def written(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def calls(log: Path) -> list[str]:
    """What the stand-ins were run with, one line per run."""
    return log.read_text().splitlines() if log.exists() else []


def read(path: Path) -> str:
    return path.read_text()


async def report_of(path: Path, external: bool = True) -> str:
    """The check's text for the file at ``path`` (as written there)."""
    report = await check_file(path, read(path), external=external)
    assert report is not None
    return report.text(path.name)


GOOD_TF = 'resource "aws_s3_bucket" "logs" {\n  bucket = "acme-logs"\n}\n'


@pytest.mark.usefixtures("no_tools")
async def test_clean_terraform_adds_one_short_line(tmp_path: Path) -> None:
    for name in ("network/main.tf", "network/versions.tf", "app/extra.tofu"):
        path = written(tmp_path, name, (PROJECT / name).read_text())
        text = await report_of(path)
        assert text.endswith("): no problems.") and "\n" not in text
    assert (
        await report_of(written(tmp_path, "x.tofu", GOOD_TF))
        == "IaC check of x.tofu (OpenTofu): no problems."
    )


@pytest.mark.usefixtures("no_tools")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'resource "aws_s3_bucket" "logs" {\n  bucket = \n}\n',
            "line 2, column 12: syntax error: unexpected end of line; expected a value or "
            "expression",
        ),
        (
            'resource "aws_s3_bucket" "logs" {\n  bucket = "acme-logs"\n',
            'line 1, column 33: syntax error: unexpected end of file at line 3; expected "}" (the '
            'block that opens here is not closed: a "}" is missing)',
        ),
        # The block that lacks its "}" is the first; the second closes, so the scan names the first.
        (
            'resource "aws_s3_bucket" "logs" {\n  bucket = "acme-logs"\n  tags = { a = "}" }\n\n'
            'resource "aws_s3_bucket" "data" {\n  bucket = "acme-data" # {\n}\n',
            'line 1, column 33: syntax error: unexpected end of file at line 8; expected "}"',
        ),
        (
            'variable "x" {\n  type = string\n  default = ["a", "b"\n}\n',
            "line 4, column 1: syntax error: unexpected '}'",
        ),
    ],
)
async def test_hcl_syntax_errors_have_line_and_column(
    tmp_path: Path, text: str, expected: str
) -> None:
    report = await report_of(written(tmp_path, "main.tf", text))
    assert report.startswith("IaC check of main.tf (Terraform) found 1 problem:\n- ")
    assert report.splitlines()[1].startswith(f"- {expected}")


@pytest.mark.usefixtures("no_tools")
async def test_terraform_json_syntax(tmp_path: Path) -> None:
    text = '{"resource": {\n  "a": 1,\n}'
    report = await report_of(written(tmp_path, "main.tf.json", text))
    # Where and how json says it (3.13 points at the trailing comma, 3.11 and 3.12 after it).
    with pytest.raises(json.JSONDecodeError) as found:
        json.loads(text)
    error = found.value
    assert (
        f"- line {error.lineno}, column {error.colno}: syntax error: not valid JSON: {error.msg}"
    ) in report


async def test_fmt_and_validate_when_terraform_is_on_path(tmp_path: Path, tools: Path) -> None:
    module = tmp_path / "module"
    path = written(module, "main.tf", GOOD_TF.replace("bucket = ", "bucket="))
    report = await report_of(path)
    assert "not formatted as `terraform fmt` writes it (run `terraform fmt main.tf`)" in report
    assert '+  bucket = "acme-logs"' in report
    assert calls(tools) == ["fmt -check -diff -no-color main.tf"]

    (module / ".terraform").mkdir()  # initialised: validate runs too
    path.write_text('resource "aws_s3_bucket" "logs" {\n  bucket = var.regon\n}\n')
    report = await report_of(path)
    assert report.splitlines()[1] == (
        "- main.tf:2: error: Reference to undeclared input variable: An input variable with "
        'the name "regon" has not been declared. (terraform validate)'
    )
    assert calls(tools)[-1] == "validate -json -no-color"
    path.write_text(GOOD_TF)
    assert (await report_of(path)).endswith("no problems.")


async def test_no_external_programs_in_a_replay(tmp_path: Path, tools: Path) -> None:
    path = written(tmp_path, "main.tf", 'resource "a" "b" {\n  bucket="x"\n}\n')
    assert (await report_of(path, external=False)).endswith("no problems.")
    assert calls(tools) == []


async def test_a_syntax_error_skips_the_programs(tmp_path: Path, tools: Path) -> None:
    path = written(tmp_path, "main.tf", 'resource "a" "b" {\n')
    assert "syntax error" in await report_of(path)
    assert calls(tools) == []


def initialise(module: Path) -> None:
    subprocess.run(
        ["terraform", "init", "-backend=false", "-input=false", "-no-color"],
        cwd=module,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (module / ".terraform").mkdir(exist_ok=True)  # init of builtin providers may not make it


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform is not installed")
async def test_with_the_real_terraform(tmp_path: Path) -> None:
    module = tmp_path / "module"
    path = written(module, "main.tf", 'resource "terraform_data" "a" {\n  input="x"\n}\n')
    report = await report_of(path)
    assert "not formatted as `terraform fmt` writes it" in report and 'input = "x"' in report
    path.write_text('resource "terraform_data" "a" {\n  input = var.regon\n}\n')
    initialise(module)
    report = await report_of(path)
    assert "main.tf:2: error: Reference to undeclared input variable" in report


@pytest.mark.usefixtures("no_tools")
@pytest.mark.parametrize("name", ["ros/vpc.yaml", "cfn/bucket.json", "cfn/queue.yaml"])
async def test_clean_templates(tmp_path: Path, name: str) -> None:
    path = written(tmp_path, name, (PROJECT / name).read_text())
    text = await report_of(path)
    assert text.endswith("template): no problems.")


BROKEN_ROS = """ROSTemplateFormatVersion: '2015-09-02'
Parameters:
  ZoneId:
    Type: String
Resources:
  Vpc:
    Type: ALIYUN::ECS::VPC
    Properties:
      CidrBlock: !Ref VpcCidr
  VSwitch:
    Type: ALIYUN::ECS::VSwitch
    DependsOn: [Vpc, Gateway]
    Properties:
      VpcId: !GetAtt Vcp.VpcId
      ZoneId:
        Ref: ZoneID
      VSwitchName: !Sub '${ALIYUN::StackName}-${Name}'
  Bucket:
    Type: AWS::S3::Bucket
Outputs:
  Region:
    Value: !Ref AWS::Region
"""


@pytest.mark.usefixtures("no_tools")
async def test_ros_template_problems_with_their_lines(tmp_path: Path) -> None:
    report = await report_of(written(tmp_path, "ros.yaml", BROKEN_ROS))
    assert report.splitlines() == [
        "IaC check of ros.yaml (ROS template) found 8 problems:",
        "- line 1: ROSTemplateFormatVersion '2015-09-02' is not a known version (it is 2015-09-01)",
        "- line 9: Ref target (it must be a parameter, resource or pseudo-parameter): VpcCidr "
        "is not defined (did you mean Vpc?)",
        "- line 12: DependsOn resource Gateway is not defined",
        "- line 14: Fn::GetAtt resource Vcp is not defined (did you mean Vpc?)",
        "- line 16: Ref target (it must be a parameter, resource or pseudo-parameter): ZoneID "
        "is not defined (did you mean ZoneId?)",
        "- line 17: Fn::Sub variable (it must be a parameter, resource or pseudo-parameter): "
        "Name is not defined",
        "- line 18: resource Bucket has type AWS::S3::Bucket, which is not a ROS type (those "
        "start with ALIYUN:: or DATASOURCE::)",
        "- line 22: Ref target (it must be a parameter, resource or pseudo-parameter): "
        "AWS::Region is not defined (did you mean ALIYUN::Region?)",
    ]


@pytest.mark.usefixtures("no_tools")
async def test_cloudformation_json_problems(tmp_path: Path) -> None:
    template = json.loads((PROJECT / "cfn" / "bucket.json").read_text())
    template["AWSTemplateFormatVersion"] = "2010-09-10"
    template["Outputs"]["BucketArn"]["Value"] = {"Fn::GetAtt": ["LogBucket", "Arn"]}
    path = written(tmp_path, "bucket.json", json.dumps(template, indent=2))
    report = await report_of(path)
    assert report.splitlines()[1:] == [
        "- line 2: AWSTemplateFormatVersion '2010-09-10' is not a known version (it is 2010-09-09)",
        "- line 50: Fn::GetAtt resource LogBucket is not defined (did you mean LogsBucket?)",
    ]


@pytest.mark.usefixtures("no_tools")
async def test_template_syntax_errors_have_their_line(tmp_path: Path) -> None:
    yaml_text = (
        (PROJECT / "cfn" / "queue.yaml")
        .read_text()
        .replace(
            "    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !Sub",
            "    Type: AWS::SQS::Queue\n   Properties:\n      QueueName: !Sub",
            1,
        )
    )
    report = await report_of(written(tmp_path, "queue.yaml", yaml_text))
    assert report == (
        "IaC check of queue.yaml (template) found 1 problem:\n- line 12, column 4: not valid "
        "YAML: expected <block end>, but found '<block mapping start>' (while parsing a block "
        "mapping); check the indentation of this line and the one before"
    )
    json_text = (
        (PROJECT / "cfn" / "bucket.json")
        .read_text()
        .replace('"AWS::S3::Bucket",', '"AWS::S3::Bucket"')
    )
    report = await report_of(written(tmp_path, "bucket.json", json_text))
    assert "- line 10, column 7: not valid JSON: Expecting ',' delimiter" in report


async def test_cfn_lint_findings_are_added_for_cloudformation(tmp_path: Path, tools: Path) -> None:
    path = written(tmp_path, "queue.yaml", (PROJECT / "cfn" / "queue.yaml").read_text())
    report = await report_of(path)
    assert report.splitlines()[1:] == [
        "- line 9: Property Resources/Queue/Properties/DelaySeconds should be of type Integer "
        "(cfn-lint E3012)"
    ]
    ros = written(tmp_path, "vpc.yaml", (PROJECT / "ros" / "vpc.yaml").read_text())
    assert (await report_of(ros)).endswith("no problems.")  # cfn-lint is for CloudFormation


@pytest.mark.usefixtures("no_tools")
async def test_files_that_are_not_iac_add_nothing(tmp_path: Path) -> None:
    for name, text in (
        ("README.md", "# hi\n"),
        ("ci.yaml", "jobs: {test: {}}\n"),
        ("broken.yaml", "a: [1\n"),
        ("package.json", '{"name": "x"}'),
        ("k8s.yaml", (PROJECT / "k8s" / "web.yaml").read_text()),
    ):
        path = written(tmp_path, name, text)
        assert await check_file(path, text) is None


@pytest.mark.usefixtures("no_tools")
async def test_annotate_appends_to_the_result_and_its_content(tmp_path: Path) -> None:
    path = written(tmp_path, "main.tf", 'resource "a" "b" {\n')
    diff = DiffContent(path=str(path), new_text=path.read_text(), old_text=None)
    result = await annotate(
        ToolResult("Created main.tf (1 line, 19 bytes).", content=[diff]), tmp_path
    )
    assert result.text.startswith(
        "Created main.tf (1 line, 19 bytes).\n\nIaC check of main.tf "
        "(Terraform) found 1 problem:\n- line 1, column 18: syntax"
    )
    assert result.content is not None and result.content[0] == diff
    assert isinstance(result.content[1], ContentToolCallContent)
    assert isinstance(result.content[1].content, TextContent)
    assert result.content[1].content.text == result.text.split("\n\n", 1)[1]
    other = ToolResult("Wrote notes.txt", content=[DiffContent(str(tmp_path / "notes.txt"), "x")])
    assert await annotate(other, tmp_path) is other


@pytest.mark.usefixtures("no_tools")
async def test_a_template_of_aliases_is_checked_once_per_object(tmp_path: Path) -> None:
    laughs = ["AWSTemplateFormatVersion: '2010-09-09'", "a0: &a0 {Ref: Missing}"]
    laughs += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 10)]
    laughs += ["Resources:", "  Queue:", "    Type: AWS::SQS::Queue", "    Properties: {Tags: *a9}"]
    with trio.fail_after(20):  # 9**9 references if walked naively
        report = await report_of(written(tmp_path, "laughs.yaml", "\n".join(laughs) + "\n"))
    assert report.splitlines()[1:] == [
        "- line 2: Ref target (it must be a parameter, resource "
        "or pseudo-parameter): Missing is not defined"
    ]


async def test_tofu_files_are_formatted_by_tofu(tmp_path: Path, tools: Path) -> None:
    stand_in(tools.parent, "tofu", STAND_IN_TERRAFORM.replace("calls.log", "tofu-calls.log"))
    unformatted = GOOD_TF.replace("bucket = ", "bucket=")
    report = await report_of(written(tmp_path, "queue.tofu", unformatted))
    assert "(OpenTofu) found 1 problem" in report and "`tofu fmt` writes it" in report
    assert calls(tools.with_name("tofu-calls.log")) == ["fmt -check -diff -no-color queue.tofu"]
    assert calls(tools) == []  # terraform refuses *.tofu files
    await report_of(written(tmp_path, "main.tf", unformatted))
    assert calls(tools) == ["fmt -check -diff -no-color main.tf"]
