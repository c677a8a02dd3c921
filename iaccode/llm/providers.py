"""The one place that maps the configuration to a model provider.

``provider`` (config.toml, IAC_CODE_PROVIDER, ``--provider``) names a preset; each preset knows
its API, its default base URL, the variable holding its key, its model list and how it is asked
to think. `anthropic` (the default) speaks the Messages API; `openai`, `dashscope`, `deepseek`,
`openrouter`, `ollama` and `openai_compatible` speak Chat Completions (``PRESETS`` below has
their base URLs and key variables; the README has the table). ``IAC_CODE_BASE_URL`` (config
``base_url``) overrides any preset's URL; `openai_compatible` has none and needs it.

``IAC_CODE_API_KEY`` in the environment overrides any preset's key; config.toml's
``api_key_env`` names another variable to read it from (and then wins). ``models = [...]``
replaces the preset's model list; the first one is the default model.

Presets and settings only: nothing here touches the network or imports an SDK. The server
builds the provider (:func:`iaccode.server.provider.make_provider` imports the provider module
it needs), and the SDK is imported later, lazily, by the provider itself (or ahead of it by
``iaccode/preload.py``, which asks :func:`sdk_module`).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from os import PathLike
    from typing import Protocol

    class ProviderSettings(Protocol):
        """The settings that choose and reach a provider (a ``Config``)."""

        @property
        def provider(self) -> str: ...
        @property
        def base_url(self) -> str | None: ...
        @property
        def api_key_env(self) -> str | None: ...
        @property
        def models(self) -> tuple[str, ...] | None: ...
        @property
        def model(self) -> str: ...
        @property
        def model_script(self) -> PathLike[str] | str | None: ...
        @property
        def home(self) -> PathLike[str] | str:
            """``$IAC_CODE_HOME``, where ``iaccode login`` keeps keys (``stored_keys``)."""


class Preset:
    __slots__ = (
        "title",
        "base_url",
        "key_variable",
        "models",
        "api",
        "thinking",
        "max_tokens_field",
        "reasoning_back",
    )

    def __init__(
        self,
        title: str,
        base_url: str | None,
        key_variable: str | None,
        models: dict[str, str],
        api: str = "chat_completions",
        thinking: str = "none",
        max_tokens_field: str = "max_tokens",
        reasoning_back: bool = False,
    ) -> None:
        self.title = title
        """The provider's name as a user knows it."""
        self.base_url = base_url
        """The API's default base URL (None: the SDK's, or one must be configured)."""
        self.key_variable = key_variable
        """The environment variable holding the key (None: the API needs none)."""
        self.models = models
        """Model id -> display name, offered in the editor's model option; the first is the
        default."""
        self.api = api
        """"messages" (Anthropic) or "chat_completions" (OpenAI-compatible)."""
        self.thinking = thinking
        """How a thinking level is sent: "reasoning_effort" (to OpenAI's reasoning models),
        "reasoning_effort_any" (to every model: OpenRouter maps it to each one's own form),
        "enable_thinking" (DashScope/Qwen) or "none" (the model decides)."""
        self.max_tokens_field = max_tokens_field
        """OpenAI's own API wants ``max_completion_tokens`` (its reasoning models refuse
        ``max_tokens``); the compatible APIs know ``max_tokens``."""
        self.reasoning_back = reasoning_back
        """Send the model's reasoning back as ``reasoning_content`` on assistant messages:
        DeepSeek's thinking mode answers 400 when a tool-calling turn's reasoning is missing."""


ANTHROPIC_MODELS = {
    "claude-sonnet-5-5": "Claude Sonnet 5.5",
    "claude-opus-5-5": "Claude Opus 5.5",
    "claude-haiku-5-5": "Claude Haiku 5.5",
}

