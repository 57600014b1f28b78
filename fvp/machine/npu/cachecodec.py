"""The disk cache's object format: the NPU model's records as plain, schema-checked data, never a pickle.

``encode(obj, schema)`` writes a value made of ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples,
dicts and instances of the dataclasses of ``schema``; ``decode(data, schema)`` rebuilds it, each record as its
class's own constructor makes it. Nothing in the data names a module or a function: a record's class is named by
its class name, looked up in the schema (an exact dictionary built from the code, never from the data); the
entry lists the class's fields, which must be the class's fields in its order; each field's values must be of
a type the class declares for that field. Anything else is ``CodecError``.

A :class:`Schema` is made from the root dataclasses a cache namespace holds (``Schema(NpuOperation)``): it takes
them, the dataclasses their field annotations name, and the other dataclasses defined beside each of them (a
field annotated as a bare ``tuple`` may hold those). Renaming or moving a module changes nothing here; a class
the schema does not know cannot be written (the entry is then not cached) or read.

The encoding is JSON (parsed by the standard library's C parser) laid out so that the values are rebuilt by
few Python steps: records are stored as tables, one column per field, and a table's rows are made by one
``map`` of the class over its columns. A value is a scalar, or an array whose first element says what it is:

* ``[0, v...]`` a list, ``[1, v...]`` a tuple, ``[2, [k...], [v...]]`` a dict, ``[3, t]`` a list of the records
  of table ``t``, ``[4, t]`` the one record of table ``t``, ``[5, [s...], ...]`` a list of tuples of scalars,
  ``[6, e, value]`` the member of enumeration ``e`` (its position in the header's ``enums``) with that value;
* a table is ``[class, rows, column...]`` (``class`` its position in the header, one column per field); a column
  is ``[0, [scalar...]]``, ``[1, [value...]]``, ``[2, [null | [scalar...]]]`` (tuples of scalars),
  ``[3, [[k...]...], [[v...]...]]`` (dicts of scalars), ``[4, [i...], t]`` (records: the ``i``-th row of table
  ``t``, -1 for None; each distinct frozen record stored once), ``[5, [[[scalar...]...]...]]`` (lists of tuples
  of scalars), ``[6, [[i...]...], t]`` (tuples of records of table ``t``), ``[7, "f8", base64]`` (floats, as a
  little-endian float64 array: their shortest decimal form is long to parse) or ``[8, e, [value | null...]]``
  (members of enumeration ``e``).

The document is ``{"format": 2, "classes": [[name, [field, ...]], ...], "enums": [name, ...], "tables":
[table...], "value": ...}``;
a table refers only to tables before it, and is built once, at its first use (a loop ends at the depth bound).
"""

from __future__ import annotations

import binascii
import dataclasses
import enum
import json
import sys
import types
import typing
from itertools import chain, repeat

import numpy as np

FORMAT = 2
_LIST, _TUPLE, _DICT, _TABLE, _RECORD, _TUPLES, _ENUM = range(7)
_C_SCALARS, _C_VALUES, _C_TUPLES, _C_DICTS, _C_RECORDS, _C_TUPLE_LISTS, _C_RECORD_TUPLES, _C_NUMBERS, _C_ENUMS = range(9)
_NUMBER_TYPES = {"f8": float}
_SCALARS = frozenset({type(None), bool, int, float, str})
_LISTS = frozenset({list})
_INTS = frozenset({int})
_MAX_DEPTH = 64


class CodecError(ValueError):
    """A value the schema cannot hold, or data that is not a well-formed entry of it."""


def _allowed(hint) -> frozenset | None:
    """The exact types a field's value may have once decoded (``None``: any the codec writes). The codec only
    makes exact instances of the JSON types, tuples and the schema's classes, so exact types are what to check."""
    if hint is typing.Any or hint is object:
        return None
    if hint is type(None) or hint is None:
        return frozenset({type(None)})
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        out = set()
        for arg in typing.get_args(hint):
            sub = _allowed(arg)
            if sub is None:
                return None
            out |= sub
        return frozenset(out)
    origin = typing.get_origin(hint)
    if origin is not None:
        hint = origin
    if not isinstance(hint, type):
        return None
    if hint is float:
        return frozenset({float, int})
    if hint is int:
        return frozenset({int, bool})
    return frozenset({hint})


