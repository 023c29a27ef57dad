"""The ``kgparser`` command line.

Each sub-command lives in its own module under :mod:`kgparser.commands` with
two functions: ``add_arguments(parser)`` and ``run(args) -> int``, plus a
one-line module docstring used as the command's help.  Modules are imported
only when their command runs, so ``kgparser evaluate`` never loads torch.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import pkgutil
import signal
import sys
from typing import Iterator

from . import commands
from .errors import KgparserError, Terminated
from .io.atomic import STANDARD_OUTPUT, WriteError, os_error_message, stream_errors
from .version import __version__


def _command_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def _help_line(module_name: str) -> str:
    """First docstring line of a command module, read without importing it."""
    import ast
    from pathlib import Path

    path = Path(commands.__path__[0]) / f"{module_name}.py"
    return _first_line(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))))


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kgparser", description="Greedy transition-based dependency parsing.")
    parser.add_argument("--version", action="version", version=f"kgparser {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = _command_modules()
    # the list of commands with their help is shown only without a command: reading every module's
    # docstring is a twentieth of a second's start-up (docs/history/start-up.md, "Start-up (issue 49)")
    listed = selected not in {name.replace("_", "-") for name in names}
    for name in names:
        cli_name = name.replace("_", "-")
        if cli_name == selected:
            module = importlib.import_module(f"{commands.__name__}.{name}")
            help_line = _first_line(module.__doc__)
            command = sub.add_parser(cli_name, help=help_line, description=help_line)
            module.add_arguments(command)
            command.set_defaults(_module=module)
        else:
            other = _help_line(name) if listed else None
            sub.add_parser(cli_name, help=other, description=other)
    return parser


def _first_line(doc: str | None) -> str:
    return doc.strip().splitlines()[0] if doc and doc.strip() else ""


def main(argv: list[str] | None = None) -> int:
    """Run the command of ``argv`` (default: the program's arguments) and
    return its exit status."""
    if argv is not None:
        return _main(argv)
    try:
        return _main(sys.argv[1:])
    finally:
        # the program ends here: the interpreter's last collection would go through every object
        # of torch and the model, 0.2-0.3 s of a short parse (docs/history/start-up.md,
        # "Start-up (issue 49)"), to find no garbage that matters
        gc.freeze()


def _main(argv: list[str]) -> int:
    selected = next((a for a in argv if not a.startswith("-")), None)
    if selected is not None and {"-h", "--help"} & set(argv[:argv.index(selected)]):
        selected = None  # kgparser --help parse: the list of commands
    parser = build_parser(selected)
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return 2
    try:
        with _signals_raise():
            code = args._module.run(args) or 0
            _flush_standard_output()  # a closed pipe or a full disk shows here, inside the handlers below
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Terminated as stop:
        print(f"terminated by {signal.Signals(stop.number).name}", file=sys.stderr)
        return 128 + stop.number
    except BrokenPipeError:
        return _closed_pipe()
    except KgparserError as exc:
        print(f"kgparser {args.command}: error: {exc}", file=sys.stderr)
        if isinstance(exc, WriteError) and exc.stream == STANDARD_OUTPUT:
            _discard_standard_output()
        return 1
    except OSError as exc:  # anything the operating system refused, named by its path
        print(f"kgparser {args.command}: error: {os_error_message(_error_path(exc), exc)}", file=sys.stderr)
        return 1


def _error_path(error: OSError) -> str:
    paths = [p for p in (error.filename, error.filename2) if p is not None]
    return " -> ".join(str(p) for p in paths) or "input/output"


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP (``kill``, a closed terminal) raise :class:`Terminated`
    while a command runs, so that it cleans up on the way out as after
    Ctrl-C: no temporary file beside an output, no worker left running."""
    def terminated(number, frame):
        raise Terminated(number)

    previous = {number: signal.signal(number, terminated) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _flush_standard_output() -> None:
    """Flush standard output; a failure (a full disk) is a :class:`WriteError` naming it."""
    with stream_errors(STANDARD_OUTPUT):
        sys.stdout.flush()


def _closed_pipe() -> int:
    """The reader of standard output went away (``kgparser evaluate | head``):
    stop quietly, as Unix tools do, without the traceback Python would print
    when it flushes stdout at exit."""
    _discard_standard_output()
    return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the closed pipe


def _discard_standard_output() -> None:
    """Point standard output at /dev/null: what could not be written is
    dropped, and Python's flush at exit has nothing to fail on."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
