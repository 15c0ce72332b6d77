"""The theorem table is the one list of theorems, and everything that names theorems agrees with it."""

from pathlib import Path

from exact import registry
from exact.corpus import generate, load
from exact.theorems import THEOREMS, corpus_families, get_theorem, verify_theorems
from exact.verify import THEOREMS as VERIFY_THEOREMS
from exact.verify import claims, theorem_keys

ROOT = Path(__file__).resolve().parents[1]


def test_every_learner_belongs_to_one_theorem_and_every_page_exists():
    named = [name for t in THEOREMS.values() for name in t.learners]
    assert sorted(named) == sorted(s.name for s in registry.learners() if s.claims is None)
    assert len(named) == len(set(named))
    for t in THEOREMS.values():
        assert (ROOT / "docs" / t.doc).exists(), t.doc
        assert t.title and (t.claims is None or ":" in t.claims)


def test_verify_and_the_corpus_read_the_table():
    assert VERIFY_THEOREMS == tuple(THEOREMS) == theorem_keys()[: len(THEOREMS)]
    assert load.THEOREMS == tuple(corpus_families())
    for key in ("ffn", "transformer"):
        assert claims((key,), budget="quick"), key
    assert get_theorem("4.1").title.startswith("Theorem 4.1")


def test_the_independent_generator_states_the_same_counts_hints_and_formats():
    """The corpus generator imports only the standard library and mpmath, so it states the
    theorems' counts itself; they must be the table's."""
    assert tuple(generate.THEOREMS) == tuple(corpus_families())
    for key, family in corpus_families().items():
        assert generate.COUNTS[key] == (family.text, family.rule), key
        assert generate.RETURNS[key] == family.returns, key
        assert tuple(generate.HINTS[key]) == family.hints, key


def test_the_corpus_counts_are_the_formulas():
    fam = corpus_families()
    assert fam["4.1"].count(5, {}) == 30 and fam["5.1"].count(8, {"rank": 2}) == 36
    assert fam["kkg"].count(3, {"heads": 2}) == 4 * 2 * 9 - 4 + 1
    assert fam["ffn"].count(4, {"m": 3}) == 4 * 2 + 30 + 32
    assert fam["transformer"].count(4, {"m": 3}) == 4 * 2 + 30 + 32 + 40
    assert set(verify_theorems()) >= set(THEOREMS)
