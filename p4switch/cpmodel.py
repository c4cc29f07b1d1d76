"""The control-plane view of a compiled P4 program.

Plain data produced by the front end from the typed IR and consumed by the P4Info generator,
the runtime state (tables, profiles, externs) and the P4Runtime server. Names are fully
qualified as p4c writes them (`MyIngress.ipv4_lpm`, top-level `NoAction`); no numeric ids here:
ids are assigned when the P4Info is generated (`p4switch.p4info`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TypeVar

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional", "selector")
SCOPES = ("TABLE_AND_DEFAULT", "TABLE_ONLY", "DEFAULT_ONLY")
N = TypeVar("N", bound="Named")


@dataclass(frozen=True)
class Annotation:
    """A source annotation, `@name(body)`; `body` is the raw text between the parentheses."""

    name: str
    body: str = ""

    def __str__(self) -> str:
        return f"@{self.name}({self.body})" if self.body else f"@{self.name}"


@dataclass
class Named:
    """Common part of every control-plane object."""

    name: str
    annotations: list[Annotation] = field(default_factory=list)
    explicit_id: int | None = None  # from @id(N)

    def annotation(self, name: str) -> Annotation | None:
        return next((a for a in self.annotations if a.name == name), None)


@dataclass
class Param(Named):
    bitwidth: int = 0
    type_name: str | None = None  # a `type` (new type) name when the parameter has one


@dataclass
class Action(Named):
    params: list[Param] = field(default_factory=list)


@dataclass
class ActionRef(Named):
    """An action listed in a table's `actions`; `name` is the action's fully qualified name."""

    scope: str = "TABLE_AND_DEFAULT"


@dataclass
class MatchField(Named):
    """A table key field; `name` as p4c writes it (`hdr.ipv4.dstAddr`, `hdr.x.$valid$`)."""

    bitwidth: int = 0
    match_kind: str = "exact"
    type_name: str | None = None  # a `type` (new type) name when the key has one


@dataclass(frozen=True)
class ActionCall:
    """An action with its arguments, in parameter order."""

    action: str
    args: tuple[int, ...] = ()


@dataclass(frozen=True)
class FieldMatch:
    """One key field of an entry. kind is a match kind; unused parts stay None.

    exact/optional: value; lpm: value, prefix_len; ternary: value, mask; range: low, high.
    A don't-care field is represented by None in the entry's `keys`, not by a FieldMatch.
    """

    kind: str
    value: int | None = None
    mask: int | None = None
    prefix_len: int | None = None
    low: int | None = None
    high: int | None = None


@dataclass
class ConstEntry:
    keys: list[FieldMatch | None]
    action: ActionCall
    priority: int | None = None


@dataclass
class Table(Named):
    match_fields: list[MatchField] = field(default_factory=list)
    action_refs: list[ActionRef] = field(default_factory=list)
    default_action: ActionCall | None = None
    const_default_action: bool = False
    const_entries: list[ConstEntry] | None = None  # None: entries are not const
    size: int = 1024
    implementation: str | None = None  # action profile / selector name
    direct_counter: str | None = None
    direct_meter: str | None = None
    selector_fields: list[MatchField] = field(default_factory=list)  # key fields of kind selector
    idle_timeout: bool = False

    @property
    def is_const(self) -> bool:
        return self.const_entries is not None


@dataclass
class ActionProfile(Named):
    table_names: list[str] = field(default_factory=list)
    with_selector: bool = False
    size: int = 1024
    max_group_size: int = 0
    selector_algorithm: str | None = None  # e.g. "crc16"
    selector_output_width: int = 32


@dataclass
class Counter(Named):
    unit: str = "packets_and_bytes"  # "packets", "bytes", "packets_and_bytes"
    size: int = 0
    direct_table: str | None = None  # set for direct counters


@dataclass
class Meter(Named):
    unit: str = "bytes"  # "packets" or "bytes"
    size: int = 0
    direct_table: str | None = None  # set for direct meters


@dataclass
class Register(Named):
    bitwidth: int = 0
    size: int = 0
    signed: bool = False
    type_name: str | None = None  # a serializable enum's name when the element type is one


@dataclass
class StructField:
    name: str
    bitwidth: int


@dataclass
class Digest(Named):
    """A digest; `name` is the digest data's type name, as p4c names it."""

    fields: list[StructField] = field(default_factory=list)


@dataclass
class ControllerHeader(Named):
    """A `@controller_header("packet_in")` header; `name` is the annotation's argument."""

    fields: list[StructField] = field(default_factory=list)
    type_name: str = ""


@dataclass
class NewType:
    """`type bit<W> Name;` (maybe `@p4runtime_translation(uri, bit<N>)`), as P4Info's type_info
    describes it."""

    name: str
    bitwidth: int
    translation_uri: str | None = None
    sdn_bitwidth: int | None = None


@dataclass
class SerializableEnum:
    """`enum bit<W> Name { A = 1, ... }`, as P4Info's type_info describes it."""

    name: str
    bitwidth: int
    members: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class ControlPlaneModel:
    """Everything a controller can see of one program."""

    program: str
    tables: list[Table] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    action_profiles: list[ActionProfile] = field(default_factory=list)
    counters: list[Counter] = field(default_factory=list)  # direct ones have direct_table set
    meters: list[Meter] = field(default_factory=list)  # direct ones have direct_table set
    registers: list[Register] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)
    controller_headers: list[ControllerHeader] = field(default_factory=list)
    # Annotations of the `main` package instance (@pkginfo, @platform_property, others).
    package_annotations: list[Annotation] = field(default_factory=list)
    # Serializable enum types of key fields, action parameters, controller header fields,
    # register elements and digest fields (p4c describes those in P4Info's type_info).
    serializable_enums: list[SerializableEnum] = field(default_factory=list)
    # New types (`type`) of key fields and action parameters, likewise.
    new_types: list[NewType] = field(default_factory=list)
    # Direct counters and meters that no table uses: p4c lists them nowhere, but they have
    # P4Runtime ids and count for the aliases of the other names.
    unattached_direct: list[Counter | Meter] = field(default_factory=list)
    # A control calls an extern function (mark_to_drop, hash, digest, ...): p4c then creates
    # P4Info's type_info, even if nothing goes into it.
    calls_extern_functions: bool = False
    # Instances of a stateful extern kind (p4switch.externs) that has no list field above, by
    # the list name its module gives `ModelBuilder.add`: a new kind needs no field here.
    extern_lists: dict[str, list] = field(default_factory=dict)

    def instances(self, list_name: str) -> list:
        """The model's list `list_name`: a list field above (`tables`, `counters`, ...) or
        else an entry of `extern_lists`, made empty on first use."""
        if list_name in LIST_FIELDS:
            return getattr(self, list_name)
        return self.extern_lists.setdefault(list_name, [])

    def table(self, name: str) -> Table:
        return find_named(self.tables, name, "table")

    def action(self, name: str) -> Action:
        return find_named(self.actions, name, "action")


# ControlPlaneModel's list fields (`instances` hands out these themselves)
LIST_FIELDS = frozenset(f.name for f in fields(ControlPlaneModel)
                        if f.type.startswith("list[")) - {"extern_lists"}


def find_named(items: list[N], name: str, kind: str) -> N:
    """The item of `items` named `name` (fully qualified); KeyError("no <kind> named ...")."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(f"no {kind} named {name!r}")
