import functools
import itertools
import json
import random
import sys

import pytest

from kgparser.constraints import (
    ConstrainedArcEager,
    ConstraintError,
    Constraints,
    ReachableArcs,
    constrain,
    constraint_filter,
    constraints_for,
    constraints_from_misc,
    read_constraints_jsonl,
)
from kgparser.transitions import get_system
from kgparser.transitions.base import NO_HEAD
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

EAGER_END = get_system("arc-eager", root="end")


@functools.cache
def projective(n):
    return [t for t in all_trees(n) if is_projective(t)]


def satisfies(tree, arcs, spans):
    """Independent statement of the constraints on a complete tree."""
    if any(tree[d] != h for h, d, _ in arcs):
        return False
    for first, last, outside in spans:
        inside = range(first, last + 1)
        tops = [w for w in inside if tree[w] not in inside]
        if len(tops) != 1:
            return False
        givers = {tree[d] for d in range(1, len(tree)) if d not in inside and tree[d] in inside}
        if outside == "none" and givers or outside == "root" and givers - set(tops):
            return False
    return True


def final_states(csys, n, check_state=None):
    """The distinct final states of every computation of ``csys`` (runs that
    get stuck end nowhere); ``check_state(state, legal)`` sees every non-final one."""
    finals, seen, todo = [], set(), [csys.initial_state(n)]
    while todo:
        state = todo.pop()
        if state.key() in seen:
            continue
        seen.add(state.key())
        if csys.is_final(state):
            finals.append(state)
            continue
        legal = csys.legal_actions(state)
        if check_state:
            check_state(csys, state, legal)
        for action in legal:
            nxt = state.copy()
            csys.apply(nxt, action, "free")
            todo.append(nxt)
    return finals


def check_constrained_state(csys, state, legal):
    """No dead end; the table lookups and forced labels agree with the full checks."""
    assert legal, f"dead end in {state.key()} for {csys.constraints}"
    if isinstance(csys, ConstrainedArcEager):
        assert legal == full_checks(csys, state), (state.key(), csys.constraints)
    forced = csys.forced_labels(state, legal) or {}
    for action in set(legal) & csys.system.arc_actions:
        assert forced.get(action) == csys.forced_label(*csys.arc_of(state, action))


def derivations(csys, n):
    """Trees of every constrained computation; asserts no dead ends."""
    return {tuple(0 if h == NO_HEAD else h for h in state.heads[1:])
            for state in final_states(csys, n, check_constrained_state)}


def full_checks(csys, state):
    """The allowed actions by the full precondition checks alone, which the
    table lookups of ``ConstrainedArcEager.legal_actions`` must agree with."""
    b0 = state.b if state.b <= csys.n else 0
    s0 = state.stack[-1] if state.stack else NO_HEAD
    checks = {"shift": lambda: csys._shift_ok(state, b0), "left": lambda: csys._left_ok(state, s0, b0),
              "right": lambda: csys._right_ok(state, s0, b0), "reduce": lambda: csys._reduce_ok(state, s0, b0)}
    return [action for action in csys.system.legal_actions(state) if checks[action]()]


def spans_of(tree, rng, n):
    """Random non-overlapping spans that are subtrees of ``tree``, each with an
    outside option the tree respects (sometimes the tightest one)."""
    spans, w = [], 1
    while w <= n:
        last = rng.randint(w, n)
        inside = range(w, last + 1)
        tops = [x for x in inside if tree[x] not in inside]
        if len(tops) == 1 and rng.random() < 0.6:
            givers = {tree[d] for d in range(1, n + 1) if d not in inside and tree[d] in inside}
            options = ["free"] + (["root"] if givers <= set(tops) else []) + ([] if givers else ["none"])
            spans.append((w, last, rng.choice(options)))
            w = last + 1
        else:
            w += 1
    return spans


def random_consistent(rng, n):
    tree = rng.choice(projective(n))
    arcs = [(tree[d], d, rng.choice([None, "lab"])) for d in range(1, n + 1) if rng.random() < 0.3]
    spans = spans_of(tree, rng, n) if rng.random() < 0.8 else []
    return arcs, spans


def expected(n, arcs, spans):
    return {tuple(t[1:]) for t in projective(n) if satisfies(t, arcs, spans)}


@pytest.mark.exhaustive
def test_constrained_arc_eager_is_sound_and_complete_with_spans_and_arcs():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 6)
        arcs, spans = random_consistent(rng, n)
        csys = ConstrainedArcEager(EAGER_END, Constraints(arcs, spans), n)
        assert derivations(csys, n) == expected(n, arcs, spans), (arcs, spans)


