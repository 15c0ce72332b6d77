"""The Coq proofs of proofs/coq/: every file checks, no admits, only the standard real-number axioms,
and a deliberately false variant of each statement fails to check.

Without ``coqc`` (install Coq 8.16: ``apt-get install coq``) the tests that run it skip, saying so;
the text checks run everywhere.
"""

from __future__ import annotations

import importlib
import shutil

import pytest

from proofs import coq_check
from proofs.coq_check import COQ_DIR, FILES, STANDARD_AXIOMS, THEOREMS, check_coq, forbidden_commands

needs_coqc = pytest.mark.skipif(coq_check.coqc_path() is None,
                                reason="coqc not found: install Coq 8.16 (apt-get install coq) to check proofs/coq")

#: The files each file imports (its own dependencies first).
DEPENDS = {"Defs": (), "logit": ("Defs",), "decoding": ("Defs", "logit"), "multihead": ("Defs",),
           "token_copy": ("Defs",), "oddness": ("Defs",), "transformer": ("Defs", "oddness"), "lemma_a1": ("Defs",),
           "biases": ("Defs",)}

#: The sympy module proving the same statement, for each Coq file that has one.
SYMPY = {"logit": "logit", "multihead": "multihead", "token_copy": "token_copy", "oddness": "oddness",
         "transformer": "transformer", "lemma_a1": "lemma_a1", "biases": "biases"}


def test_the_file_list_is_the_directory_and_no_file_assumes():
    assert sorted(p.stem for p in COQ_DIR.glob("*.v")) == sorted(FILES)
    assert set(DEPENDS) == set(FILES) and set(THEOREMS) <= set(FILES)
    for name in FILES:
        text = (COQ_DIR / f"{name}.v").read_text(encoding="utf-8")
        assert forbidden_commands(text) == (), name
        assert "Admitted" not in text and "admit." not in text


def test_forbidden_commands_see_through_comments_and_strings():
    assert forbidden_commands("(* Axiom in a comment (* nested *) *) Lemma a : True. Proof. exact I. Qed.") == ()
    assert forbidden_commands("Axiom cheat : False.") == ("Axiom",)
    assert forbidden_commands("Parameter x : nat.") == ("Parameter",)
    # a section's Variable would become a silent premise of every theorem that uses it
    assert forbidden_commands("Section S. Variable d : nat. End S.") == ("Variable",)
    assert forbidden_commands("Section S. Context (h : False). End S.") == ("Context",)
    assert forbidden_commands('Definition s := "(*"%string. Variable cheat : False.') == ("Variable",)
    assert forbidden_commands('(* "*)" *) Axiom x : False.') == ("Axiom",)
    for word in ("Unset Guard Checking.", "Admit Obligations.", "Notation \"a + b\" := (a * b).",
                 "#[bypass_check(guard)] Fixpoint f (n : nat) := n.", "Load \"x.v\".", "Declare ML Module \"m\".",
                 "Coercion f : A >-> B.", "Global Set Printing All."):
        assert forbidden_commands(word), word
    assert forbidden_commands("Import ListNotations.") == ()
    assert forbidden_commands("Lemma a : False. Proof. admit. Admitted.") == ("admit", "Admitted")


def test_each_sympy_module_names_its_coq_theorems_and_each_coq_file_its_sympy_module():
    for coq_file, module in SYMPY.items():
        doc = importlib.import_module(f"proofs.{module}").__doc__
        assert f"proofs/coq/{coq_file}.v" in doc, module
        text = (COQ_DIR / f"{coq_file}.v").read_text(encoding="utf-8")
        assert f"[proofs.{module}" in text, coq_file
        named = [t for t in THEOREMS[coq_file] if f"``{t}``" in doc]
        assert named, f"proofs.{module} names none of {THEOREMS[coq_file]}"
        for theorem in named:
            assert f"Theorem {theorem} " in text or f"Lemma {theorem} " in text, theorem
    assert "[exact.learn.single_head]" in (COQ_DIR / "decoding.v").read_text(encoding="utf-8")
    for file, theorems in THEOREMS.items():
        text = (COQ_DIR / f"{file}.v").read_text(encoding="utf-8")
        for theorem in theorems:
            assert any(f"{kind} {theorem} " in text for kind in ("Theorem", "Lemma", "Corollary")), theorem


