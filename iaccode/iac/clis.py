"""The one table of infrastructure CLIs: each gets a gate (:mod:`iaccode.gate`), and each
command line that runs one is read with its verbs here.

    classify("kubectl", ["-v", "9", "delete", "pod", "web"])  -> Change("kubectl delete")
    classify("terraform", ["plan", "-out=tfplan"])            -> None (a read)

How the arguments are read (options, ``--``, the first known verb) is :mod:`iaccode.iac.argv`.
The tables lean towards asking: a verb of a cloud CLI that is not known to only read
(``describe-*``, ``list``, ``get``...) counts as a change, and so does a word a CLI's table does
not know where the CLI takes plugins (kubectl, helm). Help, version and the dry runs each CLI
understands (``kubectl --dry-run=client``, ``helm --dry-run``, ``ansible-playbook --check``,
``aws --dry-run``, ``aliyun --dryrun``) are reads; ``--dry-run=false`` is not.
"""

from __future__ import annotations

from iaccode.iac.argv import (
    TABLE,
    Change,
    Decision,
    Parsed,
    Spec,
    Verbs,
    classify_with,
    flag_dry_run,
    options,
    valued_dry_run,
    verbs,
)
from iaccode.iac.cloud_clis import CLOUD_CLIS


def classify(name: str, args: list[str]) -> Change | None:
    """What running the CLI ``name`` with ``args`` changes, or None (a read, or not a CLI)."""
    spec = CLIS.get(name)
    return classify_with(name, spec, args) if spec is not None else None


# --- Terraform, OpenTofu, Terragrunt ---------------------------------------------------------

_TERRAFORM = verbs(
    changes="apply destroy import taint untaint force-unlock refresh test",
    reads="plan validate fmt show init output providers graph version console get login "
    "logout metadata modules query",
    groups={
        "state": verbs("rm mv push replace-provider", "list show pull identities"),
        # new: a workspace of the backend (a state object, an HCP Terraform workspace)
        "workspace": verbs("delete new", "list select show", otherwise="read"),
        "stacks": verbs(reads="init validate fmt providers-lock version", otherwise="change"),
    },
)


def _dashes(option: str) -> list[str]:
    """Go's flag package reads ``-name`` and ``--name`` alike."""
    return [f"-{option}", f"--{option}"]


def _terraform(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:1] == ["init"] and parsed.has(*_dashes("migrate-state"), *_dashes("force-copy")):
        return Change(f"{name} init -migrate-state")  # the state moves to the new backend
    if words[:2] == ["workspace", "select"] and parsed.has(*_dashes("or-create")):
        return Change(f"{name} workspace new")
    if words[:2] == ["workspace", "new"] and parsed.has(*_dashes("state")):
        return Change(f"{name} workspace new")  # a state file written into the backend
    return TABLE


_TERRAGRUNT = Verbs(
    _TERRAFORM.changes | {"apply-all", "destroy-all", "run-all"},
    _TERRAFORM.reads
    | {
        "plan-all",
        "output-all",
        "validate-all",
        "render",
        "render-json",
        "find",
        "list",
        "info",
        "dag",
        "hcl",
        "catalog",
        "scaffold",
        "graph-dependencies",
        "hclfmt",
        "hclvalidate",
        "exec",
    },
    {
        **_TERRAFORM.groups,
        "run": _TERRAFORM,
        "stack": verbs(reads="generate output clean", groups={"run": _TERRAFORM}),
        "run-all": _TERRAFORM,
        # bootstrap makes the state's bucket and lock table (and updates them)
        "backend": verbs("delete migrate bootstrap"),
    },
)


