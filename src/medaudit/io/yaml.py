"""The one YAML loader of medaudit: plain data only, bounded work, one line per error.

Every YAML file the project reads (audit specs, training specs, the ``audit.yaml`` a training
run writes) goes through :func:`load_yaml` (or :func:`load_yaml_text` for text in memory).
It differs from ``yaml.safe_load`` in what it refuses, each with one line
``FILE:LINE:COL: what is wrong`` (1-based line and column):

* **duplicate keys** at any depth (``n_resamples: 10`` then ``n_resamples: 5000`` silently ran
  5000), naming the key and both lines;
* **alias bombs**: at most :data:`MAX_ALIASES` alias uses, and aliases may add at most
  :data:`MAX_ALIAS_EXPANSION` values to what is written (nine levels of nine aliases would
  expand to 387 million); a recursive alias is refused too.  The check walks each distinct
  node once, so it costs no more than reading the file;
* **size**: a file above :data:`MAX_BYTES` (checked before parsing, so a 10 MB scalar costs
  nothing), a value above :data:`MAX_SCALAR_CHARS` characters, nesting deeper than
  :data:`MAX_DEPTH`;
* **tags**: only the plain YAML types (mapping, list, text, integer, float, true/false, null and
  the ``<<`` merge key) are read; any explicit tag such as ``!!python/object`` is refused
  before anything is constructed (nothing is ever executed: the loader is PyYAML's
  ``SafeLoader``);
* **encoding**: the bytes must be UTF-8 (a byte-order mark is allowed); otherwise the error
  names the byte offset, line and column of the first undecodable byte;
* **paths**: a folder, a FIFO or a symbolic-link loop is refused by name before it is opened;
* **keys that YAML changes**: an unquoted key read as something other than its own text
  (``no`` as false, ``null`` as None, ``007`` as 7) is refused, with the advice to quote it.

Dates are *not* converted: ``2024-01-01`` stays the text ``'2024-01-01'`` (PyYAML would make a
``datetime.date``, which a text field then refuses, and an impossible date such as
``2024-13-40`` would raise a bare ``ValueError``).  Everything else resolves as in
``yaml.safe_load`` (YAML 1.1: ``yes``/``no`` are booleans, ``010`` is octal 8).

Every parser message names the file as the user gave it, never ``"<unicode string>"``, and is
cut with :func:`medaudit.io.messages.shorten`.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from medaudit.exceptions import SchemaError
from medaudit.io.messages import quote, shorten
from medaudit.io.paths import input_file

__all__ = ["load_yaml", "load_yaml_text", "YAMLFileError", "MAX_BYTES", "MAX_SCALAR_CHARS",
           "MAX_ALIASES", "MAX_ALIAS_EXPANSION", "MAX_DEPTH"]

#: largest YAML file read (1 MiB; an audit spec is a few kB)
MAX_BYTES = 1 << 20
#: longest single value (key or scalar) in characters
MAX_SCALAR_CHARS = 65_536
#: most alias uses (``*name``) in one file
MAX_ALIASES = 100
#: most values that aliases may add beyond those written out
MAX_ALIAS_EXPANSION = 10_000
#: deepest nesting of mappings and lists
MAX_DEPTH = 64

_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map",
                                              "merge"))


class YAMLFileError(SchemaError):
    """A YAML file medaudit cannot read; the message is one line ``FILE:LINE:COL: what``."""


class _Loader(yaml.SafeLoader):
    """SafeLoader without the implicit timestamp type (dates stay text)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _CORE + "timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _at(source: str, mark: Any) -> str:
    if mark is None:
        return f"{source}:"
    return f"{source}:{mark.line + 1}:{mark.column + 1}:"