def test_without_coqc_the_check_skips_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("EXACT_ATTENTION_COQC", str(tmp_path / "no-coqc"))
    assert coq_check.coqc_path() is None
    result = check_coq()
    assert result.status == "skipped" and "coqc not found" in result.reason and not result.checked


def test_without_coqc_the_claim_proved_in_coq_only_is_skipped_not_passed(monkeypatch, tmp_path):
    from exact.verify.lemmas import lemma_claims

    monkeypatch.setenv("EXACT_ATTENTION_COQC", str(tmp_path / "no-coqc"))
    claim = next(c for c in lemma_claims(budget="quick") if c.name.startswith("Theorem 4.1 decoding"))
    assert claim.skip_reason and "proved in Coq only" in claim.skip_reason and "coqc is not found" in claim.skip_reason
    monkeypatch.delenv("EXACT_ATTENTION_COQC")
    if coq_check.coqc_path() is not None:
        assert claim.skip_reason is None


def test_verify_lemmas_says_coq_skipped_without_coqc(monkeypatch, tmp_path):
    from exact.verify.lemmas import lemma_claims

    monkeypatch.setenv("EXACT_ATTENTION_COQC", str(tmp_path / "no-coqc"))
    coq_check.coq_status.cache_clear()
    try:
        claim = next(c for c in lemma_claims(budget="quick") if c.name.startswith("Oddness"))
        outcome = claim.run_instance(0)
    finally:
        coq_check.coq_status.cache_clear()
    assert outcome.passed and outcome.note == "sympy: holds; Coq: skipped, coqc not found (install Coq 8.16: apt-get install coq)"
    assert outcome.metrics["coq"] == "skipped, coqc not found"


@needs_coqc
def test_every_file_checks_and_every_theorem_rests_on_the_standard_axioms_only(record_property):
    result = coq_check.coq_status()
    assert result.status == "checked", result.reason
    assert result.files == FILES
    audited = {t.qualified for t in result.theorems}
    assert audited == {f"{f}.{t}" for f, ts in THEOREMS.items() for t in ts}
    for theorem in result.theorems:
        assert set(theorem.axioms) <= STANDARD_AXIOMS, (theorem.qualified, theorem.axioms)
        assert theorem.axioms, theorem.qualified  # every theorem here uses ℝ, so it lists ℝ's axioms
    assert "ClassicalDedekindReals.sig_forall_dec" in result.axioms
    record_property("coq", result.summary())  # the axioms, in the test report
    print(result.summary())


def _variant(tmp_path, file: str, old: str, new: str, *, audit: bool = False, also=()):
    """Check ``file`` (after its dependencies) with ``old`` replaced by ``new`` (and the ``also`` pairs)."""
    text = (COQ_DIR / f"{file}.v").read_text(encoding="utf-8")
    for before, after in ((old, new), *also):
        assert text.count(before) == 1, f"{before!r} must occur once in {file}.v"
        text = text.replace(before, after)
    for name in FILES:
        shutil.copyfile(COQ_DIR / f"{name}.v", tmp_path / f"{name}.v")
    (tmp_path / f"{file}.v").write_text(text, encoding="utf-8")
    return check_coq(source=tmp_path, files=(*DEPENDS[file], file), audit=audit)


