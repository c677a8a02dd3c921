"""The early handshake's JSON in a fresh interpreter, as ``iaccode acp`` reads its first line:
before the json package is imported. json's C scanner then fails differently by Python version
(3.11: SystemError; 3.12 and later import json.decoder and raise JSONDecodeError), and
``handshake._loads`` must refuse bad JSON on each (``nox`` runs this on 3.11, 3.12, 3.13).
In pytest's own process json is imported already, so only a new interpreter shows it."""

from __future__ import annotations

import json
import subprocess
import sys

BAD = ['{"a" 1}', '"abc', '{"a":1,}', "[1,", "nul", '{"a": ', "{not json"]
GOOD = ['{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}', "[1, 2.5, null]"]

SCRIPT = """
import sys
from iaccode.server import handshake
before = "json.decoder" in sys.modules
results = []
for line in sys.argv[1:]:
    try:
        results.append(["read", handshake._loads(line.encode())])
    except ValueError as exc:
        results.append(["refused", type(exc).__name__])
import json
print(json.dumps({"json_before": before, "results": results}))
"""


def test_bad_json_is_refused_and_good_json_read_before_json_is_imported() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, *BAD, *GOOD], capture_output=True,
                          text=True, timeout=60, check=True)
    report = json.loads(done.stdout)
    assert report["json_before"] is False  # the handshake did not import the json package
    outcomes = report["results"]
    assert [kind for kind, _ in outcomes[:len(BAD)]] == ["refused"] * len(BAD), outcomes
    assert [value for _, value in outcomes[len(BAD):]] == [json.loads(line) for line in GOOD]
