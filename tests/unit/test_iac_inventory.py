"""The IaC inventory of a real project tree (tests/fixtures/iac/project): Terraform modules,
an OpenTofu file, ROS and CloudFormation templates, Kubernetes manifests, a Helm chart and a
Pulumi project, with a .gitignore and a .terraform/ cache to leave out."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio

from iaccode.iac import inventory
from iaccode.iac.inventory import (
    BUILD_THREADS,
    MAX_CHARS,
    MAX_PROJECTS,
    ProjectInventory,
    find_files,
    iac_inventory,
    inventory_section,
    inventory_version,
    project_inventory,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "iac" / "project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    (root / "ignored").mkdir()  # left out by the fixture's .gitignore (so not in git either)
    (root / "ignored" / "main.tf").write_text('resource "aws_instance" "hidden_by_gitignore" {}\n')
    return root


def block(text: str, where: str) -> list[str]:
    """The lines of one entry of the inventory."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(where + " ("))
    end = next(
        (i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines)
    )
    return lines[start:end]


def test_terraform_modules(project: Path) -> None:
    text = ProjectInventory(project).build()
    assert text is not None
    assert block(text, "network/") == [
        "network/ (Terraform module, 4 files)",
        "  terraform: required_version >= 1.6; backend s3",
        "  providers: aws (hashicorp/aws ~> 5.40), random (hashicorp/random >= 3.5)",
        "  resources: aws_vpc.main, aws_subnet.private, aws_internet_gateway.gw, random_id.suffix",
        "  data: data.aws_availability_zones.available",
        "  variables: region (string, default), cidr_block (string, required), "
        "azs (list(string), default), tags (map(string), required)",
        "  outputs: vpc_id, private_subnet_ids",
    ]
    app = block(text, "app/")
    assert app[0] == "app/ (OpenTofu / Terraform module, 2 files)"
    assert "  resources: aws_sqs_queue.jobs, aws_s3_bucket.logs" in app
    assert (
        "  modules: network = ../network, bucket = terraform-aws-modules/s3-bucket/aws 4.1.0"
    ) in app


def test_templates_manifests_charts_and_pulumi(project: Path) -> None:
    text = ProjectInventory(project).build()
    assert text is not None
    assert block(text, "ros/vpc.yaml") == [
        "ros/vpc.yaml (ROS template)",
        "  resources: Vpc: ALIYUN::ECS::VPC, VSwitch: ALIYUN::ECS::VSwitch, "
        "SecurityGroup: ALIYUN::ECS::SecurityGroup",
        "  parameters: ZoneId, VpcCidr",
        "  outputs: VpcId, VSwitchId",
    ]
    assert block(text, "cfn/bucket.json")[1] == (
        "  resources: LogsBucket: AWS::S3::Bucket, LogsBucketPolicy: AWS::S3::BucketPolicy"
    )
    assert block(text, "cfn/queue.yaml")[0] == "cfn/queue.yaml (CloudFormation template)"
    assert block(text, "k8s/web.yaml") == [
        "k8s/web.yaml (Kubernetes)",
        "  Deployment/web, Service/web",
    ]
    assert block(text, "chart/") == [
        "chart/ (Helm chart worker 0.3.1)",
        "  templates make: ConfigMap, Deployment",
    ]
    assert block(text, "pulumi/") == [
        "pulumi/ (Pulumi project edge (yaml))",
        "  resources: assets: aws:s3:BucketV2, cdn: aws:cloudfront:Distribution",
    ]


def test_gitignore_and_the_terraform_cache_are_left_out(project: Path) -> None:
    files, complete = find_files(project)
    assert complete
    assert "network/main.tf" in files
    assert not any(f.startswith(("ignored/", ".terraform/")) for f in files)
    text = ProjectInventory(project).build()
    assert text is not None
    assert "hidden_by_gitignore" not in text and "cached_module_copy" not in text


def test_biggest_folders_first_and_capped(tmp_path: Path) -> None:
    for index in range(300):
        module = tmp_path / f"module{index:03}"
        module.mkdir()
        count = 1 + index % 7
        (module / "main.tf").write_text(
            "".join(
                f'resource "aws_s3_bucket" "bucket_{n}" {{\n  bucket = "b{n}"\n}}\n'
                for n in range(count)
            )
        )
    text = ProjectInventory(tmp_path).build()
    assert text is not None
    assert len(text) <= MAX_CHARS
    first = text.splitlines()[3]
    assert first.endswith("(Terraform module, 1 file)") and "module006/" in first  # 7 buckets
    assert text.rstrip().endswith(f"the inventory is capped at {MAX_CHARS} characters]")
    assert "more not shown" in text


def test_a_syntax_error_is_listed_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "ok.tf").write_text('resource "aws_vpc" "main" {\n  cidr_block = "10.0/16"\n}\n')
    (tmp_path / "broken.tf").write_text('resource "aws_subnet" "a" {\n  vpc_id = \n}\n')
    text = ProjectInventory(tmp_path).build()
    assert text is not None
    assert "  resources: aws_vpc.main" in text
    assert (
        "syntax errors: broken.tf: line 2, column 12: unexpected end of line; "
        "expected a value or expression"
    ) in text