#: (file, the true text, a false replacement): each variant states something false, so no proof can pass.
FALSE_VARIANTS = [
    pytest.param("logit", "= dot d v b + sigmoid (bil d u W b) * dot d v u.",
                 "= dot d v b + sigmoid (- bil d u W b) * dot d v u.", id="logit primitive with sigma(-.)"),
    pytest.param("decoding", "fun k j => t d choose g k j - shift choose g k * t d choose g (pivot choose g) j.",
                 "fun k j => t d choose g k j.", id="decoding without undoing the pivot shift"),
    pytest.param("decoding", "  (p, fun k => if is_nonzero (vh k) then 0 else 1).",
                 "  (p, fun k => 0).", id="SPEC plan without probes e_k + e_p"),
    pytest.param("multihead", "  ~ (forall hs hs', (forall X, F d hs X = F d hs' X) -> same_set d (merge d hs) "
                 "(merge d hs')).", "  (forall hs hs', (forall X, F d hs X = F d hs' X) -> same_set d (merge d hs) "
                 "(merge d hs')).", id="Prop 7.1 only-if without dropping zero-v heads"),
    pytest.param("multihead", "then (fst c, vadd (snd c) (snd h)) :: rest", "then (fst c, snd c) :: rest",
                 id="canonical form that does not sum v"),
    pytest.param("token_copy", "(1 + INR k * r_h d u q h)) hs).", "(1 + (INR k + 1) * r_h d u q h)) hs).",
                 id="token copy with k + 1"),
    pytest.param("oddness", "hvec d W (neg_seq X) j = - hvec d W X j.", "hvec d W (neg_seq X) j = hvec d W X j.",
                 id="attention even"),
    pytest.param("transformer", "= dot d (At_w d m A w) (hvec d W X).", "= 2 * dot d (At_w d m A w) (hvec d W X).",
                 id="odd part twice (A^T w)^T h"),
    pytest.param("lemma_a1", "<= 5 * Rabs (a - b).", "<= 4 * Rabs (a - b).", id="Lemma A.1 with the constant 4"),
    pytest.param("biases", "vec := fun i => rho * sumn r (fun a => WK a i * bq a).",
                 "vec := fun i => sumn r (fun a => WK a i * bq a).", id="query bias without rho"),
]


@needs_coqc
@pytest.mark.parametrize("file, old, new", FALSE_VARIANTS)
def test_a_false_variant_fails_to_check(tmp_path, file, old, new):
    result = _variant(tmp_path, file, old, new)
    assert result.status == "failed", f"the false variant of {file}.v checked"
    assert result.reason.startswith(f"{file}.v does not check"), result.reason
    assert "Syntax error" not in result.reason  # the statement is false; the text is still Coq


@needs_coqc
def test_the_true_files_check_with_their_dependencies_only(tmp_path):
    result = _variant(tmp_path, "lemma_a1", "<= 5 * Rabs (a - b).", "<= 5 * Rabs (a - b).")  # unchanged
    assert result.status == "checked", result.reason


@needs_coqc
def test_an_admitted_proof_is_refused_before_coqc_runs(tmp_path):
    result = _variant(tmp_path, "token_copy", "  rewrite <- lsum_map_scal; reflexivity.\nQed.",
                      "  rewrite <- lsum_map_scal; reflexivity.\nAdmitted.")
    assert result.status == "failed" and "may not use: Admitted" in result.reason


def test_defined_names_ignore_comments():
    assert coq_check.defined_names("(* Definition x := 1. *) Fixpoint f (n : nat) := n. Theorem t : True.") == ("f", "t")


@needs_coqc
def test_a_name_defined_again_in_another_file_is_refused(tmp_path):
    # decoding.v redefining attn would make the pinned statements, which say "attn", mean its attn
    result = _variant(tmp_path, "decoding", "(** A plan: the pivot", "Definition attn := 0.\n\n(** A plan: the pivot")
    assert result.status == "failed" and "decoding.v defines attn again (it is defined in Defs.v)" in result.reason


@needs_coqc
def test_a_theorem_weakened_under_its_own_name_is_caught_by_its_pin(tmp_path):
    # a premise that can never hold makes the theorem vacuous; the file still compiles, the pin does not
    text = (COQ_DIR / "token_copy.v").read_text(encoding="utf-8")
    start = text.index("Theorem token_copy :")
    proof = text[start:text.index("Qed.", start) + 4]
    statement = proof[:proof.index("Proof.")]
    weak = statement.replace("Theorem token_copy :", "Theorem token_copy : False ->") + "Proof. intros []. Qed."
    result = _variant(tmp_path, "token_copy", proof, weak, audit=True)
    assert result.status == "failed", result.reason
    assert result.reason.startswith("token_copy.token_copy does not prove the pinned statement"), result.reason


