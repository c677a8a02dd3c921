"""What the agent trusts of a repository on its own: git's neutral settings, the providers
``terraform validate`` may start (``iac/plugins.py``), and the inventory's reader in its child
process (``iac/reader.py``). The attacks themselves are in tests/adversarial."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iaccode.context.git import driver_settings, repository_root
from iaccode.iac.parse_error import TooDeep, check_depth
from iaccode.iac.plugins import installed_packages, needs_providers, validate_verdict
from iaccode.iac.reader import FileReader, Skipped, TooBig, _line_within, plain


def test_every_driver_is_emptied() -> None:
    settings = dict(
        driver_settings(
            [
                "filter.lfs.process",
                "filter.a.b.clean",
                "diff.evil.textconv",
                "merge.m.driver",
                "core.pager",
            ]
        )
    )
    assert settings == {
        "filter.lfs.clean": "",
        "filter.lfs.smudge": "",
        "filter.lfs.process": "",
        "filter.lfs.required": "false",
        "filter.a.b.clean": "",
        "filter.a.b.smudge": "",
        "filter.a.b.process": "",
        "filter.a.b.required": "false",
        "diff.evil.textconv": "",
        "diff.evil.command": "",
        "merge.m.driver": "",
    }


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's .git needs root")
def test_a_git_folder_of_another_user_is_no_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "proj").mkdir()
    assert repository_root(tmp_path / "proj") == tmp_path
    os.chown(tmp_path / ".git", 65534, 65534)
    assert repository_root(tmp_path / "proj") is None


def test_depth_is_checked_before_parsing() -> None:
    check_depth("[" * 256 + "]" * 256)
    with pytest.raises(TooDeep):
        check_depth("{" * 257)


def package(data_dir: Path, version: str = "1.0.0") -> Path:
    folder = data_dir / "providers" / "registry.terraform.io" / "hashicorp" / "null" / version
    folder.mkdir(parents=True)
    return folder / "linux_amd64"


def test_only_packages_from_the_users_cache_are_trusted(tmp_path: Path) -> None:
    module = tmp_path / "project" / "module"
    module.mkdir(parents=True)
    (module / "main.tf").write_text('resource "null_resource" "x" {}\n')
    cache = tmp_path / "cache"
    cached = cache / "registry.terraform.io" / "hashicorp" / "null" / "1.0.0" / "linux_amd64"
    cached.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "TF_PLUGIN_CACHE_DIR": str(cache)}
    project = tmp_path / "project"
    assert validate_verdict(module, env, "terraform", project).run is False  # not initialised
    package(module / ".terraform").symlink_to(cached)
    assert validate_verdict(module, env, "terraform", project).run is True
    shipped = package(module / ".terraform", "2.0.0")
    shipped.mkdir()
    verdict = validate_verdict(module, env, "terraform", project)
    assert verdict.run is False and verdict.note is not None
    assert "registry.terraform.io/hashicorp/null/2.0.0" in verdict.note
    assert len(list(installed_packages(module / ".terraform"))) == 2
    # The cache named by the CLI configuration instead; a cache inside the project is not one.
    rc = tmp_path / "terraformrc"
    rc.write_text('plugin_cache_dir = "$HOME/../cache"\n')
    shipped.rmdir()
    env = {"HOME": str(tmp_path / "home"), "TF_CLI_CONFIG_FILE": str(rc)}
    assert validate_verdict(module, env, "terraform", project).run is True
    assert validate_verdict(module, env, "terraform", tmp_path).run is False


@pytest.mark.parametrize(
    ("text", "needs"),
    [
        ('resource "terraform_data" "x" {}\nvariable "v" {}\n', False),
        ('data "terraform_remote_state" "s" {}\n', False),
        ('resource "aws_s3_bucket" "b" {}\n', True),
        ('module "m" {\n  source = "./m"\n}\n', True),
        ("terraform {\n  required_providers {}\n}\n", True),
        ('provider "aws" {}\n', True),
    ],
)
def test_what_needs_a_provider(tmp_path: Path, text: str, needs: bool) -> None:
    (tmp_path / "main.tf").write_text(text)
    assert needs_providers(tmp_path) is needs


def test_the_reader_bounds_each_file(tmp_path: Path) -> None:
    (tmp_path / "ok.tf").write_text('resource "terraform_data" "x" {}\n')
    (tmp_path / "deep.json").write_text('{"Resources": ' + "[" * 5000 + "]" * 5000 + "}")
    (tmp_path / "big.tf").write_bytes(b"#" * (1024 * 1024 + 1))
    reader = FileReader(tmp_path)
    try:
        ok = reader.read("ok.tf")
        assert not isinstance(ok, Skipped) and ok is not None and ok.kind == "terraform"
        assert reader.read("deep.json") == Skipped("nested over 256 levels deep")
        assert reader.read("big.tf") == Skipped("over 1 MiB")
        assert reader.read("gone.tf") is None
    finally:
        reader.close()


def test_plain_data_carries_no_cycles() -> None:
    loop: list[object] = []
    loop.append(loop)
    assert plain({"a": loop, 1: (2, {3})}) == {"a": [None], "1": [2, "{3}"]}


def test_plain_data_is_bounded_in_what_it_expands_to() -> None:
    leaf = "x" * 100
    level: object = leaf
    for _ in range(4):
        level = [level] * 10  # one object, reached 10 ** 4 times
    assert len(plain(level, room=2_000_000)[0][0][0]) == 10  # ~1 MB: fits
    with pytest.raises(TooBig):
        plain(level, room=500_000)
    with pytest.raises(TooBig):
        plain({leaf * 10: None}, room=900)  # keys count too


def test_an_answer_of_the_reader_is_bounded_in_size_and_time() -> None:
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stream, os.fdopen(write, "wb", buffering=0) as out:
        out.write(b'{"a": 1}\n')
        assert _line_within(stream, 5, 1024) == b'{"a": 1}\n'
        out.write(b"x" * 5000)
        with pytest.raises(TooBig):
            _line_within(stream, 5, 1024)
        out.write(b"no end of line")
        with pytest.raises(TimeoutError):  # a line begun is not a line: the bound holds
            _line_within(stream, 0.3, 1 << 20)
