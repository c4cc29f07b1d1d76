"""P4Info generation from the control-plane model, interchangeable with p4c's.

Names come from the model (fully qualified as p4c writes them), ids and aliases are assigned as
p4c assigns them (`p4switch.p4info.ids`), and the objects are emitted in the model's order,
field by field as p4c's P4Runtime serializer fills them for v1model. `p4info_text()` gives the
`.p4info.txtpb` form p4c writes.
"""

from __future__ import annotations

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch import (
    cpmodel,
    externs,  # (its modules import p4switch.p4info.ids)
)
from p4switch.p4info import ids
from p4switch.p4info.annotations import PROFILE_ONLY, add_annotations, package_info, string_literal

__all__ = ["build_p4info", "p4info_text"]

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}


def build_p4info(model: cpmodel.ControlPlaneModel) -> p4info_pb2.P4Info:
    """The P4Info p4c (`--arch v1model`) generates for the program `model` describes."""
    symbols = _collect_symbols(model)
    return _Builder(model, symbols).build()


def p4info_text(p4info: p4info_pb2.P4Info) -> str:
    """The text form p4c writes to `<name>.p4info.txtpb`."""
    return (
        "# proto-file: p4/config/v1/p4info.proto\n"
        "# proto-message: p4.config.v1.P4Info\n\n" + text_format.MessageToString(p4info)
    )


def _collect_symbols(model: cpmodel.ControlPlaneModel) -> ids.SymbolIds:
    symbols = ids.SymbolIds()
    for action in model.actions:
        symbols.add(ids.ACTION, action.name, action.explicit_id)
    for table in model.tables:
        symbols.add(ids.TABLE, table.name, table.explicit_id)
    for profile in model.action_profiles:
        symbols.add(ids.ACTION_PROFILE, profile.name, profile.explicit_id)
    for extern in externs.EXTERNS.values():  # ids are per kind: the order among kinds is free
        listed = extern.p4info_symbols or extern.p4info_objects
        for obj in listed(model):
            assert extern.p4info_kind is not None  # an extern with P4Info objects has a kind
            symbols.add(extern.p4info_kind, obj.name, obj.explicit_id)
    for digest in model.digests:
        symbols.add(ids.DIGEST, digest.name, digest.explicit_id)
    for header in model.controller_headers:
        symbols.add(ids.CONTROLLER_HEADER, header.type_name or header.name, header.explicit_id)
    symbols.assign()
    return symbols


def _hidden(obj: cpmodel.Named) -> bool:
    return obj.annotation("hidden") is not None


