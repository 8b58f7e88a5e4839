"""``tumble``: the command line (typer + rich).

Commands::

    tumble run SCENE [--samples N] [--out PATH] [--seed S] [--backend cpu|gpu]
                     [--resume | --overwrite] [--block B] [--active A]
                     [--workers N | --scheduler tcp://host:port] [-p KEY=VALUE ...] [--no-progress] [--debug]
    tumble scenes                 built-in scene names with one-line descriptions
    tumble inspect PATH [--verify]   scene, samples done, status and failure counts, arrays and sizes
    tumble rerun PATH SAMPLE      run one sample again and check it reproduces the stored bits
    tumble bench NAME [ARGS...]   runs benchmarks/bench_<NAME>.py's main()

``SCENE`` is a built-in name (``tumble scenes``) or a path to a Python file exposing
``build(**params) -> Scene``; ``-p KEY=VALUE`` passes parameters to ``build`` (values are parsed
as JSON when they can be: ``-p t_end=20 -p name='"x"'``).

Defaults: ``--out runs/<scene>-<seed>.zarr`` (``<scene>`` is the built-in name or the file's stem),
``--seed 0``, ``--samples 1``; with ``--resume`` an omitted ``--samples``/``--seed`` is taken from
the store. Progress (samples done, rate, ETA) goes to stderr, the one-line summary to stdout.

Exit status: 0 success; 1 an error (one line ``error: ...`` on stderr; ``--debug`` before or
after the command shows the traceback instead); 2 a usage error (typer's); 3 ``run`` finished but
some samples FAILED (their reasons are counted in the summary line and stored in
``final/failure_code`` and ``final/failure_message``); 4 ``inspect --verify`` found damaged shards;
5 ``rerun`` did not reproduce the stored bits;
130 interrupted (Ctrl-C: one line, the run continues with ``--resume``).

Scene files are Python programs run with your rights, like any script: run only scene files
you trust.
"""

from __future__ import annotations

import sys

try:        # Ctrl-C while the command line starts up (numpy, matplotlib...): one line, exit 130
    import enum
    import importlib
    import json
    import os
    import pathlib
    import pkgutil
    import time
    from typing import List, Optional

    import typer

    from .entry import EXIT_INTERRUPTED as _EXIT_INTERRUPTED
    from .plots import KINDS as _PLOT_FUNCTIONS
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted while starting up\n")
    raise SystemExit(130) from None

#: every figure ``tumble plot`` knows (tumble.plots.KINDS)
PLOT_KINDS = tuple(_PLOT_FUNCTIONS)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="tumble: data-oriented simulator for spacecraft contact dynamics (Monte-Carlo batches to Zarr).")

_STATE = {"debug": False}

#: Exit statuses (see the module docstring).
EXIT_ERROR, EXIT_USAGE, EXIT_FAILED_SAMPLES, EXIT_DAMAGED, EXIT_RERUN_DIFFERS = 1, 2, 3, 4, 5
EXIT_INTERRUPTED = _EXIT_INTERRUPTED      # tumble.entry's, which answers Ctrl-C before this module loads


class Backend(str, enum.Enum):
    cpu = "cpu"
    gpu = "gpu"


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


class _Errors:
    """Context manager: one line on stderr and exit 1 for any error (traceback with --debug)."""

    def __init__(self, debug: bool = False):
        self.debug = debug or _STATE["debug"] or os.environ.get("TUMBLE_DEBUG") == "1"

    def __enter__(self):
        return self

    def __exit__(self, et, exc, tb):
        if exc is None or isinstance(exc, (typer.Exit, typer.Abort, SystemExit)):
            return False
        if self.debug:
            return False
        from ecs.errors import TumbleError

        if isinstance(exc, KeyboardInterrupt):
            # one line, always: exit now, before interpreter shutdown reports the interrupted
            # asyncio tasks of zarr's writer loop one by one (the store lock is already released)
            typer.echo("error: interrupted (a run continues with --resume)", err=True)
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(EXIT_INTERRUPTED)
        if isinstance(exc, TumbleError):
            msg = _one_line(str(exc))
        else:
            msg = _one_line(f"{type(exc).__name__}: {exc}") + " (--debug shows the traceback)"
        typer.echo(f"error: {msg}", err=True)
        raise typer.Exit(1)