def test_rebuilt_when_a_file_changes(project: Path) -> None:
    inventory = ProjectInventory(project)
    before = inventory.build()
    assert before is not None and inventory.build() == before and inventory.version == 1
    main = project / "network" / "main.tf"
    main.write_text(main.read_text() + 'resource "aws_eip" "nat" {}\n')
    os.utime(main, ns=(1, 1))  # a different stamp even on a coarse-grained clock
    after = inventory.build()
    assert after is not None and "aws_eip.nat" in after and "aws_eip.nat" not in before
    assert inventory.version == 2
    shutil.rmtree(project / "ros")
    assert "ros/vpc.yaml" not in (inventory.build() or "")


def test_the_walk_is_bounded_in_time(project: Path) -> None:
    files, complete = find_files(project, seconds=-1)
    assert files == [] and complete is False


def test_no_iac_no_section(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# hello\n")
    (tmp_path / "package.json").write_text('{"name": "x"}\n')
    (tmp_path / "ci.yaml").write_text("jobs:\n  test: {}\n")
    assert ProjectInventory(tmp_path).build() is None


async def test_the_section_is_built_in_a_thread_and_shared(project: Path) -> None:
    text = await inventory_section(project)
    assert text is not None and text.startswith("# Infrastructure as code in this project\n")
    assert await inventory_section(project) == text
    assert iac_inventory(SimpleNamespace(cwd=project)) == text
    version = inventory_version(project)
    assert inventory_version(project) == version  # nothing changed
    (project / "k8s" / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n"
    )
    assert inventory_version(project) == version + 1
    assert "Job/migrate" in (iac_inventory(SimpleNamespace(cwd=project)) or "")


async def test_the_projects_kept_are_the_last_used_and_one_let_go_is_read_again(
    tmp_path: Path,
) -> None:
    first = tmp_path / "first"
    first.mkdir()
    (first / "main.tf").write_text('resource "aws_s3_bucket" "logs" {}\n')
    assert "aws_s3_bucket.logs" in (await inventory_section(first) or "")
    kept = project_inventory(first)
    for number in range(MAX_PROJECTS + 5):  # a server opening sessions in ever more folders
        folder = tmp_path / f"folder{number}"
        folder.mkdir()
        project_inventory(folder)
        if number == 3:
            assert project_inventory(first) is kept  # used lately: kept (and used again now)
    assert len(inventory._PROJECTS) == MAX_PROJECTS
    assert project_inventory(first) is not kept  # let go, and read again from its files:
    (first / "main.tf").write_text('resource "aws_s3_bucket" "audit" {}\n')
    again = await inventory_section(first)
    assert again is not None and "aws_s3_bucket.audit" in again and "logs" not in again


async def test_background_builds_share_a_few_worker_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running, most, lock = 0, 0, threading.Lock()
    entered, go = threading.Semaphore(0), threading.Event()
    build = ProjectInventory._build

    def watched(self: ProjectInventory) -> str | None:  # the real build, counted
        nonlocal running, most
        if self not in projects:  # a build an earlier test left running in this process
            return build(self)
        with lock:
            running += 1
            most = max(most, running)
        entered.release()
        go.wait(10)
        try:
            return build(self)
        finally:
            with lock:
                running -= 1

    projects: list[ProjectInventory] = []
    monkeypatch.setattr(ProjectInventory, "_build", watched)
    for number in range(3 * BUILD_THREADS):
        (tmp_path / f"p{number}").mkdir()
        (tmp_path / f"p{number}" / "main.tf").write_text(f'variable "v{number}" {{}}\n')
        projects.append(ProjectInventory(tmp_path / f"p{number}"))

    # Started where the prompt's sections start them: in worker threads of the run.
    def start_all() -> None:
        for project in projects:
            project.start()

    await trio.to_thread.run_sync(start_all)
    for _ in range(BUILD_THREADS):
        assert await trio.to_thread.run_sync(entered.acquire, True, 10)
    assert not await trio.to_thread.run_sync(entered.acquire, True, 0.3)  # no third one
    assert running == BUILD_THREADS
    go.set()
    for project in projects:
        assert await trio.to_thread.run_sync(project.ready.wait, 20)
    assert most == BUILD_THREADS
    assert [
        f"v{number}" in (project.build() or "")  # built: nothing left to read
        for number, project in enumerate(projects)
    ] == [True] * len(projects)