def _hinted_classes(hint):
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or issubclass(hint, enum.Enum)):
        yield hint
    for arg in typing.get_args(hint):
        yield from _hinted_classes(arg)


class Schema:
    """The dataclasses one cache namespace may hold, by class name: ``Schema(*roots)``; and the enumerations
    their fields use (``enums``: name -> class; an ``int`` field may hold an ``IntEnum`` member)."""

    def __init__(self, *roots):
        self.classes: dict = {}  # name -> class
        self.enums: dict = {}  # name -> enum class
        self.fields: dict = {}  # class -> ((name, allowed exact types or None), ...)
        self.positional: dict = {}  # class -> whether its constructor takes every field by position, in order
        self.plain: dict = {}  # class -> whether its constructor only assigns the fields (see _rows)
        todo = list(roots)
        while todo:
            cls = todo.pop()
            if isinstance(cls, type) and issubclass(cls, enum.Enum):
                other = self.enums.setdefault(cls.__name__, cls)
                if other is not cls:
                    raise TypeError(f"two enumerations named {cls.__name__} in one cache schema: {other} and {cls}")
                continue
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or cls in self.fields:
                continue
            other = self.classes.setdefault(cls.__name__, cls)
            if other is not cls:
                raise TypeError(f"two classes named {cls.__name__} in one cache schema: {other} and {cls}")
            hints = typing.get_type_hints(cls)
            fields = dataclasses.fields(cls)
            self.fields[cls] = tuple((f.name, _allowed(hints.get(f.name, object))) for f in fields)
            self.positional[cls] = all(f.init and not f.kw_only for f in fields)
            init = vars(cls).get("__init__")
            self.plain[cls] = (cls.__dataclass_params__.frozen and self.positional[cls]
                               and not hasattr(cls, "__post_init__") and "__slots__" not in vars(cls)
                               and getattr(getattr(init, "__code__", None), "co_filename", "") == "<string>")
            for hint in hints.values():
                todo.extend(_hinted_classes(hint))
            module = sys.modules.get(cls.__module__)
            if module is not None:
                todo.extend(v for v in vars(module).values() if isinstance(v, type) and v.__module__ == cls.__module__
                            and (dataclasses.is_dataclass(v) or issubclass(v, enum.Enum)))
        self.frozen = {cls for cls in self.fields if cls.__dataclass_params__.frozen}
        self.members = {e: {m.value: m for m in e} | {None: None} for e in self.enums.values()}  # value -> member
        int_enums = frozenset(e for e in self.enums.values() if issubclass(e, int))
        for cls, fields in self.fields.items():  # an int field may hold an IntEnum member
            self.fields[cls] = tuple((n, a | int_enums if a is not None and int in a else a) for n, a in fields)