@pytest.mark.parametrize("n, arcs, spans", [
    (4, [(3, 4, None)], [(1, 4, "root")]),
    (4, [(0, 1, None), (4, 2, None)], [(3, 4, "free")]),
    (3, [(1, 3, None)], [(3, 3, "none")]),
    (6, [(0, 1, None), (4, 3, None), (1, 6, None)], [(3, 5, "root"), (6, 6, "none")]),
    (5, [(1, 5, None), (2, 3, None)], [(3, 4, "free"), (5, 5, "none")]),
    (5, [(2, 5, None)], [(5, 5, "none")]),
], ids=["forced-root", "possible-roots", "right-head", "span-in-subtree", "constrained-root-reach", "covered-chain"])
def test_combinations_where_the_plain_conjunction_of_preconditions_gets_stuck(n, arcs, spans):
    trees = expected(n, arcs, spans)
    assert trees
    assert derivations(ConstrainedArcEager(EAGER_END, Constraints(arcs, spans), n), n) == trees


def test_every_span_option_on_a_whole_sentence_span():
    for n in range(2, 6):
        for option in ("none", "root", "free"):
            spans = [(2, n, option)]
            csys = constrain(EAGER_END, Constraints([], spans), n)
            trees = derivations(csys, n)
            assert trees and trees == expected(n, [], spans)


def test_random_constraint_sets_are_rejected_exactly_when_no_tree_satisfies_them():
    rng = random.Random(1)
    rejected = accepted = structural_passes = 0
    for _ in range(250):
        n = rng.randint(1, 5)
        arcs = []
        for d in rng.sample(range(1, n + 1), rng.randint(0, min(n, 3))):
            h = rng.choice([h for h in range(n + 1) if h != d])
            arcs.append((h, d, None))
        spans, w = [], 1
        while w <= n:
            last = rng.randint(w, n)
            if rng.random() < 0.4:
                spans.append((w, last, rng.choice(["none", "root", "free"])))
                w = last + 1
            else:
                w += 1
        constraints = Constraints(arcs, spans, where="test sentence 7")
        trees = expected(n, arcs, spans)
        if trees:
            constraints.check(n)
            assert derivations(ConstrainedArcEager(EAGER_END, constraints, n), n) == trees
            accepted += 1
        else:
            with pytest.raises(ConstraintError, match="test sentence 7"):
                constraints.check(n)
            rejected += 1
            try:
                unchecked = constrain(EAGER_END, constraints, n, check_satisfiable=False)
            except ConstraintError:
                continue  # found by the structural checks
            structural_passes += 1
            assert not runs_meeting_constraints(unchecked, n)
    assert rejected > 20 and accepted > 20 and structural_passes >= 2


def runs_meeting_constraints(csys, n) -> set:
    """Trees of the computations of ``csys`` that end meeting its constraints
    (runs that get stuck end nowhere)."""
    return {tuple(state.heads[1:]) for state in final_states(csys, n) if csys.satisfied_by(state.heads)}


def test_decoding_runs_find_every_unsatisfiable_arc_set():
    """The parser leaves the satisfiability run out (``check_satisfiable=False``)
    and lets its own decoding be the test: every arc set on up to 4 words that
    passes the structural checks but no tree satisfies (word 2 under 3 -> 1 and
    over 3 is the smallest) makes every run get stuck or miss the arcs."""
    unsatisfiable = 0
    for n in range(1, 5):
        for heads in itertools.product(*[[NO_HEAD] + [h for h in range(n + 1) if h != d] for d in range(1, n + 1)]):
            arcs = [(h, d, None) for d, h in enumerate(heads, 1) if h != NO_HEAD]
            try:
                unchecked = constrain(EAGER_END, Constraints(arcs), n, check_satisfiable=False)
            except ConstraintError:
                continue
            if not expected(n, arcs, []):
                unsatisfiable += 1
                assert not runs_meeting_constraints(unchecked, n), arcs
    assert unsatisfiable > 20


@pytest.mark.parametrize("system", [get_system("arc-eager"), get_system("arc-eager", root="end"),
                                    get_system("arc-hybrid"), get_system("arc-hybrid", root="end"),
                                    get_system("arc-eager", tie_break="shortest")],
                         ids=["eager-first", "eager-end", "hybrid-first", "hybrid-end", "eager-tie-break"])
