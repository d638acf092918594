"""The commands that hints give. Each repeats the flags that chose what this run recorded and
where its files are: in a project that passes ``--workload-record=all`` on the command line, a
bare ``pytest --workload-snapshot --snapshot-update`` records nothing, so writes nothing."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Final

from .text import one_line


@dataclass(frozen=True)
class Commands:
    """Every command a hint of this run names."""

    #: ``--flag=value`` for each option given on this run's command line that decides which
    #: workloads are recorded, on which device, and where their baselines are.
    selecting: tuple[str, ...] = ()

    def command(self, *flags: str, one_process: bool = False) -> str:
        """```pytest --workload-snapshot FLAGS <selecting flags>```, quoted for the terminal;
        ``one_process`` for a command that writes timing baselines, which xdist workers
        sharing the cores do not write."""
        words = ["pytest", "--workload-snapshot", *flags, *self.selecting]
        words += ["-p", "no:xdist"] if one_process else []
        return f"`{one_line(shlex.join(words))}`"

    @property
    def accept(self) -> str:
        """Writes the recorded workload snapshots."""
        return self.command("--snapshot-update")

    @property
    def baseline(self) -> str:
        """Writes timing baselines too."""
        return self.command("--snapshot-update", one_process=True)

    @property
    def migrate(self) -> str:
        """The update narrowed to verified migrations to the current fingerprint scheme."""
        return self.command("--snapshot-update", "--workload-migrate")

    @property
    def accept_upgrade(self) -> str:
        """The update narrowed to changes that are only a library upgrade's wording."""
        return self.command("--snapshot-update", "--workload-accept-upgrade")

    @property
    def run(self) -> str:
        """The gate alone, in one process: how timings are judged."""
        return self.command(one_process=True)


#: A run whose command line chose nothing beyond the defaults.
PLAIN: Final = Commands()
