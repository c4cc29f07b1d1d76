"""What one stateful extern provides, and the helpers its parts share.

An `ExternKind` gathers, for one v1model extern type, what the rest of p4switch asks of it:
the control-plane model entry of a declaration and the generated code of its method calls
(backend), its runtime state (`RuntimeState.externs`), its P4Info entry, its P4Runtime
entity (Read/Write) and its runtime-CLI commands. `p4switch.externs.EXTERNS` lists them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from p4switch.runtime.cli_parsing import CliError
from p4switch.runtime.errors import invalid, invalid_id, out_of_range, unimplemented

if TYPE_CHECKING:  # protobuf only where P4Info or P4Runtime is used: the packet path never is
    from p4.v1 import p4runtime_pb2

# (generator context, the instance's symbol, control-plane name, annotations, @id,
#  constructor arguments, model order key) -> closure variable of the instance (None: direct)
Declare = Callable[[Any, Any, str, list, "int | None", list, tuple], "str | None"]
# (generator context, call, instance expression, env) -> expression or None (statement)
MethodGen = Callable[[Any, Any, Any, Any], "str | None"]
CliCommand = Callable[[Any, list[str]], None]


# Where a register's or counter's values live: a list, or the C data plane's memory.
Cells = Union[list[int], "ctypes.Array[ctypes.c_uint64]"]


@dataclass(frozen=True)
class P4RuntimeEntity:
    """P4Runtime Read/Write of the entity `field` of `p4.v1.Entity` (e.g. `counter_entry`)."""

    field: str
    read: Callable[[ExternCodec, Any], list]
    write: Callable[[ExternCodec, int, Any], None]


@dataclass(frozen=True)
class ExternKind:
    """One stateful extern: see the module docstring."""

    type_name: str  # the P4 extern type: `counter`
    declare: Declare
    methods: Mapping[str, MethodGen] = field(default_factory=dict)
    # a direct extern is attached to a table (its cp.Table attribute `table_attribute` names
    # it); `unattached` gives the model entry of one no table uses
    direct: bool = False
    table_attribute: str | None = None
    unattached: Callable[[str, list, int | None, list], Any] | None = None
    # P4Info: kind of id (p4switch.p4info.ids); the objects of a model listed with an entry
    # (a direct extern's entry, made from its name, follows its table's); the objects that
    # have an id (default: those listed)
    p4info_kind: int | None = None
    p4info_objects: Callable[[Any], list] = lambda model: []
    p4info_entry: Callable[[Any, Any], None] | None = None
    p4info_symbols: Callable[[Any], list] | None = None
    # runtime state: {name: state} of the objects `state_objects` gives, made by `new_state`
    state_objects: Callable[[Any], list] | None = None
    new_state: Callable[[Any], Any] | None = None
    entity: P4RuntimeEntity | None = None
    cli: Mapping[str, CliCommand] = field(default_factory=dict)


@dataclass
class ExternCodec:
    """What an extern's P4Runtime Read/Write works on."""

    index: Any  # P4InfoIndex
    state: Any  # RuntimeState
    tables: Any  # server.tables.TableCodec


# ---- P4Runtime helpers ---------------------------------------------------------------------

def check_modify(kind: int, what: str) -> None:
    """Externs take MODIFY updates only."""
    from p4.v1.p4runtime_pb2 import Update

    if kind == Update.UNSPECIFIED:
        raise invalid("Update type is not set")
    if kind != Update.MODIFY:
        name = Update.Type.Name(kind) if kind in Update.Type.values() else str(kind)
        raise invalid(f"{name} update type not supported for {what}")


def objects(index: Any, kind: str, id_: int, what: str) -> list:
    """The P4Info objects of `kind` a read names: all for id 0, else the one with id_."""
    if id_ == 0:
        return list(getattr(index.p4info, kind))
    if index.kind(id_) != kind:
        raise invalid_id(what, id_)
    return [index.get(id_)]


def indices(msg: Any, size: int) -> range:
    """The indices a read names: all without an index, else the one given."""
    if not msg.HasField("index"):
        return range(size)
    i = msg.index.index
    if i < 0:
        raise invalid("A negative number is not a valid index value")
    if i >= size:
        raise out_of_range(f"index {i} out of range (size {size})")
    return range(i, i + 1)


def check_indexed_write(codec: ExternCodec, kind_name: str, id_: int, msg: Any,
                        what: str) -> None:
    """An indexed extern's write names one of its objects and one index >= 0."""
    if codec.index.kind(id_) != kind_name:
        raise invalid_id(what, id_)
    if not msg.HasField("index"):
        raise unimplemented(f"Wildcard write is not supported for indirect {what}s yet")
    if msg.index.index < 0:
        raise invalid("A negative number is not a valid index value")


def entry_of(codec: ExternCodec, te: p4runtime_pb2.TableEntry):
    """(table P4Info, runtime table, entry) a direct extern's entity names."""
    info, table = codec.tables._table(te.table_id)
    return info, table, table.get(codec.tables.decode_key(info, te), te.priority)


def table_entries(codec: ExternCodec, te: p4runtime_pb2.TableEntry, has: str) -> list:
    """(table P4Info, entry) of every entry of the tables a wildcard direct read names whose
    model has the direct extern `has` (`direct_counter` / `direct_meter`)."""
    infos = objects(codec.index, "tables", te.table_id, "table")
    tables = codec.state.tables
    return [(i, e) for i in infos if getattr(tables[i.preamble.name].model, has)
            for e in tables[i.preamble.name].entries()]


def read_entries(codec: ExternCodec, te: p4runtime_pb2.TableEntry, has: str,
                 lookup: Callable = entry_of) -> list:
    """(table P4Info, entry) pairs a direct extern's Read names: with no table or no match,
    every entry of the tables with `has` (`table_entries`); else the one entry `lookup` finds."""
    if te.table_id == 0 or not te.match:
        return table_entries(codec, te, has)
    info, _, entry = lookup(codec, te)
    return [(info, entry)]


# ---- runtime CLI helpers --------------------------------------------------------------------

def cli_index(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CliError("Error: Bad format for index") from None
