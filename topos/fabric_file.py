"""A fabric model from JSON (`fabric-lab show --json` writes one): every field's type checked
against the model's dataclasses, every fault collected, then `topos.validation` on the result.

Faults name the field by its path, `links[3].b: missing`, `switches[0].grpc_port: must be an
integer, not '9559'`; reading a file, an OS error, a file that is not text or not JSON, or a
job file given for a fabric, is one line naming the path.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import Any

from topos.model import SCHEMA_VERSION, Endpoint, FabricSpec, Host, Link, Nic, Switch
from topos.validation import FabricError, validate

MAX_FILE_BYTES = 16 << 20  # a fabric of the largest size `topos.size` allows is far smaller
_NESTED = {"switches": Switch, "hosts": Host, "nics": Nic, "links": Link, "a": Endpoint,
           "b": Endpoint}


def read_fabric_file(path: Path) -> FabricSpec:
    """The validated fabric in JSON file `path`; FabricError naming the path and every fault."""
    source = f"fabric file {path}"
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise FabricError(str(path), [f"is {path.stat().st_size} bytes (at most "
                                          f"{MAX_FILE_BYTES})"], source)
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise FabricError(str(path), [f"cannot be read: {err.strerror or err}"], source) from None
    except UnicodeDecodeError:
        raise FabricError(str(path), ["is not a text file (JSON is UTF-8 text)"],
                          source) from None
    if not text.strip():
        raise FabricError(str(path), ["is empty"], source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise FabricError(str(path), [f"is not JSON: {err}"], source) from None
    if isinstance(data, Mapping) and not {"kind", "switches"} & set(data):
        raise FabricError(str(path), ["is not a fabric model (no 'kind', no 'switches'; "
                                      "`fabric-lab show FABRIC --json` writes one)"], source)
    return validate(spec_from_dict(data, source))


def spec_from_dict(data: Any, source: str = "fabric model") -> FabricSpec:
    """A FabricSpec from its JSON mapping (`FabricSpec.to_dict`); FabricError listing every
    field that is missing, unknown or of the wrong type."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise FabricError(source, [f"must be a JSON object, not {type(data).__name__}"], source)
    data = dict(data)
    schema = data.pop("schema", SCHEMA_VERSION)
    if schema != SCHEMA_VERSION:
        raise FabricError(source, [f"fabric JSON schema {schema!r} is not supported (expected "
                                   f"{SCHEMA_VERSION})"], source)
    spec = _read(FabricSpec, data, "", problems)
    if problems:
        name = data.get("name")
        raise FabricError(name if isinstance(name, str) else source, problems, source)
    assert isinstance(spec, FabricSpec)
    return spec


def _read(cls: type, data: Any, path: str, problems: list[str]) -> Any:
    """An instance of dataclass `cls` from `data`, or None with `problems` noted."""
    where = path or "the fabric"
    if not isinstance(data, Mapping):
        problems.append(f"{where}: must be an object, not {_shown(data)}")
        return None
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    problems += [f"{_join(path, str(key))}: unknown field" for key in data if key not in known]
    values: dict[str, Any] = {}
    ok = True
    for name, f in known.items():
        at = _join(path, name)
        if name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                problems.append(f"{at}: missing")
                ok = False
            continue
        value = _value(hints[name], data[name], at, name, problems)
        ok = ok and value is not _BAD
        values[name] = value
    return cls(**values) if ok else None


_BAD = object()


def _value(hint: Any, value: Any, at: str, name: str, problems: list[str]) -> Any:
    origin = typing.get_origin(hint)
    if origin is list:
        if not isinstance(value, list):
            problems.append(f"{at}: must be a list, not {_shown(value)}")
            return _BAD
        items = [_read(_NESTED[name], item, f"{at}[{i}]", problems) for i, item in
                 enumerate(value)]
        return _BAD if any(item is None for item in items) else items
    if origin is dict:
        if not isinstance(value, Mapping):
            problems.append(f"{at}: must be an object, not {_shown(value)}")
            return _BAD
        return dict(value)
    if is_dataclass(hint):
        read = _read(hint, value, at, problems)  # type: ignore[arg-type]
        return _BAD if read is None else read
    allowed = typing.get_args(hint) if origin in (typing.Union, types.UnionType) else (hint,)
    if value is None and type(None) in allowed:
        return None
    if float in allowed and isinstance(value, int) and not isinstance(value, bool):
        return value
    if any(kind is not type(None) and isinstance(value, kind) and
           not (isinstance(value, bool) and kind is not bool) for kind in allowed):
        return value
    wanted = " or ".join(_KIND_NAMES.get(kind, kind.__name__) for kind in allowed)
    problems.append(f"{at}: must be {wanted}, not {_shown(value)}")
    return _BAD


_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               type(None): "null"}


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


__all__ = ["MAX_FILE_BYTES", "read_fabric_file", "spec_from_dict"]
