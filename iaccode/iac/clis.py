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
    valued_dry_run,
    verbs,
)


def _options(words: str) -> frozenset[str]:
    return frozenset(words.split())


def classify(name: str, args: list[str]) -> Change | None:
    """What running the CLI ``name`` with ``args`` changes, or None (a read, or not a CLI)."""
    spec = CLIS.get(name)
    return classify_with(name, spec, args) if spec is not None else None


# --- Terraform, OpenTofu, Terragrunt ---------------------------------------------------------

_TERRAFORM = verbs(
    changes="apply destroy import taint untaint force-unlock refresh test",
    reads="plan validate fmt show init output providers graph version console get login "
          "logout metadata modules query",
    groups={"state": verbs("rm mv push replace-provider", "list show pull identities"),
            "workspace": verbs("delete", "list select show new", otherwise="read")})


def _terraform(name: str, parsed: Parsed) -> Decision:
    if parsed.positionals[:1] == ["init"] and parsed.has("-migrate-state", "-force-copy"):
        return Change(f"{name} init -migrate-state")
    return TABLE


_TERRAGRUNT = Verbs(
    _TERRAFORM.changes | {"apply-all", "destroy-all", "run-all"},
    _TERRAFORM.reads | {"plan-all", "output-all", "validate-all", "render", "render-json",
                        "find", "list", "info", "dag", "hcl", "catalog", "scaffold",
                        "graph-dependencies", "hclfmt", "hclvalidate", "exec"},
    {**_TERRAFORM.groups, "run": _TERRAFORM, "stack": verbs(reads="generate output clean",
                                                             groups={"run": _TERRAFORM}),
     "run-all": _TERRAFORM, "backend": verbs("delete migrate", "bootstrap")})


def _terragrunt(name: str, parsed: Parsed) -> Decision:
    words = [w for w in parsed.positionals if w != "run-all"]
    if parsed.positionals[:1] == ["run-all"] and not words:
        return Change(f"{name} run-all", unknown=True)
    if words[:1] == ["exec"] or parsed.positionals[:2] == ["run", "exec"]:
        return Change(f"{name} exec", unknown=True)  # any program, with terragrunt's inputs
    return TABLE


_TERRAGRUNT_OPTIONS = _options(
    "--working-dir --terragrunt-working-dir --config --terragrunt-config --log-level "
    "--terragrunt-log-level --queue-include-dir --terragrunt-include-dir --queue-exclude-dir "
    "--terragrunt-exclude-dir --iam-assume-role --terragrunt-iam-role --download-dir "
    "--tf-path --terragrunt-tfpath --parallelism --terragrunt-parallelism --filter --out-dir "
    "--json-out-dir --provider-cache-dir --source --terragrunt-source --feature")

# --- Pulumi ------------------------------------------------------------------------------------

_PULUMI = verbs(
    changes="up update destroy import refresh watch cancel",
    reads="preview about whoami login logout logs schema convert gen-completion new "
          "install console org ai version help",
    groups={"stack": verbs("rm import rename change-secrets-provider init",
                           "ls output export history select tag graph unselect",
                           otherwise="read"),
            "state": verbs("delete unprotect move rename edit upgrade repair protect", ""),
            "env": verbs("set rm init edit rotate", "get ls open diff version",
                         otherwise="read"),
            "deployment": verbs("run", "settings", otherwise="read"),
            "config": verbs(otherwise="read"), "plugin": verbs(otherwise="read"),
            "policy": verbs("enable disable publish rm", "ls validate-config group new",
                            otherwise="read")})
_PULUMI_OPTIONS = _options("--color -C --cwd -s --stack -v --verbose --tracing --profiling "
                           "--memprofilerate")

# --- Kubernetes: kubectl, oc, helm, helmfile, kustomize-style tools ----------------------------

