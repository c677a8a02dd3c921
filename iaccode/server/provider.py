"""The model provider the configuration asks for, built where the agent is put together.

:mod:`iaccode.llm.providers` knows the presets and how a provider is reached; building one also
needs what sits above the providers: the :class:`~iaccode.config.Config`, the recorder of
``--record`` (:mod:`iaccode.transcript.recorder`) and a recorded session's model answers played
back offline (:mod:`iaccode.transcript.playback`). So it happens here, in the server, and the
server and ``iaccode serve`` build their provider only through :func:`make_provider`. Each
provider module is imported only when it is the one asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iaccode.llm.providers import endpoint

if TYPE_CHECKING:
    from iaccode.config import Config
    from iaccode.llm.base import Provider
    from iaccode.transcript.recorder import Recorder


def make_provider(config: Config, recorder: Recorder | None = None) -> Provider:
    """The provider the configuration asks for: a model script played offline
    (IAC_CODE_MODEL_SCRIPT), else the preset's API. With a recorder, every exchange is recorded
    (``--record``)."""
    provider = _base_provider(config)
    if recorder is not None:
        from iaccode.transcript.recorder import RecordingProvider

        provider = RecordingProvider(provider, recorder)
    return provider


def _base_provider(config: Config) -> Provider:
    if config.model_script is not None:
        from iaccode.llm.offline import ScriptedProvider
        from iaccode.llm.script import load_script
        from iaccode.transcript.format import is_transcript, read_transcript
        from iaccode.transcript.playback import model_exchanges

        if is_transcript(config.model_script):  # a recorded session's model answers
            return ScriptedProvider(model_exchanges(read_transcript(config.model_script)))
        return ScriptedProvider(load_script(config.model_script))
    where = endpoint(config)
    if where.preset.api == "messages":
        from iaccode.llm.anthropic_provider import AnthropicProvider

        overridden = where.key_variable != where.preset.key_variable
        return AnthropicProvider(
            max_retries=config.max_retries,
            timeout=config.request_timeout,
            base_url=config.base_url,
            key_variable=where.key_variable if overridden else None,
            stored_key=where.stored_key,
        )
    from iaccode.llm.openai_provider import OpenAIProvider

    return OpenAIProvider(
        where,
        default_model=config.model,
        max_retries=config.max_retries,
        timeout=config.request_timeout,
    )
