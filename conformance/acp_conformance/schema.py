"""Validate what an ACP agent puts on the wire against the official ACP v1 JSON schema.

The schema is not vendored: it is taken from the published npm package
``@agentclientprotocol/sdk`` (pinned version and registry integrity below), fetched
with the ordinary ``npm pack`` client, verified, and cached on disk:

* cache directory: ``$ACP_CONFORMANCE_CACHE/acp-sdk-<version>/`` if that variable is
  set, else ``~/.cache/acp-conformance/acp-sdk-<version>/``;
* the cache holds the two extracted schema files plus ``manifest.json`` recording
  their sha256 (computed right after the tarball passed the sha512 integrity
  check); every load re-hashes the files, and anything missing, unreadable or
  mismatching is refetched;
* files are written to a temporary name and atomically renamed into place, and a
  lock file serialises fetches of concurrent test processes (where ``fcntl`` exists).

If ``npm`` is not available, :class:`SchemaFetchError` is raised: tests needing the
schema fail loudly instead of being skipped.

Which method goes with which type is read from the schema itself: the unions
``AgentRequest`` / ``AgentResponse`` / ``AgentNotification`` / ``ClientRequest`` /
``ClientResponse`` / ``ClientNotification`` (plus the root ``ProtocolLevel`` union)
reference per-method definitions that carry an ``x-method`` annotation.

Main entry points: :class:`WireChecker`, :func:`validate_def`, :func:`schema_defs`,
:func:`method_tables`, :func:`ensure_schema_files`.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import hashlib
import hmac
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import jsonschema
import referencing
import referencing.jsonschema
from jsonschema.exceptions import ValidationError, best_match

try:  # POSIX only; without it concurrent fetches merely duplicate work.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ENVELOPE_KEYS",
    "SCHEMA_FILES",
    "SDK_INTEGRITY",
    "SDK_PACKAGE",
    "SDK_VERSION",
    "MethodTables",
    "SchemaFetchError",
    "WireChecker",
    "cache_dir",
    "ensure_schema_files",
    "method_tables",
    "read_cached_schemas",
    "schema_defs",
    "schema_document",
    "validate_def",
    "verify_integrity",
]

# --------------------------------------------------------------------------- pins

SDK_PACKAGE: Final = "@agentclientprotocol/sdk"
SDK_VERSION: Final = "2.4.0"
SDK_INTEGRITY: Final = (
    "sha512-7qJ8nnyj7WesC5ve185ioTpB2/svQoeGV4HA4nLEhgDUrcmBe54/08VcXc/"
    "oL4p14tDbxxECZzdYmUYQ+4l+Wg=="
)

#: cache file name -> member path inside the npm tarball
SCHEMA_FILES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "schema.json": "package/schema/v1/schema.json",
        "schema.unstable.json": "package/schema/v1/schema.unstable.json",
    }
)
MANIFEST_NAME: Final = "manifest.json"
CACHE_ENV: Final = "ACP_CONFORMANCE_CACHE"
NPM_TIMEOUT_SECONDS: Final = 300

#: the only root members a JSON-RPC 2.0 message may have
ENVELOPE_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})


class SchemaFetchError(RuntimeError):
    """The ACP schema could not be obtained or failed verification."""


# ------------------------------------------------------------------ fetch + cache


def cache_dir() -> Path:
    """Directory holding the extracted, hash-recorded schema files."""
    root_env = os.environ.get(CACHE_ENV)
    root = Path(root_env) if root_env else Path.home() / ".cache" / "acp-conformance"
    return root / f"acp-sdk-{SDK_VERSION}"


def verify_integrity(data: bytes, integrity: str = SDK_INTEGRITY, *, what: str = "tarball") -> None:
    """Check *data* against an npm/SRI ``sha512-<base64>`` integrity string.

    Raises :class:`SchemaFetchError` on a mismatch or an unusable integrity string.
    """
    expected: list[bytes] = []
    for token in integrity.split():
        algo, sep, b64 = token.partition("-")
        if sep and algo == "sha512":
            with contextlib.suppress(binascii.Error, ValueError):
                expected.append(base64.b64decode(b64, validate=True))
    if not expected:
        raise SchemaFetchError(f"no usable sha512 entry in integrity string {integrity!r}")
    digest = hashlib.sha512(data).digest()
    if not any(hmac.compare_digest(digest, e) for e in expected):
        actual = "sha512-" + base64.b64encode(digest).decode("ascii")
        raise SchemaFetchError(
            f"integrity mismatch for {what} of {SDK_PACKAGE}@{SDK_VERSION}: "
            f"expected {integrity}, got {actual}; refusing to use it"
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_cached_schemas(directory: Path | None = None) -> dict[str, bytes] | None:
    """Return the cached schema files' bytes if the cache is complete and intact.

    ``None`` means "missing or corrupted": the manifest must be valid, belong to
    the pinned package version/integrity, and every file must match its sha256.
    """
    directory = cache_dir() if directory is None else directory
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text("utf-8"))
        if (
            manifest.get("package") != SDK_PACKAGE
            or manifest.get("version") != SDK_VERSION
            or manifest.get("integrity") != SDK_INTEGRITY
        ):
            return None
        recorded = manifest["files"]
        out: dict[str, bytes] = {}
        for name in SCHEMA_FILES:
            data = (directory / name).read_bytes()
            if not hmac.compare_digest(_sha256(data), str(recorded[name]["sha256"])):
                return None
            out[name] = data
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _fetch_lock(directory: Path) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    with open(directory / ".fetch.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _npm_pack(dest: Path) -> bytes:
    npm = shutil.which("npm")
    if npm is None:
        raise SchemaFetchError(
            f"npm is not available on PATH; it is required to fetch the ACP JSON schema "
            f"from the npm package {SDK_PACKAGE}@{SDK_VERSION} (install Node.js/npm, or "
            f"pre-populate the cache at {cache_dir()})"
        )
    cmd = [
        npm,
        "pack",
        f"{SDK_PACKAGE}@{SDK_VERSION}",
        "--pack-destination",
        str(dest),
        "--ignore-scripts",
        "--loglevel=error",
    ]
    try:
        proc = subprocess.run(
            cmd,
            cwd=dest,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SchemaFetchError(f"`{' '.join(cmd)}` timed out after {exc.timeout}s") from exc
    except OSError as exc:
        raise SchemaFetchError(f"could not run npm ({npm}): {exc}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip()[-2000:]
        raise SchemaFetchError(
            f"`{' '.join(cmd)}` failed with exit status {proc.returncode}:\n{tail}"
        )
    tarballs = sorted(dest.glob("*.tgz"))
    if len(tarballs) != 1:
        raise SchemaFetchError(
            f"`npm pack` produced {len(tarballs)} .tgz files in {dest}, expected exactly one"
        )
    return tarballs[0].read_bytes()


def _extract(tarball: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
            for name, member_path in SCHEMA_FILES.items():
                try:
                    member = tar.getmember(member_path)
                except KeyError:
                    raise SchemaFetchError(
                        f"{member_path} not found in {SDK_PACKAGE}@{SDK_VERSION} tarball"
                    ) from None
                fh = tar.extractfile(member) if member.isfile() else None
                if fh is None:
                    raise SchemaFetchError(f"{member_path} in the tarball is not a regular file")
                out[name] = fh.read()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SchemaFetchError(f"cannot read the {SDK_PACKAGE} tarball: {exc}") from exc
    for name, data in out.items():
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise SchemaFetchError(f"{name} from the tarball is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("$defs"), dict):
            raise SchemaFetchError(f"{name} from the tarball has no $defs object")
    return out


def _fetch_into(directory: Path) -> dict[str, bytes]:
    with tempfile.TemporaryDirectory(prefix="acp-sdk-pack-") as tmp:
        tarball = _npm_pack(Path(tmp))
    verify_integrity(tarball)
    files = _extract(tarball)
    for name, data in files.items():
        _atomic_write(directory / name, data)
    manifest = {
        "package": SDK_PACKAGE,
        "version": SDK_VERSION,
        "integrity": SDK_INTEGRITY,
        "files": {
            name: {"member": SCHEMA_FILES[name], "sha256": _sha256(data)}
            for name, data in files.items()
        },
    }
    # The manifest goes last: a reader only trusts files that it vouches for.
    _atomic_write(directory / MANIFEST_NAME, json.dumps(manifest, indent=2).encode("utf-8"))
    return files


def ensure_schema_files(directory: Path | None = None) -> dict[str, bytes]:
    """Return ``{"schema.json": ..., "schema.unstable.json": ...}`` (verified bytes).

    Uses the cache if it is intact, otherwise (re)fetches with ``npm pack``.
    """
    directory = cache_dir() if directory is None else directory
    cached = read_cached_schemas(directory)
    if cached is not None:
        return cached
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SchemaFetchError(f"cannot create schema cache directory {directory}: {exc}") from exc
    with _fetch_lock(directory):
        cached = read_cached_schemas(directory)  # another process may have fetched it
        if cached is not None:
            return cached
        return _fetch_into(directory)


# ------------------------------------------------------------------ schema access


_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def _file_name(unstable: bool) -> str:
    return "schema.unstable.json" if unstable else "schema.json"


@functools.cache
def _all_schema_bytes() -> Mapping[str, bytes]:
    return MappingProxyType(ensure_schema_files())


@functools.cache
def schema_document(unstable: bool = True) -> dict[str, Any]:
    """The whole root schema document (shared object: do not mutate)."""
    doc: dict[str, Any] = json.loads(_all_schema_bytes()[_file_name(unstable)])
    # The bytes are pinned and hash-verified, so a full metaschema check (~1s) is skipped;
    # just make sure the dialect is the one the validators are built for.
    if doc.get("$schema") != _DIALECT:
        raise SchemaFetchError(f"unexpected $schema {doc.get('$schema')!r}, wanted {_DIALECT}")
    return doc


def schema_defs(unstable: bool = True) -> dict[str, Any]:
    """The schema's ``$defs`` (shared object: do not mutate)."""
    defs: dict[str, Any] = schema_document(unstable)["$defs"]
    return defs


