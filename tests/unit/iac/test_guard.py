"""The text reader on command lines: what changes real infrastructure, what only reads, and
what a gate cannot see (it asks, saying it cannot tell)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iaccode.iac.guard import Finding, infra_change, infra_changes

READER = settings.get_profile(os.environ.get("IAC_HYPOTHESIS", "reader-ci"))

CHANGES = [
    ("terraform apply", "terraform apply"),
    ("terraform apply -auto-approve tfplan", "terraform apply"),
    ("terraform -chdir=envs/prod apply -auto-approve", "terraform apply"),
    ("terraform destroy -target=aws_s3_bucket.logs", "terraform destroy"),
    ("terraform import aws_s3_bucket.logs acme-logs", "terraform import"),
    ("terraform taint aws_instance.web", "terraform taint"),
    ("terraform untaint aws_instance.web", "terraform untaint"),
    ("terraform state rm aws_s3_bucket.logs", "terraform state rm"),
    ("terraform state mv aws_s3_bucket.a aws_s3_bucket.b", "terraform state mv"),
    ("terraform state push terraform.tfstate", "terraform state push"),
    ("terraform force-unlock -force 1234", "terraform force-unlock"),
    ("terraform workspace delete staging", "terraform workspace delete"),
    ("tofu apply", "tofu apply"),
    ("tofu destroy -auto-approve", "tofu destroy"),
    ("/usr/local/bin/terraform apply", "terraform apply"),
    ("terragrunt run-all apply", "terragrunt run-all apply"),
    ("cd infra && terraform apply -auto-approve", "terraform apply"),
    ("terraform plan -out=tfplan; terraform apply tfplan", "terraform apply"),
    ("terraform validate || terraform destroy", "terraform destroy"),
    ("terraform init && terraform plan && terraform apply", "terraform apply"),
    ("yes | terraform apply", "terraform apply"),
    ("TF_LOG=debug terraform apply", "terraform apply"),
    ("AWS_PROFILE=prod TF_IN_AUTOMATION=1 tofu apply", "tofu apply"),
    ("env TF_LOG=1 terraform apply", "terraform apply"),
    ("env -i PATH=/usr/bin terraform destroy", "terraform destroy"),
    ("env -S 'terraform apply -auto-approve'", "terraform apply"),
    ("sudo terraform apply", "terraform apply"),
    ("sudo -u deploy -E terraform apply", "terraform apply"),
    ("time terraform apply", "terraform apply"),
    ("time -p tofu apply", "tofu apply"),
    ("nohup terraform apply -auto-approve &", "terraform apply"),
    ("timeout 600 terraform apply", "terraform apply"),
    ("nice -n 10 terraform apply", "terraform apply"),
    ("sh -c 'terraform apply -auto-approve'", "terraform apply"),
    ('bash -c "cd infra && terraform destroy"', "terraform destroy"),
    ("bash -lc 'tofu apply'", "tofu apply"),
    ("sudo bash -c 'env X=1 terraform apply'", "terraform apply"),
    ("echo aws_s3_bucket.logs | xargs terraform taint", "terraform taint"),
    ("ls *.yaml | xargs -I{} kubectl apply -f {}", "kubectl apply"),
    ("find . -name '*.yaml' | xargs -n 1 kubectl delete -f", "kubectl delete"),
    ("(cd infra; terraform apply)", "terraform apply"),
    ("echo $(terraform apply -auto-approve)", "terraform apply"),
    ('echo "result: $(tofu destroy -auto-approve)"', "tofu destroy"),
    ("echo `terraform apply`", "terraform apply"),
    ("eval terraform apply", "terraform apply"),
    ("if terraform validate; then terraform apply; fi", "terraform apply"),
    ("terraform apply 2>&1 | tee apply.log", "terraform apply"),
    ("echo a#b; terraform apply", "terraform apply"),
    ("git log --format=%H#x | xargs terraform destroy", "terraform destroy"),
    ("echo '# not a comment' && kubectl delete ns old # cleanup", "kubectl delete"),
    ("# first the plan\nterraform plan\nterraform apply", "terraform apply"),
    ("terraform plan &&\\\n  terraform apply -auto-approve", "terraform apply"),
    ("bash -c 'terraform plan\nterraform destroy'", "terraform destroy"),
    (
        "aliyun ros CreateStack --StackName demo --TemplateBody file://t.yaml",
        "aliyun ros CreateStack",
    ),
    ("aliyun ros UpdateStack --StackId abc", "aliyun ros UpdateStack"),
    ("aliyun ros DeleteStack --StackId abc --RegionId cn-hangzhou", "aliyun ros DeleteStack"),
    ("aliyun ros ContinueCreateStack --StackId abc", "aliyun ros ContinueCreateStack"),
    ("aliyun ros CreateStackGroup --StackGroupName g", "aliyun ros CreateStackGroup"),
    ("aliyun ros ExecuteChangeSet --ChangeSetId c", "aliyun ros ExecuteChangeSet"),
    ("aliyun ros CreateChangeSet --StackName s", "aliyun ros CreateChangeSet"),
    ("aliyun --profile prod ros delete-stack --stack-id abc", "aliyun ros delete-stack"),
    (
        "aws cloudformation create-stack --stack-name s --template-body file://t.yaml",
        "aws cloudformation create-stack",
    ),
    ("aws cloudformation update-stack --stack-name s", "aws cloudformation update-stack"),
    (
        "aws --region us-east-1 cloudformation delete-stack --stack-name s",
        "aws cloudformation delete-stack",
    ),
    (
        "aws cloudformation deploy --template-file t.yaml --stack-name s",
        "aws cloudformation deploy",
    ),
    (
        "aws cloudformation execute-change-set --change-set-name c",
        "aws cloudformation execute-change-set",
    ),
    ("kubectl apply -f k8s/", "kubectl apply"),
    ("kubectl -n prod delete pod web-1", "kubectl delete"),
    ("kubectl create namespace demo", "kubectl create"),
    ("kubectl replace -f deploy.yaml", "kubectl replace"),
    ("kubectl patch deployment web -p '{\"spec\":{}}'", "kubectl patch"),
    ("kubectl scale deployment web --replicas=3", "kubectl scale"),
    ("kubectl rollout restart deployment/web", "kubectl rollout restart"),
    ("kubectl --context prod apply -k overlays/prod", "kubectl apply"),
    ("helm install web ./chart", "helm install"),
    ("helm upgrade --install web ./chart -n prod", "helm upgrade"),
    ("helm uninstall web", "helm uninstall"),
    ("helm rollback web 2", "helm rollback"),
    ("pulumi up --yes", "pulumi up"),
    ("pulumi destroy -y", "pulumi destroy"),
    ("pulumi refresh --yes", "pulumi refresh"),
    ("pulumi -C infra up", "pulumi up"),
    (
        "$TERRAFORM_BIN destroy -auto-approve",
        "$TERRAFORM_BIN destroy (a program named through a variable or a substitution)",
    ),
    (
        'cd infra && "${TF_BIN}" apply',
        "${TF_BIN} apply (a program named through a variable or a substitution)",
    ),
    (
        "$(which terraform) apply -auto-approve",
        "$(which terraform) apply (a program named through a variable or a substitution)",
    ),
    (
        "`which kubectl` delete -f k8s/",
        "`which kubectl` delete (a program named through a variable or a substitution)",
    ),
]

GATE_BLIND = [
    # a CLI by its path: the gate never sees it
    "/usr/local/bin/terraform apply",
    "./bin/kubectl delete pod web",
    "~/bin/helm uninstall web",
    "$HOME/.local/bin/pulumi up --yes",
    '"$TOOLS"/terraform destroy',
    'f() { /opt/tf/terraform "$@"; }; f apply',
    "python3 -c \"import os; os.execv('/opt/tf/terraform', ['terraform', 'apply'])\"",
    'perl -e \'exec "/usr/bin/kubectl", "delete", "ns", "prod"\'',
    "echo '/usr/local/bin/terraform destroy -auto-approve' | sh",
    "sh <<'EOF'\n/usr/local/bin/terraform apply -auto-approve\nEOF",
    "node -e \"require('child_process').execSync('/usr/local/bin/terraform apply')\"",
    "ln -s /usr/local/bin/terraform ./tf",
    "cp /usr/bin/kubectl /tmp/k",
    # a changed PATH: a CLI may be found before the gate
    "PATH=/usr/bin:/bin terraform apply",
    "PATH=/usr/local/bin kubectl delete ns prod",
    "env -i PATH=/usr/bin:/bin bash -c 'terraform apply'",
    "env -i terraform destroy",
    "command -p kubectl delete ns prod",
    "export PATH=/opt/real; terraform apply",
    "PATH=$(dirname $(type -P -a terraform | tail -1)) terraform apply",
    "unset PATH; /usr/bin/env terraform apply",
    "hash -p /usr/local/bin/terraform terraform; terraform apply",
    "env -u PATH terraform apply",
    # looking for what is behind the gate
    "$(type -P -a terraform | tail -1) apply",
    'cp "$(type -P -a terraform | tail -1)" ./tfx && ./tfx apply',
    "for p in $(which -a kubectl); do $p delete ns x; done",
    "whereis terraform",
    "cp /proc/$(pgrep -n terraform)/exe ./t",
    "find / -name terraform -type f -exec {} apply \\;",
    "locate bin/kubectl",
    # a program it cannot name, with a changing verb
    "./tfx apply",
    "/tmp/x destroy -auto-approve",
    "$TERRAFORM_BIN destroy -auto-approve",
    "$(which tofu) apply",
    "`which kubectl` delete -f k8s/",
    # a nested line too deep to read
    "bash -c "
    + shlex.quote(
        "bash -c "
        + shlex.quote(
            "bash -c "
            + shlex.quote(
                "bash -c "
                + shlex.quote(
                    "bash -c "
                    + shlex.quote(
                        "bash -c "
                        + shlex.quote(
                            "bash -c "
                            + shlex.quote(
                                "bash -c "
                                + shlex.quote("bash -c " + shlex.quote("bash -c 'echo hi'"))
                            )
                        )
                    )
                )
            )
        )
    ),
]

READ_ONLY = [
    "terraform plan",
    "terraform plan -out=tfplan -destroy",
    "terraform validate -json",
    "terraform fmt -check -diff",
    "terraform show -json tfplan",
    "terraform init -backend=false",
    "terraform state list",
    "terraform state show aws_s3_bucket.logs",
    "terraform output -json",
    "terraform workspace list",
    "terraform workspace select staging",
    "terraform providers",
    "terraform graph | dot -Tpng > graph.png",
    "tofu plan -out plan.bin",
    "terraform -help apply",
    "echo terraform apply",
    "echo 'terraform apply'",
    "grep -rn 'terraform destroy' docs/",
    "cat apply.log # terraform apply",
    "terraform plan # then terraform apply",
    "# terraform destroy",
    "git commit -m 'terraform apply fixes'",
    "sh scripts/check.sh",
    "aliyun ros GetStack --StackId abc",
    "aliyun ros ListStacks",
    "aliyun ros ValidateTemplate --TemplateBody file://t.yaml",
    "aliyun ros PreviewStack --StackName s",
    "aws cloudformation describe-stacks --stack-name s",
    "aws cloudformation validate-template --template-body file://t.yaml",
    "aws s3 ls",
    "kubectl get pods -A",
    "kubectl -n prod describe deployment web",
    "kubectl diff -f k8s/",
    "kubectl apply -f k8s/ --dry-run=client",
    "kubectl create deployment web --image=nginx --dry-run=client -o yaml",
    "kubectl rollout status deployment/web",
    "kubectl logs web-1",
    "helm template web ./chart",
    "helm lint ./chart",
    "helm list -n prod",
    "helm install web ./chart --dry-run",
    "pulumi preview",
    "pulumi stack ls",
    "ls -la && cat main.tf",
    "",
    "terraform",
    "make plan",
    "make -C infra validate test",
    "just fmt",
    "make --help deploy",
    "make apply",  # what the target runs meets the gate (terraform apply by name)
    "just deploy-prod",
    "$EDITOR main.tf",
    "$TERRAFORM_BIN plan -out=tfplan",
    "$(which terraform) validate",
    "echo $(date) done",
]


@pytest.mark.parametrize(("command", "change"), CHANGES, ids=[c for c, _ in CHANGES])
def test_changing_commands_are_recognised(command: str, change: str) -> None:
    assert infra_change(command) == change


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only_commands_are_ordinary(command: str) -> None:
    assert infra_change(command) is None


def test_the_table_is_large_enough() -> None:
    assert len(CHANGES) + len(READ_ONLY) + len(GATE_BLIND) >= 150


def test_a_cli_named_on_the_line_is_one_the_gate_will_see() -> None:
    assert infra_changes("cd infra && terraform apply -auto-approve") == [
        Finding("terraform apply", gate_sees=True, argv=("terraform", "apply", "-auto-approve"))
    ]
    assert infra_changes("kubectl delete ns a; helm uninstall $R") == [
        Finding("kubectl delete", gate_sees=True, argv=("kubectl", "delete", "ns", "a")),
        Finding("helm uninstall", gate_sees=True),
    ]  # $R: the argv is not known yet


def test_a_path_into_the_gates_is_the_gate(tmp_path: Path) -> None:
    gates = tmp_path / "gates"
    gates.mkdir()
    assert infra_changes(f"{gates}/terraform apply", gates=gates) == [
        Finding("terraform apply", gate_sees=True)
    ]  # seen, but not pre-allowed
    assert infra_changes("/usr/local/bin/terraform apply", gates=gates) == [
        Finding("terraform apply", gate_sees=False)
    ]


@pytest.mark.parametrize("command", GATE_BLIND)
def test_what_a_gate_cannot_see_asks(command: str) -> None:
    found = infra_changes(command, env={"HOME": "/home/u"}, cwd=Path("/"))
    assert found, command
    assert not any(finding.gate_sees for finding in found), found


def test_an_unclosed_quote_still_finds_the_change() -> None:
    assert infra_change("terraform apply -var 'name=x") == "terraform apply"
    assert infra_change("echo 'unfinished; terraform plan") is None


_PREFIXES = [
    "sudo -E ",
    "sudo -u deploy -E ",
    "env A=1 ",
    "time ",
    "nohup ",
    "X=1 Y=2 ",
    "timeout 5 ",
    "nice -n 5 ",
    "command ",
    "exec ",
    "setsid ",
    "flock /tmp/l ",
    "strace -f -o /dev/null ",
    "stdbuf -oL ",
    "ionice -c 3 ",
    "xargs ",
]
_CONTEXTS = [
    "{}",
    "cd infra && {}",
    "true; {}",
    "false || {}",
    "echo yes | {}",
    "({})",
    "{} > out.log 2>&1",
    "if true; then {}; fi",
    "echo $({})",
    "{} &",
    "cat <({})",
    "tee >({}) < /dev/null",
    "coproc {}",
    "while false; do :; done; {}",
    "for i in 1; do {}; done",
    "trap {q} EXIT",
    "watch -n 1 {q}",
    "find . -maxdepth 0 -exec sh -c {q} \\;",
    "su -c {q}",
    "eval {q}",
]
"""Where a line may stand: ``{}`` as it is, ``{q}`` quoted as one word (shlex.quote), as a
shell would need it nested."""


@READER
@given(
    st.sampled_from(
        [
            c
            for c in CHANGES
            if "'" not in c[0]
            and '"' not in c[0]
            and "`" not in c[0]
            and "$(" not in c[0]
            and "#" not in c[0]
        ]
    ),
    st.lists(st.sampled_from(_PREFIXES), max_size=3),
    st.lists(st.sampled_from(_CONTEXTS), max_size=3),
    st.lists(st.booleans(), max_size=2),
)
def test_wrapped_and_chained_changes_are_still_found(
    case: tuple[str, str], prefixes: list[str], contexts: list[str], shells: list[bool]
) -> None:
    command, change = case
    line = "".join(prefixes) + command
    for context, shell in zip(contexts, shells + [False] * len(contexts), strict=False):
        line = context.format(line, q=shlex.quote(line))
        if shell:
            line = f"bash -c {shlex.quote(line)}"
    assert infra_change(line) == change, line


@READER
@given(
    st.sampled_from([c for c in READ_ONLY if c and "#" not in c]),
    st.lists(st.sampled_from(_PREFIXES), max_size=3),
    st.lists(st.sampled_from(_CONTEXTS), max_size=3),
    st.lists(st.booleans(), max_size=2),
)
def test_wrapped_and_chained_reads_stay_ordinary(
    command: str, prefixes: list[str], contexts: list[str], shells: list[bool]
) -> None:
    line = "".join(prefixes) + command
    for context, shell in zip(contexts, shells + [False] * len(contexts), strict=False):
        line = context.format(line, q=shlex.quote(line))
        if shell:
            line = f"bash -c {shlex.quote(line)}"
    assert infra_change(line) is None, line


def test_a_program_named_in_the_environment_is_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TF", "tofu")
    monkeypatch.setenv("KUBE", "/usr/local/bin/kubectl --context prod")
    assert infra_change("$TF apply -auto-approve") == "tofu apply"
    assert infra_change("${TF} plan") is None  # known, and only a read
    assert infra_change("$KUBE delete -f k8s/") == "kubectl delete"
    assert infra_change("$KUBE get pods") is None


def test_what_runs_where_no_gate_stands_asks(tmp_path: Path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "ansible-playbook").write_text("#!/bin/sh\n")
    (tmp_path / "plain" / "bin").mkdir(parents=True)
    (tmp_path / "package.json").write_text(
        '{"scripts": {"deploy": "cdk deploy --all", "build": "tsc"}}'
    )
    asks = [
        "npx cdk deploy",
        "npx aws-cdk@2 destroy --force",
        "npm exec -- cdk deploy",
        "uv run ansible-playbook site.yml",
        "poetry run pulumi up --yes",
        "npm run deploy",
        "yarn deploy",
        "source .venv/bin/activate && ansible-playbook site.yml",
        "docker run --rm -v ~/.aws:/root/.aws hashicorp/terraform apply",
        "podman run amazon/aws-cli s3 rb s3://b",
        "ssh host 'A=apply; terraform $A'",
        "echo 'terraform apply' | at now",
        "tmux new -d 'terraform apply'",
        "crontab jobs.txt",
    ]
    for line in asks:
        found = infra_changes(line, cwd=tmp_path)
        assert found and not any(f.gate_sees for f in found), line
    for line in [
        "npm run build",
        "npx prettier --check .",
        "source plain/bin/activate && pytest",
        "docker run --rm alpine echo hi",
        "ssh -T git@github.com",
        "crontab -l",
        "uv run pytest",
        "./build.sh set image",
        "./scripts/ci.sh lint check-all",
        "./run.sh test unit-tests",
        "./deploy.sh exec foo",
        "./sync.sh cp a host:/b",
    ]:
        assert infra_changes(line, cwd=tmp_path) == [], line


COPIED_UNDER_ANOTHER_NAME = [
    # a real CLI copied or linked by a pattern, then run under a name no gate answers to
    "cp /usr/bin/kube[c]tl ./kx && ./kx annotate pod web a=b",
    "cp /usr/local/bin/terra* ./tfx; ./tfx state rm aws_instance.db",
    'ln -s /usr/bin/kub*l kx; ./kx exec -n prod db-0 -- sh -c "rm -rf /data"',
    "cp /usr/bin/kube{c,}tl ./kx",
    "cp /usr/bin/a[w]s ./ax",
    # such a copy run on a later line, with the words of a change its table knows
    "./tfx state push evil.tfstate",
    "./tfx force-unlock -force 1234",
    "./kx label pod web a=b",
    "./kx rollout undo deploy/web",
    "./ax s3 rm s3://prod-bucket --recursive",
    "./ax iam create-access-key",
    "./gx compute instances delete vm-1 --quiet",
    # with kubectl's everyday verbs, on what kubectl works on; behind a CLI's global options
    "./kx set image deploy/web web=evil:1",
    "./kx set env web-0 SECRET=x",
    "./kx exec deploy/web -- rm -rf /data",
    "./kx create deployment x --image=evil",
    "./kx run x --image=evil",
    "./ax --region us-east-1 s3 rm s3://b/k",
    "./ax --profile prod ec2 terminate-instances --instance-ids i-1",
    "./ax --region x iam put-user-policy --user-name u --policy-name p --policy-document {}",
]


@pytest.mark.parametrize("command", COPIED_UNDER_ANOTHER_NAME)
def test_a_cli_under_another_name_asks(command: str) -> None:
    found = infra_changes(command, env={"HOME": "/home/u"}, cwd=Path("/"))
    assert found and all(finding.cannot_tell for finding in found), command


def test_a_link_to_a_cli_is_that_cli(tmp_path: Path) -> None:
    (tmp_path / "kubectl").write_text("#!/bin/sh\n")
    (tmp_path / "kx").symlink_to(tmp_path / "kubectl")
    assert infra_change("./kx set image deploy/web web=evil", cwd=tmp_path) == "kubectl set"
    assert infra_change("./kx get pods", cwd=tmp_path) is None


RUN_BY_ANOTHER_PROGRAM = [
    ("python3 -m awscli ec2 terminate-instances --instance-ids i-1", "aws ec2 terminate-instances"),
    ("python3 -m azure.cli group delete -n rg --yes", "az group delete"),
    (
        "python3 /usr/lib/google-cloud-sdk/lib/gcloud.py compute instances delete vm-1 --quiet",
        "gcloud compute instances delete",
    ),
    ("python3 /usr/lib/google-cloud-sdk/platform/gsutil/gsutil.py rm gs://b/o", "gsutil rm"),
    ("mise x terraform@1.9 -- terraform apply", "terraform apply"),
    ("mise exec terraform@1.9 -- terraform apply", "terraform apply"),
    ("mise x terraform@1.9 -c 'terraform apply'", "terraform apply"),
    ("pipx run --spec awscli aws ec2 terminate-instances", "aws ec2 terminate-instances"),
    ("uv tool run --from awscli aws ec2 terminate-instances", "aws ec2 terminate-instances"),
    ("nix-shell -p terraform --run 'terraform apply'", "terraform apply"),
    ("nix shell nixpkgs#kubectl -c kubectl delete ns prod", "kubectl delete"),
    ("nix run nixpkgs#terraform -- apply", "terraform apply"),
    ("nix run nixpkgs#kubernetes-helm -- uninstall web", "helm uninstall"),
    ("devbox run -- terraform apply", "terraform apply"),
    ("pixi run terraform apply", "terraform apply"),
    ("conda run -n ops aws ec2 terminate-instances", "aws ec2 terminate-instances"),
    ("micromamba run -n x aws ec2 terminate-instances", "aws ec2 terminate-instances"),
    ("direnv exec . terraform apply", "terraform apply"),
    ("snap run kubectl delete ns prod", "kubectl delete"),
    ("proto run terraform -- apply", "terraform apply"),
    ("tenv tf apply", "terraform apply"),
]


@pytest.mark.parametrize(("command", "change"), RUN_BY_ANOTHER_PROGRAM)
def test_a_cli_run_by_a_runner_or_an_interpreter_asks(command: str, change: str) -> None:
    found = infra_changes(command)
    assert [finding.what for finding in found] == [change], command
    assert not found[0].gate_sees  # the runner's own program, or the CLI's code: no gate


ORDINARY_PROGRAMS = [
    "./build.sh run",
    "./x.py test library/std",
    "./bin/rails generate model User name:string",
    "./bin/bundle exec rspec",
    "./node_modules/.bin/nx run app:build",
    "./x.sh set key value",
    "./x.sh label",
    "./scripts/test.sh run integration-tests",
    "./ci.sh run build-all",
    "./x.sh a b create",
    "./check.sh s3 ls",
    ".venv/bin/pip config set global.index-url https://example.com",
    "ls src/*",
    "ls ~/.local/bin/*",
    "cp dist/* /tmp/out/",
    "cat logs/*.log",
    "python3 -m pytest",
    "python3 -m awscli s3 ls",
    "nix-shell -p python3 --run pytest",
    "nix shell nixpkgs#kubectl -c kubectl get pods",
    "nix run nixpkgs#hello",
    "mise x node@20 -- node -v",
    "mise x terraform@1.9 -- terraform plan",
    "devbox run test",
    "pixi run pytest",
    "conda run -n env python x.py",
    "direnv exec . make",
    "tenv tf install 1.9.0",
    "tenv tf list",
]


@pytest.mark.parametrize("command", ORDINARY_PROGRAMS)
def test_ordinary_programs_and_runners_stay_unasked(command: str) -> None:
    assert infra_changes(command, env={"HOME": "/home/u"}, cwd=Path("/")) == [], command
