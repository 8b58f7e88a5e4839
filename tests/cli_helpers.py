"""Shared by the command-line tests: ``tumble ARGS`` run in this process."""

import types


def cli_here(*args):
    """``tumble ARGS`` through the real command line in this process (typer's CliRunner), returning
    what a finished ``subprocess.run`` would: ``returncode``, ``stdout`` and ``stderr``. It spares
    each call the ~4 s start of a fresh interpreter (imports, scene build, kernels loaded from the
    cache). An exception the command does not turn into an exit status propagates and fails the
    test, as the traceback of a process of its own would. Not for what the process itself shows:
    the command line stored in a run's attributes (``sys.argv``), the working directory, signals."""
    from typer.testing import CliRunner

    from tumble.cli import app

    r = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return types.SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=r.stderr)