# ------------------------------------------------------------------------------------------------ encode
def encode(obj, schema: Schema) -> bytes:
    """``obj`` as the bytes of one entry; ``CodecError`` for a value the schema cannot hold."""
    index: dict = {}  # class -> position in the header
    header: list = []
    tables: list = []
    enums: list = []  # enumeration names, by position
    fields_of = schema.fields
    enum_classes = set(schema.enums.values())

    def is_scalar(v):
        return type(v) in _SCALARS

    def enum_index(t) -> int:
        if t.__name__ not in enums:
            enums.append(t.__name__)
        return enums.index(t.__name__)

    def enc(v, depth):
        t = type(v)
        if t in _SCALARS:
            return v
        if depth > _MAX_DEPTH:
            raise CodecError("nested too deeply")
        depth += 1
        if t is list:
            if v and type(v[0]) in fields_of and all(type(x) is type(v[0]) for x in v):
                return [_TABLE, table(v, depth)]
            if v and all(type(x) is tuple and all(map(is_scalar, x)) for x in v):
                return [_TUPLES, *map(list, v)]
            return [_LIST, *[enc(x, depth) for x in v]]
        if t is tuple:
            return [_TUPLE, *[enc(x, depth) for x in v]]
        if t is dict:
            return [_DICT, [enc(k, depth) for k in v], [enc(x, depth) for x in v.values()]]
        if t in fields_of:
            return [_RECORD, table([v], depth)]
        if t in enum_classes:
            return [_ENUM, enum_index(t), v.value]
        raise CodecError(f"{t.__module__}.{t.__qualname__} is not a class of this cache's schema")

    def row(v, distinct, where):
        """The position of record ``v`` among ``distinct`` (a frozen record already there is stored once)."""
        try:
            i = where.get(v) if type(v) in schema.frozen else None
        except TypeError:  # a frozen record holding a list or dict: not hashable, stored each time
            i = None
        if i is None:
            i = len(distinct)
            distinct.append(v)
            if type(v) in schema.frozen:
                try:
                    where[v] = i
                except TypeError:
                    pass
        return i

    def numbers(values):
        """A column of floats as the base64 of a little-endian float64 array (their shortest decimal repr is
        long, and most of the JSON parser's time)."""
        if len(values) < 8 or set(map(type, values)) != {float}:
            return None
        return [_C_NUMBERS, "f8", binascii.b2a_base64(np.asarray(values, "<f8").tobytes(), newline=False).decode()]

    def column(values, depth):
        if all(map(is_scalar, values)):
            return numbers(values) or [_C_SCALARS, values]
        kinds = {type(v) for v in values if v is not None}
        if len(kinds) == 1:
            (k,) = kinds
            if k in enum_classes and all(map(is_scalar, (v.value for v in values if v is not None))):
                return [_C_ENUMS, enum_index(k), [None if v is None else v.value for v in values]]
            if k in fields_of:
                distinct: list = []
                where: dict = {}
                rows = [-1 if v is None else row(v, distinct, where) for v in values]
                return [_C_RECORDS, rows, table(distinct, depth)]
            if k is tuple and None not in values:
                inner = {type(x) for v in values for x in v}
                if len(inner) == 1 and next(iter(inner)) in fields_of:
                    distinct, where = [], {}
                    rows = [[row(x, distinct, where) for x in v] for v in values]
                    return [_C_RECORD_TUPLES, rows, table(distinct, depth)]
            if k is tuple and all(v is None or all(map(is_scalar, v)) for v in values):
                return [_C_TUPLES, [None if v is None else list(v) for v in values]]
            if k is dict and None not in values and all(all(map(is_scalar, chain(v, v.values()))) for v in values):
                return [_C_DICTS, [list(v) for v in values], [list(v.values()) for v in values]]
            if k is list and None not in values and all(type(x) is tuple and all(map(is_scalar, x))
                                                        for v in values for x in v):
                return [_C_TUPLE_LISTS, [[list(x) for x in v] for v in values]]
        return [_C_VALUES, [enc(v, depth) for v in values]]

    def table(records, depth):
        if depth > _MAX_DEPTH:
            raise CodecError("nested too deeply")
        t = type(records[0])
        i = index.get(t)
        if i is None:
            i = index[t] = len(header)
            header.append([t.__name__, [f[0] for f in fields_of[t]]])
        out = [i, len(records)]
        out += [column([getattr(r, f[0]) for r in records], depth + 1) for f in fields_of[t]]
        tables.append(out)
        return len(tables) - 1

    value = enc(obj, 0)
    return json.dumps({"format": FORMAT, "classes": header, "enums": enums, "tables": tables, "value": value},
                      separators=(",", ":")).encode()


# ------------------------------------------------------------------------------------------------ decode
def _scalars(values) -> bool:
    return _SCALARS.issuperset(map(type, values))


