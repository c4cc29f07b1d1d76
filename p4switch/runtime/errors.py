"""Errors raised by the runtime state, carrying the P4Runtime status code PI would return."""

from __future__ import annotations

CODES = (
    "INVALID_ARGUMENT",
    "ALREADY_EXISTS",
    "NOT_FOUND",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "UNIMPLEMENTED",
    "OUT_OF_RANGE",
    "FAILED_PRECONDITION",
    "UNKNOWN",  # what PI reports when the target (BMv2) itself refuses an operation
)


class RuntimeApiError(Exception):
    """A rejected control-plane operation.

    `code` is the google.rpc code name a P4Runtime server reports for it; the message says
    what was rejected and why.
    """

    def __init__(self, code: str, message: str) -> None:
        if code not in CODES:
            raise ValueError(f"unknown status code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def invalid(message: str) -> RuntimeApiError:
    return RuntimeApiError("INVALID_ARGUMENT", message)


def invalid_id(what: str, id_: int) -> RuntimeApiError:
    """A P4Runtime id that names no `what` (PI's message)."""
    return invalid(f"Invalid P4 id {id_} ({what})")


def not_found(message: str) -> RuntimeApiError:
    return RuntimeApiError("NOT_FOUND", message)


def already_exists(message: str) -> RuntimeApiError:
    return RuntimeApiError("ALREADY_EXISTS", message)


def denied(message: str) -> RuntimeApiError:
    return RuntimeApiError("PERMISSION_DENIED", message)


def exhausted(message: str) -> RuntimeApiError:
    return RuntimeApiError("RESOURCE_EXHAUSTED", message)


def out_of_range(message: str) -> RuntimeApiError:
    return RuntimeApiError("OUT_OF_RANGE", message)


def unimplemented(message: str) -> RuntimeApiError:
    return RuntimeApiError("UNIMPLEMENTED", message)
