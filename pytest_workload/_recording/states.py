"""A row's life, in one place: its state, the events that move it, and why each one does.

Every row (a root's or a submodule's) counts its traced calls and can turn data-dependent; only
a root is observed and settles. The counts stay numbers beside the state: how many traced calls
a row had decides whether the next is compared with the first, and whether a root's next call
is traced (:meth:`Life.traces`), whatever its state: a root that an untraced call marked
data-dependent before its second traced call is still traced again.

=============== ============== ============================== ======================================
from            event          to (below / at the count)      why
=============== ============== ============================== ======================================
NEW             TRACED         TRACING / OBSERVED             its first traced call: its operations
                                                              are the row's computation
TRACING         TRACED         TRACING / OBSERVED             a traced call ran the first one's
                                                              operations; after TRACED_CALLS the
                                                              forward does not follow the data
TRACING         TRACED_OTHER   DATA_DEPENDENT                 two traced calls ran different
                                                              operations
OBSERVED,       TRACED         (unchanged)                    a call whose identity was read afresh
SETTLED                                                       (a module registered meanwhile) is
                                                              traced as a new one, and it agreed
OBSERVED,       TRACED_OTHER   DATA_DEPENDENT                 ... and it did not agree
SETTLED
NEW, TRACING    OBSERVED_SAME, OBSERVED / SETTLED             observed before TRACED_CALLS traced
                OBSERVED_OTHER                                calls: a compiled or scripted root,
                                                              whose calls are never traced again
OBSERVED        OBSERVED_SAME  OBSERVED / SETTLED             after OBSERVED_CALLS observed calls
                                                              in a row made the same submodule
                                                              calls, the later ones need no hooks
OBSERVED        OBSERVED_OTHER OBSERVED / SETTLED             the submodule calls changed: the
                                                              count starts again from this call
SETTLED         OBSERVED_SAME, OBSERVED / SETTLED             a settled root is still observed when
                OBSERVED_OTHER                                a key hook keys each call: the same
                                                              count decides whether it stays
any but         NEW_BELOW      DATA_DEPENDENT                 an untraced call ran a new workload
DATA_DEPENDENT                                                below it, or a known one at a new
                                                              path: its operations follow the data
DATA_DEPENDENT  any            DATA_DEPENDENT                 what follows the data never settles
=============== ============== ============================== ======================================

Any other pair is impossible (a traced call that differs from the first needs a first) and
raises :class:`ImpossibleTransition`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final


class ImpossibleTransition(AssertionError):
    """An event that cannot happen in a state: the recorder's own bug."""


#: Calls of a root workload whose operations are traced: the first, and one more to tell a
#: forward whose operations depend on the data (later calls run untraced).
TRACED_CALLS: Final = 2
#: Untraced calls of a root workload observed with its submodules' hooks: once this many in a
#: row made the same submodule calls, the root *settles*: its later calls run with those hooks
#: taken out, and add the calls its observed ones made to the submodules' rows (untimed).
OBSERVED_CALLS: Final = 3


class State(enum.Enum):
    NEW = "no traced call yet"
    TRACING = "traced fewer than TRACED_CALLS times"
    OBSERVED = "traced enough: its calls are observed untraced, its submodules hooked"
    SETTLED = "its observed calls made the same submodule calls: later ones run unhooked"
    DATA_DEPENDENT = "its operations follow the data: it is never settled"


class Event(enum.Enum):
    TRACED = "a traced call, the first or one that ran the first one's operations"
    TRACED_OTHER = "a traced call that ran other operations than the first"
    OBSERVED_SAME = "an observed call that made the submodule calls of the one before"
    OBSERVED_OTHER = "an observed call that made other submodule calls"
    NEW_BELOW = "an untraced call below it ran a new workload, or one at a new path"


_N, _T, _O, _S, _D = State
_TRACES = (Event.TRACED, Event.TRACED_OTHER)
_OBSERVES = (Event.OBSERVED_SAME, Event.OBSERVED_OTHER)
#: (state, event) -> (the state to below the event's count, the state to at it)
_TABLE: Final[dict[tuple[State, Event], tuple[State, State]]] = {
    (_N, Event.TRACED): (_T, _O),
    (_T, Event.TRACED): (_T, _O),
    (_O, Event.TRACED): (_O, _O),
    (_S, Event.TRACED): (_S, _S),
    **{(state, Event.TRACED_OTHER): (_D, _D) for state in (_T, _O, _S)},
    **{(state, event): (_O, _S) for state in (_N, _T, _O, _S) for event in _OBSERVES},
    **{(state, Event.NEW_BELOW): (_D, _D) for state in (_N, _T, _O, _S)},
    **{(_D, event): (_D, _D) for event in Event},
}


@dataclass(frozen=True, slots=True)
class Life:
    """A row's state, with its traced calls and its observed calls in a row that made the
    same submodule calls."""

    state: State = State.NEW
    traced: int = 0
    steady: int = 0

    def traces(self, opaque: bool) -> bool:
        """Whether a known root's next call is traced (never an opaque root's: its operations
        cannot be seen again)."""
        return self.traced < TRACED_CALLS and not opaque


def advance(life: Life, event: Event) -> Life:
    """The life after ``event`` (see the module's table)."""
    targets = _TABLE.get((life.state, event))
    if targets is None or (event is Event.TRACED_OTHER and not life.traced):
        raise ImpossibleTransition(f"{event.name} while {life.state.name} ({life})")
    traced, steady, reached = life.traced, life.steady, False
    if event in _TRACES:
        traced += 1
        reached = traced >= TRACED_CALLS
    elif event in _OBSERVES:
        steady = steady + 1 if event is Event.OBSERVED_SAME else 1
        reached = steady >= OBSERVED_CALLS
    return Life(targets[reached], traced, steady)
