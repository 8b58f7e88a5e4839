"""Shared by the store tests: a store's files as bytes, for byte-identity comparisons; how many
samples a store has finished, and killing a run part-way."""

import json
import os
import pathlib
import signal
import time

import numpy as np


def store_files(path):
    """Every file of a store as bytes; the root attribute 'run' (documented as varying) removed."""
    out = {}
    for d, _, fs in os.walk(path):
        for f in fs:
            full = os.path.join(d, f)
            rel = os.path.relpath(full, path)
            data = pathlib.Path(full).read_bytes()
            if rel == "zarr.json":
                meta = json.loads(data)
                meta["attributes"].pop("run")
                data = json.dumps(meta, sort_keys=True).encode()
            out[rel] = data
    return out


def done_count(path) -> int:
    """Samples the store at ``path`` marks done (``final/done``); 0 before that array exists."""
    import zarr

    try:
        return int(np.asarray(zarr.open_array(os.path.join(str(path), "final", "done"), mode="r")[:]).sum())
    except Exception:  # noqa: BLE001 - not created yet
        return 0


def kill_mid_run(proc, path, total: int, timeout: float) -> int:
    """SIGKILL the run ``proc`` (writing the store at ``path``) as soon as it has finished some but
    not all of its ``total`` samples; returns how many were done then. Fails the test if the run
    could not be caught part-way within ``timeout`` seconds."""
    killed = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            n = done_count(path)
            if 0 < n < total:
                proc.send_signal(signal.SIGKILL)
                killed = n
                break
            time.sleep(0.01)
    finally:
        if proc.poll() is None and not killed:
            proc.kill()
        proc.wait()
    assert killed, f"could not catch the run mid-way (rc={proc.returncode}, {proc.stderr.read()!r})"
    return killed