def test_reachable_arcs_filter_is_sound_and_complete(system):
    """(A training tie-break narrows no decoding: the filter keeps every zero-cost action.)"""
    rng = random.Random(2)
    for _ in range(40):
        n = rng.randint(1, 5)
        tree = rng.choice(projective(n))
        arcs = [(tree[d], d, None) for d in range(1, n + 1) if rng.random() < 0.4]
        csys = ReachableArcs(system, Constraints(arcs), n)
        assert derivations(csys, n) == expected(n, arcs, [])


def test_figure_2_arc_preconditions_match_the_reachability_filter():
    rng = random.Random(3)
    for _ in range(30):
        n = rng.randint(2, 6)
        tree = random_projective_tree(n, rng)
        constraints = Constraints([(tree[d], d, None) for d in range(1, n + 1) if rng.random() < 0.4])
        figure2 = ConstrainedArcEager(EAGER_END, constraints, n)
        oracle = ReachableArcs(EAGER_END, constraints, n)
        state = figure2.initial_state()
        while not figure2.is_final(state):
            legal = EAGER_END.legal_actions(state)
            assert figure2.allowed(state, legal) == oracle.allowed(state, legal)
            figure2.apply(state, rng.choice(figure2.allowed(state, legal)))


def test_labels_of_constrained_arcs_are_forced():
    csys = constrain(EAGER_END, Constraints([(2, 1, "nsubj"), (0, 2, None)]), 3)
    state = csys.initial_state()
    csys.apply(state, "shift")
    assert csys.legal_actions(state) == ["left"]
    assert csys.forced_label(*csys.arc_of(state, "left")) == "nsubj"
    csys.apply(state, "left", "obj")
    assert state.labels[1] == "nsubj"
    csys.apply(state, "shift")
    assert csys.forced_label(*csys.arc_of(state, "right")) is None
    csys.apply(state, "right", "obj")
    assert state.labels[3] == "obj"
    assert csys.forced_label(0, 2) is None and csys.forced_label(3, 1) is None


@pytest.mark.parametrize("system", [EAGER_END, get_system("arc-hybrid"), get_system("arc-hybrid", root="end")],
                         ids=["eager-end", "hybrid-first", "hybrid-end"])
def test_decoding_filter_follows_a_parser_that_applies_the_plain_system(system):
    rng = random.Random(6)
    for _ in range(40):
        n = rng.randint(1, 12)
        tree = random_projective_tree(n, rng)
        arcs = [(tree[d], d, "x") for d in range(1, n + 1) if rng.random() < 0.3]
        spans = spans_of(tree, rng, n) if system is EAGER_END else []
        constraints = Constraints(arcs, spans)
        decoding = constraint_filter(system, constraints, n)
        if decoding is None:
            assert not constraints
            continue
        reference = constrain(system, constraints, n)
        state, mirror = system.initial_state(n), reference.initial_state()
        while not system.is_final(state):
            legal = system.legal_actions(state)
            allowed = decoding(state, legal)
            assert allowed == decoding.allowed_actions(state, legal) == reference.legal_actions(mirror)
            action = rng.choice(allowed)
            label = decoding.forced_label(*system.arc_of(state, action)) if action in system.arc_actions else None
            system.apply(state, action, label)
            reference.apply(mirror, action)
        assert satisfies([0 if h < 0 else h for h in state.heads], arcs, spans)
        assert all(state.labels[d] == "x" for _, d, _ in arcs)


def test_long_sentences_with_constraints_from_a_tree_parse_to_a_satisfying_tree():
    rng = random.Random(4)
    for _ in range(30):
        n = rng.randint(10, 60)
        tree = random_projective_tree(n, rng)
        arcs = [(tree[d], d, None) for d in range(1, n + 1) if rng.random() < 0.2]
        spans = spans_of(tree, rng, n)
        csys = constrain(EAGER_END, Constraints(arcs, spans), n)
        state = csys.initial_state()
        while not csys.is_final(state):
            csys.apply(state, rng.choice(csys.legal_actions(state)))
        assert satisfies(state.heads, arcs, spans)


def test_no_constraints_gives_back_the_system():
    assert constrain(EAGER_END, Constraints(), 4) is EAGER_END
    assert constrain(EAGER_END, None, 4) is EAGER_END
    assert constraint_filter(EAGER_END, Constraints(), 4) is None


