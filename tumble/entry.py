"""The ``tumble`` script's entry point: no Ctrl-C is lost, from the first import on.

Python turns SIGINT into a ``KeyboardInterrupt`` raised wherever the main thread happens to be, and
there it can be lost. Seen in this project's CI and in a stress run of 80 interrupted starts:

* in a weakref callback (importlib runs one for each module lock) Python prints "Exception ignored
  in ..." and carries on, and the run went on to exit 0;
* in ``__set_name__`` while a class is built it becomes a ``RuntimeError`` (exit 1 with a traceback);
* under a library's bare ``except:`` around an optional import it vanishes without a word.

So the script answers SIGINT itself (:func:`_exit_now`): one line on stderr and exit status 130, at
once. That loses nothing a run keeps: finished blocks are in the store, the writer's lock is an
``flock`` the kernel drops with the process, and ``tumble run --resume`` redoes the unfinished blocks
to the same bytes (docs/design.md §5). While a Dask cluster of its own is up, the batch runner puts
Python's ``KeyboardInterrupt`` back so that the cluster is closed on the way out
(:func:`ecs.batch._dask_client`); for that stretch a ``KeyboardInterrupt`` swallowed by a callback
is handed back to the main thread (:func:`_redeliver_interrupt`). With ``--debug`` (or
``TUMBLE_DEBUG=1``) Python's own ``KeyboardInterrupt`` is kept, to show where the run was.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time

EXIT_INTERRUPTED = 130

#: what the Ctrl-C line adds for the command being run (set by :func:`keep_ctrl_c`)
_HINT = {"text": ""}

#: how long the hand-back waits [s]: the callback that swallowed the interrupt returns meanwhile
REDELIVERY_DELAY = 0.02


def _exit_now(signum, frame) -> None:
    """SIGINT handler: one line (with the ``--resume`` hint for ``tumble run``), exit 130."""
    for stream in (sys.stdout, sys.stderr):     # what was printed before, if still buffered
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a stream busy in the interrupted frame: its tail is lost
            pass
    os.write(2, f"error: interrupted{_HINT['text']}\n".encode())
    os._exit(EXIT_INTERRUPTED)


def _interrupt_main_later() -> None:
    time.sleep(REDELIVERY_DELAY)
    _thread.interrupt_main()


def _redeliver_interrupt(unraisable) -> None:
    """``sys.unraisablehook``: a swallowed ``KeyboardInterrupt`` is raised again in the main thread.

    From a short-lived thread, a few milliseconds later: raised from the hook itself it would land
    in the hook, which runs inside the same callback, and be swallowed again."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        threading.Thread(target=_interrupt_main_later, name="tumble-ctrl-c", daemon=True).start()
        return
    sys.__unraisablehook__(unraisable)


def keep_ctrl_c(argv: list[str] | None = None) -> None:
    """Answer SIGINT with :func:`_exit_now` unless it is ignored (``nohup``, a background job, a
    worker) or the command is debugged; hand a swallowed ``KeyboardInterrupt`` back to the main thread."""
    argv = sys.argv[1:] if argv is None else argv
    debugging = "--debug" in argv or os.environ.get("TUMBLE_DEBUG") == "1"
    command = next((a for a in argv if not a.startswith("-")), "")
    _HINT["text"] = " (a run continues with --resume)" if command == "run" else ""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler and not debugging:
        signal.signal(signal.SIGINT, _exit_now)
    sys.unraisablehook = _redeliver_interrupt


def main() -> None:
    """Run the command line (:func:`tumble.cli.main`) with :func:`keep_ctrl_c` in force.

    On the way out Python's cyclic garbage collector is told to skip every object
    (``gc.freeze``): the interpreter's last collection walked them all, 0.4 s after a warm
    ``tumble run`` and more after a cold one, whose compile leaves millions (docs/design.md §8.28).
    Nothing the script holds needs it: a store is written, synced and closed before its command
    returns, and the interpreter still flushes the standard streams and runs ``atexit``."""
    keep_ctrl_c()
    from tumble.cli import main as cli_main

    try:
        cli_main()
    finally:
        import gc

        gc.freeze()


if __name__ == "__main__":
    main()
