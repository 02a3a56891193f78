"""YAML as a person means it: ``yaml.safe_load`` with three YAML 1.1 surprises removed.

- **A key twice in one mapping is an error** (``DuplicateKey``, with the line of the second): PyYAML keeps the last
  silently, so a config with ``train:`` twice loses the first section without a word. (Merge keys ``<<`` still
  merge: their keys are not duplicates.)
- **``010`` is ten**, not YAML 1.1's octal eight (``0x10`` stays hex).
- **``1e3``, ``5e-4``, ``1.0e3`` are numbers** (floats): YAML 1.1 wants a dot and a signed exponent (``1.0e+3``) and
  reads the rest as strings, so ``5e-4`` and ``1e3`` came out as text while ``1.0e-3`` was a number.

Everything else is ``yaml.SafeLoader``: no Python objects, ever.
"""

from __future__ import annotations

import re

import yaml


class DuplicateKey(yaml.YAMLError):
    def __init__(self, key, mark):
        self.key, self.problem_mark = key, mark
        self.problem = f"duplicate key {key!r} (the first would be dropped silently)"
        super().__init__(self.problem)


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key twice in one mapping, and changes nothing else (task cards: their
    scalars must read as they always have, so a card's hash stays what it was)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise DuplicateKey(key, key_node.start_mark)
                    seen.add(key)
                except TypeError:  # an unhashable key: SafeLoader's own error follows
                    pass
        return super().construct_mapping(node, deep)


class StrictLoader(UniqueKeyLoader):
    """Duplicate keys refused, and the number surprises of the module docstring removed."""


_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]+")


def _int(loader: StrictLoader, node):
    text = loader.construct_scalar(node)
    if _LEADING_ZERO.fullmatch(text):  # 010 -> 10 (YAML 1.1 would read octal 8)
        return int(text.replace("_", ""), 10)
    return yaml.SafeLoader.construct_yaml_int(loader, node)


StrictLoader.add_constructor("tag:yaml.org,2002:int", _int)
StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def load(text: str):
    """``yaml.safe_load(text)`` without the surprises above; a ``yaml.YAMLError`` (``DuplicateKey`` included) as
    PyYAML raises it, with ``problem_mark`` for the line."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - StrictLoader is a SafeLoader


def load_unique_keys(text: str):
    """``yaml.safe_load(text)``, except that a duplicated key is a ``DuplicateKey`` error (with its line)."""
    return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - UniqueKeyLoader is a SafeLoader
