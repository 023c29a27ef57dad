"""Transition systems for greedy dependency parsing, with their oracles.

Pure Python: nothing under this package imports torch.  Every system lives in
one module of this package and registers itself with :func:`register`; the
modules are discovered automatically, so adding a system means writing one
module.

    >>> from kgparser.transitions import get_system
    >>> system = get_system("arc-hybrid")
    >>> state = system.initial_state(3)
    >>> system.legal_actions(state)
    ['shift']
"""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Any, Callable, TypeVar

from ..errors import KgparserError
from .base import State, TransitionSystem

__all__ = ["State", "UnknownSystemError", "TransitionSystem", "get_system", "register", "system_names", "system_class"]


class UnknownSystemError(KgparserError, ValueError):
    """A transition-system name that is not registered."""


#: a system of any state class (the registry holds systems of different state classes)
AnySystem = TransitionSystem[Any]
_SystemClass = TypeVar("_SystemClass", bound=type[AnySystem])

_REGISTRY: dict[str, type[AnySystem]] = {}
_discovered = False


def register(name: str) -> Callable[[_SystemClass], _SystemClass]:
    """Class decorator: make a :class:`TransitionSystem` available as ``name``."""

    def decorate(cls: _SystemClass) -> _SystemClass:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"transition system {name!r} is registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")
    _discovered = True


def _import_named(name: str) -> None:
    """Import the module of this package named after system ``name``, where there is one."""
    module = name.replace("-", "_")
    if module.isidentifier() and not module.startswith("_") and \
            any(found.name == module for found in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{module}")


def system_names() -> list[str]:
    """Names of every registered transition system, sorted."""
    _discover()
    return sorted(_REGISTRY)


def system_class(name: str) -> type[AnySystem]:
    """The class registered as ``name``; unknown names get a did-you-mean error.
    The module named after the system (``arc-hybrid``: ``arc_hybrid``) is
    imported first, the others only where it does not register ``name``."""
    if name not in _REGISTRY:
        _import_named(name)
    if name not in _REGISTRY:
        _discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownSystemError(
            f"unknown transition system {name!r}{hint} (known: {', '.join(sorted(_REGISTRY))})"
        ) from None


def get_system(name: str, **options: object) -> AnySystem:
    """A new instance of the system registered as ``name``, with its options."""
    return system_class(name)(**options)
