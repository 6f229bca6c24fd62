"""The ``privbench`` command line. One module per sub-command (``*_cmd.py``, found
automatically), each with
``add_parser(subparsers)`` that sets ``func``; the request is validated before any run,
and an invalid one exits with status 2 and the reason on stderr."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from privbench._plumbing.abort import handle_sigint, handle_sigterm, terminated
from privbench._plumbing.env import env_flag
from privbench.protocol.errors import PrivbenchError, StoreReadError, StoreWriteError


def command_modules() -> list[str]:
    """Every ``*_cmd`` module of this package: adding a file adds a sub-command."""
    found = [m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_cmd")]
    first = ["plugins_cmd", "run_cmd", "sweep_cmd", "results_cmd"]
    return [m for m in first if m in found] + sorted(set(found) - set(first))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``command`` the name of a built-in one (module
    ``{command}_cmd``), of that command alone, so that a command imports only what it uses
    (``privbench plugins`` never imports pandas)."""
    from privbench import __version__

    parser = argparse.ArgumentParser(
        prog="privbench",
        description="Benchmark privacy mechanisms that hide a private attribute in released data.",
    )
    parser.add_argument("--version", action="version", version=f"privbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = command_modules()
    if command is not None and f"{command}_cmd" in modules:
        importlib.import_module(f"{__name__}.{command}_cmd").add_parser(sub)
        return parser
    for name in modules:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    _plugin_commands(sub)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The sub-command ``argv`` names (its first word when that is not an option)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def _plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Commands plugins contribute (``privbench_register_commands``), after the built-in ones."""
    from privbench.host.manager import get_host
    from privbench.protocol.commands import CommandLine

    for failure in get_host().register_commands(CommandLine(sub)):
        print(f"privbench: {failure}", file=sys.stderr)


#: the exit status of a command whose reader went away: 1, as rich's consoles and the
#: recipe of Python's documentation (signal module, "Note on SIGPIPE") use
CLOSED_PIPE = 1


def _quiet_closed_pipe() -> int:
    """The reader of our output went away (``privbench sweep --dry-run | head``): stop
    without a traceback. Python flushes stdout again at exit, so point it at devnull first."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (captured): nothing to flush
        pass
    return CLOSED_PIPE


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(_command_of(argv))  # may load the plugins (they add commands)
    except PrivbenchError as exc:  # PRIVBENCH_TRACE_PLUGINS=maybe
        print(f"privbench: error: {exc}", file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except BrokenPipeError:  # `privbench sweep --help | head -3`
        return _quiet_closed_pipe()
    handle_sigterm()
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's exit-time flush
        return status
    except BrokenPipeError:
        return _quiet_closed_pipe()
    except (StoreWriteError, StoreReadError) as exc:  # the request was fine; the store failed
        print(f"privbench {args.command}: error: {exc}", file=sys.stderr)
        return 3
    except PrivbenchError as exc:
        print(f"privbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if terminated.is_set():
            print(f"privbench {args.command}: terminated (SIGTERM); worker processes stopped, "
                  "runs stored so far kept", file=sys.stderr)
            return 143
        print("privbench: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):  # rich's own exit on a closed pipe
            return _quiet_closed_pipe()
        if exc.code in (None, 0, 1, 2, 3):
            raise  # argparse and our own exits
        print(f"privbench {args.command}: a plugin called sys.exit({exc.code!r})", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - no traceback reaches the terminal
        if _debug():
            raise
        print(f"privbench {args.command}: internal error: {type(exc).__name__}: "
              f"{str(exc)[:300]} (PRIVBENCH_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def _debug() -> bool:
    try:
        return env_flag("PRIVBENCH_DEBUG")
    except PrivbenchError:
        return False


def console() -> None:
    """The ``privbench`` command: :func:`main`, then exit even if a plugin left a
    non-daemon thread running (Python would wait for it forever). A Ctrl-C here also
    bounds how long stopping may take (:mod:`privbench._plumbing.abort`)."""
    import threading

    handle_sigint()
    code = main()
    left = [t.name for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if left:
        print(f"privbench: a plugin left thread(s) running ({', '.join(left[:3])}); "
              "exiting without waiting for them", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