def _fail(source: str, mark: Any, what: str) -> YAMLFileError:
    return YAMLFileError(shorten(f"{_at(source, mark)} {what}", limit=600))


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_node(loader: _Loader, node: yaml.Node, depth: int, source: str) -> None:
    """Checks on one distinct node (before anything is constructed)."""
    if node.tag not in _ALLOWED_TAGS:
        raise _fail(source, node.start_mark,
                    f"tag {quote(_short_tag(node.tag))} is not allowed; medaudit reads plain YAML "
                    "(mappings, lists, text, numbers, true/false, null). Remove the tag.")
    if depth > MAX_DEPTH:
        raise _fail(source, node.start_mark, f"nested more than {MAX_DEPTH} levels deep.")
    if isinstance(node, yaml.ScalarNode) and len(node.value) > MAX_SCALAR_CHARS:
        raise _fail(source, node.start_mark,
                    f"a value of {len(node.value):,} characters is longer than the "
                    f"{MAX_SCALAR_CHARS:,} allowed (it starts {quote(node.value[:40])}).")
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == _CORE + "merge":
                continue  # '<<: *base' merges; keys written after it override (YAML semantics)
            if not isinstance(key_node, yaml.ScalarNode):
                raise _fail(source, key_node.start_mark,
                            "a key must be a plain value (text or a number), not a list or mapping.")
            if key_node.tag not in _ALLOWED_TAGS:
                continue  # refused with its tag when the key node itself is checked
            key = loader.construct_object(key_node)
            if key_node.style is None and not isinstance(key, str) and (
                    isinstance(key, bool) or key is None or str(key) != key_node.value):
                # YAML 1.1 reads the unquoted keys no, off, null, 007 or 1e3 as false, None,
                # 7 or 1000.0: the text the user wrote is lost and the error that follows
                # ("cohorts.0.[key]") names a key that is not in the file
                raise _fail(source, key_node.start_mark,
                            f"the key {key_node.value} is read by YAML as {key!r}, not as the text "
                            f"{quote(key_node.value)}; quote it ({quote(key_node.value)}: ...).")
            try:
                first = seen.get(key)
            except TypeError:  # unhashable: cannot happen for plain scalars, refuse anyway
                raise _fail(source, key_node.start_mark, "a key must be a plain value.") from None
            if first is not None:
                same = "first" if first.value == key_node.value else f"same key as {quote(first.value)}"
                raise _fail(source, key_node.start_mark,
                            f"duplicate key {quote(key_node.value)} ({same} at line "
                            f"{first.start_mark.line + 1}); each key may appear once in a mapping. "
                            "Keep one of them.")
            seen[key] = key_node


def _inspect(loader: _Loader, root: yaml.Node, source: str) -> None:
    """Walk each distinct node once: tags, sizes, duplicate keys, alias count and expansion."""
    grey, black = 1, 2
    colour: dict[int, int] = {id(root): grey}
    size: dict[int, int] = {}
    n_alias = 0
    first_alias = None
    _check_node(loader, root, 0, source)
    stack = [(root, iter(_children(root)), 0)]
    while stack:
        node, it, depth = stack[-1]
        child = next(it, None)
        if child is None:
            stack.pop()
            colour[id(node)] = black
            size[id(node)] = 1 + sum(size[id(c)] for c in _children(node))
            continue
        c = colour.get(id(child))
        if c is None:
            colour[id(child)] = grey
            _check_node(loader, child, depth + 1, source)
            stack.append((child, iter(_children(child)), depth + 1))
        elif c == grey:
            raise _fail(source, child.start_mark,
                        "an alias refers to a value that contains it (a recursive alias); "
                        "write the value out.")
        else:  # a second edge into a finished node: only an alias makes one
            n_alias += 1
            first_alias = first_alias or child
            if n_alias > MAX_ALIASES:
                raise _fail(source, child.start_mark,
                            f"more than {MAX_ALIASES} alias uses (*name); write the values out.")
    expansion = size[id(root)] - len(size)
    if expansion > MAX_ALIAS_EXPANSION:
        raise _fail(source, first_alias.start_mark,
                    f"aliases would expand this file by {expansion:,} values (at most "
                    f"{MAX_ALIAS_EXPANSION:,} allowed: an alias bomb?); write the values out.")


def _text_position(text: str, position: int) -> tuple[int, int]:
    line = text.count("\n", 0, position) + 1
    return line, position - (text.rfind("\n", 0, position) + 1) + 1