def test_unchecked_filters_lend_their_system_until_it_is_kept():
    """A parser leaves the satisfiability run to its decoding and takes the
    system per batch, so that the per-word tables go with the batch."""
    unchecked = constraint_filter(EAGER_END, Constraints([(2, 1, None)]), 3, check_satisfiable=False)
    assert not unchecked.satisfiable_checked and unchecked.follows_states
    lent = unchecked.decoding_system()
    assert isinstance(lent, ConstrainedArcEager) and unchecked.decoding_system() is not lent
    kept = unchecked.constrained
    assert unchecked.decoding_system() is kept is unchecked.constrained
    checked = constraint_filter(EAGER_END, Constraints([(2, 1, None)]), 3)
    assert checked.satisfiable_checked and checked.decoding_system() is checked.constrained


def test_decoding_filter_refuses_to_skip_states():
    decoding = constraint_filter(EAGER_END, Constraints([], [(1, 2, "free")]), 3)
    state = EAGER_END.initial_state(3)
    EAGER_END.apply(state, "shift")
    EAGER_END.apply(state, "right")
    with pytest.raises(ValueError, match="every state"):
        decoding.allowed_actions(state, EAGER_END.legal_actions(state))


@pytest.mark.parametrize("arcs, spans, message", [
    ([(0, 4, None)], [], "outside the sentence"),
    ([(1, 1, None)], [], "itself"),
    ([(2, 1, None), (3, 1, None)], [], "two constrained heads"),
    ([(2, 1, None), (1, 2, None)], [], "cycle"),
    ([(1, 3, None), (0, 2, None)], [], "cross"),
    ([], [(1, 2, "free"), (2, 3, "free")], "overlap"),
    ([], [(2, 4, "free")], "not within"),
    ([(0, 1, None), (0, 2, None)], [(1, 2, "free")], "two words with outside heads"),
    ([(1, 3, None)], [(1, 2, "none")], "no outside dependents"),
    ([(1, 3, None), (3, 2, None)], [(1, 2, "root")], "only on its root"),
    ([(2, 1, None), (1, 3, None)], [], "no projective tree"),
])
def test_impossible_constraints_get_clear_errors(arcs, spans, message):
    with pytest.raises(ConstraintError, match=f"sent-9: .*{message}"):
        Constraints(arcs, spans, where="sent-9").check(3)


def test_spans_need_arc_eager_with_the_root_at_the_end():
    with pytest.raises(ConstraintError, match="root='end'"):
        constrain(get_system("arc-eager"), Constraints([], [(1, 2, "free")]), 3)



def test_arc_constraints_need_an_arc_decomposable_oracle():
    class Covington:
        name = "covington"

    with pytest.raises(ConstraintError, match="arc-decomposable"):
        ReachableArcs(Covington(), Constraints([(0, 1)]), 2)


def test_jsonl_side_file(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join([
        json.dumps({"sent_id": "a", "arcs": [[2, 1, "nsubj"], [0, 2]], "spans": [[2, 3, "root"]]}),
        "",
        json.dumps({"index": 4, "spans": [[1, 2]]}),
    ]), encoding="utf-8")
    table = read_constraints_jsonl(str(path))
    a = constraints_for(table, "a", 0)
    assert [(x.head, x.dep, x.label) for x in a.arcs] == [(2, 1, "nsubj"), (0, 2, None)]
    assert [(s.first, s.last, s.outside) for s in a.spans] == [(2, 3, "root")]
    assert constraints_for(table, "zzz", 4).spans[0].outside == "free"
    assert constraints_for(table, None, 3) is None
    assert constraints_for(table, None, 4).where.endswith("line 3 (4)")


@pytest.mark.parametrize("line, message", [
    ("{bad", "line 1: not valid JSON"),
    ('{"arcs": []}', "line 1: needs 'sent_id' or 'index'"),
    ('{"index": 0, "arcs": [[1]]}', "line 1 \\(0\\): an arc constraint"),
    ('{"index": 0, "spans": [[1, 2, "some"]]}', "line 1 \\(0\\): span constraint"),
    ('{"index": 0, "spams": []}', "line 1: unknown key"),
])
def test_jsonl_errors_name_the_line(tmp_path, line, message):
    path = tmp_path / "c.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ConstraintError, match=message):
        read_constraints_jsonl(str(path))


def test_misc_column_keys():
    misc = ["Head=2|HeadLabel=nsubj", None, "Span=B|SpanOutside=root", {"Span": "I"}, "Span=E|SpaceAfter=No", "_",
            "Span=S"]
    c = constraints_from_misc(misc, where="f.conllu sent 3")
    assert [(a.head, a.dep, a.label) for a in c.arcs] == [(2, 1, "nsubj")]
    assert [(s.first, s.last, s.outside) for s in c.spans] == [(3, 5, "root"), (7, 7, "free")]
    c.check(7)