@needs_coqc
def test_a_changed_definition_is_caught_by_its_pin(tmp_path):
    # the softmax read at the first token instead of the last: every proof still goes through
    result = _variant(tmp_path, "Defs", "Definition query (X : list vec) : vec := last X vzero.",
                      "Definition query (X : list vec) : vec := hd vzero X.", audit=True)
    assert result.status == "failed", result.reason
    assert result.reason.startswith("Defs.query is not the pinned definition"), result.reason


@needs_coqc
def test_a_shadowed_prelude_name_is_caught_by_its_resolution_pin(tmp_path):
    # a negb that is always true turns canon into merge: the pinned copy of canon would read it too
    result = _variant(tmp_path, "multihead", "(** Step 3: drop the groups whose summed v is 0. *)",
                      "Definition negb (b : bool) : bool := true.\n(** Step 3: drop the groups whose summed v is 0. *)",
                      audit=True, also=[("""  destruct (v_is_zero d (snd h)) eqn:E; simpl.
  - rewrite F_cons, IH, attn_v_zero by (apply v_is_zero_true; assumption); ring.
  - rewrite !F_cons, IH; reflexivity.""", "  rewrite !F_cons, IH; reflexivity.")])
    assert result.status == "failed", result.reason
    assert result.reason.startswith("the name negb does not stand for Coq.Init.Datatypes.negb"), result.reason


def test_the_audit_parser_keeps_every_line_it_does_not_understand():
    out = ("==> logit\nAxioms:\nClassicalDedekindReals.sig_not_dec : forall P : Prop, {~ ~ P} + {~ P}\n"
           "FunctionalExtensionality.functional_extensionality_dep\n  : forall A, A\n"
           "Closed relies on definitional UIP.\n==> biases\nClosed under the global context\n")
    parsed = coq_check._parse_audit(out)
    assert parsed == {"logit": ("ClassicalDedekindReals.sig_not_dec", "FunctionalExtensionality.functional_extensionality_dep",
                                "Closed relies on definitional UIP."), "biases": ()}
    assert not coq_check.CoqTheorem("logit", "x", parsed["logit"]).standard


@needs_coqc
def test_a_smuggled_axiom_is_caught_by_the_audit(tmp_path):
    # no forbidden word: the axiom comes in through a library lemma, and only Print Assumptions sees it
    result = _variant(tmp_path, "lemma_a1",
                      "Theorem lemma_a1 : forall a b, Rabs (logit (clip a) - logit (clip b)) <= 5 * Rabs (a - b).\n"
                      "Proof.\n",
                      "Theorem lemma_a1 : forall a b, Rabs (logit (clip a) - logit (clip b)) <= 5 * Rabs (a - b).\n"
                      "Proof.\n  pose proof (Coq.Logic.ClassicalEpsilon.constructive_indefinite_description "
                      "(fun _ : nat => True)).\n", audit=True,
                      also=[("From Coq Require Import Reals Lra.", "From Coq Require Import Reals Lra ClassicalEpsilon.")])
    assert result.status == "failed", result.reason
    assert "non-standard axioms" in result.reason and "lemma_a1.lemma_a1 rests on" in result.reason
    assert "constructive_indefinite_description" in result.reason


def test_the_statements_quoted_in_docs_are_the_ones_in_the_files():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "proofs.md").read_text(encoding="utf-8")
    block = doc.split("```coq\n", 1)[1].split("```", 1)[0]
    sources = " ".join(" ".join((COQ_DIR / f"{n}.v").read_text(encoding="utf-8").split()) for n in FILES)
    statements = [" ".join(s.split()) for s in block.split("\n\n") if s.strip()]
    assert len(statements) >= 10
    for statement in statements:
        assert statement in sources, statement