def _terragrunt(name: str, parsed: Parsed) -> Decision:
    words = [w for w in parsed.positionals if w != "run-all"]
    if parsed.positionals[:1] == ["run-all"] and not words:
        return Change(f"{name} run-all", unknown=True)
    if words[:1] == ["exec"] or parsed.positionals[:2] == ["run", "exec"]:
        return Change(f"{name} exec", unknown=True)  # any program, with terragrunt's inputs
    if parsed.has("--backend-bootstrap", "--terragrunt-backend-bootstrap"):
        return Change(f"{name} backend bootstrap")
    terraform = words[1:] if words[:1] == ["run"] else words  # terragrunt [run] init ...
    return _terraform(name, Parsed(terraform, parsed.options, parsed.after, parsed.before))


_TERRAGRUNT_OPTIONS = options(
    "--working-dir --terragrunt-working-dir --config --terragrunt-config --log-level "
    "--terragrunt-log-level --queue-include-dir --terragrunt-include-dir --queue-exclude-dir "
    "--terragrunt-exclude-dir --iam-assume-role --terragrunt-iam-role --download-dir "
    "--tf-path --terragrunt-tfpath --parallelism --terragrunt-parallelism --filter --out-dir "
    "--json-out-dir --provider-cache-dir --source --terragrunt-source --feature"
)

# --- Pulumi ------------------------------------------------------------------------------------

_PULUMI = verbs(
    changes="up update destroy import refresh watch cancel",
    reads="preview about whoami login logout logs schema convert gen-completion new "
    "install console org ai version help",
    groups={
        "stack": verbs(
            "rm import rename change-secrets-provider init",
            "ls output export history select graph unselect",
            groups={"tag": verbs("set rm", "get ls")},
            otherwise="read",
        ),
        "state": verbs("delete unprotect move rename edit upgrade repair protect", ""),
        # run: any command with the environment's cloud credentials
        "env": verbs("set rm init edit rotate run clone tag version", "get ls open diff"),
        "deployment": verbs(
            "run",
            groups={"settings": verbs("init push destroy configure env", "pull")},
            otherwise="read",
        ),
        "config": verbs(otherwise="read"),
        "plugin": verbs(otherwise="read"),
        "policy": verbs(
            "enable disable publish rm", "ls validate-config group new", otherwise="read"
        ),
    },
)


def _pulumi(name: str, parsed: Parsed) -> Decision:
    if parsed.positionals[:2] == ["stack", "select"] and parsed.has("-c", "--create"):
        return Change(f"{name} stack init")
    return TABLE


_PULUMI_OPTIONS = options(
    "--color -C --cwd -s --stack -v --verbose --tracing --profiling --memprofilerate"
)

# --- Kubernetes: kubectl, oc, helm, helmfile, kustomize-style tools ----------------------------

_KUBECTL = verbs(
    changes="apply create delete replace patch scale edit label annotate set drain cordon "
    "uncordon taint autoscale expose run exec cp attach debug "
    # the cluster's API, with the user's credentials, for whatever reaches the port
    "proxy port-forward "
    # oc (OpenShift)
    "new-app new-project new-build start-build cancel-build import-image tag rsh "
    "rsync adm policy idle secrets serviceaccounts",
    reads="get describe logs explain diff top version cluster-info api-resources "
    "api-versions wait kustomize completion plugin options events "
    "alpha-events extract login logout project projects whoami "
    "status process observe help",
    groups={
        # set-cluster --server: the next command sends the user's token there
        "config": verbs(
            "set set-cluster set-context set-credentials unset delete-cluster delete-context "
            "delete-user rename-context",
            "view get-contexts get-clusters get-users current-context use-context use",
            otherwise="read",
        ),
        "rollout": verbs("restart undo pause resume", "status history"),
        "certificate": verbs("approve deny"),
        "auth": verbs("reconcile", "can-i whoami"),
        "image": verbs("mirror append", "info extract"),
    },
)
_KUBECTL_OPTIONS = options(
    "-n --namespace --context --kubeconfig --cluster --user -s --server --token --as "
    "--as-group --as-uid -v --v --request-timeout --certificate-authority --client-certificate "
    "--client-key --tls-server-name --cache-dir --log-file --profile --profile-output "
    "--password --username --vmodule --log-dir --log-file-max-size --stderrthreshold "
    "--kuberc"
)

