"""kubectl / helm changes name their kube context, and a protected one needs its name typed
(iaccode/gate/kube.py). A stand-in kubectl answers ``config current-context`` as the real
one does, from the kubeconfig it is given."""

from __future__ import annotations

from pathlib import Path

from iaccode.gate.handlers import Exec, Refuse
from iaccode.gate.kube import handle
from iaccode.protocol.elicitation import ElicitationAnswer
from tests.support.fake_editor import FakeEditor
from tests.unit.gate.test_terraform import LocalExchange

KUBECTL = """#!/bin/sh
echo "$*" >> {log}
if [ "$1 $2" = "config current-context" ]; then
  sed -n 's/^current-context: *//p' "${{4:-$KUBECONFIG}}"
fi
"""


def setup(tmp_path: Path, context: str) -> tuple[str, dict[str, str]]:
    config = tmp_path / "kubeconfig"
    config.write_text(f"apiVersion: v1\nkind: Config\ncurrent-context: {context}\n")
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(KUBECTL.format(log=tmp_path / "runs.log"))
    kubectl.chmod(0o755)
    return str(kubectl), {"KUBECONFIG": str(config), "PATH": f"{tmp_path}:/usr/bin:/bin"}


async def test_the_question_names_the_context_and_namespace(tmp_path: Path) -> None:
    kubectl, env = setup(tmp_path, "staging")
    editor = FakeEditor(["allow_once"])
    argv = [kubectl, "-n", "web", "delete", "deployment", "api"]
    outcome = await handle(LocalExchange(argv, tmp_path, editor, env=env))
    assert outcome == Exec(kubectl, None, {}, None), "the command runs as it is"
    assert editor.questions[0][0].title == "kubectl delete · context staging · namespace web"


async def test_a_protected_context_needs_its_name(tmp_path: Path) -> None:
    kubectl, env = setup(tmp_path, "prod-eu")
    editor = FakeEditor(
        [],
        elicitations=[ElicitationAnswer("accept", {"confirm": "prod"})],
        elicitation_modes=frozenset({"form"}),
    )
    argv = [kubectl, "apply", "-f", "deploy.yaml"]
    outcome = await handle(LocalExchange(argv, tmp_path, editor, env=env, protected=("prod*",)))
    assert isinstance(outcome, Refuse) and "did not match" in outcome.message
    assert editor.elicitations[0].message.startswith("kubectl apply · context prod-eu")
    assert (tmp_path / "runs.log").read_text() == "config current-context\n", (
        "asked kubectl which context; the apply itself never ran"
    )


async def test_the_context_kubectl_names_wins_over_the_files(tmp_path: Path) -> None:
    """The kubeconfig file says dev; kubectl itself (what the gate runs, with the command's
    environment) says production: protection goes by the one kubectl uses."""
    kubectl, env = setup(tmp_path, "dev")
    (tmp_path / "kubectl").write_text("#!/bin/sh\necho production\n")
    exchange = LocalExchange(
        [kubectl, "delete", "ns", "shop"],
        tmp_path,
        FakeEditor([]),
        env=env,
        protected=("production",),
    )
    outcome = await handle(exchange)
    assert isinstance(outcome, Refuse) and "kube context production is protected" in outcome.message