PRESETS: dict[str, Preset] = {
    "anthropic": Preset("Anthropic", None, "ANTHROPIC_API_KEY", ANTHROPIC_MODELS, api="messages"),
    "openai": Preset(
        "OpenAI",
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        {
            "gpt-5.1": "GPT-5.1",
            "gpt-5-mini": "GPT-5 mini",
            "o4-mini": "o4-mini",
            "gpt-4.1": "GPT-4.1",
        },
        thinking="reasoning_effort",
        max_tokens_field="max_completion_tokens",
    ),
    "dashscope": Preset(
        "DashScope (Qwen)",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
        {
            "qwen3-coder-plus": "Qwen3 Coder Plus",
            "qwen3-max": "Qwen3 Max",
            "qwen-plus": "Qwen Plus",
            "qwen-flash": "Qwen Flash",
        },
        thinking="enable_thinking",
    ),
    "deepseek": Preset(
        "DeepSeek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        {"deepseek-chat": "DeepSeek Chat", "deepseek-reasoner": "DeepSeek Reasoner"},
        reasoning_back=True,
    ),
    "openrouter": Preset(
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        {
            "qwen/qwen3-coder": "Qwen3 Coder",
            "openai/gpt-5.1": "GPT-5.1",
            "deepseek/deepseek-chat-v3.1": "DeepSeek V3.1",
            "anthropic/claude-sonnet-4.5": "Claude Sonnet 4.5",
        },
        thinking="reasoning_effort_any",
    ),
    "ollama": Preset(
        "Ollama",
        "http://localhost:11434/v1",
        None,
        {"qwen3-coder": "Qwen3 Coder", "qwen3": "Qwen3", "gpt-oss:20b": "gpt-oss 20B"},
    ),
    "openai_compatible": Preset(
        "OpenAI-compatible API", None, None, {}, thinking="reasoning_effort"
    ),
}
"""Provider name -> preset (the order is the one shown in help and errors)."""

DEFAULT_PROVIDER = "anthropic"
API_KEY_VARIABLE = "IAC_CODE_API_KEY"
"""Overrides any preset's key (config.toml ``api_key_env`` names another variable)."""
CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Where the Anthropic provider finds its credentials when no other variable is configured
(the SDK reads either)."""
NO_KEY = "no-key"
"""What a keyless API (Ollama, a local server) gets: the OpenAI SDK insists on some key."""


class Endpoint:
    """Where and how one provider is reached, with the configuration applied."""

    __slots__ = ("provider", "preset", "base_url", "key_variable", "models", "home")

    def __init__(
        self,
        provider: str,
        preset: Preset,
        base_url: str | None,
        key_variable: str | None,
        models: dict[str, str],
        home: PathLike[str] | str | None = None,
    ) -> None:
        self.provider = provider
        self.preset = preset
        self.base_url = base_url
        self.key_variable = key_variable
        """The variable the key is read from (None: no key needed)."""
        self.models = models
        self.home = home
        """Where ``iaccode login`` keeps keys (None: no stored keys are used)."""

    def api_key(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The key: its variable's value, else the one ``iaccode login`` stored (the
        environment wins)."""
        if not self.key_variable:
            return NO_KEY
        return env.get(self.key_variable) or self.stored_key()

    def stored_key(self) -> str | None:
        """The key ``iaccode login`` stored for this provider, if any."""
        if self.home is None:
            return None
        from iaccode.llm import stored_keys  # only once a key is looked for, not at start-up

        return stored_keys.stored_key(self.home, self.provider)

    def key_stored(self) -> bool:
        """Whether ``iaccode login`` stored a key for this provider (the keyring not asked)."""
        if self.home is None:
            return False
        from iaccode.llm import stored_keys

        return stored_keys.is_stored(self.home, self.provider)

    def missing(self, model: str, env: Mapping[str, str] = os.environ) -> str | None:
        """What must still be set before a request can be made (None: nothing)."""
        setting = f"(provider {self.provider}, {self.preset.title})"
        if self.base_url is None and self.preset.api != "messages":
            return (
                f"No base URL for {setting}: set IAC_CODE_BASE_URL (or base_url in "
                f"config.toml) to the API's address, like http://localhost:8000/v1."
            )
        if self.key_variable and not env.get(self.key_variable) and not self.key_stored():
            return (
                f"No API key for {setting}: set {self.key_variable} in the environment the "
                f"editor starts iaccode with, or run `iaccode login` (or set "
                f"IAC_CODE_MODEL_SCRIPT to play a scripted model offline)."
            )
        if not model:
            return (
                f"No model for {setting}: set IAC_CODE_MODEL (or models = [...] in "
                f"config.toml) to the model id the API serves."
            )
        return None


