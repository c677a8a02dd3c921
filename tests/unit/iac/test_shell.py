"""The shell reader: the simple commands a line runs, as the shell would split them."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iaccode.iac.shell import Simple, shell_script, simple_commands

READER = settings.get_profile(os.environ.get("IAC_HYPOTHESIS", "reader-ci"))


def programs(line: str) -> list[list[str]]:
    return [simple.words for simple in simple_commands(line) if simple.words]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("cd infra && terraform apply", [["cd", "infra"], ["terraform", "apply"]]),
        ("sudo -E env TF_LOG=1 terraform apply", [["terraform", "apply"]]),
        (
            "bash <(echo 'terraform apply')",
            [["echo", "terraform apply"], ["bash", "<(echo 'terraform apply')"]],
        ),
        ("tee >(sh) < x", [["sh"], ["tee", ">(sh)"]]),
        ("setsid -f terraform apply", [["terraform", "apply"]]),
        ("flock /tmp/lock terraform apply", [["terraform", "apply"]]),
        (
            "flock -c 'terraform apply' /tmp/lock",
            [["terraform", "apply"], ["flock", "-c", "terraform apply", "/tmp/lock"]],
        ),
        ("strace -f -e trace=execve terraform apply", [["terraform", "apply"]]),
        ("chroot / terraform apply", [["terraform", "apply"]]),
        (
            "su -c 'terraform apply' deploy",
            [["terraform", "apply"], ["su", "-c", "terraform apply", "deploy"]],
        ),
        ("runuser -u deploy -- terraform apply", [["terraform", "apply"]]),
        (
            "script -c 'terraform apply' /dev/null",
            [["terraform", "apply"], ["script", "-c", "terraform apply", "/dev/null"]],
        ),
        (
            "watch -n 5 terraform apply",
            [["terraform", "apply"], ["watch", "-n", "5", "terraform", "apply"]],
        ),
        (
            "watch -n 1 'terraform apply'",
            [["terraform", "apply"], ["watch", "-n", "1", "terraform apply"]],
        ),
        ("flock /tmp/l ionice -c 3 terraform apply", [["terraform", "apply"]]),
        (
            "find . -name '*.tf' -execdir terraform apply \\;",
            [
                ["terraform", "apply"],
                ["find", ".", "-name", "*.tf", "-execdir", "terraform", "apply"],
            ],
        ),
        (
            "git -c alias.x='!terraform apply' x",
            [["terraform", "apply"], ["git", "-c", "alias.x=!terraform apply", "x"]],
        ),
        (
            "trap 'terraform destroy' EXIT",
            [["terraform", "destroy"], ["trap", "terraform destroy", "EXIT"]],
        ),
        ("coproc terraform apply", [["terraform", "apply"]]),
        ("f() { terraform apply; }; f", [["f"], ["terraform", "apply"], ["f"]]),
        ("echo $'it\\'s'\nterraform apply", [["echo", "it's"], ["terraform", "apply"]]),
        ("echo '$(' ; terraform apply", [["echo", "$("], ["terraform", "apply"]]),
        ("echo '$(terraform apply)'", [["echo", "$(terraform apply)"]]),
        ('echo "$(terraform apply)"', [["terraform", "apply"], ["echo", "$(terraform apply)"]]),
        # an escaped "$(" is no substitution, but the reader splits at "(": a command too many,
        # never one too few
        ("echo \\$(terraform apply)", [["echo"], ["terraform", "apply"]]),
        (
            "bash -c 'echo $(bash -c '\"'\"'terraform apply'\"'\"')'",
            [["terraform", "apply"], ["echo", "$(bash -c 'terraform apply')"]],
        ),
    ],
)
def test_simple_commands(line: str, expected: list[list[str]]) -> None:
    assert programs(line) == expected


def test_assignments_and_emptied_environments_are_kept() -> None:
    assert list(simple_commands("PATH=/usr/bin terraform apply")) == [
        Simple(["terraform", "apply"], ["PATH=/usr/bin"])
    ]
    assert list(simple_commands("export PATH=/x")) == [Simple(["export", "PATH=/x"])]
    assert list(simple_commands("PATH=/x")) == [Simple([], ["PATH=/x"])]
    (env_i,) = simple_commands("env -i HOME=/h terraform apply")
    assert env_i.clean_env and env_i.assignments == ["HOME=/h"] and env_i.words[0] == "terraform"
    (command_p,) = simple_commands("command -p kubectl delete ns x")
    assert command_p.clean_env and command_p.words[:2] == ["kubectl", "delete"]
    (nested,) = simple_commands("bash -c 'terraform apply'")
    assert nested.nested and nested.words == ["terraform", "apply"]


@pytest.mark.parametrize(
    ("words", "script"),
    [
        (["sh", "deploy.sh"], "deploy.sh"),
        (["bash", "-e", "./x.sh", "arg"], "./x.sh"),
        (["source", "env.sh"], "env.sh"),
        ([".", "env.sh"], "env.sh"),
        (["bash", "-c", "echo"], None),
        (["sh", "-s"], None),
        (["sh"], None),
        (["python3", "x.py"], None),
    ],
)
def test_the_script_a_shell_runs(words: list[str], script: str | None) -> None:
    assert shell_script(words) == script


WORDS = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=40)


@READER
@given(st.lists(WORDS, max_size=8), st.sampled_from([";", "&&", "|", "\n", " $(", " `", "'"]))
def test_the_reader_never_fails_on_any_line(parts: list[str], joint: str) -> None:
    for simple in simple_commands(joint.join(parts)):
        assert isinstance(simple.words, list)
