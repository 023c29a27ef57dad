"""Reading users' YAML and text files: one line naming the file (and the place) for
whatever cannot be read.

Every kgparser YAML file (configs, grid files) and ``--set`` value is read with
:class:`YamlLoader`: PyYAML's safe loader with YAML 1.2 floats, so ``1e-4``,
``1E4``, ``.5`` and ``-1.5e+3`` are numbers (YAML 1.1 wants a dot and a signed
exponent), and with malformed scalars (``2001-02-30``, ``!!int x``) reported as
YAML errors.  The caller names the error class, so a config problem stays a
``ConfigError`` and a grid problem a ``GridError``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import KgparserError


class YamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with YAML 1.2 floats and malformed scalars reported as
    :class:`yaml.YAMLError` (PyYAML raises ValueError, KeyError... for them)."""


_FLOAT_TAG = "tag:yaml.org,2002:float"
#: YAML 1.2 core-schema floats (a dot or an exponent; ``_`` between digits, as YAML 1.1 allows)
_YAML12_FLOAT = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                                    |\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
                                    |[0-9][0-9_]*[eE][-+]?[0-9]+
                                    |\.(?:inf|Inf|INF))
                               |\.(?:nan|NaN|NAN))$""", re.X)
YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _FLOAT_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
YamlLoader.add_implicit_resolver(_FLOAT_TAG, _YAML12_FLOAT, list("-+0123456789."))


def _reported(construct):
    """``construct`` (a scalar constructor) raising a YAML error that points at the scalar."""
    def checked(loader, node):
        try:
            return construct(loader, node)
        except (ValueError, KeyError, AttributeError) as exc:
            kind = node.tag.rpartition(":")[2]
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.value[:40]!r} as {kind} ({exc})", node.start_mark) from None
    return checked


for _kind in ("bool", "int", "float", "timestamp"):
    _tag = f"tag:yaml.org,2002:{_kind}"
    YamlLoader.add_constructor(_tag, _reported(yaml.SafeLoader.yaml_constructors[_tag]))


def parse_yaml(text: str, source: str, error: type[KgparserError]) -> Any:
    """The YAML document ``text`` read with :class:`YamlLoader`; ``error``
    naming ``source`` and the line if it is not valid."""
    try:
        return yaml.load(text, Loader=YamlLoader)
    except yaml.YAMLError as exc:
        raise error(f"{source}: invalid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:
        raise error(f"{source}: invalid YAML: nested too deeply") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """A PyYAML error in one line, located by line and column."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        context = f" ({exc.context})" if exc.context else ""
        text = f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}{context}"
    elif isinstance(exc, yaml.reader.ReaderError):
        text = f"character #x{exc.character:04x} at position {exc.position}: {exc.reason}"
    else:
        text = str(exc)
    return " ".join(text.split())


def read_text_file(path: str | Path, error: type[KgparserError], what: str) -> str:
    """The UTF-8 text of ``path`` (without a leading byte-order mark); ``error``
    naming the file (and the line and column of a byte that is not UTF-8) when
    it cannot be read: missing, a folder, not permitted, not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise error(f"{path}, line {line}, column {column}: {what} is not valid UTF-8 "
                    f"(byte 0x{data[exc.start]:02x})") from None