_KUBECTL = verbs(
    changes="apply create delete replace patch scale edit label annotate set drain cordon "
            "uncordon taint autoscale expose run exec cp attach debug "
            # oc (OpenShift)
            "new-app new-project new-build start-build cancel-build import-image tag rsh "
            "rsync adm policy idle secrets serviceaccounts",
    reads="get describe logs explain diff top version cluster-info api-resources "
          "api-versions config wait kustomize completion plugin options events "
          "port-forward proxy alpha-events extract login logout project projects whoami "
          "status process observe help",
    groups={"rollout": verbs("restart undo pause resume", "status history"),
            "certificate": verbs("approve deny"),
            "auth": verbs("reconcile", "can-i whoami"),
            "image": verbs("mirror append", "info extract")})
_KUBECTL_OPTIONS = _options(
    "-n --namespace --context --kubeconfig --cluster --user -s --server --token --as "
    "--as-group --as-uid -v --v --request-timeout --certificate-authority --client-certificate "
    "--client-key --tls-server-name --cache-dir --log-file --profile --profile-output "
    "--password --username --vmodule --log-dir --log-file-max-size --stderrthreshold "
    "--kuberc")

_HELM = verbs(
    changes="install upgrade uninstall delete del un rollback test push",
    reads="template lint list ls status history hist get show inspect search dependency dep "
          "package pull fetch verify version env completion create repo registry plugin "
          "diff help")
_HELM_OPTIONS = _options(
    "-n --namespace --kube-context --kubeconfig --burst-limit --qps --kube-apiserver "
    "--kube-as-user --kube-as-group --kube-ca-file --kube-token --kube-tls-server-name "
    "--registry-config --repository-cache --repository-config --content-cache")

_HELMFILE = verbs(changes="apply sync destroy delete test",
                  reads="diff template lint list status build show-dag version deps fetch "
                        "cache init write-values repos help")
_HELMFILE_OPTIONS = _options(
    "-f --file -e --environment --state-values-set --state-values-file -n --namespace "
    "--kube-context -l --selector -b --helm-binary -k --kustomize-binary --log-level --chart "
    "--args")

# --- Cloud CLIs --------------------------------------------------------------------------------

_AWS_OPTIONS = _options(
    "--region --profile --output --endpoint-url --query --cli-read-timeout "
    "--cli-connect-timeout --ca-bundle --color --cli-binary-format")
_AWS_READ_PREFIXES = (
    "describe-", "list-", "get-", "head-", "batch-get-", "lookup-", "search-", "validate-",
    "estimate-", "detect-", "filter-", "test-", "preview-", "simulate-", "select-",
    "view-", "check-", "verify-", "decode-", "discover-", "scan", "query", "wait", "tail",
    "help")
_AWS_LOCAL = frozenset({"configure", "help", "history", "sts"})
"""Services (or commands) that change nothing in the account: the CLI's own settings and
``sts`` (who am I, a role's temporary credentials)."""
_AWS_LOCAL_OPERATIONS = frozenset({"update-kubeconfig", "get-login-password", "get-token",
                                   "wizard", "presign"})


def _object_store(label: str, verb: str, words: list[str], reads: tuple[str, ...],
                  scheme: str) -> Decision:
    """A cloud CLI's object-store command (``aws s3``, ``aliyun oss``, ``gsutil``): a read, a
    copy towards the store (a change; a download changes nothing there), or a change."""
    if verb in reads:
        return None
    if verb in ("cp", "sync", "rsync"):
        return Change(label) if words[-1].startswith(scheme) else None
    return Change(label)


