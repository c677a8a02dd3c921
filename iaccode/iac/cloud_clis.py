"""The cloud CLIs of the table (:mod:`iaccode.iac.clis`): aws, aliyun, gcloud, gsutil, bq, az,
s3cmd, tccli, oci, ibmcloud, linode-cli, and the object stores' s5cmd, rclone and mc.

Their verbs are many and grow every month, so these read the operation's name: a read is one
whose name says so (``describe-*``, ``list``, ``get``, ``Describe*``, ``GET``), a download
from an object store is a read, and anything else changes real infrastructure.
"""

from __future__ import annotations

from iaccode.iac.argv import (
    TABLE,
    Change,
    Decision,
    Parsed,
    Spec,
    flag_dry_run,
    options,
    verbs,
)

_AWS_OPTIONS = options(
    "--region --profile --output --endpoint-url --query --cli-read-timeout "
    "--cli-connect-timeout --ca-bundle --color --cli-binary-format"
)
_AWS_READ_PREFIXES = (
    "describe-",
    "list-",
    "get-",
    "head-",
    "batch-get-",
    "lookup-",
    "search-",
    "validate-",
    "estimate-",
    "detect-",
    "filter-",
    "preview-",
    "simulate-",
    "select-",
    "view-",
    "check-",
    "decode-",
    "discover-",
    "scan",
    "query",
    "wait",
    "tail",
    "help",
)
_AWS_LOCAL = frozenset({"help", "history", "sts"})
"""Services (or commands) that change nothing in the account: ``sts`` (who am I, a role's
temporary credentials). ``configure`` reads only for its reading commands: ``set`` can name a
``credential_process`` the next aws call runs, ``add-model`` can give ``get-function`` the
HTTP call of ``delete-function``."""
_AWS_LOCAL_OPERATIONS = frozenset(
    {"update-kubeconfig", "get-login-password", "get-token", "wizard", "presign"}
)


def _object_store(
    label: str, verb: str, words: list[str], reads: tuple[str, ...], scheme: str
) -> Decision:
    """A cloud CLI's object-store command (``aws s3``, ``aliyun oss``, ``gsutil``): a read, a
    copy towards the store (a change; a download changes nothing there), or a change."""
    if verb in reads:
        return None
    if verb in ("cp", "sync", "rsync"):
        # A download (a read) names the store first and nowhere else. The words after the
        # verb may hold values of options (``--exclude .git``, ``--acl public-read``): a
        # store's URL anywhere else is a copy into it.
        paths = words[words.index(verb) + 1 :]
        stores = [index for index, path in enumerate(paths) if path.startswith(scheme)]
        return None if stores in ([], [0]) else Change(label)
    return Change(label)


def _aws_help(parsed: Parsed) -> bool:
    """``aws ec2 terminate-instances help``: the help page, when ``help`` is the last word and
    no option stands after the service (``--names a b help`` deletes a parameter "help")."""
    words = parsed.positionals
    if not words or len(words) > 3 or words[-1] != "help" or parsed.before[-1:] != ["help"]:
        return False
    after_service = parsed.before[parsed.before.index(words[0]) :]
    return not any(word.startswith("-") for word in after_service)


def _aws(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if not words or _aws_help(parsed) or parsed.has("--generate-cli-skeleton"):
        return None
    if words[0] == "configure":  # the CLI's own settings; a model file renames verbs
        reads = ("list", "get", "list-profiles", "export-credentials")
        return None if words[1:2] and words[1] in reads else Change(f"aws {' '.join(words[:2])}")
    if words[0] in _AWS_LOCAL:
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


_ALIYUN_OPTIONS = options(
    "--profile -p --region --endpoint --mode --access-key-id --access-key-secret --sts-token "
    "--ram-role-name --ram-role-arn --role-session-name --config-path --retry-count "
    "--connect-timeout --read-timeout --output -o --waiter"
)
_ALIYUN_READS = (
    "describe",
    "list",
    "get",
    "query",
    "check",
    "preview",
    "validate",
    "search",
    "estimate",
    "detect",
    "inquire",
    "verify",
    "scan",
)


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
        return _object_store(
            label,
            api,
            words,
            ("ls", "cat", "stat", "du", "hash", "sign", "probe", "help", "config"),
            "oss://",
        )
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
    "recover release reserve purge config-ssh activate-service-account",
    reads="list describe get read show info version help print config auth components init "
    "feedback cheat-sheet interactive topic survey ls cat du hash docker "
    "configure-docker diff explain lookup search test-iam-permissions wait tail "
    "validate",
    groups={
        "config": verbs(
            "set unset",
            "list get get-value",
            groups={"configurations": verbs("create delete activate rename", "list describe")},
            otherwise="read",
        )
    },
)
_GCLOUD_OPTIONS = options(
    "--project --account --configuration --format --verbosity --billing-project "
    "--impersonate-service-account --flags-file --flatten --trace-token --access-token-file "
    "--zone --region --filter --limit --sort-by --page-size "
    # hidden ones, which gcloud takes before the command too
    "--authority-selector --credential-file-override --authorization-token-file --http-timeout"
)


