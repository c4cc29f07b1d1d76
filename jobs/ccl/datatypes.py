"""Datatypes and reduction ops by nccl-tests' names (`-d`, `-o`), with the numbers of NCCL's
ncclDataType_t and ncclRedOp_t that the engine (jobs/ccl/c/ccl.h) uses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataType:
    name: str
    code: int
    size: int
    numpy: str  # numpy's dtype name (tests read buffers with it)


TYPES: dict[str, DataType] = {t.name: t for t in (
    DataType("int8", 0, 1, "int8"), DataType("uint8", 1, 1, "uint8"),
    DataType("int32", 2, 4, "int32"), DataType("uint32", 3, 4, "uint32"),
    DataType("int64", 4, 8, "int64"), DataType("uint64", 5, 8, "uint64"),
    DataType("half", 6, 2, "float16"), DataType("float", 7, 4, "float32"),
    DataType("double", 8, 8, "float64"), DataType("bfloat16", 9, 2, "uint16"),
)}
REDOPS: dict[str, int] = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
NO_OP = 255  # collectives that only move data (nccl-tests prints "none")


def datatype(name: str) -> DataType:
    try:
        return TYPES[name]
    except KeyError:
        raise ValueError(f"unknown datatype {name!r} (one of {', '.join(TYPES)})") from None


def redop(name: str) -> int:
    try:
        return REDOPS[name]
    except KeyError:
        raise ValueError(f"unknown reduction {name!r} (one of {', '.join(REDOPS)})") from None


def names(arg: str, known: dict) -> list[str]:
    """A -d/-o argument: one name, several separated by commas, or "all" (nccl-tests)."""
    if arg == "all":
        return list(known)
    out = [a.strip() for a in arg.split(",") if a.strip()]
    unknown = [a for a in out if a not in known]
    if unknown or not out:
        raise ValueError(f"unknown {'datatype' if known is TYPES else 'reduction'} "
                         f"{', '.join(unknown) or repr(arg)} (one of {', '.join(known)}, all)")
    return out
