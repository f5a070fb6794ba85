"""YAML that means what it says: recipes, profiles and ``--set`` values.

``yaml.safe_load`` keeps the last of two equal keys in one mapping, so a recipe with a second
``grpo:`` section (or a key written twice) silently loses the first one's values while every
check passes. :func:`load` refuses a key given twice at any depth, naming both lines.

An override that would replace a whole section (``--set grpo={}`` drops every value of the
recipe's ``grpo`` section) is refused by :func:`section_replacement` unless it says so with the
``!replace`` tag: ``--set 'grpo=!replace {learning_rate: 1.0e-6}'``.
"""

from __future__ import annotations

from typing import Any

import yaml


class DuplicateKeyError(yaml.YAMLError):
    """A mapping holds the same key twice (the message names the key and both lines)."""


class Replacement:
    """A value written with ``!replace``: it replaces a whole section on purpose."""

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"!replace {self.value!r}"


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and reads ``!replace``."""


def _mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # "<<: *anchor": YAML's own rule, explicit keys win
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            continue  # yaml reports an unhashable key itself
        line = key_node.start_mark.line + 1
        if key in seen:
            where = f" of {key_node.start_mark.name}" if key_node.start_mark.name not in ("<unicode string>", None) else ""
            raise DuplicateKeyError(f"line {line}{where}: the key {key!r} is given twice in one mapping (first at line "
                                    f"{seen[key]}); YAML would keep only the second and drop the first's values")
        seen[key] = line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


def _replace(loader: StrictLoader, node: yaml.Node) -> Replacement:
    if isinstance(node, yaml.MappingNode):
        return Replacement(_mapping(loader, node, deep=True))
    if isinstance(node, yaml.SequenceNode):
        return Replacement(loader.construct_sequence(node, deep=True))
    return Replacement(loader.construct_scalar(node))


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
StrictLoader.add_constructor("!replace", _replace)


def load(text: str, name: str | None = None) -> Any:
    """Parse YAML ``text`` like ``yaml.safe_load``, refusing a key given twice in one mapping at
    any depth (:class:`DuplicateKeyError`, naming the line; ``name`` is the file in messages).
    ``!replace`` values come back as :class:`Replacement`."""
    loader = StrictLoader(text)
    if name:
        loader.name = str(name)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def without_markers(value: Any) -> Any:
    """``value`` with every :class:`Replacement` unwrapped (for a file, where ``!replace`` has
    no meaning)."""
    if isinstance(value, Replacement):
        return without_markers(value.value)
    if isinstance(value, dict):
        return {k: without_markers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_markers(v) for v in value]
    return value


def section_replacement(target: dict, keys: list[str], value: Any, text: str) -> str | None:
    """Why the override ``text`` (setting ``keys`` of ``target`` to ``value``) must be refused:
    it would replace a whole mapping of the recipe (None when it sets one value, or says
    ``!replace``)."""
    if isinstance(value, Replacement):
        return None
    node: Any = target
    for k in keys:
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    if not isinstance(node, dict) or not node:
        return None
    dotted = ".".join(keys)
    names = ", ".join(list(node)[:4]) + (", ..." if len(node) > 4 else "")
    raw = text.split("=", 1)[1].strip() if "=" in text else ""
    return (f"override {text!r} would replace the whole {dotted} section and drop its {len(node)} values ({names}); "
            f"set keys one by one (--set {dotted}.{next(iter(node))}=...), or write --set '{dotted}=!replace "
            f"{raw or '{...}'}' to replace the section on purpose")