def _aws(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if not words or words[0] in _AWS_LOCAL or parsed.has("--generate-cli-skeleton"):
        return None
    if parsed.has("--dry-run") and not parsed.has("--no-dry-run"):
        return None
    if len(words) == 1:
        return Change(f"aws {words[0]}", unknown=True)
    service, operation = words[0], words[1]
    label = f"aws {service} {operation}"
    if service == "s3":
        return _object_store(label, operation, words, ("ls", "presign"), "s3://")
    if service == "logs" and operation == "tail" or operation in _AWS_LOCAL_OPERATIONS:
        return None
    if operation.startswith(_AWS_READ_PREFIXES):
        return None
    return Change(label)


_ALIYUN_OPTIONS = _options(
    "--profile -p --region --endpoint --mode --access-key-id --access-key-secret --sts-token "
    "--ram-role-name --ram-role-arn --role-session-name --config-path --retry-count "
    "--connect-timeout --read-timeout --output -o --waiter")
_ALIYUN_READS = ("describe", "list", "get", "query", "check", "preview", "validate", "search",
                 "estimate", "detect", "inquire", "verify", "scan")


def _aliyun(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if not words or words[0] in ("configure", "version", "help", "auto-completion"):
        return None
    if parsed.has("--dryrun") or parsed.value("--DryRun", "--dry-run") == "true":
        return None
    if len(words) == 1:
        return Change(f"aliyun {words[0]}", unknown=True)
    product, api = words[0], words[1]
    label = f"aliyun {product} {api}"
    if product == "oss":
        return _object_store(label, api, words, ("ls", "cat", "stat", "du", "hash", "sign",
                                                 "probe", "help", "config"), "oss://")
    if api.upper() == "GET":  # ROA style: aliyun cs GET /clusters
        return None
    if api.upper() in ("POST", "PUT", "DELETE", "PATCH"):
        return Change(label)
    if api.replace("-", "").lower().startswith(_ALIYUN_READS):
        return None
    return Change(label)


_GCLOUD = verbs(
    changes="create delete update deploy set add remove start stop reset resize ssh scp "
            "import patch enable disable rollback cancel undelete restore apply submit "
            "execute attach detach move promote publish acknowledge abandon recreate "
            "rolling-action suspend resume upgrade replace rotate revoke cp rm mv rsync mb rb "
            "push tag untag sign insert invoke call migrate failover switchover reboot "
            "recover release reserve purge",
    reads="list describe get read show info version help print config auth components init "
          "feedback cheat-sheet interactive topic survey ls cat du hash docker "
          "configure-docker diff explain lookup search test-iam-permissions wait tail "
          "validate")
_GCLOUD_OPTIONS = _options(
    "--project --account --configuration --format --verbosity --billing-project "
    "--impersonate-service-account --flags-file --flatten --trace-token --access-token-file "
    "--zone --region --filter --limit --sort-by --page-size")


def _gcloud(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:1] == ["storage"] and words[1:2] in (["cp"], ["rsync"]):
        return _object_store(f"gcloud storage {words[1]}", words[1], words, (), "gs://")
    return TABLE


_GSUTIL = verbs(changes="cp mv rm rb mb rsync setmeta compose rewrite retention",
                reads="ls cat du hash stat version help signurl config",
                groups={group: verbs("set ch", "get") for group in
                        ("acl", "defacl", "iam", "lifecycle", "cors", "versioning", "web",
                         "logging", "label", "notification", "requesterpays", "ubla",
                         "defstorageclass", "autoclass", "pap", "rpo", "kms", "hmac")})


def _gsutil(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:1] in (["cp"], ["rsync"]):
        return _object_store(f"gsutil {words[0]}", words[0], words, (), "gs://")
    return TABLE


_AZ = verbs(
    changes="create delete update set add remove start stop restart deallocate deploy import "
            "upload purge invoke ssh assign enable disable scale swap redeploy reimage resize "
            "rotate renew restore sync apply cancel grant revoke move copy attach detach lock "
            "unlock run generalize capture convert regenerate reset approve reject failover "
            "promote install uninstall",
    reads="list show get wait exists check what-if validate version find help query download "
          "export login logout account config configure extension interactive feedback "
          "cloud init bicep upgrade browse logs tail")
_AZ_OPTIONS = _options("--subscription --output -o --query")


def _az(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:1] == ["rest"]:
        method = (parsed.value("--method", "-m") or "get").lower()
        return None if method in ("get", "head", "options") else Change("az rest", True)
    return TABLE


def _az_words(args: list[str]) -> list[str]:
    """az's command words come before its first option (``az group delete --name rg``)."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _AZ_OPTIONS:
            skip = True
        elif arg.startswith("-"):
            break
        else:
            words.append(arg)
    return words


# --- Deployment tools --------------------------------------------------------------------------

_CDK = verbs(changes="deploy destroy bootstrap import watch gc rollback refactor",
             reads="synth synthesize diff list ls doctor docs doc metadata notices context "
                   "init acknowledge ack drift version flags migrate cli-telemetry help")
_CDK_OPTIONS = _options("-a --app -c --context --profile -o --output --plugin -p -r "
                        "--role-arn --toolkit-stack-name --ca-bundle-path --proxy")
_CDKTF = verbs(changes="deploy apply destroy watch",
               reads="synth synthesize diff plan list get init convert output outputs debug "
                     "provider login version help")


def _ansible(name: str, parsed: Parsed) -> Decision:
    if parsed.has("--check", "-C", "--syntax-check", "--list-tasks", "--list-hosts",
                  "--list-tags", clusters=True):
        return None
    if not parsed.positionals:
        return None
    if name == "ansible":
        module = parsed.value("-m", "--module-name") or ""
        if module.rsplit(".", 1)[-1] in ("ping", "setup", "debug", "gather_facts"):
            return None
    return Change(f"{name} {parsed.positionals[0]}")


_ANSIBLE_OPTIONS = _options(
    "-i --inventory -e --extra-vars -l --limit -t --tags --skip-tags -u --user -m "
    "--module-name -a --args -f --forks -M --module-path --vault-id --vault-password-file "
    "-c --connection -T --timeout --become-method --become-user --private-key "
    "--start-at-task -U --url -d --directory")

_SAM = verbs(changes="deploy delete sync package publish",
             reads="build validate logs traces list init local docs help",
             groups={"remote": verbs("invoke", otherwise="change",
                                     groups={"test-event": verbs("put delete", "get list")}),
                     "pipeline": verbs("bootstrap", "init")})
_SERVERLESS = verbs(changes="deploy remove rollback invoke prune create_domain delete_domain "
                            "dev reconcile",
                    reads="info logs print package metrics doctor plugin offline help "
                          "version config login logout support",
                    groups={"invoke": verbs("", "local", otherwise="change")})
_SERVERLESS_OPTIONS = _options("--stage -s --region -r --aws-profile --config -c --param "
                               "--app --org")
_EKSCTL = verbs(changes="create delete upgrade scale drain set unset enable register "
                        "deregister associate disassociate update install anywhere",
                reads="get info version completion help describe write")
_ARGOCD = verbs(changes="sync create delete set unset patch rollback terminate edit add rm "
                        "remove update run generate",
                reads="list get diff history manifests logs resources wait version context "
                      "login logout relogin can-i help")
_FLUX = verbs(changes="create delete reconcile suspend resume bootstrap install uninstall "
                      "push tag migrate",
              reads="get logs check export trace tree version events stats build pull "
                    "envsubst debug diff completion help")
_NOMAD = verbs(changes="run stop revert dispatch scale promote force exec drain eligibility "
                       "fail pause resume unblock apply delete put purge lock create update "
                       "bootstrap gc reconcile restore remove-peer set-config register "
                       "deregister detach dismiss signal restart transfer-leadership",
               reads="status inspect history validate plan allocs deployments logs fs "
                     "monitor ui version agent-info members list get info init checks save "
                     "get-config list-peers state eval help")
_DOCTL = verbs(changes="create delete update import resize power-on power-off power-cycle "
                       "reboot shutdown rebuild restore snapshot enable disable attach detach "
                       "assign unassign add remove tag untag deploy",
               reads="list get auth version help completion kubeconfig show")
_VAULT = verbs(changes="write delete put patch destroy undelete rollback enable disable tune "
                       "revoke renew unseal seal rekey register deregister reload ssh "
                       "generate-root init step-down",
               reads="read list get status version print path-help lookup capabilities "
                     "login metadata help server agent",
               groups={"operator": verbs("unseal seal rekey init step-down generate-root "
                                         "raft migrate", "key-status members diagnose")})
_PACKER = verbs(changes="build", reads="init validate fmt inspect console version "
                                       "hcl2_upgrade plugins help fix")
_SKAFFOLD = verbs(changes="run deploy delete dev apply build debug verify",
                  reads="render diagnose fix init version config inspect lint schema survey "
                        "test completion help")


CLIS: dict[str, Spec] = {
    "terraform": Spec(_TERRAFORM, special=_terraform),
    "tofu": Spec(_TERRAFORM, special=_terraform),
    "terragrunt": Spec(_TERRAGRUNT, _TERRAGRUNT_OPTIONS, special=_terragrunt),
    "pulumi": Spec(_PULUMI, _PULUMI_OPTIONS, flag_dry_run("--preview-only"), otherwise="change"),
    "kubectl": Spec(_KUBECTL, _KUBECTL_OPTIONS, valued_dry_run("--dry-run"), otherwise="change"),
    "oc": Spec(_KUBECTL, _KUBECTL_OPTIONS, valued_dry_run("--dry-run"), otherwise="change"),
    "helm": Spec(_HELM, _HELM_OPTIONS, valued_dry_run("--dry-run"), otherwise="change"),
    "helmfile": Spec(_HELMFILE, _HELMFILE_OPTIONS, otherwise="change"),
    "aws": Spec(verbs(), _AWS_OPTIONS, special=_aws),
    "aliyun": Spec(verbs(), _ALIYUN_OPTIONS, special=_aliyun),
    "gcloud": Spec(_GCLOUD, _GCLOUD_OPTIONS, special=_gcloud, hyphen_prefix=True,
                   otherwise="change"),
    "gsutil": Spec(_GSUTIL, _options("-o -h -p -u"), special=_gsutil, otherwise="change"),
    "az": Spec(_AZ, _AZ_OPTIONS, special=_az, hyphen_prefix=True, otherwise="change",
               words=_az_words),
    "cdk": Spec(_CDK, _CDK_OPTIONS, otherwise="change"),
    "cdktf": Spec(_CDKTF, _options("-a --app -o --output --log-level"), otherwise="change"),
    "ansible-playbook": Spec(verbs(), _ANSIBLE_OPTIONS, special=_ansible),
    "ansible": Spec(verbs(), _ANSIBLE_OPTIONS, special=_ansible),
    "ansible-pull": Spec(verbs(), _ANSIBLE_OPTIONS, special=_ansible),
    "sam": Spec(_SAM, _options("--profile --region --config-file --config-env"),
                otherwise="change"),
    "serverless": Spec(_SERVERLESS, _SERVERLESS_OPTIONS, otherwise="change"),
    "sls": Spec(_SERVERLESS, _SERVERLESS_OPTIONS, otherwise="change"),
    "eksctl": Spec(_EKSCTL, _options("--profile --region -r -f --config-file"),
                   flag_dry_run("--dry-run"), hyphen_prefix=True, otherwise="change"),
    "argocd": Spec(_ARGOCD, _options("--server --auth-token --config --context "
                                     "--grpc-web-root-path --header -H --port-forward-namespace"),
                   flag_dry_run("--dry-run"), hyphen_prefix=True, otherwise="change"),
    "flux": Spec(_FLUX, _options("--context --kubeconfig -n --namespace --timeout"),
                 flag_dry_run("--export", "--dry-run"), otherwise="change"),
    "nomad": Spec(_NOMAD, otherwise="change"),
    "doctl": Spec(_DOCTL, _options("-t --access-token --context -o --output --api-url"),
                  hyphen_prefix=True, otherwise="change"),
    "hcloud": Spec(_DOCTL, _options("--context --config -o --output"), hyphen_prefix=True,
                   otherwise="change"),
    "vault": Spec(_VAULT, _options("-address -namespace -format -output-curl-string"),
                  otherwise="change"),
    "packer": Spec(_PACKER, otherwise="change"),
    "skaffold": Spec(_SKAFFOLD, _options("-p --profile -f --filename --kube-context "
                                         "-n --namespace -d --default-repo"),
                     otherwise="change"),
}
"""Every CLI with a gate, by the name it is run as."""

GATED = frozenset(CLIS)

DRIVERS = {"terragrunt": frozenset({"terraform", "tofu"}), "cdktf": frozenset({"terraform"}),
           "helmfile": frozenset({"helm", "kubectl"})}
"""CLIs that run others to carry out their change: an allowed ``terragrunt run --all apply``
covers the ``terraform apply`` runs it starts (the question named the change once)."""