class _Builder:
    def __init__(self, model: cpmodel.ControlPlaneModel, symbols: ids.SymbolIds) -> None:
        self.model = model
        self.symbols = symbols
        self.p4info = p4info_pb2.P4Info()

    def preamble(self, message, kind: int, name: str, obj: cpmodel.Named, skip=None) -> None:
        preamble = message.preamble
        preamble.id = self.symbols.id(kind, name)
        preamble.name = name
        preamble.alias = self.symbols.alias(name)
        add_annotations(preamble, obj.annotations, skip or (lambda name: False))

    def build(self) -> p4info_pb2.P4Info:
        model, info = self.model, self.p4info
        package_info(info.pkg_info, model.package_annotations)
        if self._has_type_info():
            info.type_info.SetInParent()
        for table in model.tables:
            if not _hidden(table):
                self.table(table)
        for action in _unique(model.actions):
            if not _hidden(action):
                self.action(action)
        for profile in model.action_profiles:
            self.action_profile(profile)
        for extern in externs.EXTERNS.values():
            for obj in extern.p4info_objects(model):
                assert extern.p4info_entry is not None  # objects listed have an entry
                extern.p4info_entry(self, obj)
        for digest in _unique(model.digests):
            self.digest(digest)
        for header in model.controller_headers:
            if not _hidden(header):
                self.controller_header(header)
        for enum in model.serializable_enums:
            self.serializable_enum(enum)
        for new_type in model.new_types:
            spec = info.type_info.new_types[new_type.name]
            if new_type.translation_uri is not None:
                spec.translated_type.uri = new_type.translation_uri
                spec.translated_type.sdn_bitwidth = new_type.sdn_bitwidth or new_type.bitwidth
            else:
                spec.original_type.bitstring.bit.bitwidth = new_type.bitwidth
        return info

    def _has_type_info(self) -> bool:
        # p4c creates the (possibly empty) type_info as soon as it converts any type: a table key,
        # an action parameter, an extern instance (used or not), a digest or a controller
        # header field; and for every call of an extern function from a control.
        m = self.model
        return bool(
            m.calls_extern_functions
            or m.unattached_direct
            or m.tables
            or any(a.params for a in m.actions)
            or m.action_profiles
            or m.counters
            or m.meters
            or m.registers
            or any(m.extern_lists.values())
            or m.digests
            or any(h.fields for h in m.controller_headers)
            or m.serializable_enums
            or m.new_types
        )

    def table(self, table: cpmodel.Table) -> None:
        msg = self.p4info.tables.add()
        self.preamble(msg, ids.TABLE, table.name, table)
        for index, (mf, field_id) in enumerate(_field_ids(table.match_fields)):
            if mf.match_kind == "selector":
                continue  # counted for the ids of the fields after it, never listed
            out = msg.match_fields.add()
            out.id = field_id
            out.name = mf.name
            add_annotations(out, mf.annotations)
            out.bitwidth = mf.bitwidth
            if mf.match_kind not in _MATCH_TYPES:
                raise ValueError(f"table {table.name}: key {index} has match kind {mf.match_kind}")
            out.match_type = _MATCH_TYPES[mf.match_kind]
            if mf.type_name:
                out.type_name.name = mf.type_name
        for ref in table.action_refs:
            out = msg.action_refs.add()
            out.id = self.symbols.id(ids.ACTION, ref.name)
            add_annotations(out, ref.annotations)
            out.scope = _SCOPES[ref.scope]
        if table.default_action is not None:
            action_id = self.symbols.id(ids.ACTION, table.default_action.action)
            if table.const_default_action:
                msg.const_default_action_id = action_id
            initial = msg.initial_default_action
            initial.action_id = action_id
            action = self.model.action(table.default_action.action)
            for (param_id, param), value in zip(
                _param_ids(action.params), table.default_action.args, strict=False
            ):
                arg = initial.arguments.add()
                arg.param_id = param_id
                arg.value = value.to_bytes((param.bitwidth + 7) // 8, "big")
        msg.size = table.size or 1024  # p4c: size 0 means the default size
        if table.idle_timeout:
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        if table.is_const:
            msg.is_const_table = True
        if table.const_entries:
            msg.has_initial_entries = True
        if table.implementation is not None:
            msg.implementation_id = self.symbols.id(ids.ACTION_PROFILE, table.implementation)
        for extern in externs.EXTERNS.values():
            name = getattr(table, extern.table_attribute) if extern.table_attribute else None
            if name is not None:
                assert extern.p4info_kind is not None and extern.p4info_entry is not None
                msg.direct_resource_ids.append(self.symbols.id(extern.p4info_kind, name))
                extern.p4info_entry(self, name)

    def action(self, action: cpmodel.Action) -> None:
        msg = self.p4info.actions.add()
        self.preamble(msg, ids.ACTION, action.name, action)
        for param_id, param in _param_ids(action.params):
            out = msg.params.add()
            out.id = param_id
            out.name = param.name
            add_annotations(out, param.annotations)
            out.bitwidth = param.bitwidth
            if param.type_name:
                out.type_name.name = param.type_name

    def action_profile(self, profile: cpmodel.ActionProfile) -> None:
        msg = self.p4info.action_profiles.add()
        self.preamble(
            msg, ids.ACTION_PROFILE, profile.name, profile, lambda n: n in PROFILE_ONLY
        )
        for table in sorted(profile.table_names, key=str.encode):
            msg.table_ids.append(self.symbols.id(ids.TABLE, table))
        msg.with_selector = profile.with_selector
        msg.size = profile.size
        if not profile.with_selector:
            return
        max_group = profile.annotation("max_group_size")
        if profile.max_group_size:
            msg.max_group_size = profile.max_group_size
        elif max_group is not None:
            msg.max_group_size = int(max_group.body.strip(), 0)
        semantics = profile.annotation("selector_size_semantics")
        if semantics is not None:
            value = string_literal(semantics.body).upper()
            if value == "SUM_OF_WEIGHTS":
                msg.sum_of_weights.SetInParent()
            elif value == "SUM_OF_MEMBERS":
                msg.sum_of_members.SetInParent()
                weight = profile.annotation("max_member_weight")
                if weight is not None:
                    msg.sum_of_members.max_member_weight = int(weight.body.strip(), 0)

    def digest(self, digest: cpmodel.Digest) -> None:
        msg = self.p4info.digests.add()
        self.preamble(msg, ids.DIGEST, digest.name, digest)
        msg.type_spec.struct.name = digest.name
        struct = self.p4info.type_info.structs[digest.name]
        if struct.members:
            return
        for field in digest.fields:
            member = struct.members.add()
            member.name = field.name
            member.type_spec.bitstring.bit.bitwidth = field.bitwidth

    def serializable_enum(self, enum: cpmodel.SerializableEnum) -> None:
        spec = self.p4info.type_info.serializable_enums[enum.name]
        if spec.members:
            return
        spec.underlying_type.bitwidth = enum.bitwidth
        nbytes = (enum.bitwidth + 7) // 8
        for name, value in enum.members:
            member = spec.members.add()
            member.name = name
            member.value = (value & ((1 << enum.bitwidth) - 1)).to_bytes(nbytes, "big")

    def controller_header(self, header: cpmodel.ControllerHeader) -> None:
        msg = self.p4info.controller_packet_metadata.add()
        type_name = header.type_name or header.name
        preamble = msg.preamble
        preamble.id = self.symbols.id(ids.CONTROLLER_HEADER, type_name)
        preamble.name = header.name
        preamble.alias = header.name
        add_annotations(preamble, header.annotations)
        for field_id, field in enumerate(header.fields, start=1):
            out = msg.metadata.add()
            out.id = field_id
            out.name = field.name
            out.bitwidth = field.bitwidth


def _unique(items: list) -> list:
    """The first object of each name (p4c serializes an action or digest once)."""
    seen: set[str] = set()
    unique = []
    for item in items:
        if item.name not in seen:
            seen.add(item.name)
            unique.append(item)
    return unique


def _allocate(items: list, explicit: list[int | None]) -> list[int]:
    """p4c's FieldIdAllocator: `@id`s first, then 1, 2, ... by position, skipping used ones."""
    used = {e for e in explicit if e is not None}
    result: list[int] = []
    index = 1
    for e in explicit:
        if e is not None:
            result.append(e)
            index += 1
            continue
        while index in used:
            index += 1
        result.append(index)
        used.add(index)
    return result


def _field_ids(fields: list[cpmodel.MatchField]) -> list[tuple[cpmodel.MatchField, int]]:
    return list(zip(fields, _allocate(fields, [f.explicit_id for f in fields]), strict=True))


def _param_ids(params: list[cpmodel.Param]) -> list[tuple[int, cpmodel.Param]]:
    return list(zip(_allocate(params, [p.explicit_id for p in params]), params, strict=True))