_HELM = verbs(
    changes="install upgrade uninstall delete del un rollback test push",
    reads="template lint list ls status history hist get show inspect search dependency dep "
    "package pull fetch verify version env completion create repo registry plugin "
    "diff help",
)
_HELM_OPTIONS = options(
    "-n --namespace --kube-context --kubeconfig --burst-limit --qps --kube-apiserver "
    "--kube-as-user --kube-as-group --kube-ca-file --kube-token --kube-tls-server-name "
    "--registry-config --repository-cache --repository-config --content-cache"
)

_HELMFILE = verbs(
    changes="apply sync destroy delete test",
    reads="diff template lint list status build show-dag version deps fetch "
    "cache init write-values repos help",
)
_HELMFILE_OPTIONS = options(
    "-f --file -e --environment --state-values-set --state-values-file -n --namespace "
    "--kube-context -l --selector -b --helm-binary -k --kustomize-binary --log-level --chart "
    "--args"
)

# --- Deployment tools --------------------------------------------------------------------------

_CDK = verbs(
    changes="deploy destroy bootstrap import watch gc rollback refactor",
    reads="synth synthesize diff list ls doctor docs doc metadata notices context "
    "init acknowledge ack drift version flags migrate cli-telemetry help",
)
_CDK_OPTIONS = options(
    "-a --app -c --context --profile -o --output --plugin -p -r "
    "--role-arn --toolkit-stack-name --ca-bundle-path --proxy"
)
_CDKTF = verbs(
    changes="deploy apply destroy watch",
    reads="synth synthesize diff plan list get init convert output outputs debug "
    "provider login version help",
)


_ANSIBLE_READ_MODULES = frozenset(
    f"{prefix}{module}"
    for prefix in ("", "ansible.builtin.", "ansible.legacy.")
    for module in ("ping", "setup", "debug", "gather_facts")
)
"""Modules that only read, by the names that reach Ansible's own (``evil.coll.ping`` does not)."""


def _ansible(name: str, parsed: Parsed) -> Decision:
    # Not --check: a task with check_mode: false runs for real under it.
    if parsed.has("--syntax-check", "--list-tasks", "--list-hosts", "--list-tags"):
        return None
    if not parsed.positionals:
        return None
    if name == "ansible":
        module = parsed.value("-m", "--module-name") or ""
        if module in _ANSIBLE_READ_MODULES and not parsed.has("-M", "--module-path"):
            return None  # -M: a folder of modules of that name (the project's)
    return Change(f"{name} {parsed.positionals[0]}")


_ANSIBLE_OPTIONS = options(
    "-i --inventory -e --extra-vars -l --limit -t --tags --skip-tags -u --user -m "
    "--module-name -a --args -f --forks -M --module-path --vault-id --vault-password-file "
    "-c --connection -T --timeout --become-method --become-user --private-key "
    "--start-at-task -U --url -d --directory"
)