_GCLOUD_PLACES = frozenset(
    {
        "project",
        "core/project",
        "account",
        "core/account",
        "compute/region",
        "compute/zone",
        "run/region",
        "functions/region",
        "container/cluster",
    }
)
"""Properties ``gcloud config set`` may set unasked: which project, region and account a
command names. Any other may send the next command's token elsewhere
(``api_endpoint_overrides/*``, ``proxy/*``, ``auth/*``)."""


def _gcloud(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:2] == ["config", "set"] and words[2:3]:
        return None if words[2] in _GCLOUD_PLACES else Change(f"gcloud config set {words[2]}")
    if words[:1] == ["storage"] and words[1:2] in (["cp"], ["rsync"]):
        return _object_store(f"gcloud storage {words[1]}", words[1], words, (), "gs://")
    return TABLE


_GSUTIL = verbs(
    changes="cp mv rm rb mb rsync setmeta compose rewrite retention",
    reads="ls cat du hash stat version help signurl config",
    groups={
        group: verbs("set ch", "get")
        for group in (
            "acl",
            "defacl",
            "iam",
            "lifecycle",
            "cors",
            "versioning",
            "web",
            "logging",
            "label",
            "notification",
            "requesterpays",
            "ubla",
            "defstorageclass",
            "autoclass",
            "pap",
            "rpo",
            "kms",
            "hmac",
        )
    },
)


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
    "export login logout configure extension interactive feedback "
    "cloud init bicep upgrade browse logs tail",
    groups={
        "account": verbs(
            "set clear", "list show get-access-token list-locations", otherwise="read"
        ),
        "config": verbs("set unset", "get", otherwise="read"),
    },
)
_AZ_OPTIONS = options("--subscription --output -o --query")
"""az's global options that take a value (``--debug``, ``--verbose``, ``--only-show-errors``
take none)."""


def _az(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if words[:1] == ["rest"]:
        method = (parsed.value("--method", "-m") or "get").lower()
        return None if method in ("get", "head", "options") else Change("az rest", True)
    return TABLE


def _az_words(args: list[str]) -> list[str]:
    """az's command words come before the command's options (``az group delete --name rg``);
    global ones may stand before them (``az --debug group delete``, ``--output=json``)."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _AZ_OPTIONS:
            skip = True
        elif arg.startswith("-"):
            if words:
                break
        else:
            words.append(arg)
    return words


def _s3cmd(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if not words:
        return None
    return _object_store(
        f"s3cmd {words[0]}", words[0], words, ("ls", "la", "du", "info", "get", "signurl"), "s3://"
    )


_BQ = verbs(
    changes="rm mk update cp load insert query cancel truncate undelete extract "
    "set-iam-policy add-iam-policy-binding remove-iam-policy-binding",
    reads="ls show head version help wait get-iam-policy init info",
)
"""BigQuery's CLI, beside gcloud and gsutil in the Cloud SDK: ``query`` asks (DML and DDL are
queries), ``extract`` writes to a bucket."""


def _tccli(name: str, parsed: Parsed) -> Decision:
    """Tencent Cloud's ``tccli SERVICE Action`` (``cvm TerminateInstances``), read as aliyun's."""
    words = parsed.positionals
    if not words or words[0] in ("configure", "help", "version", "auth"):
        return None
    if len(words) == 1:
        return Change(f"tccli {words[0]}", unknown=True)
    if words[1].lower().startswith(_ALIYUN_READS):
        return None
    return Change(f"tccli {words[0]} {words[1]}")


_OCI = verbs(
    changes="create delete update terminate launch action attach detach change move restore "
    "copy import export cancel put patch remove add enable disable reboot start stop reset "
    "rotate upload bulk rename reactivate deactivate",
    reads="get list search summarize validate help head setup session",
)
"""Oracle Cloud's ``oci SERVICE RESOURCE VERB`` (``compute instance terminate``)."""

_IBMCLOUD_CHANGES = options(
    "create delete rm update add remove attach detach set unset bind unbind enable disable "
    "reboot start stop restart replace apply destroy upload put deploy scale cancel import "
    "move rename reload patch"
)
_IBMCLOUD_READS = options(
    "list ls get show info status help version logs inspect search download config target "
    "login logout api regions plugin"
)


