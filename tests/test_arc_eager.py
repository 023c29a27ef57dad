import pytest

from kgparser.errors import KgparserError
from kgparser.transitions import get_system

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)


def test_root_end_gives_every_word_a_head_and_reads_the_root_in_the_buffer():
    system = get_system("arc-eager", root="end")
    state = system.initial_state(2)
    assert system.legal_actions(state) == ["shift"]
    system.apply(state, "shift")
    assert system.features(state) == [1, -1, -1, 2, 0]
    system.apply(state, "right", "obj")
    assert system.features(state) == [2, 1, -1, 0, -1]
    assert not system.is_final(state)
    assert sorted(system.legal_actions(state)) == ["reduce"]
    system.apply(state, "reduce")
    assert system.legal_actions(state) == ["left"]
    assert system.arc_of(state, "left") == (0, 1)
    system.apply(state, "left", "root")
    assert system.is_final(state)
    assert state.heads == [-1, 0, 1]


def test_root_first_is_final_when_the_buffer_is_empty():
    system = get_system("arc-eager")
    state = system.initial_state(2)
    assert sorted(system.legal_actions(state)) == ["right", "shift"]
    system.apply(state, "shift")
    assert system.features(state) == [1, 0, -1, 2, -1]
    system.apply(state, "shift")
    assert system.is_final(state)
    assert state.heads == [-1, -1, -1]


def test_options_round_trip_and_bad_root_is_rejected():
    assert get_system("arc-eager").options() == {"root": "first", "tie_break": "none"}
    assert get_system("arc-eager", root="end").options() == {"root": "end", "tie_break": "none"}
    with pytest.raises(KgparserError, match="root"):
        get_system("arc-eager", root="last")
