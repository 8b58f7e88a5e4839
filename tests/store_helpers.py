"""Shared by the store tests: a store's files as bytes, for byte-identity comparisons."""

import json
import os
import pathlib


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