def _ibmcloud(name: str, parsed: Parsed) -> Decision:
    """IBM Cloud's verbs stand alone (``ks cluster rm``) or end a word
    (``resource service-instance-delete``, ``is instance-delete``)."""
    words = parsed.positionals
    for index, word in enumerate(words):
        verb = word.rsplit("-", 1)[-1]
        if word in _IBMCLOUD_CHANGES or verb in _IBMCLOUD_CHANGES:
            return Change(" ".join([name, *words[: index + 1]]))
        if word in _IBMCLOUD_READS or verb in _IBMCLOUD_READS:
            return None
    if len(words) >= 2 and len(words[-1]) > 3 and words[-1].endswith("s"):
        return None  # a plural lists: resource service-instances, is instances
    return Change(" ".join([name, *words[:2]]), unknown=True) if words else None


_LINODE = verbs(
    changes="create delete update rebuild reboot boot shutdown resize clone migrate rescue "
    "mutate upgrade attach detach add remove import restore ip-add share assign unassign",
    reads="list ls view help version configure",
)
"""Linode's ``linode-cli linodes delete 1``."""


def _s5cmd(name: str, parsed: Parsed) -> Decision:
    words = parsed.positionals
    if not words:
        return None
    return _object_store(
        f"s5cmd {words[0]}",
        words[0],
        words,
        ("ls", "cat", "du", "head", "presign", "version"),
        "s3://",
    )


_RCLONE_READS = options(
    "ls lsd lsl lsf lsjson size cat check checksum cryptcheck md5sum sha1sum hashsum about "
    "tree version listremotes help config ncdu serve mount nfsmount authorize obscure "
    "genautocomplete completion selfupdate test backend"
)


def _rclone(name: str, parsed: Parsed) -> Decision:
    """``rclone VERB SOURCE DEST``: a copy or sync to a local folder is a download (a read);
    a remote is ``NAME:path``."""
    words = parsed.positionals
    if not words or words[0] in _RCLONE_READS:
        return None
    verb = words[0]
    if verb in ("copy", "copyto", "sync", "check") and len(words) >= 3:
        remote = ":" in words[-1].split("/", 1)[0] and not words[-1].startswith((".", "/"))
        if not remote:
            return None
    return Change(f"rclone {verb}")


_MC = verbs(
    changes="rb rm mb cp mv mirror pipe put retention legalhold tag ilm replicate encrypt "
    "event anonymous policy admin undo batch idp quota support license version",
    reads="ls cat stat du find tree diff head ping ready sql watch share od get alias help update",
)
"""MinIO's ``mc`` (an S3 client too): a copy's ends cannot be told apart (``alias/bucket``
or a folder), so a copy asks."""

CLOUD_CLIS: dict[str, Spec] = {
    "aws": Spec(verbs(), _AWS_OPTIONS, special=_aws),
    "aliyun": Spec(verbs(), _ALIYUN_OPTIONS, special=_aliyun),
    "gcloud": Spec(
        _GCLOUD, _GCLOUD_OPTIONS, special=_gcloud, hyphen_prefix=True, otherwise="change"
    ),
    "gsutil": Spec(
        _GSUTIL,
        options("-o -h -p -u"),
        special=_gsutil,
        otherwise="change",
        help_options=frozenset({"--help"}),  # -h is a header: gsutil -h Cache-Control:x rm
    ),
    "s3cmd": Spec(
        verbs(),
        options("-c --config --access_key --secret_key --access_token --host --region"),
        flag_dry_run("-n", "--dry-run"),
        special=_s3cmd,
    ),
    "bq": Spec(
        _BQ,
        options("--project_id --location --format --dataset_id --api --job_id"),
        otherwise="change",
    ),
    "az": Spec(
        _AZ, _AZ_OPTIONS, special=_az, hyphen_prefix=True, otherwise="change", words=_az_words
    ),
    "tccli": Spec(
        verbs(),
        options("--profile --region --secretId --secretKey --token --endpoint --output"),
        special=_tccli,
    ),
    "oci": Spec(
        _OCI,
        options(
            "--profile --config-file --region --auth --endpoint --cert-bundle --output "
            "--query --defaults-file"
        ),
        hyphen_prefix=True,
        otherwise="change",
    ),
    "ibmcloud": Spec(verbs(), options("-r -g -a -c --output"), special=_ibmcloud),
    "linode-cli": Spec(
        _LINODE,
        options("--as-user --page --page-size --json --text --format"),
        hyphen_prefix=True,
        otherwise="change",
    ),
    "s5cmd": Spec(
        verbs(),
        options(
            "--endpoint-url --profile --credentials-file --log --numworkers --retry-count "
            "--request-payer"
        ),
        flag_dry_run("--dry-run"),
        special=_s5cmd,
    ),
    "rclone": Spec(
        verbs(),
        options("--config --log-file --log-level --transfers --checkers --bwlimit --backup-dir"),
        flag_dry_run("--dry-run", "-n"),
        special=_rclone,
    ),
    "mc": Spec(
        _MC,
        options("--config-dir -C --json --limit-upload --limit-download"),
        flag_dry_run("--dry-run"),
        otherwise="change",
    ),
}