def _base_uri(unstable: bool) -> str:
    return f"urn:acp-sdk:{SDK_VERSION}:v1:{_file_name(unstable)}"


@functools.cache
def _registry(unstable: bool) -> referencing.Registry[Any]:
    resource = referencing.Resource.from_contents(
        schema_document(unstable), default_specification=referencing.jsonschema.DRAFT202012
    )
    registry: referencing.Registry[Any] = referencing.Registry().with_resource(
        _base_uri(unstable), resource
    )
    return registry.crawl()


_BRANCH_KEYS: dict[int, tuple[list[Any], tuple[str, dict[Any, list[int]]] | None]] = {}
"""``id`` of a ``oneOf`` list of the schema (kept alive here) -> it and its
:func:`_discriminator`."""


def _one_of(
    validator: Any, branches: list[Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``oneOf``, first tried on the branches whose discriminator matches the
    instance (``sessionUpdate`` of a SessionUpdate, ``type`` of a ContentBlock): the others
    fail on their ``const``, so when one of those is valid the answer is the same, found
    without trying every branch (a ``session/update`` has nineteen). Anything else (no
    discriminator, no match, an error) is left to the whole check, so problems read as
    before."""
    known = _BRANCH_KEYS.get(id(branches))
    if known is None or known[0] is not branches:
        known = _BRANCH_KEYS[id(branches)] = (branches, _discriminator(branches))
    if known[1] is not None and isinstance(instance, dict):
        prop, indexes = known[1]
        value = instance.get(prop, _ABSENT)
        chosen = [branches[i] for i in indexes.get(value, ())] if _hashable(value) else []
        if chosen and not any(_ONE_OF(validator, chosen, instance, schema)):
            return
    yield from _ONE_OF(validator, branches, instance, schema)


_ABSENT = object()


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None or value is _ABSENT


_ONE_OF = jsonschema.Draft202012Validator.VALIDATORS["oneOf"]
# extend() has no annotations in types-jsonschema (its result is a validator class).
_Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, {"oneOf": _one_of}
)


@functools.cache
def _validator(name: str, unstable: bool) -> jsonschema.Draft202012Validator:
    if name not in schema_defs(unstable):
        kind = "unstable" if unstable else "stable"
        raise KeyError(f"no definition {name!r} in the {kind} ACP v1 schema")
    validator: jsonschema.Draft202012Validator = _Validator(
        {"$ref": f"{_base_uri(unstable)}#/$defs/{name}"}, registry=_registry(unstable)
    )
    return validator


def validate_def(name: str, instance: Any, unstable: bool = True) -> list[str]:
    """Validate *instance* against ``$defs/<name>``; return readable problems (empty = ok)."""
    errors = _validator(name, unstable).iter_errors(instance)
    problems: list[str] = []
    for err in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        problems.extend(_describe(err))
    return problems


# ----------------------------------------------------------- error presentation

_MAX_REPR: Final = 120


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."


def _ref_name(schema: Any) -> str | None:
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    for sub in schema.get("allOf", ()):
        name = _ref_name(sub)
        if name:
            return name
    return None


def _branch_label(schema: Any) -> str:
    if isinstance(schema, dict):
        if isinstance(schema.get("title"), str):
            return str(schema["title"])
        name = _ref_name(schema)
        if name:
            return name
        if "type" in schema:
            return f"type {schema['type']}"
        if "const" in schema:
            return _short(schema["const"])
    return _short(schema)


def _discriminator(branches: list[Any]) -> tuple[str, dict[Any, list[int]]] | None:
    """If every branch pins the same required property to a const, return it."""
    prop: str | None = None
    mapping: dict[Any, list[int]] = {}
    for i, branch in enumerate(branches):
        if not isinstance(branch, dict):
            return None
        pinned = [
            (p, s["const"])
            for p, s in branch.get("properties", {}).items()
            if isinstance(s, dict) and "const" in s and p in branch.get("required", ())
        ]
        if len(pinned) != 1 or (prop is not None and pinned[0][0] != prop):
            return None
        prop = pinned[0][0]
        mapping.setdefault(pinned[0][1], []).append(i)
    return (prop, mapping) if prop is not None else None


def _branch_errors(err: ValidationError, indexes: Iterable[int]) -> list[ValidationError]:
    wanted = set(indexes)
    return [
        e
        for e in err.context or ()
        if e.relative_schema_path and e.relative_schema_path[0] in wanted
    ]


def _describe_all(errors: Iterable[ValidationError]) -> list[str]:
    out: list[str] = []
    for e in errors:
        out.extend(_describe(e))
    return out


def _describe(err: ValidationError) -> list[str]:
    where = err.json_path
    if (
        err.validator in ("anyOf", "oneOf")
        and err.context
        and isinstance(err.validator_value, list)
    ):
        branches: list[Any] = err.validator_value
        inst = err.instance
        if all(isinstance(b, dict) and "const" in b for b in branches):
            allowed = [b["const"] for b in branches]
            return [f"{where}: {_short(inst)} is not one of {_listing(allowed)}"]
        disc = _discriminator(branches)
        if disc is not None and isinstance(inst, dict):
            prop, mapping = disc
            if prop not in inst:
                return [f"{where}: missing discriminator {prop!r} (one of {_listing(mapping)})"]
            if not _hashable(inst[prop]) or inst[prop] not in mapping:  # a list, say
                return [f"{where}.{prop}: {_short(inst[prop])} is not one of {_listing(mapping)}"]
            sub = _branch_errors(err, mapping[inst[prop]])
            if sub:
                return _describe_all(sub)
        live = [
            i
            for i, b in enumerate(branches)
            if not (inst is not None and isinstance(b, dict) and b.get("type") == "null")
        ]
        if len(live) == 1:  # nullable wrapper: explain the non-null alternative
            sub = _branch_errors(err, live)
            if sub:
                return _describe_all(sub)
        reasons: dict[str, list[str]] = {}  # reason -> labels of the forms failing that way
        for i in live:
            best = best_match(_branch_errors(err, [i]))
            if best is not None:
                reason = f"{best.json_path}: {_short_text(best.message, 160)}"
                reasons.setdefault(reason, []).append(_branch_label(branches[i]))
        parts = [
            f"[{', '.join(labels) if len(labels) <= 3 else f'{len(labels)} forms'}] {reason}"
            for reason, labels in list(reasons.items())[:6]
        ]
        return [f"{where}: {_short(inst)} matches none of the allowed forms: {'; '.join(parts)}"]
    return [f"{where}: {_short_text(err.message)}"]


def _listing(values: Iterable[Any]) -> str:
    return "[" + ", ".join(_short(v) for v in values) + "]"


def _short_text(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------- method tables


@dataclass(frozen=True)
class MethodTables:
    """Method name -> ``$defs`` type name, derived from the schema's unions."""

    #: requests the client sends -> params type (``ClientRequest``)
    client_requests: Mapping[str, str]
    #: agent's success results for those requests -> result type (``AgentResponse``)
    agent_responses: Mapping[str, str]
    #: notifications the client sends (``ClientNotification`` + protocol level)
    client_notifications: Mapping[str, str]
    #: requests the agent sends -> params type (``AgentRequest``)
    agent_requests: Mapping[str, str]
    #: client's results for those -> result type (``ClientResponse``)
    client_responses: Mapping[str, str]
    #: notifications the agent sends (``AgentNotification`` + protocol level)
    agent_notifications: Mapping[str, str]


def _methods_in(node: Any, defs: Mapping[str, Any], out: dict[str, str]) -> dict[str, str]:
    """Collect ``x-method -> def name`` for every ``$ref`` reachable through unions."""
    if isinstance(node, dict):
        name = _ref_name({"$ref": node["$ref"]}) if isinstance(node.get("$ref"), str) else None
        if name is not None:
            target = defs.get(name, {})
            method = target.get("x-method") if isinstance(target, dict) else None
            if isinstance(method, str):
                previous = out.setdefault(method, name)
                if previous != name:
                    raise SchemaFetchError(f"method {method!r} maps to {previous} and {name}")
            return out
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, ()):
                _methods_in(sub, defs, out)
    return out


def _union_member(defs: Mapping[str, Any], union: str, prop: str) -> list[Any]:
    """The ``prop`` schemas (``params``/``result``) inside a request/response union."""
    node = defs[union]
    found = [
        b["properties"][prop] for b in node.get("anyOf", ()) if prop in b.get("properties", {})
    ]
    if prop in node.get("properties", {}):
        found.append(node["properties"][prop])
    if not found:
        raise SchemaFetchError(f"schema union {union} has no {prop!r} member")
    return found


def _protocol_notifications(doc: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for branch in doc.get("anyOf", ()):
        if branch.get("title") == "ProtocolLevel":
            _methods_in(branch.get("properties", {}).get("params"), doc["$defs"], out)
    return out


@functools.cache
def method_tables(unstable: bool = True) -> MethodTables:
    doc = schema_document(unstable)
    defs = doc["$defs"]

    def table(union: str, prop: str, extra: Mapping[str, str] | None = None) -> Mapping[str, str]:
        out: dict[str, str] = dict(extra or {})
        for member in _union_member(defs, union, prop):
            _methods_in(member, defs, out)
        return MappingProxyType(out)

    protocol = _protocol_notifications(doc)
    return MethodTables(
        client_requests=table("ClientRequest", "params"),
        agent_responses=table("AgentResponse", "result"),
        client_notifications=table("ClientNotification", "params", protocol),
        agent_requests=table("AgentRequest", "params"),
        client_responses=table("ClientResponse", "result"),
        agent_notifications=table("AgentNotification", "params", protocol),
    )


# ----------------------------------------------------------------- wire checker


def _id_key(value: Any) -> tuple[str, Any]:
    # JSON distinguishes 1 and "1"; Python's True == 1 must not collide either.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return (type(value).__name__, value)


def _id_problem(value: Any, *, allow_null: bool) -> str | None:
    if value is None:
        return None if allow_null else "'id' must not be null here"
    if isinstance(value, bool) or not isinstance(value, int | str):
        if isinstance(value, float) and value.is_integer():
            return None
        return f"'id' must be a string or an integer, got {_short(value)}"
    return None


class WireChecker:
    """Tracks one agent connection and validates every message the agent sends.

    Feed it both directions: :meth:`client_sent` for what the client wrote (so that
    responses can be matched to the method of the request they answer) and
    :meth:`agent_sent` / :meth:`assert_agent_sent` for what the agent wrote.
    """

    def __init__(self, *, unstable: bool = True, aliases: Mapping[str, str] | None = None) -> None:
        self.unstable = unstable
        self.tables = method_tables(unstable)
        self._client_pending: dict[tuple[str, Any], str] = {}
        self._aliases = dict(aliases or {})
        self._client_answered: dict[tuple[str, Any], str] = {}
        self._agent_pending: dict[tuple[str, Any], str] = {}

    # -- client side -------------------------------------------------------

    def client_sent(self, msg: Mapping[str, Any]) -> None:
        """Record a message the client sent (requests are remembered by id)."""
        if not isinstance(msg, Mapping):
            raise TypeError(f"client message must be a JSON object, got {_short(msg)}")
        if "method" in msg and "id" in msg:
            key = _id_key(msg["id"])
            if key in self._client_pending:
                raise ValueError(
                    f"client reused id {_short(msg['id'])} while request "
                    f"{self._client_pending[key]!r} is still unanswered"
                )
            self._client_answered.pop(key, None)
            method = str(msg["method"])
            # An agent may answer extra names for a method (older names of it, say): check
            # their answers as the real method's.
            self._client_pending[key] = self._aliases.get(method, method)
        elif "method" not in msg and "id" in msg:
            self._agent_pending.pop(_id_key(msg["id"]), None)

    @property
    def pending_client_requests(self) -> dict[Any, str]:
        """Client requests the agent has not answered yet (id -> method)."""
        return {key[1]: method for key, method in self._client_pending.items()}

    @property
    def pending_agent_requests(self) -> dict[Any, str]:
        """Agent requests the client has not answered yet (id -> method)."""
        return {key[1]: method for key, method in self._agent_pending.items()}

    # -- agent side --------------------------------------------------------

    def agent_sent(self, msg: Any) -> list[str]:
        """Validate one message the agent sent; return readable problems (empty = valid)."""
        if not isinstance(msg, Mapping):
            return [f"agent message is not a JSON object: {_short(msg)}"]
        problems: list[str] = []
        extra = sorted(set(msg) - ENVELOPE_KEYS)
        if extra:
            problems.append(
                f"unexpected top-level member(s) {extra}; allowed: {sorted(ENVELOPE_KEYS)}"
            )
        if "jsonrpc" not in msg:
            problems.append("missing 'jsonrpc' member (must be \"2.0\")")
        elif msg["jsonrpc"] != "2.0":
            problems.append(f"'jsonrpc' must be \"2.0\", got {_short(msg['jsonrpc'])}")

        if "method" in msg:
            problems.extend(self._check_outgoing_call(msg))
        elif "id" in msg or "result" in msg or "error" in msg:
            problems.extend(self._check_response(msg))
        else:
            problems.append("message is neither a request, a notification nor a response")
        return problems

    def assert_agent_sent(self, msg: Any) -> None:
        """Like :meth:`agent_sent` but raise ``AssertionError`` listing the problems."""
        problems = self.agent_sent(msg)
        if problems:
            listing = "\n".join(f"  - {p}" for p in problems)
            try:
                shown = json.dumps(msg, indent=2, sort_keys=True, default=repr)
            except (TypeError, ValueError):
                shown = repr(msg)
            if len(shown) > 4000:
                shown = shown[:4000] + "\n  ..."
            raise AssertionError(
                f"agent sent a non-conforming ACP message:\n{listing}\nmessage:\n{shown}"
            )

    def _check_params(self, method: str, msg: Mapping[str, Any], type_name: str) -> list[str]:
        label = f"params of {method!r} ({type_name})"
        params = msg.get("params", {})  # absent params: report the missing required fields
        return [f"{label}: {p}" for p in validate_def(type_name, params, self.unstable)]

    def _check_outgoing_call(self, msg: Mapping[str, Any]) -> list[str]:
        problems: list[str] = []
        method = msg["method"]
        for member in ("result", "error"):
            if member in msg:
                problems.append(f"a request/notification must not carry {member!r}")
        if not isinstance(method, str):
            return [*problems, f"'method' must be a string, got {_short(method)}"]
        is_request = "id" in msg
        kind = "request" if is_request else "notification"
        if is_request:
            id_problem = _id_problem(msg["id"], allow_null=False)
            if id_problem:
                problems.append(id_problem)
            else:
                key = _id_key(msg["id"])
                if key in self._agent_pending:
                    problems.append(
                        f"agent reused request id {_short(msg['id'])} while its request "
                        f"{self._agent_pending[key]!r} is still unanswered"
                    )
                self._agent_pending[key] = method
        if "params" in msg and not isinstance(msg["params"], dict | list):
            problems.append(f"'params' must be an object or array, got {_short(msg['params'])}")
            return problems

        table = self.tables.agent_requests if is_request else self.tables.agent_notifications
        if method in table:
            problems.extend(self._check_params(method, msg, table[method]))
        elif method.startswith("_"):
            pass  # extension method: envelope only
        else:
            other = self.tables.agent_notifications if is_request else self.tables.agent_requests
            if method in other:
                want = "notification" if is_request else "request"
                problems.append(f"{method!r} must be sent as a {want}, not as a {kind}")
            elif method in self.tables.client_requests or (
                method in self.tables.client_notifications
            ):
                problems.append(f"{method!r} is a client->agent method; an agent must not send it")
            else:
                problems.append(f"unknown agent->client {kind} method {method!r}")
        return problems

    def _check_response(self, msg: Mapping[str, Any]) -> list[str]:
        problems: list[str] = []
        has_result, has_error = "result" in msg, "error" in msg
        if has_result == has_error:
            problems.append(
                "a response must have exactly one of 'result' and 'error' "
                f"(has {'both' if has_result else 'neither'})"
            )
        if "params" in msg:
            problems.append("a response must not carry 'params'")
        if "id" not in msg:
            problems.append("a response must carry the 'id' of the request it answers")
            return problems
        rid = msg["id"]
        id_problem = _id_problem(rid, allow_null=has_error and not has_result)
        if id_problem:
            problems.append(
                id_problem
                if rid is not None
                else "'id' may be null only in an error response (parse error / invalid request)"
            )

        method: str | None = None
        if rid is not None and not id_problem:
            key = _id_key(rid)
            if key in self._client_pending:
                method = self._client_pending.pop(key)
                self._client_answered[key] = method
            elif key in self._client_answered:
                problems.append(
                    f"duplicate response to id {_short(rid)} "
                    f"({self._client_answered[key]!r} was already answered)"
                )
            else:
                problems.append(
                    f"response to unknown request id {_short(rid)}: the client sent no such request"
                )

        if has_error:
            error_problems = validate_def("Error", msg["error"], self.unstable)
            problems.extend(f"error: {p}" for p in error_problems)
        if has_result and not has_error and method is not None:
            result_type = self.tables.agent_responses.get(method)
            if result_type is not None:
                problems.extend(
                    f"result of {method!r} ({result_type}): {p}"
                    for p in validate_def(result_type, msg["result"], self.unstable)
                )
            elif not method.startswith("_"):
                problems.append(
                    f"success result for unknown method {method!r}; "
                    "expected a -32601 'Method not found' error"
                )
        return problems