@app.callback()
def _main(debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    _STATE["debug"] = debug


def _parse_params(items: list[str]) -> dict:
    from ecs.errors import InputError

    out = {}
    for it in items or []:
        if "=" not in it:
            raise InputError("--param", it, "must be KEY=VALUE")
        k, v = it.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise InputError("--param", it, "KEY must be a Python identifier")
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def _scene_label(scene: str) -> str:
    from scenes.registry import is_scene_path

    return pathlib.Path(scene).stem if is_scene_path(scene) else scene


def _progress_bar(enabled: bool):
    """(context manager, callback) for a rich progress bar of samples on stderr."""
    import contextlib

    if not enabled:
        return contextlib.nullcontext(), None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.text import Text

    class Samples(ProgressColumn):
        def render(self, task):
            return Text(f"{int(task.completed)}/{int(task.total or 0)} samples")

    class Rate(ProgressColumn):
        def render(self, task):
            sp = task.speed
            if not sp and task.elapsed:  # few updates (large blocks): the mean rate of this invocation
                sp = (task.completed - task.fields.get("initial", 0.0)) / task.elapsed
            return Text("-- samples/s" if not sp else f"{sp:.3g} samples/s")

    prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(), Samples(), Rate(), TextColumn("ETA"),
                    TimeRemainingColumn(), TimeElapsedColumn(), console=Console(stderr=True))

    class Lazy:
        """Starts the bar on the first update, so an early error prints nothing but itself.

        Until the first sample's progress arrives the bar reads 'preparing' (the scene is built and
        its kernels compiled: up to a few minutes on a first run, cached afterwards); the rate and
        the ETA are then measured from the first progress on, so compile time does not skew them."""

        task = None
        started = False
        check_task = None

        def stage(self, what: str, done: int, total: int):
            """A long preparation (the input checks of a large batch), on a bar of its own."""
            if self.check_task is None:
                prog.start()
                self.check_task = prog.add_task(what, total=total, completed=done)
            else:
                prog.update(self.check_task, completed=done)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            if self.task is not None or self.check_task is not None:
                prog.stop()
            return False

        def __call__(self, done: float, total: int):
            if self.check_task is not None:
                prog.remove_task(self.check_task)
                self.check_task = None
            if self.task is None:
                prog.start()
                self.task = prog.add_task("preparing (building the scene, compiling kernels on a first run)",
                                          total=total, completed=done, initial=done)
                self.initial = done
            elif not self.started and done > self.initial:
                self.started = True          # the clock of rate and ETA starts at the first progress
                prog.reset(self.task, total=total, completed=done, description="run", initial=done)
            else:
                prog.update(self.task, completed=done)

    lazy = Lazy()
    return lazy, lazy