def endpoint(config: ProviderSettings, env: Mapping[str, str] = os.environ) -> Endpoint:
    """The configured provider with its base URL, key variable and models resolved."""
    preset = PRESETS[config.provider]
    if config.api_key_env:
        key_variable: str | None = config.api_key_env
    elif env.get(API_KEY_VARIABLE):
        key_variable = API_KEY_VARIABLE
    else:
        key_variable = preset.key_variable
    models = (
        {model: preset.models.get(model, model) for model in config.models}
        if config.models is not None
        else dict(preset.models)
    )
    return Endpoint(
        config.provider,
        preset,
        config.base_url or preset.base_url,
        key_variable,
        models,
        config.home,
    )


def default_model(provider: str, models: tuple[str, ...] | None) -> str:
    """The model new sessions use when none is configured: the first of the list ("" when the
    provider has none: ``openai_compatible`` then needs IAC_CODE_MODEL)."""
    listed = models if models is not None else tuple(PRESETS[provider].models)
    return listed[0] if listed else ""


def offered_models(config: ProviderSettings) -> dict[str, str]:
    """Model id -> name for the editor's model option: the provider's list, plus the
    configured model when the list does not have it."""
    models = endpoint(config).models
    if config.model and config.model not in models:
        models[config.model] = config.model
    return models


def sdk_module(config: ProviderSettings) -> str | None:
    """The SDK package the configured provider imports on its first request (None: a model
    script needs none): what ``iaccode/preload.py`` imports ahead of it."""
    if config.model_script is not None:
        return None
    return "anthropic" if endpoint(config).preset.api == "messages" else "openai"


LOGIN_METHOD_ID = "iaccode-login"
"""The ``terminal`` auth method: the client runs ``iaccode ... login`` in a terminal."""
LOGIN_ARGS = ["login"]
"""What a client appends to the agent's command line for terminal auth (the auth-methods RFD:
appended to the configured arguments, so ``iaccode acp login`` must log in too)."""


def env_method_id(config: ProviderSettings) -> str:
    """The id of the auth method that names the provider's key variable."""
    return f"{config.provider}-api-key".replace("_", "-")


def auth_methods(config: ProviderSettings, *, terminal: bool = False) -> list[dict[str, object]]:
    """The ``authMethods`` of the initialize answer, in wire form.

    A provider that takes a key offers two, whether the key is there yet or not (after an ACP
    ``logout`` the client needs them): where the key goes in the environment (``agent``: the
    editor sets it and calls ``authenticate``), and, to a client that runs terminal auth,
    ``iaccode login`` (``terminal``: choose the provider, paste the key). An API that needs no
    key offers only what else is missing (a base URL, a model). A model script (which needs no
    key) changes nothing here, so a recorded session and its replay answer alike."""
    where = endpoint(config)
    if not where.key_variable:
        problem = where.missing(config.model)
        return (
            []
            if problem is None
            else [
                {
                    "id": env_method_id(config),
                    "name": f"{where.preset.title} settings",
                    "description": problem,
                }
            ]
        )
    methods: list[dict[str, object]] = [
        {
            "id": env_method_id(config),
            "name": f"{where.preset.title} API key",
            "description": (
                f"Set {where.key_variable} in the environment the editor starts "
                "`iaccode acp` with (it wins over a key saved by `iaccode login`)."
            ),
        }
    ]
    if terminal:
        methods.append(
            {  # in the order of protocol.messages.AuthMethod's fields
                "id": LOGIN_METHOD_ID,
                "name": "Log in with an API key",
                "description": (
                    f"Runs `iaccode login`: choose the provider ({where.preset.title} "
                    "now), paste its key; it is saved in the OS keyring or in "
                    "credentials.toml under IAC_CODE_HOME (mode 0600)."
                ),
                "type": "terminal",
                "args": list(LOGIN_ARGS),
            }
        )
    return methods


def terminal_auth(capabilities: Mapping[str, object] | None) -> bool:
    """Whether the client's ``clientCapabilities`` (wire form) take ``terminal`` auth methods:
    ``auth.terminal: true``, or the ``_meta["terminal-auth"]: true`` hint of the registry's
    validator and older clients."""
    if not capabilities:
        return False
    auth, meta = capabilities.get("auth"), capabilities.get("_meta")
    return (isinstance(auth, dict) and auth.get("terminal") is True) or (
        isinstance(meta, dict) and meta.get("terminal-auth") is True
    )
