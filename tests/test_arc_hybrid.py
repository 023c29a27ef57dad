import pytest

from kgparser.errors import KgparserError
from kgparser.transitions import get_system

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)


def test_root_end_gives_every_word_a_head_and_reads_the_root_in_the_buffer():
    system = get_system("arc-hybrid", root="end")
    state = system.initial_state(2)
    assert system.legal_actions(state) == ["shift"]
    system.apply(state, "shift")
    assert system.features(state) == [1, -1, -1, 2]
    system.apply(state, "shift")
    assert system.features(state) == [2, 1, -1, 0]
    assert sorted(system.legal_actions(state)) == ["left", "right"]
    system.apply(state, "right", "obj")
    assert not system.is_final(state)
    assert system.legal_actions(state) == ["left"]
    assert system.arc_of(state, "left") == (0, 1)
    system.apply(state, "left", "root")
    assert system.is_final(state)
    assert state.heads == [-1, 0, 1]


def test_root_first_keeps_the_root_on_the_stack():
    system = get_system("arc-hybrid")
    state = system.initial_state(1)
    assert system.features(state) == [0, -1, -1, 1]
    assert system.legal_actions(state) == ["shift"]
    system.apply(state, "shift")
    assert system.legal_actions(state) == ["right"]
    system.apply(state, "right", "root")
    assert system.is_final(state) and state.heads == [-1, 0]


def test_options_round_trip_and_bad_root_is_rejected():
    assert get_system("arc-hybrid").options() == {"root": "first"}
    assert get_system("arc-hybrid", root="end").options() == {"root": "end"}
    with pytest.raises(KgparserError, match="arc-hybrid option 'root'"):
        get_system("arc-hybrid", root="last")