_SAM = verbs(
    changes="deploy delete sync package publish",
    reads="build validate logs traces list init local docs help",
    groups={
        "remote": verbs(
            "invoke", otherwise="change", groups={"test-event": verbs("put delete", "get list")}
        ),
        "pipeline": verbs("bootstrap", "init"),
    },
)
_SERVERLESS = verbs(
    changes="deploy remove rollback invoke prune create_domain delete_domain dev reconcile",
    reads="info logs print package metrics doctor plugin offline help "
    "version config login logout support",
    groups={"invoke": verbs("", "local", otherwise="change")},
)
_SERVERLESS_OPTIONS = options(
    "--stage -s --region -r --aws-profile --config -c --param --app --org"
)
_EKSCTL = verbs(
    changes="create delete upgrade scale drain set unset enable register "
    "deregister associate disassociate update install anywhere",
    reads="get info version completion help describe write",
)
_ARGOCD = verbs(
    changes="sync create delete set unset patch rollback terminate edit add rm "
    "remove update run generate",
    reads="list get diff history manifests logs resources wait version context "
    "login logout relogin can-i help",
)
_FLUX = verbs(
    changes="create delete reconcile suspend resume bootstrap install uninstall push tag migrate",
    reads="get logs check export trace tree version events stats build pull "
    "envsubst debug diff completion help",
)
_NOMAD = verbs(
    changes="run stop revert dispatch scale promote force exec drain eligibility "
    "fail pause resume unblock apply delete put purge lock create update "
    "bootstrap gc reconcile restore remove-peer set-config register "
    "deregister detach dismiss signal restart transfer-leadership",
    reads="status inspect history validate plan allocs deployments logs fs "
    "monitor ui version agent-info members list get info init checks save "
    "get-config list-peers state help",
    groups={
        "eval": verbs("delete", "list status"),
        # job eval: a new evaluation (-force-reschedule moves allocations)
        "job": verbs(
            "run stop revert dispatch scale promote eval restart tag start",
            "status inspect history validate plan allocs deployments init",
        ),
    },
)
_DOCTL = verbs(
    changes="create delete update import resize power-on power-off power-cycle "
    "reboot shutdown rebuild restore snapshot enable disable attach detach upgrade "
    "assign unassign add remove tag untag deploy",
    reads="list get auth version help completion kubeconfig show",
)
_COPILOT = verbs(
    changes="deploy delete init run exec upgrade pause resume override",
    reads="ls show status logs help version docs package completion",
)
"""AWS Copilot: ``copilot svc delete``, ``copilot env deploy``."""
_VAULT = verbs(
    changes="write delete put patch destroy undelete rollback enable disable tune "
    "revoke renew unseal seal rekey register deregister reload ssh "
    "generate-root init step-down",
    reads="read list get status version print path-help lookup capabilities "
    "login help server agent",
    groups={
        "kv": verbs(
            "put patch delete destroy undelete rollback enable-versioning",
            "get list",
            groups={"metadata": verbs("put patch delete", "get list")},
        ),
        "operator": verbs(
            "unseal seal rekey init step-down generate-root raft migrate",
            "key-status members diagnose",
        ),
    },
)


def _vault(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:1] == ["read"] and any("/creds/" in f"/{word}/" for word in words[1:]):
        return Change(f"{name} read creds")  # a dynamic secret: a new cloud or database user
    return TABLE


_PACKER = verbs(
    changes="build", reads="init validate fmt inspect console version hcl2_upgrade plugins help fix"
)
_SKAFFOLD = verbs(
    changes="run deploy delete dev apply build debug verify",
    reads="render diagnose fix init version config inspect lint schema survey test completion help",
)
_KAPP = verbs(
    changes="deploy delete rename",
    reads="inspect list ls logs version help completion tools",
    groups={"app-group": verbs("deploy delete"), "app-change": verbs("gc", "list ls")},
)


def _aws_nuke(name: str, parsed: Parsed) -> Decision:
    """aws-nuke lists what it would delete unless told ``--no-dry-run``."""
    return Change(name) if parsed.has("--no-dry-run") else None


# --- Mass deleters: everything of an account ---------------------------------------------------

_CLOUD_NUKE = verbs(changes="aws gcp azure defaults-aws", reads="inspect-aws inspect-gcp help")


