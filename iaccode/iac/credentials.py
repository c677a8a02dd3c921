"""Which environment variables are cloud credentials, held back from every command.

With ``[iac] hold_credentials`` on (the default), the commands the agent runs get an
environment without these (:func:`is_credential`, applied by ``secret_env.scrubbed`` in
:mod:`iaccode.iac.command_env`), and a gate (:mod:`iaccode.gate`) puts them back only for the
real infrastructure CLI it runs (:func:`held`). A copy of a CLI under another name, a
``boto3`` script or ``curl`` then gets no credentials from the environment.

What it does not cover: credentials in files (``~/.aws/credentials``, ``~/.kube/config``,
``~/.config/gcloud``, ``~/.azure``), which every program of the user can read; and variables
that only *choose* credentials (``AWS_PROFILE``, ``KUBECONFIG``, ``CLOUDSDK_ACTIVE_CONFIG_NAME``)
are left in place on purpose: without them a program falls back to the default profile, which
may be the one that matters most.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_NAMES = frozenset(
    {
        # AWS
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        # Azure (secrets and what names a service principal; not the subscription or tenant)
        "ARM_CLIENT_SECRET",
        "ARM_CLIENT_CERTIFICATE_PASSWORD",
        "ARM_CLIENT_CERTIFICATE_PATH",
        "ARM_ACCESS_KEY",
        "ARM_SAS_TOKEN",
        "ARM_OIDC_TOKEN",
        "ARM_OIDC_TOKEN_FILE_PATH",
        "ARM_OIDC_REQUEST_TOKEN",
        "ARM_CLIENT_ID",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_CLIENT_CERTIFICATE_PATH",
        "AZURE_PASSWORD",
        "AZURE_USERNAME",
        "AZURE_CLIENT_ID",
        "AZURE_FEDERATED_TOKEN_FILE",
        "AZURE_STORAGE_KEY",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_DEVOPS_EXT_PAT",
        # Google Cloud
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CREDENTIALS",
        "GOOGLE_CLOUD_KEYFILE_JSON",
        "GCLOUD_KEYFILE_JSON",
        "GOOGLE_OAUTH_ACCESS_TOKEN",
        "GOOGLE_IMPERSONATE_SERVICE_ACCOUNT",
        "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
        "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
        "CLOUDSDK_AUTH_IMPERSONATE_SERVICE_ACCOUNT",
        # Terraform Cloud / HCP, Pulumi, HashiCorp
        "TFE_TOKEN",
        "TF_CLOUD_TOKEN",
        "PULUMI_ACCESS_TOKEN",
        "PULUMI_CONFIG_PASSPHRASE",
        "VAULT_TOKEN",
        "CONSUL_HTTP_TOKEN",
        "NOMAD_TOKEN",
        "HCP_CLIENT_SECRET",
        "HCP_CLIENT_ID",
        # Other clouds
        "DIGITALOCEAN_TOKEN",
        "DIGITALOCEAN_ACCESS_TOKEN",
        "SPACES_SECRET_ACCESS_KEY",
        "HCLOUD_TOKEN",
        "CLOUDFLARE_API_TOKEN",
        "CLOUDFLARE_API_KEY",
        "LINODE_TOKEN",
        "LINODE_CLI_TOKEN",
        "VULTR_API_KEY",
        "SCW_SECRET_KEY",
        "SCW_ACCESS_KEY",
        "OS_PASSWORD",
        "OS_APPLICATION_CREDENTIAL_SECRET",
        "OS_TOKEN",
        "TENCENTCLOUD_SECRET_ID",
        "TENCENTCLOUD_SECRET_KEY",
        "HUAWEICLOUD_SDK_AK",
        "HUAWEICLOUD_SDK_SK",
        "HW_ACCESS_KEY",
        "HW_SECRET_KEY",
        "IBMCLOUD_API_KEY",
        "IC_API_KEY",
        "OCI_CLI_KEY_CONTENT",
        "ARGOCD_AUTH_TOKEN",
        "HEROKU_API_KEY",
        "FLY_API_TOKEN",
        "VERCEL_TOKEN",
        "NETLIFY_AUTH_TOKEN",
    }
)
_PREFIXES = (
    "ALIBABA_CLOUD_",
    "ALIBABACLOUD_",
    "ALICLOUD_",
    "ALIYUN_",
    "TF_TOKEN_",
    "AWS_BEARER_TOKEN_",
)
_SECRET_PARTS = re.compile(r"(SECRET|TOKEN|PASSWORD|PASSPHRASE|_KEY$|_KEY_ID$|CREDENTIAL)")
"""Within the Azure and Google prefixes, the parts that make a variable a credential."""


def is_credential(name: str) -> bool:
    """Whether ``name`` holds cloud credentials (``AWS_SECRET_ACCESS_KEY``, ``TF_TOKEN_x``)."""
    upper = name.upper()
    if upper in _NAMES or upper.startswith(_PREFIXES):
        return not upper.endswith(("_REGION", "_REGION_ID", "_PROFILE"))
    if upper.startswith(("ARM_", "AZURE_", "GOOGLE_", "CLOUDSDK_AUTH_")):
        return bool(_SECRET_PARTS.search(upper))
    return False


def held(env: Mapping[str, str]) -> dict[str, str]:
    """The credentials in ``env``: what a gate puts back for the CLI it runs."""
    return {name: value for name, value in env.items() if is_credential(name)}