@app.command()
def run(
    scene: str = typer.Argument(..., help="Built-in scene name (see `tumble scenes`) or path to a .py file exposing "
                                          "build(). A scene file is Python run with your rights: run only files "
                                          "you trust."),
    samples: Optional[int] = typer.Option(None, "--samples", "-n", help="Number of samples [default: the "
                                          "store's with --resume; else the scene's: 100 for a scene with dispersions, "
                                          "1 without]."),
    out: Optional[pathlib.Path] = typer.Option(None, "--out", "-o", help="Store path [default: runs/<scene>-<seed>.zarr]."),
    seed: Optional[int] = typer.Option(None, "--seed", "-s", help="Base seed [default: 0, or the store's with --resume]."),
    backend: Backend = typer.Option(Backend.cpu, "--backend", help="Kernel backend."),
    resume: bool = typer.Option(False, "--resume", help="Continue a killed run in --out (finished samples are kept)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing store at --out."),
    block: Optional[int] = typer.Option(None, "--block", help="Samples per block [default: whole shards, up to 4096 samples; with Dask, 2 tasks per worker]."),
    active: Optional[int] = typer.Option(None, "--active", help="Streaming active set: sample slots in memory "
                                         "at once in a world that streams (deployment) [default: 512 on the CPU, 65,536 on the GPU]; the stored "
                                         "bytes do not depend on it."),
    shard_samples: Optional[int] = typer.Option(None, "--shard-samples", help="Samples per shard of the store, a "
                                                "power of two [default: from the sample count and the per-sample "
                                                "sizes: at least 256 samples (the whole store below that), 8 shards or more from 2,048 samples]. "
                                                "Shards are Dask's tasks; runs compared byte for byte use the same value."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Run blocks on a local Dask cluster of N worker processes."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Run blocks on an existing Dask cluster (tcp://host:port)."),
    param: List[str] = typer.Option([], "--param", "-p", help="Scene parameter KEY=VALUE (repeatable; JSON values)."),
    event_capacity: Optional[int] = typer.Option(None, "--event-capacity", help="Events kept per sample "
                                                 "[default: the scene's: 256 for a deployment, else 64]; more are counted as overflow."),
    no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
):
    """Run a Monte-Carlo batch of SCENE into one Zarr store.

    Exit status 0 when every sample finished, 3 when the run finished with FAILED samples (reasons
    in the summary and in final/failure_code), 1 on an error, 130 when interrupted (--resume
    continues). Scene files are trusted code: they run with your rights.
    """
    with _Errors(debug):
        from ecs.errors import BackendError, InputError

        if backend is Backend.gpu:
            from ecs.kernels import gpu_backend_error

            why = gpu_backend_error()
            if why:
                raise BackendError(why)
        from scenes.registry import BUILTIN_SCENES, is_scene_path, unknown_scene_error

        if scene not in BUILTIN_SCENES and not is_scene_path(scene):
            raise unknown_scene_error(scene)
        if is_scene_path(scene) and not os.path.isfile(scene):
            raise InputError("scene", scene, "no such file (a scene file is a .py file exposing build())")
        params = _parse_params(param)
        if out is None:
            out = pathlib.Path("runs") / f"{_scene_label(scene)}-{0 if seed is None else seed}.zarr"
        if resume and out.exists() and (samples is None or seed is None or event_capacity is None):
            from ecs.store import read_attrs

            attrs = read_attrs(out)
            samples = samples if samples is not None else attrs.get("samples")
            seed = seed if seed is not None else attrs.get("seed")
            event_capacity = event_capacity if event_capacity is not None else attrs.get("event_capacity")
        seed = 0 if seed is None else seed
        if not out.exists() and not resume:
            out.parent.mkdir(parents=True, exist_ok=True)

        from ecs.batch import last_summary, run_batch
        from scenes.registry import load_scene

        ctx, progress = _progress_bar(not no_progress)
        t0 = time.perf_counter()
        with ctx:
            path = run_batch(scene, samples=samples, out=out, seed=seed, backend=backend.value, block=block,
                             resume=resume, overwrite=overwrite, workers=workers, scheduler=scheduler,
                             progress=progress, command_line=["tumble", *sys.argv[1:]], params=params,
                             loader=load_scene, event_capacity=event_capacity, active=active,
                             shard_samples=shard_samples)
        from ecs.store import summarize

        info = summarize(path)
        s = last_summary()
        counts = ", ".join(f"{k} {v}" for k, v in sorted(info["status"].items(), key=lambda kv: -kv[1])) or "none"
        line = (f"wrote {path}: {info['done']}/{info['samples']} samples done ({counts}); "
                f"{s.get('samples_run', 0)} run, {s.get('samples_skipped', 0)} kept; {time.perf_counter() - t0:.1f} s")
        if s.get("samples_raised"):
            line += f"; {s['samples_raised']} raised and are marked failed (first: {_one_line(s['first_error'])})"
        typer.echo(line)
        for extra in _report_lines(info, s):
            typer.echo(extra)
        if info["status"].get("failed"):
            raise typer.Exit(EXIT_FAILED_SAMPLES)


@app.command()
def scenes(name: Optional[str] = typer.Argument(None, help="A built-in scene name or a scene file: list its "
                                                               "parameters with defaults and units.")):
    """List the built-in scenes, or one scene's parameters (-p KEY=VALUE) with defaults and units."""
    with _Errors():
        from scenes.registry import describe_scenes, scene_parameters

        if name is None:
            rows = describe_scenes()
            w = max(len(n) for n, _ in rows)
            for n, desc in rows:
                typer.echo(f"{n:<{w}}  {desc}")
            return
        desc, params = scene_parameters(name)
        typer.echo(f"{name}: {desc}")
        if not params:
            typer.echo("no parameters")
            return
        w = max(len(p["name"]) for p in params)
        wd = max(len(p["default"]) for p in params)
        wt = max(len(p["type"]) for p in params)
        typer.echo("parameters (tumble run " + name + " -p KEY=VALUE):")
        for p in params:
            typer.echo(f"  {p['name']:<{w}}  {p['default']:<{wd}}  {p['type']:<{wt}}  {p['doc']}".rstrip())


def _require(path: pathlib.Path) -> None:
    """A store path given to a command must exist."""
    if not path.exists():
        from ecs.errors import InputError

        raise InputError("path", os.fspath(path), "does not exist")


