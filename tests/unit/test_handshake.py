"""The early handshake's own readings agree with the full server's (iaccode/server/handshake.py).

The answers themselves are compared byte for byte in tests/e2e/test_early_handshake.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from iaccode.config import Config
from iaccode.llm.providers import auth_methods
from iaccode.protocol import messages as m
from iaccode.protocol.convert import wire_name
from iaccode.server import handshake

CASES = [
    ({}, "", {}),
    ({"IAC_CODE_PROVIDER": "openai", "IAC_CODE_MODEL": "gpt-4.1"}, "", {}),
    ({"IAC_CODE_PROVIDER": ""}, 'provider = "deepseek"\n', {}),
    ({}, 'provider = "openrouter"\nmodel = "x/y"\n', {"model": "a/b"}),
    ({"IAC_CODE_BASE_URL": "http://127.0.0.1:1/v1"}, 'provider = "openai_compatible"\n'
     'base_url = "http://127.0.0.1:2/v1"\nmodels = ["m1", "m2"]\n', {}),
    ({}, 'api_key_env = "MY_KEY"\nmodels = ["claude-x"]\n[tools]\nbash_timeout = 5\n',
     {"provider": "dashscope"}),
    ({"IAC_CODE_MODEL_SCRIPT": "/tmp/script.json"}, "", {}),
    ({}, "", {"model_script": "/tmp/other.json"}),
]


@pytest.mark.parametrize(("env", "config", "options"), CASES)
def test_settings_are_read_as_config_reads_them(
        tmp_path: Path, env: dict[str, str], config: str, options: dict[str, str]) -> None:
    (tmp_path / "config.toml").write_text(config)
    env = {"IAC_CODE_HOME": str(tmp_path), **env}
    settings = handshake._settings(options, env)
    assert settings is not None
    overrides: dict[str, Any] = {
        "model": options.get("model"), "provider": options.get("provider"),
        "model_script": Path(options["model_script"]) if "model_script" in options else None}
    full = Config.from_env(env, **overrides)
    script = str(full.model_script) if full.model_script is not None else None
    read = (settings.provider, settings.base_url, settings.api_key_env, settings.models,
            settings.model, settings.model_script, settings.home)
    assert read == (full.provider, full.base_url, full.api_key_env, full.models, full.model,
                    script, str(full.home))
    for terminal in (False, True):
        assert auth_methods(settings, terminal=terminal) == auth_methods(full, terminal=terminal)


@pytest.mark.parametrize("line", [
    b'{"a": [1, 2.5, -3e7, true, null, "\\u00fc\\ud800"], "b": {}}', b'  [1, "x"] \r', b"NaN",
    b'"\xc3\xbc"', b'"\xed\xa0\x80"', b"-Infinity", b"123456789012345678901234567890",
])
def test_lines_are_read_as_json_loads_reads_them(line: bytes) -> None:
    read = handshake._loads(line)
    assert json.dumps(read) == json.dumps(json.loads(line))


@pytest.mark.parametrize("line", [
    b"", b" ", b"{not json", b'{"a": 1} x', b'{"a": 1}{}', b"\xff\xfe{}", b"\xef\xbb\xbf{}",
    b"[1,]", b'{"a" 1}', b"\x00{}", b"'single'",
])
def test_what_json_loads_refuses_or_reads_otherwise_is_not_taken(line: bytes) -> None:
    with pytest.raises(ValueError):
        handshake._loads(line)


@pytest.mark.parametrize("config", ['provider = "nobody"\n', "models = 3\n", "not toml ["])
def test_settings_the_full_server_refuses_are_left_to_it(tmp_path: Path, config: str) -> None:
    (tmp_path / "config.toml").write_text(config)
    assert handshake._settings({}, {"IAC_CODE_HOME": str(tmp_path)}) is None


@pytest.mark.parametrize(("argv", "expected"), [
    ([], {}),
    (["--model", "m", "--provider=openai"], {"model": "m", "provider": "openai"}),
    (["--model-script", "s.json", "--record", "r.jsonl"],
     {"model_script": "s.json", "record": "r.jsonl"}),
    (["--help"], None),
    (["--mod", "m"], None),  # an abbreviation: argparse's
    (["--model"], None),
    (["--model", "--provider", "openai"], None),
    (["--model="], None),
    (["extra"], None),
])
def test_only_options_argparse_reads_the_same_way_are_taken(
        argv: list[str], expected: dict[str, str] | None) -> None:
    assert handshake._options(argv) == expected


def _wire_fields(cls: type) -> set[str]:
    return {wire_name(field.name) for field in attrs.fields(cls)}


def test_the_params_shape_follows_the_message_classes() -> None:
    shape = handshake._PARAMS
    assert set(shape) | {"protocolVersion"} == _wire_fields(m.InitializeRequest)
    capabilities, _ = shape["clientCapabilities"]
    assert set(capabilities) == _wire_fields(m.ClientCapabilities)
    assert set(capabilities["fs"][0]) == _wire_fields(m.FileSystemCapabilities)
    assert set(capabilities["elicitation"][0]) == _wire_fields(m.ElicitationCapabilities)
    info, required = shape["clientInfo"]
    assert set(info) == _wire_fields(m.Implementation)
    assert set(required) == {field.name for field in attrs.fields(m.Implementation)
                             if field.default is attrs.NOTHING}


def test_the_early_path_imports_only_the_standard_library() -> None:
    code = ("import sys; import iaccode.cli, iaccode.server.handshake; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('trio', 'attr', 'attrs', 'cattrs', 'anthropic', 'openai', 'httpx', 'tomllib', "
            "'pathlib', 'argparse', 'logging', 'typing', 're', 'enum', 'json', 'signal') "
            "or m.startswith(('iaccode.protocol', 'iaccode.wire.connection', 'iaccode.config'))))")
    # -S: without site, which (for an editable install) imports pathlib and re itself; the
    # package is then found from the repository's root.
    root = Path(handshake.__file__).parents[2]
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                            check=True, cwd=root)
    assert result.stdout.strip() == "[]"
