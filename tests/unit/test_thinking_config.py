import pytest

from iaccode.llm.anthropic_provider import thinking_config


@pytest.mark.parametrize(("model", "adaptive"), [
    ("claude-sonnet-5-5", True),
    ("claude-sonnet-5", True),
    ("claude-opus-4-6", True),
    ("claude-opus-4-8", True),
    ("claude-mythos-preview", True),
    ("claude-sonnet-4-5", False),
    ("claude-sonnet-4-5-20250929", False),
    ("claude-haiku-4-5-20251001", False),
    ("claude-3-7-sonnet-20250219", False),
    ("some-proxy-model", False),
])
def test_thinking_shape_follows_the_model_generation(model: str, adaptive: bool) -> None:
    config = thinking_config(model, 4000)
    if adaptive:
        assert config == {"type": "adaptive", "display": "summarized"}
    else:
        assert config == {"type": "enabled", "budget_tokens": 4000}
