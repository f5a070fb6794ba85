"""YAML that means what it says, in bounded time: recipes, profiles, ``--set`` values and run
folders' ``config.yaml`` - every YAML file medrl reads goes through :func:`load`.

``yaml.safe_load`` keeps the last of two equal keys in one mapping, so a recipe with a second
``grpo:`` section (or a key written twice) silently loses the first one's values while every
check passes. :func:`load` refuses a key given twice at any depth, naming both lines.

An override that would replace a whole section (``--set grpo={}`` drops every value of the
recipe's ``grpo`` section) is refused by :func:`section_replacement` unless it says so with the
``!replace`` tag: ``--set 'grpo=!replace {learning_rate: 1.0e-6}'``.

A size budget refuses what would only expand: PyYAML builds an alias once and shares it, but
whatever walks the result later (validation, copies, JSON, comparisons) sees every alias
expanded, so nine levels of nine aliases ("billion laughs") become 10^9 values and hang the
preflight or a resume. :func:`load` counts the values the document expands to on its node graph,
each node once (linear in the text), and refuses past ``max_values`` (:data:`MAX_VALUES`) with
:class:`YAMLBudgetError` naming the file; a text over ``max_chars`` or nested too deeply for the
parser is refused the same way. Tags other than YAML's own and ``!replace``
(``!!python/object:...``) are refused by the safe loader, never run. :func:`load_file` reads a
file and turns every such refusal, and a file that cannot be read, into one
:class:`ConfigFileError` line naming the file (exit code 2, :mod:`medrl.common.exit_codes`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

#: Values (scalars, lists, mappings) a document may expand to, aliases counted expanded: far
#: above any recipe or run config (a few hundred), far below what hangs a walk over it.
MAX_VALUES = 100_000
#: Characters of YAML text read at most (a recipe or a run config is a few KB).
MAX_CHARS = 5_000_000
#: Brackets (``[`` / ``{``) open at once at most: PyYAML's scanner slows down quadratically
#: with flow nesting (a few thousand levels take seconds) before its parser runs out of stack.
MAX_FLOW_DEPTH = 100
_FLOW_TOKENS = re.compile(r"[\[\]{}]|'(?:[^']|'')*'|" + r'"(?:[^"\\]|\\.)*"')  # brackets, quoted strings


def _flow_depth(text: str, limit: int) -> int:
    """The deepest bracket nesting of ``text`` outside quoted strings (stops past ``limit``)."""
    depth = deepest = 0
    for m in _FLOW_TOKENS.finditer(text):
        c = m.group(0)
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                break
        elif c in "]}":
            depth = max(0, depth - 1)
    return deepest


class DuplicateKeyError(yaml.YAMLError):
    """A mapping holds the same key twice (the message names the key and both lines)."""


class YAMLBudgetError(yaml.YAMLError):
    """The document is larger than the budget once its aliases are expanded (an alias bomb),
    its text is too long, or it nests too deeply; the message names the file."""


class ConfigFileError(ValueError):
    """A YAML file medrl must read cannot be read: missing permissions, not UTF-8, not YAML, a
    key given twice, an unsafe tag, over the size budget. One line naming the file."""


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


def _expanded_size(root: yaml.Node, limit: int, where: str) -> int:
    """Values the node graph under ``root`` expands to (an alias counted as often as it is used),
    each node visited once; :class:`YAMLBudgetError` past ``limit`` or on a recursive alias."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                    else list(node.value) if isinstance(node, yaml.SequenceNode) else [])
        if not done:
            if key in open_:
                raise YAMLBudgetError(f"{where}: an alias refers to a node that contains it (a recursive alias); "
                                      "refused")
            open_.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        open_.discard(key)
        total = 1 + sum(sizes[id(c)] for c in children)
        if total > limit:
            raise YAMLBudgetError(
                f"{where}: the YAML expands to more than {limit:,} values once its aliases are repeated (an alias "
                "bomb?); refused - write the values out, or use fewer nested aliases")
        sizes[key] = total
    return sizes[id(root)]


def load(text: str, name: str | None = None, *, max_values: int = MAX_VALUES, max_chars: int = MAX_CHARS) -> Any:
    """Parse YAML ``text`` like ``yaml.safe_load``, refusing a key given twice in one mapping at
    any depth (:class:`DuplicateKeyError`, naming the line; ``name`` is the file in messages) and
    a document over the size budget (:class:`YAMLBudgetError`: more than ``max_values`` values
    with aliases expanded, more than ``max_chars`` characters, or nested too deeply), in time
    linear in the text. ``!replace`` values come back as :class:`Replacement`."""
    where = str(name) if name else "YAML value"
    if len(text) > max_chars:
        raise YAMLBudgetError(f"{where}: {len(text):,} characters of YAML, more than the {max_chars:,} read at most")
    if (text.count("[") + text.count("{") > MAX_FLOW_DEPTH
            and _flow_depth(text, MAX_FLOW_DEPTH) > MAX_FLOW_DEPTH):
        raise YAMLBudgetError(f"{where}: the YAML is nested too deeply to read (more than {MAX_FLOW_DEPTH} "
                              "brackets open at once)")
    loader = StrictLoader(text)
    if name:
        loader.name = str(name)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _expanded_size(node, int(max_values), where)
            return loader.construct_document(node)
        except RecursionError:
            raise YAMLBudgetError(f"{where}: the YAML is nested too deeply to read") from None
    finally:
        loader.dispose()


def load_file(path: str | Path, *, mapping: bool = False, **budget: Any) -> Any:
    """:func:`load` of the file at ``path``; every failure (unreadable, not UTF-8, not YAML, a
    key given twice, an unsafe tag, over the budget; with ``mapping``, a document that is not a
    mapping) is one :class:`ConfigFileError` line that names the file. A missing file raises
    :class:`FileNotFoundError` as it is; an empty file is None."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    try:
        data = load(text, name=path, **budget)
    except yaml.YAMLError as exc:
        why = " ".join(str(exc).split())
        raise ConfigFileError(f"{path}: not a readable settings file ({why[:400]})") from None
    if mapping and data is not None and not isinstance(data, dict):
        raise ConfigFileError(f"{path}: expected a YAML mapping of settings, got a {type(data).__name__}")
    return data


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