def _parse(text: str, source: str) -> Any:
    loader = None
    try:
        loader = _Loader(text)  # the reader refuses non-printable characters here
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YAMLFileError(f"{source}: nested too deeply to read (more than {MAX_DEPTH} "
                                "levels are never needed).") from None
        if node is None:
            return None
        _inspect(loader, node, source)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "malformed YAML"
        if exc.context and exc.problem and exc.context_mark is not None:
            what = f"{what} ({exc.context} at line {exc.context_mark.line + 1})"
        raise _fail(source, mark, f"malformed YAML: {what}.") from None
    except yaml.reader.ReaderError as exc:
        line, col = _text_position(text, exc.position)
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        raise YAMLFileError(f"{source}:{line}:{col}: character U+{ord(char):04X} is not allowed in "
                            "YAML text; remove it.") from None
    except yaml.YAMLError as exc:  # pragma: no cover - every PyYAML error above carries a mark
        raise YAMLFileError(shorten(f"{source}: malformed YAML: {exc}".replace("\n", " "))) from None
    finally:
        if loader is not None:
            loader.dispose()


def _mapping(data: Any, source: str, what: str) -> dict[str, Any]:
    if data is None:
        raise YAMLFileError(f"{source}: the {what} is empty; it must be a YAML mapping "
                            "(key: value lines).")
    if not isinstance(data, dict):
        raise YAMLFileError(f"{source}:1:1: the {what} must be a YAML mapping (key: value lines), "
                            f"not a {'list' if isinstance(data, list) else type(data).__name__}.")
    return data


def load_yaml_text(text: str | bytes, *, source: str = "<text>", what: str = "YAML document"
                   ) -> dict[str, Any]:
    """Parse YAML text (a mapping) with the checks of :func:`load_yaml`.

    Parameters
    ----------
    text : str or bytes
        The document; bytes must be UTF-8.
    source : str, default="<text>"
        Name used in messages in place of a file name.
    what : str, default="YAML document"
        What the document is, for messages (``"audit spec"``).

    Returns
    -------
    dict
        The mapping, with plain Python values.

    Raises
    ------
    YAMLFileError
        One line ``SOURCE:LINE:COL: what is wrong``.

    Examples
    --------
    >>> load_yaml_text("seed: 7\\ncohorts: [a, b]\\n")
    {'seed': 7, 'cohorts': ['a', 'b']}
    >>> load_yaml_text("n_resamples: 10\\nn_resamples: 5000\\n", source="spec.yaml")
    Traceback (most recent call last):
    ...
    medaudit.io.yaml.YAMLFileError: spec.yaml:2:1: duplicate key 'n_resamples' (first at line 1); each key may appear once in a mapping. Keep one of them.
    """  # noqa: E501
    if isinstance(text, bytes):
        text = _decode(text, source)
    return _mapping(_parse(text, source), source, what)


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        col = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise YAMLFileError(f"{source}:{line}:{col}: not UTF-8 text: byte 0x{data[start]:02x} at "
                            f"byte offset {start} cannot be decoded; save the file as UTF-8."
                            ) from None


def load_yaml(path: str | os.PathLike[str], *, what: str = "YAML file",
              max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """Read a YAML file holding a mapping, refusing anything unsafe with one line.

    Parameters
    ----------
    path : path
        The file (the message names it as given).
    what : str, default="YAML file"
        What the file is, for messages (``"audit spec"``, ``"training spec"``).
    max_bytes : int, default=MAX_BYTES
        Largest file read; larger files are refused before they are parsed.

    Returns
    -------
    dict
        The mapping, with plain Python values (dict, list, str, int, float, bool, None).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    YAMLFileError
        Not UTF-8, malformed, a duplicate key, a tag, an alias bomb, too large: one line
        ``FILE:LINE:COL: what is wrong``.
    SchemaError
        ``path`` is a folder, a FIFO or a symbolic-link loop.

    See Also
    --------
    load_yaml_text : the same for text in memory.
    """
    path = input_file(path, what=what, noun="YAML file")
    source = str(path)
    size = os.stat(path).st_size
    if size > max_bytes:
        raise YAMLFileError(f"{source}: the file is {size:,} bytes; a {what} may be at most "
                            f"{max_bytes:,} bytes. Is this the right file?")
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)  # the file may have grown since the stat
    if len(data) > max_bytes:
        raise YAMLFileError(f"{source}: the file is more than {max_bytes:,} bytes; a {what} may "
                            f"be at most {max_bytes:,} bytes.")
    return _mapping(_parse(_decode(data, source), source), source, what)

