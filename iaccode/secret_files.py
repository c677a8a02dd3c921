"""Which files hold secrets, by their names and folders: ``.env``, ``*.tfvars``, ``*.tfstate``,
keys, credentials files, anything in ``~/.aws`` or ``~/.kube``. A session that read one asks
before web_fetch reaches a new host (:mod:`iaccode.turn.exposure`); a search tells which of
them it looked into (:meth:`iaccode.tools.base.Tool.searched`).
"""

from __future__ import annotations

import fnmatch
import re

SECRET_FILES = (
    ".env",
    ".env.*",
    ".envrc",
    "*.env",
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials",
    "credentials.*",
    "*.credentials",
    "*credentials*.json",
    "service-account*.json",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".htpasswd",
    ".dockercfg",
    "secrets.yml",
    "secrets.yaml",
    "secrets.json",
    "*.secret",
    "*.secrets",
    "kubeconfig",
    ".terraformrc",
    "terraform.rc",
    "credentials.tfrc.json",
    ".vault-token",
    ".s3cfg",
    ".boto",
    ".vault_pass",
    ".vault_pass.txt",
    ".vault-password",
)
"""File names (any case) that hold secrets: matched against the last part of a path."""
SECRET_FOLDERS = (
    ".ssh",
    ".aws",
    ".kube",
    ".docker",
    ".aliyun",
    ".azure",
    ".oci",
    ".gnupg",
    ".password-store",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".config/rclone",
    ".config/doctl",
    ".config/hcloud",
    ".config/op",
    ".mc",
    ".bluemix",
    ".tccli",
)
"""Folders (any case) whose files hold credentials whatever their names (``~/.kube/config``,
``~/.aliyun/config.json``, ``~/.config/gh/hosts.yml``): matched against a path's folders."""
SECRET_PATHS = (".config/linode-cli",)
"""Files that hold credentials by their whole name under the home folder."""
SECRET_DATA = re.compile(r".*secret.*\.(ya?ml|json|toml|ini|conf|cfg|properties|txt)$")
"""Data files named for a secret (a Kubernetes ``db-secret.yaml``); not code (``secret.py``)."""


def is_secret_file(path: str) -> bool:
    parts = path.lower().rstrip("/").split("/")
    name = parts[-1]
    if not name:
        return False
    folders = "/" + "/".join(parts[:-1]) + "/"
    return (
        any(fnmatch.fnmatchcase(name, pattern) for pattern in SECRET_FILES)
        or SECRET_DATA.match(name) is not None
        or any(f"/{folder}/" in folders for folder in SECRET_FOLDERS)
        or any(("/" + "/".join(parts)).endswith(f"/{end}") for end in SECRET_PATHS)
    )
