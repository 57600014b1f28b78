"""YAML for board files and ``-C`` values, with the structure attacks refused as one-line errors.

``load(text)`` is ``yaml.safe_load`` (no Python objects, no tags that run code) with three more rules:

- nesting deeper than ``MAX_DEPTH`` levels is an error (PyYAML composes nodes recursively: a 5,000-deep
  ``[[[[...`` would otherwise end as a ``RecursionError``);
- a duplicate key in a mapping is an error naming both lines (YAML 1.2 forbids them; PyYAML silently keeps
  the last one);
- aliases may share a node, but the document expanded (every alias counted as the copy it stands for) may
  not exceed ``MAX_NODES`` nodes, and an alias may not refer to the node that contains it: a "billion laughs"
  of nested aliases, or a self-referencing one, is refused before anything walks it.

Every refusal is a ``yaml.YAMLError`` with a ``problem`` and a ``problem_mark`` (line), so callers report it
like any other YAML error.
"""

from __future__ import annotations

import copy

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

MAX_DEPTH = 64  # the shipped boards nest 5 levels deep
MAX_NODES = 100_000  # the shipped boards, merged, have about 1,000


class StructureError(yaml.MarkedYAMLError):
    pass


class _Loader(yaml.SafeLoader):
    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise StructureError(None, None, f"nesting deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):  # the node's own keys (a merged ``<<: *x`` key may be overridden)
            seen = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, ScalarNode):
                    continue
                key = self.construct_scalar(key_node)
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                if key in seen:
                    raise StructureError("while constructing a mapping", node.start_mark,
                                         f"duplicate key {key!r} (first at line {seen[key].line + 1})",
                                         key_node.start_mark)
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def _children(node) -> list:
    """The nodes a sequence or mapping node holds (a mapping's keys and values); none for a scalar."""
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for kv in node.value for n in kv]
    return []


def _check_expansion(root) -> None:
    """Expanded size of the node graph (aliases are shared nodes), memoised; a cycle is an error."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    # iterative post-order walk (no recursion: depth is already bounded, but keep the walk flat)
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            on_path.discard(nid)
            total = 1 + sum(sizes[id(k)] for k in _children(node))
            if total > MAX_NODES:
                raise StructureError(None, None, f"the document expands to more than {MAX_NODES} values "
                                                 f"(aliases of aliases)", node.start_mark)
            sizes[nid] = total
            continue
        if nid in sizes:
            continue
        if nid in on_path:
            raise StructureError(None, None, "an alias refers to a node that contains it", node.start_mark)
        on_path.add(nid)
        stack.append((node, True))
        for k in _children(node):
            if id(k) in on_path:
                raise StructureError(None, None, "an alias refers to a node that contains it", k.start_mark)
            if id(k) not in sizes:
                stack.append((k, False))


def load(text: str):
    """``yaml.safe_load`` with the depth, duplicate-key and expansion rules above. A text parsed before in this
    process (the same board files are read by every run, test and fuzz case) gives a deep copy of what it gave
    then: PyYAML's pure-Python parser takes 20 ms for the default board's files, a copy well under one."""
    hit = _PARSED.get(text)
    if hit is not None:
        return copy.deepcopy(hit[0])
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        value = loader.construct_document(node)
    finally:
        loader.dispose()
    if len(text) <= _MEMO_TEXT_MAX:
        if len(_PARSED) >= _MEMO_ENTRIES:
            del _PARSED[next(iter(_PARSED))]  # the oldest
        _PARSED[text] = (copy.deepcopy(value),)
    return value


_PARSED: dict = {}  # text -> (value,): refusals are not kept, they are parsed (and refused) again
_MEMO_ENTRIES = 64
_MEMO_TEXT_MAX = 1 << 20
