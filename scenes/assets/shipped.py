"""Fields shipped with the package: ``scenes/assets/data`` and its ``SHA256SUMS``.

A field the default scene needs and that costs seconds to build (its voxel gravity field,
:mod:`scenes.assets.voxel`; its terrain's SDF grid, :func:`scenes.assets.sdf_build.grid_from_shape`)
is shipped as data under a name that carries the key of its inputs, with a recipe that rebuilds it
(a test compares the bytes). A shipped file is used only when its bytes match its line in
``SHA256SUMS`` (``sha256sum``'s format); one that does not is refused with a warning and the field
is built instead.
"""

from __future__ import annotations

import hashlib
import pathlib
import warnings

#: The shipped fields' folder and their checksums.
DATA_DIR = pathlib.Path(__file__).resolve().parent / "data"
SUMS = DATA_DIR / "SHA256SUMS"


def file_sha256(path: pathlib.Path) -> str:
    """The SHA-256 of a file's bytes (hex)."""
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def read_sums(sums: pathlib.Path = SUMS) -> dict[str, str]:
    """``{file name: SHA-256}`` of a ``SHA256SUMS`` file (empty when there is none)."""
    sums = pathlib.Path(sums)
    if not sums.exists():
        return {}
    out = {}
    for line in sums.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            out[name.strip().lstrip("*")] = digest
    return out


def verified(path: pathlib.Path, sums: pathlib.Path = SUMS, *, what: str = "field") -> bool:
    """Whether the shipped file at ``path`` exists and its bytes match its checksum in ``sums``; a
    file that exists but does not match is refused with a ``RuntimeWarning`` (the caller builds)."""
    path = pathlib.Path(path)
    if not path.exists():
        return False
    want = read_sums(sums).get(path.name)
    if want is None or file_sha256(path) != want:
        warnings.warn(f"shipped {what} {path} does not match its checksum in {sums}: not used, "
                      f"building the {what} instead", RuntimeWarning, stacklevel=3)
        return False
    return True


def record(path: pathlib.Path, sums: pathlib.Path = SUMS) -> None:
    """Write (or replace) the checksum line of the file at ``path`` in ``sums``, lines sorted by name."""
    path = pathlib.Path(path)
    table = read_sums(sums)
    table[path.name] = file_sha256(path)
    pathlib.Path(sums).write_text("".join(f"{d}  {n}\n" for n, d in sorted(table.items())))


if __name__ == "__main__":  # the recipe of every shipped field: python -m scenes.assets.shipped
    from scenes.assets.bodies import write_shipped_body_grid
    from scenes.assets.voxel import write_shipped
    from scenes.deploy import ITOKAWA_VOXEL_SPACING, itokawa_polyhedron

    print(write_shipped_body_grid("itokawa", resolution=48))      # the default target's terrain
    print(write_shipped(itokawa_polyhedron(), ITOKAWA_VOXEL_SPACING))   # and its gravity field