@pytest.mark.parametrize("misc, message", [
    (["HeadLabel=x"], "word 1: HeadLabel needs Head"),
    (["Head=x"], "word 1: Head='x'"),
    (["Span=B", "_"], "word 2: span opened at word 1"),
    (["Span=I"], "word 1: Span=I without"),
    (["Span=B", "Span=B"], "word 2: Span=B inside"),
    (["Span=B"], "span opened at word 1 is not closed"),
    (["Span=Q"], "Span='Q'"),
    (["Span=S|SpanOutside=all"], "SpanOutside='all'"),
])
def test_misc_errors_name_the_word(misc, message):
    with pytest.raises(ConstraintError, match=f"f.conllu sent 3.*{message}"):
        constraints_from_misc(misc, where="f.conllu sent 3")


def write_jsonl(tmp_path, *records) -> str:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("first, second, name", [
    ({"sent_id": "a"}, {"sent_id": "a", "arcs": [[0, 1]]}, "sent_id 'a'"),
    ({"index": 2}, {"index": 2}, "index 2"),
    ({"sent_id": "a", "index": 2}, {"index": 2}, "index 2"),
    ({"sent_id": "a"}, {"sent_id": "a", "index": 2}, "sent_id 'a'"),
    ({"sent_id": "a", "index": 2}, {"sent_id": "b", "index": 2}, "index 2"),
])
def test_two_records_for_one_sentence_name_both_lines(tmp_path, first, second, name):
    path = write_jsonl(tmp_path, first, "", second)
    with pytest.raises(ConstraintError, match=f"c.jsonl, line 3: a second record for {name} "
                                              r"\(the first is on line 1\)"):
        read_constraints_jsonl(path)


def test_a_record_giving_index_and_sent_id_must_name_that_sentence(tmp_path):
    table = read_constraints_jsonl(write_jsonl(tmp_path, {"index": 1, "sent_id": "b", "arcs": [[0, 1]]},
                                               {"index": 0}))
    assert constraints_for(table, "b", 1).arcs[0].dep == 1
    assert constraints_for(table, "b", 3) is None  # the record is pinned to index 1
    with pytest.raises(ConstraintError, match=r"c.jsonl, line 1 \('b'\): gives index 1 and sent_id 'b', "
                                              r"but the sentence at index 1 has sent_id 'x'"):
        constraints_for(table, "x", 1)
    with pytest.raises(ConstraintError, match="the sentence at index 1 has no sent_id"):
        constraints_for(table, None, 1)


def test_a_sentence_named_by_two_records_is_an_error(tmp_path):
    table = read_constraints_jsonl(write_jsonl(tmp_path, {"sent_id": "a"}, {"index": 0}))
    with pytest.raises(ConstraintError, match=r"c.jsonl, line 2 \(0\): a second record for the sentence at "
                                              r"index 0, besides .*c.jsonl, line 1 \('a'\) for its sent_id"):
        constraints_for(table, "a", 0)
    assert constraints_for(table, "b", 0).where.endswith("line 2 (0)")


@pytest.mark.parametrize("line, message", [
    ('{"sent_id": "a", "index": "x"}', "line 1: index must be a non-negative integer"),
    ('{"sent_id": "a", "index": -1}', "line 1: index must be a non-negative integer"),
    pytest.param('{"index": ' + "1" * 5000 + "}", "line 1: not valid JSON \\(Exceeds the limit",
                 marks=pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="no digit limit")),
    ("[" * 100_000, "line 1: not valid JSON \\(nested too deeply\\)"),
    ('{"index": 0,}', "line 1: not valid JSON \\(Expecting property name .* at column 13\\)"),
])
def test_jsonl_key_and_json_errors(tmp_path, line, message):
    with pytest.raises(ConstraintError, match=message):
        read_constraints_jsonl(write_jsonl(tmp_path, line))


def test_constraints_files_must_be_utf8_readable_files(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"index": 0}\n{"sent_id": "\xff"}\n')
    with pytest.raises(ConstraintError, match=r"c.jsonl, line 2, column 14: constraints file is not valid UTF-8 "
                                              r"\(byte 0xff\)"):
        read_constraints_jsonl(str(path))
    path.write_bytes(b'\xef\xbb\xbf{"index": 0}\r\n')
    assert constraints_for(read_constraints_jsonl(str(path)), None, 0) is not None
    with pytest.raises(ConstraintError, match=f"{tmp_path}: cannot read constraints file: Is a directory"):
        read_constraints_jsonl(str(tmp_path))
