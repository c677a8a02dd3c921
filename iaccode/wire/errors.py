"""JSON-RPC error codes, and the one exception that carries them.

    RpcError                 raised anywhere below the dispatch layer; becomes an error response
      (constructed by)       parse_error, invalid_request, method_not_found, invalid_params,
                             internal_error, request_cancelled, auth_required, resource_not_found

Only the dispatch boundary turns an RpcError into a response; everything else just raises it.
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """An error that the peer should see as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_wire(cls, error: Any) -> RpcError:
        """Build from an error object the peer sent (tolerating malformed ones)."""
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            return cls(error["code"], str(error.get("message", "")), error.get("data"))
        return cls(INTERNAL_ERROR, "peer sent a malformed error object", error)


def parse_error(detail: str) -> RpcError:
    return RpcError(PARSE_ERROR, "Parse error", {"detail": detail})


def invalid_request(detail: str) -> RpcError:
    return RpcError(INVALID_REQUEST, "Invalid request", {"detail": detail})


def method_not_found(method: str) -> RpcError:
    return RpcError(METHOD_NOT_FOUND, "Method not found", {"method": method})


def invalid_params(problems: dict[str, str]) -> RpcError:
    """`problems` maps a wire path such as ``params.sessionId`` to what is wrong with it."""
    return RpcError(INVALID_PARAMS, "Invalid params", problems)


def internal_error(detail: str) -> RpcError:
    return RpcError(INTERNAL_ERROR, "Internal error", {"detail": detail})


def request_cancelled() -> RpcError:
    return RpcError(REQUEST_CANCELLED, "Request cancelled")


def auth_required(detail: str) -> RpcError:
    return RpcError(AUTH_REQUIRED, "Authentication required", {"detail": detail})


def resource_not_found(detail: str) -> RpcError:
    return RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"detail": detail})