def _report_lines(info: dict, summary: dict | None = None) -> list[str]:
    """Failure reasons, event-log overflow, repaired shards and a taken-over stale lock, one line each."""
    out = []
    if info.get("failure_reasons"):
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(info["failure_reasons"].items(), key=lambda kv: -kv[1]))
        ex = "; ".join(f"sample {i}: {_one_line(m)}" for i, m in info.get("failed_examples", [])[:3])
        out.append(f"failed   {sum(info['failure_reasons'].values())} samples by reason: {reasons} "
                   f"(e.g. {ex}; all in final/failure_code and final/failure_message)")
    if info.get("event_overflow"):
        out.append(f"warning  {info['event_overflow']} samples produced more events than the event log holds "
                   f"(events/event_overflow = 1; the first events are kept; --event-capacity N keeps more)")
    if summary and summary.get("repaired"):
        out.append(f"repaired {summary['repaired']} damaged shards (missing, truncated or failing their checksums): "
                   f"their samples were recomputed (listed in the root attribute run)")
    if summary and summary.get("rewritten"):
        out.append(f"repaired {len(summary['rewritten'])} damaged arrays the run writes whole, rewritten from the "
                   f"scene: {', '.join(summary['rewritten'][:5])}")
    warm = (summary or {}).get("warm") or {}
    if warm.get("compiled"):
        shared = f", {len(warm['helper'])} of them in a helper process" if warm.get("helper") else ""
        names = [*warm.get("here", []), *warm.get("helper", [])]
        out.append(f"note     compiled {warm['compiled']} kernels before the first frame in {warm['seconds']:.1f} s "
                   f"({', '.join(names[:6])}{' ...' if len(names) > 6 else ''}: numba had none cached for this "
                   f"code, a new force or changed file, or a first run{shared}; later runs load them)")
    if warm.get("helper_error"):
        out.append(f"warning  compile helper: {_one_line(warm['helper_error'])}; its kernels were compiled in this "
                   f"process instead (a slower cold start, the same results)")
    idle = (summary or {}).get("idle_workers")
    if idle:
        out.append(f"warning  {idle['workers']} Dask workers had {idle['tasks']} tasks (blocks of whole shards of "
                   f"{idle['shard_samples']} samples): {idle['workers'] - idle['tasks']} stayed idle; a smaller "
                   f"--shard-samples (or --block, if you set one) gives more tasks")
    if summary and summary.get("stale_lock"):
        sl = summary["stale_lock"]
        out.append(f"note     took over a stale lock of pid {sl.get('pid')} on {sl.get('host')} (that run is gone)")
    return out


def _findings_lines(path) -> list[str]:
    """What the store found (tumble.findings): the summary in words and each outcome's statistics."""
    import textwrap

    from . import findings, plots

    try:
        v = plots.StoreView.open(path)
        text = findings.plain_summary(v)
        stats = findings.outcome_statistics(v)
    except Exception as e:  # noqa: BLE001 - a damaged store still gets the rest of inspect
        return [f"findings unavailable: {_one_line(f'{type(e).__name__}: {e}')} (inspect --verify checks the store)"]
    out = textwrap.wrap(text, 110, initial_indent="summary  ", subsequent_indent="         ")
    if stats:
        w = max(len(s.name) for s in stats)
        out.append(f"{'outputs':<{w + 6}}{'units':<7} {'n':>6} {'mean':>11} {'± s.e.':>10} {'median':>11} "
                   f"{'5 %':>11} {'95 %':>11}")
        for outcome in dict.fromkeys(s.outcome for s in stats):
            out.append(f"  {outcome}")
            F = findings.fmt
            for s in (s for s in stats if s.outcome == outcome):
                out.append(f"    {s.name:<{w}}  {s.units or '1':<7} {s.n:>6} {F(s.mean):>11} {F(s.sem):>10} "
                           f"{F(s.median):>11} {F(s.p5):>11} {F(s.p95):>11}")
    return out


def _size(n: int) -> str:
    if n < 0:
        return "?"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