def decode(data: bytes, schema: Schema):
    """The value ``encode`` wrote; ``CodecError`` for anything else (a class or field the schema does not
    have, a field of a type its class does not declare, a malformed container)."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise CodecError(f"not an entry: {e}") from None
    if (type(doc) is not dict or doc.get("format") != FORMAT or type(doc.get("classes")) is not list
            or type(doc.get("tables")) is not list or type(doc.get("enums")) is not list):
        raise CodecError("not an entry of this format")
    enums = []  # header position -> enumeration
    for name in doc["enums"]:
        if type(name) is not str or name not in schema.enums:
            raise CodecError(f"enumeration {name!r} is not in this cache's schema")
        enums.append(schema.enums[name])

    def member(cls, v):
        try:
            return cls(v)
        except (ValueError, TypeError):
            raise CodecError(f"{v!r} is not a {cls.__name__}") from None
    classes = []  # header position -> class
    for item in doc["classes"]:
        if type(item) is not list or len(item) != 2 or type(item[0]) is not str or type(item[1]) is not list:
            raise CodecError("malformed class header")
        cls = schema.classes.get(item[0])
        if cls is None:
            raise CodecError(f"class {item[0]!r} is not in this cache's schema")
        if item[1] != [f[0] for f in schema.fields[cls]]:
            raise CodecError(f"the fields of {item[0]} are not the class's fields")
        classes.append(cls)
    raw_tables = doc["tables"]
    built: dict = {}  # table position -> its records, built at first use (a table refers only to earlier ones)

    def table(t, depth):
        if type(t) is not int or not 0 <= t < len(raw_tables) or depth > _MAX_DEPTH:
            raise CodecError("a reference to no table")
        got = built.get(t)
        if got is not None:
            return got
        v = raw_tables[t]
        if type(v) is not list or len(v) < 2 or type(v[0]) is not int or not 0 <= v[0] < len(classes) \
                or type(v[1]) is not int:
            raise CodecError("malformed table")
        cls = classes[v[0]]
        fields, rows = schema.fields[cls], v[1]
        if len(v) != len(fields) + 2:
            raise CodecError(f"a table of {cls.__name__} without one column per field")
        columns = []
        for (name, allowed), c in zip(fields, v[2:]):
            values = column(c, rows, depth + 1)
            if allowed is not None and not allowed.issuperset(map(type, values)):
                bad = next(type(x) for x in values if type(x) not in allowed)
                raise CodecError(f"{cls.__name__}.{name}: a {bad.__name__} where the class declares "
                                 f"{'/'.join(sorted(x.__name__ for x in allowed))}")
            columns.append(values)
        try:
            if schema.plain[cls]:
                got = _rows(cls, [f[0] for f in fields], columns)
            elif schema.positional[cls]:
                got = list(map(cls, *columns))
            else:
                names = [f[0] for f in fields]
                got = [_build(cls, dict(zip(names, row))) for row in zip(*columns)]
        except Exception as e:  # noqa: BLE001 - the class's own checks refused the values
            raise CodecError(f"{cls.__name__}: {type(e).__name__}: {e}") from None
        built[t] = got
        return got

    def column(c, rows, depth):
        if type(c) is not list or not c or type(c[0]) is not int:
            raise CodecError("malformed column")
        form = c[0]
        if form == _C_SCALARS and len(c) == 2 and type(c[1]) is list and len(c[1]) == rows and _scalars(c[1]):
            return c[1]
        if form == _C_ENUMS and len(c) == 3 and type(c[1]) is int and 0 <= c[1] < len(enums) \
                and type(c[2]) is list and len(c[2]) == rows and _scalars(c[2]):
            try:  # one dictionary lookup a value (an Enum's own call is ten times slower)
                return list(map(schema.members[enums[c[1]]].__getitem__, c[2]))
            except (KeyError, TypeError):
                raise CodecError(f"a value that is no {enums[c[1]].__name__}") from None
        if form == _C_NUMBERS and len(c) == 3 and c[1] in _NUMBER_TYPES and type(c[2]) is str:
            try:
                raw = binascii.a2b_base64(c[2])
            except (binascii.Error, ValueError):
                raise CodecError("malformed number column") from None
            if len(raw) == 8 * rows:
                return np.frombuffer(raw, "<" + c[1]).tolist()
        if form == _C_VALUES and len(c) == 2 and type(c[1]) is list and len(c[1]) == rows:
            return [x if type(x) is not list else value(x, depth) for x in c[1]]
        if form == _C_TUPLES and len(c) == 2 and type(c[1]) is list and len(c[1]) == rows:
            items = [x for x in c[1] if x is not None]
            if _LISTS.issuperset(map(type, items)) and _scalars(chain.from_iterable(items)):
                return [None if x is None else tuple(x) for x in c[1]]
        if form == _C_DICTS and len(c) == 3 and type(c[1]) is list and type(c[2]) is list \
                and len(c[1]) == len(c[2]) == rows:
            ks, vs = c[1], c[2]
            if _LISTS.issuperset(map(type, ks)) and _LISTS.issuperset(map(type, vs)) \
                    and list(map(len, ks)) == list(map(len, vs)) \
                    and _scalars(chain.from_iterable(ks)) and _scalars(chain.from_iterable(vs)):
                return list(map(dict, map(zip, ks, vs)))
        if form == _C_RECORD_TUPLES and len(c) == 3 and type(c[1]) is list and len(c[1]) == rows \
                and _LISTS.issuperset(map(type, c[1])):
            records = table(c[2], depth)
            if _INTS.issuperset(map(type, chain.from_iterable(c[1]))) \
                    and 0 <= min(chain.from_iterable(c[1]), default=0) \
                    and max(chain.from_iterable(c[1]), default=-1) < len(records):
                return [tuple(map(records.__getitem__, x)) for x in c[1]]
        if form == _C_TUPLE_LISTS and len(c) == 2 and type(c[1]) is list and len(c[1]) == rows:
            items = list(chain.from_iterable(c[1])) if _LISTS.issuperset(map(type, c[1])) else None
            if items is not None and _LISTS.issuperset(map(type, items)) and _scalars(chain.from_iterable(items)):
                return [list(map(tuple, x)) for x in c[1]]
        if form == _C_RECORDS and len(c) == 3 and type(c[1]) is list and len(c[1]) == rows:
            records = table(c[2], depth)
            if _INTS.issuperset(map(type, c[1])) and -1 <= min(c[1], default=0) \
                    and max(c[1], default=-1) < len(records):
                return list(map([*records, None].__getitem__, c[1]))  # -1: None
        raise CodecError("malformed column")

    def value(v, depth):
        if not v or type(v[0]) is not int or depth > _MAX_DEPTH:
            raise CodecError("malformed value")
        tag = v[0]
        depth += 1
        if tag == _LIST or tag == _TUPLE:
            items = v[1:]
            if list in map(type, items):
                items = [x if type(x) is not list else value(x, depth) for x in items]
            return items if tag == _LIST else tuple(items)
        if tag == _DICT and len(v) == 3 and type(v[1]) is list and type(v[2]) is list and len(v[1]) == len(v[2]):
            ks, vs = ([x if type(x) is not list else value(x, depth) for x in part] for part in v[1:])
            try:
                return dict(zip(ks, vs))
            except TypeError:
                raise CodecError("a dict key that cannot be one") from None
        if tag == _TABLE and len(v) == 2:
            return list(table(v[1], depth))
        if tag == _RECORD and len(v) == 2:
            records = table(v[1], depth)
            if len(records) == 1:
                return records[0]
        if tag == _TUPLES and _LISTS.issuperset(map(type, v[1:])) and _scalars(chain.from_iterable(v[1:])):
            return list(map(tuple, v[1:]))
        if tag == _ENUM and len(v) == 3 and type(v[1]) is int and 0 <= v[1] < len(enums) and _scalars(v[2:]):
            return member(enums[v[1]], v[2])
        raise CodecError("malformed value")

    v = doc.get("value")
    return value(v, 0) if type(v) is list else v


def _rows(cls, names, columns) -> list:
    """Records of a plain frozen dataclass (its constructor, generated by ``dataclasses``, does nothing but
    assign the fields, in order: no ``__post_init__``, no slots): each made as that constructor makes it, its
    fields set to one row's values, without the constructor's call of ``object.__setattr__`` per field (three
    times slower for the NPU's 40-field operations)."""
    new, assign = object.__new__, object.__setattr__
    out = []
    for fields in map(dict, map(zip, repeat(names), zip(*columns))):
        obj = new(cls)
        assign(obj, "__dict__", fields)
        out.append(obj)
    return out


def _build(cls, kwargs: dict):
    """A record whose constructor does not take every field by position: the ``init`` fields by name, the
    others set after (as the class's own ``__post_init__`` would)."""
    init = {f.name for f in dataclasses.fields(cls) if f.init}
    obj = cls(**{k: x for k, x in kwargs.items() if k in init})
    for k, x in kwargs.items():
        if k not in init:
            object.__setattr__(obj, k, x)
    return obj
