import pytest

from iaccode.llm.anthropic_provider import thinking_config


@pytest.mark.parametrize(
    ("model", "adaptive"),
    [
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
    ],
)
def test_thinking_shape_follows_the_model_generation(model: str, adaptive: bool) -> None:
    config = thinking_config(model, "medium", 16_000)
    if adaptive:
        assert config == {
            "thinking": {"type": "adaptive", "display": "summarized"},
            "output_config": {"effort": "medium"},
        }
    else:
        assert config == {"thinking": {"type": "enabled", "budget_tokens": 8_192}}


def test_off_sends_nothing() -> None:
    assert thinking_config("claude-sonnet-5-5", "off", 16_000) == {}
    assert thinking_config("claude-sonnet-4-5", "off", 16_000) == {}


def test_a_budget_stays_below_max_tokens() -> None:
    assert thinking_config("claude-sonnet-4-5", "high", 10_000) == {
        "thinking": {"type": "enabled", "budget_tokens": 8_976}
    }
    assert thinking_config("claude-sonnet-4-5", "low", 1_500) == {}
