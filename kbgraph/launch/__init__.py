"""The ``kbgraph`` console script (:func:`main`): for a verb that opens the knowledge base's store, that store is
started in the background before the verbs are imported, then the command line runs (kbgraph.cli).

Importing the command-line verbs and loading what a question needs takes ~1 s; a stopped embedded FalkorDB server
takes ~1 s to load the examples knowledge base (~2 s with vector indexes built before efConstruction 50). Begun
first, the server loads while Python imports, and a cold ``kbgraph ask`` waits for the longer of the two instead of
their sum (docs/benchmarks.md#cold-start-a-kbgraph-ask-process). Only an existing knowledge base is started
(``GraphStore.prestart``): an unknown name creates nothing, as before. After ``ask`` the console script
(:func:`console`) exits without Python's teardown of the loaded modules.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kbgraph.settings import Settings
from kbgraph.store import store_class

__all__ = ["PRESTART_VERBS", "console", "main", "parse_global", "prestart"]

#: The verbs whose first act is to open the knowledge base's store.
PRESTART_VERBS = frozenset({"ask"})

#: kbgraph's global options that take a value (kbgraph.cli.common), by the setting each overrides.
_VALUED = {"--kb": "name", "--uri": "uri", "--home": "home"}


def parse_global(argv: Sequence[str]) -> tuple[str | None, dict[str, Any]]:
    """``(verb, overrides)`` of a ``kbgraph`` command line (``argv`` without the program): the first word that is not
    a global option or its value, and the settings the global options ``--kb``, ``--uri`` and ``--home`` set (as
    ``--kb NAME`` or ``--kb=NAME``). ``(None, {})`` for a line the launcher should leave alone: no verb, an
    unknown option before it, or ``--help`` anywhere. Never raises."""
    overrides: dict[str, Any] = {}
    if any(arg in ("--help", "-h") for arg in argv):
        return None, {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    return None, {}
                value, i = argv[i + 1], i + 1
            if value:
                overrides[_VALUED[name]] = value
        elif arg == "--debug":
            pass
        elif arg.startswith("-"):
            return None, {}
        else:
            return arg, overrides
        i += 1
    return None, {}


def prestart(argv: Sequence[str]) -> threading.Thread | None:
    """Begin starting the store of the knowledge base ``argv`` (a ``kbgraph`` command line without the program)
    will open, when its verb is one of :data:`PRESTART_VERBS` (``GraphStore.prestart``); nothing otherwise. Returns
    the thread that starts it (to join before the process exits), or None. Never raises and never waits: an
    invalid setting or an unreachable store is reported by the verb itself."""
    verb, overrides = parse_global(argv)
    if verb not in PRESTART_VERBS:
        return None
    try:
        settings = Settings(**overrides)
        return store_class(settings).prestart(settings)
    except Exception:  # noqa: BLE001 - the verb reports it, with its exit code and fix
        return None


def console() -> None:
    """The ``kbgraph`` console script (pyproject's entry point): :func:`main`, then the process exits with its code.
    After a verb of :data:`PRESTART_VERBS` (``ask``) it ends without Python's teardown of the loaded modules and
    models (~0.3 s of a ~1.5 s ``kbgraph ask``, freeing memory the system frees at once; benchmarks/HISTORY.md,
    "Cold start"): the standard streams are flushed, the other non-daemon threads joined and the atexit handlers run
    first, so nothing written is lost (the verb has closed its knowledge base before returning)."""
    code = main()
    verb, _ = parse_global(sys.argv[1:])
    shutdown = getattr(threading, "_shutdown", None)  # what the interpreter runs first at exit (CPython)
    if verb in PRESTART_VERBS and callable(shutdown):
        _exit_now(code, shutdown)
    sys.exit(code)


def _exit_now(code: int, shutdown: Callable[[], None]) -> None:
    """Exit with ``code`` as the interpreter would, up to its teardown: ``threading._shutdown`` (thread pools
    stopped, non-daemon threads joined), the atexit handlers, the standard streams flushed; then ``os._exit``."""
    shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main() -> int:
    """The ``kbgraph`` console script: :func:`prestart` on the command line, then ``kbgraph.cli.main``; the store's
    start is waited for before returning. Returns the exit code."""
    starting = prestart(sys.argv[1:])
    try:
        from kbgraph.cli import main as run  # lazy: the verbs import the library (~1.3 s) while the store starts

        return run()
    finally:
        if starting is not None:  # a verb that ended early (a usage error, Ctrl-C) leaves no server without watchdog
            starting.join()
