"""When an update may delete the snapshots syrupy counts as unused: not where a test did not
run, nor through a symlink that leads out of the rootdir. No syrupy here: the glue turns
syrupy's cleanup off (``--snapshot-no-cleanup``) when :meth:`UnusedGuard.refusal` says why."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._core.files import outside
from .._core.text import one_line
from .snapshot_files import SNAPSHOT_DIRNAME


def leads_out(test_dirs: Iterable[Path], rootdir: Path) -> tuple[Path, str] | None:
    """A snapshot directory beside these test modules, or one within it, that a symlink takes
    out of the rootdir, and where it leads: syrupy's cleanup deletes unused files where it
    walks, so an update that may delete must not walk there."""
    for folder in dict.fromkeys(d / SNAPSHOT_DIRNAME for d in test_dirs):
        if not folder.is_dir():
            continue
        for top, dirs, _ in os.walk(folder):
            for path in (Path(top), *(Path(top) / d for d in dirs)):
                real = outside(path, rootdir)
                if real is not None:
                    return path, real
    return None


@dataclass
class UnusedGuard:
    """What an update must know before it deletes a snapshot no test used."""

    rootdir: Path | None = None
    #: Collected tests that did not run (deselected, or an error in setup): syrupy counts
    #: their snapshots as unused.
    not_run: dict[str, None] = field(default_factory=dict)
    #: The tests collected, beside whose modules the snapshot directories are.
    nodeids: Sequence[str] = ()

    def refusal(self, *, finished: bool) -> str | None:
        """Why an update must delete no snapshot as unused: a run that did not ``finish``
        (Ctrl-C, also twice, ``-x``), a test that did not run, or a snapshot directory that a
        symlink takes out of the rootdir; None: it may."""
        if not finished:
            return "the run was cut short"
        if self.not_run:
            count = len(self.not_run)
            return (
                f"{count} collected test{'s' if count > 1 else ''} did not run (deselected, or "
                "an error in setup)"
            )
        root = self.rootdir
        if root is None:
            return None
        out = leads_out(((root / n.split("::", 1)[0]).parent for n in self.nodeids), root)
        if out is None:
            return None
        where = f"{one_line(str(out[0]))} leads to {one_line(out[1])}"
        return f"{where}, outside the rootdir {one_line(str(root))}"
