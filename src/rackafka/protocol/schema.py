"""Versioned message schemas: declared once, compiled per version.

An API is declared as two :class:`Struct` trees (request and response) whose
:class:`Field` entries carry the versions they exist in, the versions in which
they may be null, and, for tagged fields, their tag.  For every version a codec
is compiled once (a flat list of reader/writer closures) and cached.

Flexible versions (KIP-482) use the same declarations: strings, bytes and arrays
switch to their compact forms and every struct gains a tagged-field section.

Decoded structs are instances of a class generated per :class:`Struct` with one
slot per field of *any* version, so code that reads a response never has to
branch on the version: a field absent from the version holds its default.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, ClassVar

from rackafka.errors import KafkaProtocolError
from rackafka.protocol import primitives as p

Reader = p.Reader
Writer = p.Writer

MAX_VERSION = 0x7FFF


def parse_versions(spec: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """Parse a version range: ``"3+"``, ``"0-11"``, ``"5"``, ``"none"`` or a tuple."""
    if spec is None or spec == "none":
        return None
    if isinstance(spec, tuple):
        return spec
    spec = spec.strip()
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-", 1)
        return int(lo), int(hi)
    v = int(spec)
    return v, v


def _in(rng: tuple[int, int] | None, version: int) -> bool:
    return rng is not None and rng[0] <= version <= rng[1]


# -- types ------------------------------------------------------------------------


class Type:
    """A wire type; compiles to a reader and a writer for a version."""

    name: str = "?"

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        raise NotImplementedError

    def default(self, nullable: bool) -> Any:
        return None

    def __repr__(self) -> str:
        return self.name


class _Fixed(Type):
    def __init__(self, name: str, reader: Reader, writer: Writer, zero: Any) -> None:
        self.name = name
        self._rw = (reader, writer)
        self._zero = zero

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        return self._rw

    def default(self, nullable: bool) -> Any:
        return self._zero


INT8 = _Fixed("int8", p.read_int8, p.write_int8, 0)
INT16 = _Fixed("int16", p.read_int16, p.write_int16, 0)
INT32 = _Fixed("int32", p.read_int32, p.write_int32, 0)
INT64 = _Fixed("int64", p.read_int64, p.write_int64, 0)
UINT16 = _Fixed("uint16", p.read_uint16, p.write_uint16, 0)
UINT32 = _Fixed("uint32", p.read_uint32, p.write_uint32, 0)
FLOAT64 = _Fixed("float64", p.read_float64, p.write_float64, 0.0)
BOOL = _Fixed("bool", p.read_bool, p.write_bool, False)
UUID = _Fixed("uuid", p.read_uuid, p.write_uuid, p.ZERO_UUID)
VARINT = _Fixed("varint", p.read_varint, p.write_varint, 0)
VARLONG = _Fixed("varlong", p.read_varlong, p.write_varlong, 0)


class _String(Type):
    name = "string"

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        return p.string_codec(flexible, nullable)

    def default(self, nullable: bool) -> Any:
        return None if nullable else ""


class _Bytes(Type):
    def __init__(self, name: str) -> None:
        self.name = name

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        return p.bytes_codec(flexible, nullable)

    def default(self, nullable: bool) -> Any:
        return None if nullable else b""


STRING = _String()
BYTES = _Bytes("bytes")
#: Record data (a record batch or message set); nullable bytes on the wire.
RECORDS = _Bytes("records")


class Array(Type):
    """An array of ``item``; compact (uvarint length + 1) in flexible versions."""

    def __init__(self, item: Type) -> None:
        self.item = item
        self.name = f"[{item.name}]"

    def codec(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        read_item, write_item = self.item.codec(version, flexible, False)
        read_len = p.read_length

        def read(buf: bytes, pos: int) -> tuple[list[Any] | None, int]:
            n, pos = read_len(buf, pos, flexible)
            if n < 0:
                if n == -1 and nullable:
                    return None, pos
                raise KafkaProtocolError(f"invalid array length {n} at offset {pos}")
            if n > len(buf) - pos:
                raise KafkaProtocolError(
                    f"array of {n} items at offset {pos} cannot fit in the remaining "
                    f"{len(buf) - pos} bytes"
                )
            items: list[Any] = []
            append = items.append
            for _ in range(n):
                item, pos = read_item(buf, pos)
                append(item)
            return items, pos

        def write(out: bytearray, value: Sequence[Any] | None) -> None:
            if value is None:
                if not nullable:
                    raise ValueError("a non-nullable array was given None")
                p.write_length(out, -1, flexible)
                return
            p.write_length(out, len(value), flexible)
            for item in value:
                write_item(out, item)

        return read, write

    def default(self, nullable: bool) -> Any:
        return None if nullable else []


@dataclass(frozen=True)
class Field:
    """A field of a struct.

    ``versions`` and ``nullable`` take Kafka's notation (``"3+"``, ``"0-11"``,
    ``"none"``).  A field with a ``tag`` is a tagged field, written only in
    flexible versions and only when it differs from its default.
    """

    name: str
    type: Type
    versions: str | tuple[int, int] = "0+"
    nullable: str | tuple[int, int] | None = None
    tag: int | None = None
    default: Any = field(default=..., compare=False)

    def version_range(self) -> tuple[int, int]:
        rng = parse_versions(self.versions)
        assert rng is not None, self
        return rng

    def nullable_in(self, version: int) -> bool:
        return _in(parse_versions(self.nullable), version)

    def default_value(self) -> Any:
        """The value a field holds when absent: a fresh copy for lists and structs."""
        return self.make_default()

    @cached_property
    def make_default(self) -> Callable[[], Any]:
        """A function of no arguments that returns :meth:`default_value` (worked out once:
        decoding calls it for every absent or tagged field of every struct)."""
        value = self.default
        if value is ...:
            nullable = self.nullable is not None
            if not nullable and isinstance(self.type, Struct):
                return self.type.make_default
            if not nullable and isinstance(self.type, Array):
                return list
            value = self.type.default(nullable)
        if isinstance(value, list):
            return partial(list, value)
        return partial(_same, value)


def _same(value: Any) -> Any:
    return value


class StructValue:
    """Base of the generated struct classes: keyword construction, equality, repr."""

    __slots__: ClassVar[tuple[str, ...]] = ()
    _struct: ClassVar[Struct]

    def __init__(self, **kwargs: Any) -> None:
        for f in self._struct.fields:
            if f.name in kwargs:
                value = kwargs.pop(f.name)
                if isinstance(f.type, Struct) and isinstance(value, Mapping):
                    value = f.type.cls(**value)
                elif (
                    isinstance(f.type, Array)
                    and isinstance(f.type.item, Struct)
                    and value is not None
                ):
                    item_cls = f.type.item.cls
                    value = [item_cls(**v) if isinstance(v, Mapping) else v for v in value]
                object.__setattr__(self, f.name, value)
            else:
                object.__setattr__(self, f.name, f.default_value())
        if kwargs:
            raise TypeError(f"{type(self).__name__} has no field(s) {', '.join(sorted(kwargs))}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        inner = ", ".join(f"{s}={getattr(self, s)!r}" for s in self.__slots__)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """Return the struct as nested plain dicts and lists."""

        def conv(v: Any) -> Any:
            if isinstance(v, StructValue):
                return v.to_dict()
            if isinstance(v, list):
                return [conv(i) for i in v]
            return v

        return {s: conv(getattr(self, s)) for s in self.__slots__}


class Struct(Type):
    """A sequence of fields; also a type, for nested structs and array items."""

    def __init__(self, name: str, fields: Iterable[Field]) -> None:
        self.name = name
        self.fields: tuple[Field, ...] = tuple(fields)
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate field names in {name}: {names}")
        tags = [f.tag for f in self.fields if f.tag is not None]
        if len(set(tags)) != len(tags):
            raise ValueError(f"duplicate tags in {name}: {tags}")
        self.cls: type[StructValue] = type(
            name, (StructValue,), {"__slots__": tuple(names), "_struct": self}
        )
        self._codecs: dict[tuple[int, bool, bool], tuple[Reader, Writer]] = {}

    def default(self, nullable: bool) -> Any:
        return None if nullable else self.make_default()

    def make_default(self) -> StructValue:
        """A new value of the struct with every field at its default (as ``cls()``)."""
        obj = object.__new__(self.cls)
        for name, make in self._default_makers:
            object.__setattr__(obj, name, make())
        return obj

    @cached_property
    def _default_makers(self) -> tuple[tuple[str, Callable[[], Any]], ...]:
        return tuple((f.name, f.make_default) for f in self.fields)

    def codec(self, version: int, flexible: bool, nullable: bool = False) -> tuple[Reader, Writer]:
        key = (version, flexible, nullable)
        codec = self._codecs.get(key)
        if codec is None:
            codec = self._compile(version, flexible, nullable)
            self._codecs[key] = codec
        return codec

    def _compile(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        cls = self.cls
        new = object.__new__
        regular: list[tuple[str, Reader, Writer, Any]] = []
        tagged: dict[int, tuple[str, Reader, Writer, Field]] = {}
        absent: list[Field] = []
        for f in self.fields:
            lo, hi = f.version_range()
            if not lo <= version <= hi:
                absent.append(f)
                continue
            if f.tag is not None and not flexible:
                absent.append(f)
                continue
            rd, wr = f.type.codec(version, flexible, f.nullable_in(version))
            if f.tag is not None:
                tagged[f.tag] = (f.name, rd, wr, f)
            else:
                regular.append((f.name, rd, wr, f.default_value))
        fixed_absent = [
            (f.name, f.default_value()) for f in absent if not isinstance(f.default_value(), list)
        ]
        list_absent = [f.name for f in absent if isinstance(f.default_value(), list)]
        tag_defaults = [(name, f.make_default) for (name, _r, _w, f) in tagged.values()]
        read_regular = [(name, rd) for name, rd, _w, _d in regular]
        setattr_ = object.__setattr__
        read_uvarint = p.read_uvarint
        struct_name = self.name

        def read_struct(buf: bytes, pos: int) -> tuple[Any, int]:
            obj = new(cls)
            for name, rd in read_regular:
                value, pos = rd(buf, pos)
                setattr_(obj, name, value)
            for name, value in fixed_absent:
                setattr_(obj, name, value)
            for name in list_absent:
                setattr_(obj, name, [])
            if flexible:
                for name, make in tag_defaults:
                    setattr_(obj, name, make())
                count, pos = read_uvarint(buf, pos)
                for _ in range(count):
                    tag, pos = read_uvarint(buf, pos)
                    size, pos = read_uvarint(buf, pos)
                    end = pos + size
                    if end > len(buf):
                        raise KafkaProtocolError(
                            f"tagged field {tag} of {struct_name} runs past the end of the buffer"
                        )
                    known = tagged.get(tag)
                    if known is not None:
                        value, used = known[1](buf, pos)
                        if used != end:
                            raise KafkaProtocolError(
                                f"tagged field {tag} of {struct_name} declared {size} bytes "
                                f"but holds {used - pos}"
                            )
                        setattr_(obj, known[0], value)
                    pos = end
            return obj, pos

        # Each tagged field with its default, to compare with (never handed out).
        tagged_sorted = [
            (tag, (name, wr, f.default_value()))
            for tag, (name, _rd, wr, f) in sorted(tagged.items())
        ]

        def write_struct(out: bytearray, value: Any) -> None:
            get: Callable[[str, Any], Any]
            if isinstance(value, Mapping):
                get = value.get
            else:
                get = partial(getattr, value)

            for name, _rd, wr, default in regular:
                v = get(name, _MISSING)
                if v is _MISSING:
                    v = default()
                try:
                    wr(out, v)
                except (struct.error, ValueError, TypeError, AttributeError) as exc:
                    raise ValueError(f"cannot encode {struct_name}.{name}={v!r}: {exc}") from exc
            if flexible:
                present = []
                for tag, (name, wr, default_value) in tagged_sorted:
                    v = get(name, _MISSING)
                    if v is _MISSING or v == default_value:
                        continue
                    buf = bytearray()
                    wr(buf, v)
                    present.append((tag, buf))
                p.write_uvarint(out, len(present))
                for tag, buf in present:
                    p.write_uvarint(out, tag)
                    p.write_uvarint(out, len(buf))
                    out += buf

        if not nullable:
            return read_struct, write_struct

        def read_nullable(buf: bytes, pos: int) -> tuple[Any, int]:
            marker, pos = p.read_int8(buf, pos)
            if marker < 0:
                return None, pos
            return read_struct(buf, pos)

        def write_nullable(out: bytearray, value: Any) -> None:
            if value is None:
                out.append(0xFF)
            else:
                out.append(1)
                write_struct(out, value)

        return read_nullable, write_nullable


_MISSING = object()

_DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, TypeError)


@dataclass
class Api:
    """One Kafka API: its key, the versions we speak, and both schemas."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_from: int | None
    request: Struct
    response: Struct

    def __post_init__(self) -> None:
        self.Request = self.request.cls
        self.Response = self.response.cls

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            from rackafka.errors import UnsupportedVersionError

            raise UnsupportedVersionError(
                f"{self.name} v{version} is outside the versions rackafka speaks "
                f"({self.min_version}-{self.max_version})"
            )

    def request_header_version(self, version: int) -> int:
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions responses always use header v0 so that a client can read
        # the error of a version the broker does not understand (KIP-511).
        if self.key == 18:
            return 0
        return 1 if self.is_flexible(version) else 0

    def _codec(self, which: Struct, version: int) -> tuple[Reader, Writer]:
        self.check_version(version)
        return which.codec(version, self.is_flexible(version))

    def encode_request(self, version: int, value: Any) -> bytes:
        out = bytearray()
        self._codec(self.request, version)[1](out, value)
        return bytes(out)

    def write_request(self, out: bytearray, version: int, value: Any) -> None:
        """Append the encoded request ``value`` to ``out`` (a frame being built)."""
        self._codec(self.request, version)[1](out, value)

    def encode_response(self, version: int, value: Any) -> bytes:
        out = bytearray()
        self._codec(self.response, version)[1](out, value)
        return bytes(out)

    def decode_request(self, version: int, buf: bytes, pos: int = 0, exact: bool = True) -> Any:
        return self._decode(self.request, version, buf, pos, exact, "request")

    def decode_response(self, version: int, buf: bytes, pos: int = 0, exact: bool = True) -> Any:
        return self._decode(self.response, version, buf, pos, exact, "response")

    def _decode(
        self, which: Struct, version: int, buf: bytes, pos: int, exact: bool, kind: str
    ) -> Any:
        read = self._codec(which, version)[0]
        try:
            value, end = read(buf, pos)
        except KafkaProtocolError as exc:
            raise KafkaProtocolError(f"{self.name} v{version} {kind}: {exc}") from exc
        except _DECODE_FAILURES as exc:
            raise KafkaProtocolError(
                f"{self.name} v{version} {kind} is truncated or malformed "
                f"({len(buf) - pos} bytes): {exc}"
            ) from exc
        if exact and end != len(buf):
            raise KafkaProtocolError(
                f"{self.name} v{version} {kind} has {len(buf) - end} unexpected trailing bytes"
            )
        return value


def F(  # noqa: N802 - a short constructor keeps the schema tables readable
    name: str,
    type_: Type,
    versions: str = "0+",
    *,
    nullable: str | None = None,
    tag: int | None = None,
    default: Any = ...,
) -> Field:
    """Shorthand for :class:`Field` used by the schema tables."""
    return Field(name, type_, versions, nullable, tag, default)


def S(name: str, *fields: Field) -> Struct:  # noqa: N802
    """Shorthand for :class:`Struct`."""
    return Struct(name, fields)


def A(item: Type) -> Array:  # noqa: N802
    """Shorthand for :class:`Array`."""
    return Array(item)


UUID_ZERO: uuid.UUID = p.ZERO_UUID
CompiledReader = Callable[[bytes, int], "tuple[Any, int]"]