@app.command()
def inspect(path: pathlib.Path = typer.Argument(..., help="A store written by `tumble run`."),
            verify: bool = typer.Option(False, "--verify", help="Read every shard holding a finished sample and "
                                                                "report damaged ones (exit status 4)."),
            debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Show a store's scene, samples done, status counts, failure reasons, arrays and sizes."""
    with _Errors(debug):
        from ecs.store import NOT_A_SHARD, summarize, verify_store

        _require(path)
        damage = verify_store(path) if verify else None
        if damage and any(d.shard == NOT_A_SHARD and d.problem.startswith("metadata") for d in damage):
            # the store cannot be opened as it describes itself: report the damage, nothing else
            typer.echo("\n".join([f"store    {path}", f"verify   {len(damage)} damaged outside the sample shards "
                                  "(--resume cannot recompute them: rerun with --overwrite)"]
                                 + [f"  {d.array}: {d.problem} ({d.file})" for d in damage]))
            raise typer.Exit(EXIT_DAMAGED)
        info = summarize(path)
        a = info["attrs"]
        sc = a.get("scene", {})
        runs = (a.get("run") or {}).get("invocations", [])
        lines = [
            f"store    {info['path']}",
            f"scene    {sc.get('name')}: {sc.get('description')}",
            f"source   {sc.get('source')}",
            f"params   {json.dumps(sc.get('params', {}), sort_keys=True)}",
            f"tumble   {a.get('tumble', {}).get('version')}   backend {a.get('backend')}   seed {a.get('seed')}   "
            f"shard {a.get('shard_samples')} samples",
            f"samples  {info['done']}/{info['samples']} done",
            "status   " + (", ".join(f"{k} {v}" for k, v in sorted(info["status"].items(), key=lambda kv: -kv[1]))
                          or "none yet"),
        ]
        if runs:
            last = runs[-1]
            lines.append(f"runs     {len(runs)} (last: {last.get('command_line')}; "
                         f"{'complete' if last.get('complete') else 'interrupted'})")
            raised = sum(int(r.get("samples_raised") or 0) for r in runs)
            if raised:
                lines.append(f"raised   {raised} samples raised during their run and are marked failed")
        lines += _report_lines(info)
        lines += _findings_lines(path)
        lines.append("arrays")
        wp = max(len(r["path"]) for r in info["arrays"])
        wd = max(len("(" + ", ".join(r["dims"]) + ")") for r in info["arrays"])
        for r in info["arrays"]:
            dims = "(" + ", ".join(r["dims"]) + ")"
            shape = "x".join(str(n) for n in r["shape"])
            dtype = "str" if "String" in r["dtype"] else r["dtype"]
            lines.append(f"  {r['path']:<{wp}}  {dims:<{wd}}  {shape:<14} {dtype:<8} {r['units']:<8} "
                         f"{_size(r['nbytes']):>9} -> {_size(r['stored'])} stored")
        if verify:
            fixed = [d for d in damage if d.shard == NOT_A_SHARD]
            shards = [d for d in damage if d.shard != NOT_A_SHARD]
            lines.append(f"verify   {len(shards)} damaged shards" + (" (tumble run ... --resume recomputes them)"
                                                                      if shards else ": every finished sample reads back"))
            for d in shards:
                lines.append(f"  {d.array} shard {d.shard} (samples {d.start}:{d.stop}): {d.problem}")
            if fixed:
                lines.append(f"verify   {len(fixed)} damaged outside the sample shards (--resume cannot recompute "
                             "them: rerun with --overwrite)")
                for d in fixed:
                    lines.append(f"  {d.array}: {d.problem} ({d.file})")
        typer.echo("\n".join(lines))
        if damage:
            raise typer.Exit(EXIT_DAMAGED)


@app.command()
def plot(path: pathlib.Path = typer.Argument(..., help="A store written by `tumble run`."),
         kind: List[str] = typer.Argument(None, help="Plot kinds [default: every kind the store can draw]: "
                                                     + ", ".join(PLOT_KINDS) + ". Asked for several, the ones "
                                                     "the store cannot draw are named and the rest drawn."),
         out: Optional[pathlib.Path] = typer.Option(None, "--out", "-o", help="Folder for the figures "
                                                                             "[default: <store>-plots/]."),
         by: Optional[str] = typer.Option(None, "--by", help="Input to split the distributions by, e.g. "
                                                           "contact_terrain[restitution] [default: the probe "
                                                           "shape when dispersed]."),
         debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Draw a store's figures (PNG files, one per kind) and print their paths."""
    with _Errors(debug):
        from .plots import kinds_for
        from .plots import plot as draw

        _require(path)
        kinds = list(kind or [])
        skipped = []
        if len(kinds) > 1:                       # draw what the store can; name the rest
            can = kinds_for(path)
            skipped = [k for k in kinds if k in PLOT_KINDS and k not in can]
            kinds = [k for k in kinds if k not in skipped] or kinds
        for f in draw(path, kinds or None, out, by=by):
            typer.echo(os.fspath(f))
        for k in skipped:
            typer.echo(f"warning  plot kind {k!r}: this store cannot draw it (it can: {', '.join(can)})", err=True)
        if skipped:
            raise typer.Exit(1)


@app.command()
def report(path: pathlib.Path = typer.Argument(..., help="A store written by `tumble run`."),
           out: Optional[pathlib.Path] = typer.Option(None, "--out", "-o", help="HTML file "
                                                                               "[default: <store>-report.html]."),
           debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Write one self-contained HTML page of a store: run, status, failures, figures, inputs, history."""
    with _Errors(debug):
        from .report import build_report

        _require(path)
        typer.echo(os.fspath(build_report(path, out)))


def _parse_observed(items: list[str]) -> dict:
    from ecs.errors import InputError

    out = {}
    for it in items or []:
        name, eq, vs = it.partition("=")
        value, colon, sigma = vs.partition(":")
        if not eq or not colon:
            raise InputError("--observe", it, "must be NAME=VALUE:SIGMA (e.g. bounce_time=663:60)")
        try:
            out[name.strip()] = (float(value), float(sigma))
        except ValueError:
            raise InputError("--observe", it, "VALUE and SIGMA must be numbers") from None
    return out


@app.command()
def calibrate(path: pathlib.Path = typer.Argument(..., help="A store whose scene draws the unknown parameters per "
                                                            "sample (the prior), e.g. `tumble run deploy -p "
                                                            "restitution_range=[0.05,0.9] ...`."),
              observe: List[str] = typer.Option(..., "--observe", help="NAME=VALUE:SIGMA, repeatable: an observed "
                                                                       "quantity and its standard uncertainty. NAME: "
                                                                       "fall_time, bounce_time, contacts, bounces, "
                                                                       "displacement, path_length, or a scalar "
                                                                       "final/ output."),
              param: List[str] = typer.Option(None, "--param", help="A drawn parameter to report, repeatable "
                                                                    "[default: every parameter drawn per sample]."),
              credible: float = typer.Option(0.9, "--credible", help="Mass of the credible intervals and "
                                                                     "predictive bands."),
              out: Optional[pathlib.Path] = typer.Option(None, "--out", "-o", help="Folder for calibration.json "
                                                                                 "and the figures [default: "
                                                                                 "<store>-calibration/]."),
              allow_few: bool = typer.Option(False, "--allow-few", help="Report even when fewer than 30 effective "
                                                                         "samples match the observation."),
              debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Infer the drawn parameters' posterior from an observed landing (ABC over the store's batch)."""
    with _Errors(debug):
        from .calibrate import calibrate as infer
        from .calibrate import write_calibration

        _require(path)
        cal = infer(path, _parse_observed(observe), parameters=list(param) if param else None, credible=credible,
                    allow_few=allow_few)
        typer.echo("\n".join(cal.lines()))
        dest = out or path.with_name(path.name.removesuffix(".zarr") + "-calibration")
        for f in write_calibration(cal, dest):
            typer.echo(os.fspath(f))


@app.command()
def animate(path: pathlib.Path = typer.Argument(..., help="A store written by `tumble run` with trajectories."),
            sample: int = typer.Argument(..., help="The sample to animate."),
            out: Optional[pathlib.Path] = typer.Option(None, "--out", "-o", help="Output .gif (Pillow) or .mp4 "
                                                                                "(ffmpeg) [default: <store>-sample<N>.gif]."),
            fps: int = typer.Option(20, "--fps", min=1, help="Frames per second."),
            debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Animate one sample's recorded motion over the target's shape (GIF or MP4)."""
    with _Errors(debug):
        from .animate import animate as make

        _require(path)
        typer.echo(os.fspath(make(path, sample, out, fps=fps)))


@app.command()
def rerun(path: pathlib.Path = typer.Argument(..., help="A store written by `tumble run`."),
          sample: int = typer.Argument(..., help="The sample to run again."),
          every: Optional[float] = typer.Option(None, "--every", metavar="SECONDS",
                                                help="Record a dense trajectory every SECONDS (deployment: any "
                                                     "interval, the results stay the same bits; other scenes: a "
                                                     "multiple of their frame)."),
          record: Optional[List[str]] = typer.Option(None, "--record", metavar="COLUMN",
                                                     help="Columns of the dense trajectory (repeatable) [default: "
                                                          "the scene's, else the state columns]."),
          out: Optional[pathlib.Path] = typer.Option(None, "--out", "-o",
                                                     help="Write the dense trajectory here (a Zarr store xarray "
                                                          "opens) [default: <store>-sample<N>-dense.zarr]."),
          trace: Optional[int] = typer.Option(None, "--trace", metavar="STEPS", min=1,
                                              help="Also keep every integration step (up to STEPS per body) "
                                                   "into --out: time, step, phase, state (deployment)."),
          overwrite: bool = typer.Option(False, "--overwrite",
                                         help="Replace --out when it is a dense store an earlier rerun wrote "
                                              "(nothing else is ever replaced)."),
          debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Run one sample of a store again, alone, and check it reproduces the stored bits.

    Exit status 0 when every array of the sample is bitwise identical to the store, 5 when some
    differ (they are listed). A sample that raised during the batch raises again: add --debug to
    see the traceback. With --every, the run also records a dense trajectory into --out, which
    must not exist yet, or be a dense store of an earlier rerun and --overwrite given.
    """
    with _Errors(debug):
        from ecs.batch import rerun_sample
        from scenes.registry import load_scene

        _require(path)
        dest = None
        if every is not None or trace is not None:
            dest = out or path.with_name(f"{path.stem}-sample{sample}-dense.zarr")
            _check_dense_dest(dest, path, overwrite)       # before any work: never delete what rerun did not write
        t0 = time.perf_counter()
        r = rerun_sample(path, sample, loader=load_scene, every=every, record=tuple(record) if record else None,
                         trace=trace)
        if dest is not None:
            _write_dense(dest, r, path)
            if every is not None:
                typer.echo(f"dense trajectory: {len(r['times'])} records every {every:g} s of "
                           f"{', '.join(r['trajectory'])} -> {dest}")
            if trace is not None:
                import numpy as np

                n = r["trace"]["count"]
                kept = np.minimum(n, trace)
                typer.echo(f"step trace: {int(kept.sum())} steps kept of {int(n.sum())} -> {dest}")
        from components.status import Reason, Status

        status = Status(r["status"]).name.lower()
        line = f"sample {sample} of {path}: {status}"
        if r["failure_code"]:
            line += f" ({Reason(r['failure_code']).name.lower()}: {r['failure_message']})"
        typer.echo(line + f"; {time.perf_counter() - t0:.1f} s")
        for p, v in r["arrays"].items():
            if p.startswith("final/") and p not in ("final/done", "final/sample") and np_size(v) <= 16:
                typer.echo(f"  {p[6:]:<28} {format_value(v)}")
        if r["differs"]:
            typer.echo(f"differs from the store in {len(r['differs'])} arrays: {', '.join(r['differs'])}")
            raise typer.Exit(EXIT_RERUN_DIFFERS)
        typer.echo(f"bitwise identical to the store ({len(r['arrays'])} arrays)")


#: Root attribute of a dense store written by ``tumble rerun`` (the only kind --overwrite replaces).
DENSE_MARK = "tumble_rerun_dense"


def _check_dense_dest(dest: pathlib.Path, source: pathlib.Path, overwrite: bool) -> None:
    """Refuse, in one line, a dense-output path that is the source store, lies inside it or holds
    it, is a file, or is any existing directory but a dense store of an earlier rerun replaced
    with --overwrite."""
    from ecs.errors import InputError

    d, src = dest.resolve(), source.resolve()
    if d == src or src in d.parents or d in src.parents:
        raise InputError("--out", str(dest), f"must not be the store being rerun, lie inside it or contain it ({source})")
    if not dest.exists() and not dest.is_symlink():
        return
    if not dest.is_dir():
        raise InputError("--out", str(dest), "exists and is not a directory: choose another path")
    marked = False
    try:
        import zarr

        marked = bool(zarr.open_group(str(dest), mode="r").attrs.get(DENSE_MARK, False))
    except Exception:
        marked = False
    if not marked:
        raise InputError("--out", str(dest), "exists and is not a dense store written by tumble rerun: choose another "
                                             "path (rerun never deletes what it did not write)")
    if not overwrite:
        raise InputError("--out", str(dest), "exists (a dense store of an earlier rerun): add --overwrite to replace it")


def _write_dense(dest: pathlib.Path, r: dict, source: pathlib.Path) -> None:
    """A rerun's dense trajectory as a store of its own, laid out like the source's: group
    ``trajectories/`` with dims (sample, time, entity, component), each column's units, long name
    and frame and the entity ids and names taken from the source store (so ``tumble animate`` and
    ``tumble plot`` read it), the source's ``scene/`` group (the target's shape model) copied, and the
    step trace (``--trace``) at the root."""
    import shutil

    import numpy as np
    import xarray as xr
    import zarr

    src = zarr.open_group(os.fspath(source), mode="r")

    def described(c):           # the source's array of column c (trajectories/ first, then final/)
        for grp in ("trajectories", "final"):
            if f"{grp}/{c}" in src:
                return src[f"{grp}/{c}"], grp
        return None, None

    sample = int(r["sample"])
    data, coords = {}, {"sample": ("sample", np.array([sample], np.int64))}
    if "times" in r:
        coords["time"] = ("time", np.asarray(r["times"]))
    for c, a in r.get("trajectory", {}).items():
        a = np.asarray(a)[None]                                     # sample, time, entity, ...
        arr, grp = described(c)
        tail = list(arr.metadata.dimension_names[1:]) if arr is not None else []
        if grp == "trajectories":
            tail = tail[1:]                                         # drop its time axis
        dims = ["sample", "time"] + (tail if len(tail) == a.ndim - 2 else
                                     ["entity"] + [f"{c}_axis{k}" for k in range(a.ndim - 3)])
        attrs = {k: arr.attrs[k] for k in ("units", "long_name", "frame") if arr is not None and k in arr.attrs}
        data[c] = (dims, a, attrs or {"units": "1"})
        ent = dims[2]
        for name in (ent, f"{ent}_name"):
            if grp and f"{grp}/{name}" in src and name not in coords:
                coords[name] = (ent, np.asarray(src[f"{grp}/{name}"][...]))
        for lab in dims[3:]:
            if grp and f"{grp}/{lab}" in src and lab not in coords:
                coords[lab] = (lab, np.asarray(src[f"{grp}/{lab}"][...]))
    if dest.exists():
        shutil.rmtree(dest)
    root = {DENSE_MARK: True, "sample": sample, "source": os.fspath(source),
            "scene": dict(src.attrs.get("scene", {})), "seed": src.attrs.get("seed")}
    if "trace" in r:
        tr = r["trace"]
        kept = int(min(np.max(tr["count"], initial=0), tr["time"].shape[1]))
        trace = xr.Dataset({
            "trace_time": (("entity", "step"), tr["time"][:, :kept], {"units": "s", "long_name": "end of the step"}),
            "trace_step": (("entity", "step"), tr["step"][:, :kept], {"units": "s", "long_name": "step size"}),
            "trace_phase": (("entity", "step"), tr["phase"][:, :kept], {"units": "1", "long_name": "probe phase"}),
            "trace_state": (("entity", "step", "state"), tr["state"][:, :kept],
                            {"units": "SI", "long_name": "x, y, z [m], vx, vy, vz [m/s], q0..q3 (scalar-first), "
                                                         "wx, wy, wz [rad/s]: the deployment state (target frame, "
                                                         "body rates)"}),
            "trace_count": (("entity",), tr["count"], {"units": "1", "long_name": "steps taken"})})
        trace.attrs.update(root)
        trace.to_zarr(dest, mode="w")
    else:
        zarr.open_group(os.fspath(dest), mode="w").attrs.update(root)
    if data:
        xr.Dataset(data, coords=coords).to_zarr(dest, group="trajectories", mode="a")
    if "scene" in src:
        xr.open_zarr(os.fspath(source), group="scene").to_zarr(dest, group="scene", mode="a")


def np_size(v) -> int:
    import numpy as np

    return int(np.size(v))


def format_value(v) -> str:
    import numpy as np

    a = np.asarray(v)
    if a.dtype.kind == "f":
        return np.array2string(a.squeeze(), precision=10, separator=", ", max_line_width=200)
    return str(a.squeeze().tolist())


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench(ctx: typer.Context, name: str = typer.Argument(..., help="Benchmark name: runs benchmarks/bench_<NAME>.py."),
          debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")):
    """Run a benchmark (benchmarks/bench_<NAME>.py main()); extra arguments go to it."""
    with _Errors(debug):
        from ecs.errors import InputError

        mod_name = f"benchmarks.bench_{name.replace('-', '_')}"     # gpu-compile -> bench_gpu_compile
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name not in (mod_name, "benchmarks"):
                raise
            try:
                import benchmarks

                have = sorted(m.name[6:].replace("_", "-") for m in pkgutil.iter_modules(benchmarks.__path__)
                              if m.name.startswith("bench_"))
            except ImportError:
                have = []
            raise InputError("benchmark", name, f"no module {mod_name} (available: {', '.join(have) or 'none'})") from None
        if not callable(getattr(mod, "main", None)):
            raise InputError("benchmark", name, f"{mod_name} has no main()")
        argv = sys.argv
        sys.argv = [f"tumble bench {name}", *ctx.args]
        try:
            rc = mod.main()
        finally:
            sys.argv = argv
        if isinstance(rc, int) and rc:
            raise typer.Exit(rc)


def main() -> None:
    """Entry point of the ``tumble`` script."""
    try:
        app(prog_name="tumble")
    except SystemExit as exc:
        # typer turns a Ctrl-C outside a command's error handler (while it parses arguments or
        # imports what a command needs) into a silent exit 130: say it, in the same one line
        if exc.code == EXIT_INTERRUPTED:
            sys.stderr.write("error: interrupted\n")
        raise
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        raise SystemExit(EXIT_INTERRUPTED) from None


if __name__ == "__main__":
    main()