CLIS: dict[str, Spec] = {
    "terraform": Spec(_TERRAFORM, special=_terraform),
    "tofu": Spec(_TERRAFORM, special=_terraform),
    "terragrunt": Spec(_TERRAGRUNT, _TERRAGRUNT_OPTIONS, special=_terragrunt),
    "pulumi": Spec(
        _PULUMI,
        _PULUMI_OPTIONS,
        flag_dry_run("--preview-only"),
        special=_pulumi,
        otherwise="change",
    ),
    "kubectl": Spec(_KUBECTL, _KUBECTL_OPTIONS, valued_dry_run("--dry-run"), otherwise="change"),
    "oc": Spec(_KUBECTL, _KUBECTL_OPTIONS, valued_dry_run("--dry-run"), otherwise="change"),
    "helm": Spec(_HELM, _HELM_OPTIONS, valued_dry_run("--dry-run"), otherwise="change"),
    "helmfile": Spec(_HELMFILE, _HELMFILE_OPTIONS, otherwise="change"),
    **CLOUD_CLIS,
    "cdk": Spec(_CDK, _CDK_OPTIONS, otherwise="change"),
    "cdktf": Spec(_CDKTF, options("-a --app -o --output --log-level"), otherwise="change"),
    "ansible-playbook": Spec(verbs(), _ANSIBLE_OPTIONS, special=_ansible),
    "ansible": Spec(verbs(), _ANSIBLE_OPTIONS, special=_ansible),
    "ansible-pull": Spec(verbs(), _ANSIBLE_OPTIONS, special=_ansible),
    "sam": Spec(_SAM, options("--profile --region --config-file --config-env"), otherwise="change"),
    "serverless": Spec(_SERVERLESS, _SERVERLESS_OPTIONS, otherwise="change"),
    "sls": Spec(_SERVERLESS, _SERVERLESS_OPTIONS, otherwise="change"),
    "eksctl": Spec(
        _EKSCTL,
        options("--profile --region -r -f --config-file"),
        flag_dry_run("--dry-run"),
        hyphen_prefix=True,
        otherwise="change",
    ),
    "argocd": Spec(
        _ARGOCD,
        options(
            "--server --auth-token --config --context "
            "--grpc-web-root-path --header -H --port-forward-namespace"
        ),
        flag_dry_run("--dry-run"),
        hyphen_prefix=True,
        otherwise="change",
    ),
    "flux": Spec(
        _FLUX,
        options("--context --kubeconfig -n --namespace --timeout"),
        flag_dry_run("--export", "--dry-run"),
        otherwise="change",
    ),
    "nomad": Spec(_NOMAD, otherwise="change"),
    "doctl": Spec(
        _DOCTL,
        options("-t --access-token --context -o --output --api-url"),
        hyphen_prefix=True,
        otherwise="change",
    ),
    "hcloud": Spec(
        _DOCTL, options("--context --config -o --output"), hyphen_prefix=True, otherwise="change"
    ),
    "vault": Spec(
        _VAULT,
        options("-address -namespace -format -output-curl-string"),
        special=_vault,
        otherwise="change",
    ),
    "packer": Spec(_PACKER, otherwise="change"),
    "skaffold": Spec(
        _SKAFFOLD,
        options("-p --profile -f --filename --kube-context -n --namespace -d --default-repo"),
        otherwise="change",
    ),
    "kapp": Spec(
        _KAPP,
        options("-n --namespace --kubeconfig --kubeconfig-context -a --app"),
        flag_dry_run("--diff-run"),
        otherwise="change",
    ),
    "cloud-nuke": Spec(_CLOUD_NUKE, dry_run=flag_dry_run("--dry-run"), otherwise="change"),
    "copilot": Spec(
        _COPILOT, options("-a --app -e --env -n --name"), hyphen_prefix=True, otherwise="change"
    ),
    "aws-nuke": Spec(verbs(), special=_aws_nuke),
}
"""Every CLI with a gate, by the name it is run as."""

GATED = frozenset(CLIS)

DRIVERS = {
    "terragrunt": frozenset({"terraform", "tofu"}),
    "cdktf": frozenset({"terraform"}),
    "helmfile": frozenset({"helm", "kubectl"}),
}
"""CLIs that run others to carry out their change: an allowed ``terragrunt run --all apply``
covers the ``terraform apply`` runs it starts (the question named the change once)."""
