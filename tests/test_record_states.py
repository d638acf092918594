"""A row's life (``_recording/states.py``): each transition of its table and the impossible ones."""

import pytest

from pytest_workload._recording.states import (
    OBSERVED_CALLS,
    TRACED_CALLS,
    Event,
    ImpossibleTransition,
    Life,
    State,
    advance,
)

NEW, TRACING, OBSERVED, SETTLED, DATA_DEP = State


def _run(*events: Event) -> Life:
    life = Life()
    for event in events:
        life = advance(life, event)
    return life


def test_a_root_traced_then_observed_settles():
    life = Life()
    states = []
    for event in [Event.TRACED] * TRACED_CALLS + [Event.OBSERVED_SAME] * OBSERVED_CALLS:
        life = advance(life, event)
        states.append(life.state)
    assert states == [TRACING] * (TRACED_CALLS - 1) + [OBSERVED] * OBSERVED_CALLS + [SETTLED]
    assert life == Life(SETTLED, TRACED_CALLS, OBSERVED_CALLS)


def test_only_traced_calls_decide_whether_the_next_is_traced():
    assert Life().traces(opaque=False) and not Life().traces(opaque=True)
    assert _run(Event.TRACED).traces(opaque=False)
    assert not _run(*[Event.TRACED] * TRACED_CALLS).traces(opaque=False)
    # marked by an untraced call below it before its second traced call: still traced
    marked = _run(Event.TRACED, Event.NEW_BELOW)
    assert marked.state is DATA_DEP and marked.traces(opaque=False)


#: every allowed (state, event) -> (state below the event's count, state at it), as the
#: module's table gives them
TABLE = {
    (NEW, Event.TRACED): (TRACING, OBSERVED),
    (TRACING, Event.TRACED): (TRACING, OBSERVED),
    (TRACING, Event.TRACED_OTHER): (DATA_DEP, DATA_DEP),
    (OBSERVED, Event.TRACED): (OBSERVED, OBSERVED),
    (SETTLED, Event.TRACED): (SETTLED, SETTLED),
    (OBSERVED, Event.TRACED_OTHER): (DATA_DEP, DATA_DEP),
    (SETTLED, Event.TRACED_OTHER): (DATA_DEP, DATA_DEP),
    **{
        (s, e): (OBSERVED, SETTLED)
        for s in (NEW, TRACING, OBSERVED, SETTLED)
        for e in (Event.OBSERVED_SAME, Event.OBSERVED_OTHER)
    },
    **{(s, Event.NEW_BELOW): (DATA_DEP, DATA_DEP) for s in (NEW, TRACING, OBSERVED, SETTLED)},
    **{(DATA_DEP, e): (DATA_DEP, DATA_DEP) for e in Event},
}


@pytest.mark.parametrize(("state", "event"), list(TABLE), ids=lambda v: v.name)
def test_every_transition(state: State, event: Event):
    below, at = TABLE[(state, event)]
    start = Life(state, traced=0 if event is Event.TRACED else 1)
    assert advance(start, event).state is below
    one_short = {
        Event.TRACED: Life(state, TRACED_CALLS - 1),
        Event.OBSERVED_SAME: Life(state, 1, OBSERVED_CALLS - 1),
    }.get(event, start)
    # (a call with other submodule calls starts the count again at one: never at it)
    assert advance(one_short, event).state is (below if event is Event.OBSERVED_OTHER else at)


@pytest.mark.parametrize(
    ("state", "event"),
    [(s, e) for s in State for e in Event if (s, e) not in TABLE],
    ids=lambda v: v.name,
)
def test_every_other_transition_is_impossible(state: State, event: Event):
    with pytest.raises(ImpossibleTransition, match=f"{event.name} while {state.name}"):
        advance(Life(state, 1, 1), event)


def test_a_call_that_differs_from_no_first_is_impossible():
    for state in (OBSERVED, DATA_DEP):
        with pytest.raises(ImpossibleTransition, match="TRACED_OTHER"):
            advance(Life(state, 0, 1), Event.TRACED_OTHER)


def test_counts_follow_their_events():
    life = _run(Event.TRACED, Event.TRACED, Event.OBSERVED_SAME, Event.OBSERVED_SAME)
    assert (life.traced, life.steady) == (2, 2)
    assert advance(life, Event.OBSERVED_OTHER).steady == 1
    assert advance(life, Event.TRACED).traced == 3
    settled = advance(life, Event.OBSERVED_SAME)
    assert settled.state is SETTLED and advance(settled, Event.OBSERVED_OTHER).state is OBSERVED
