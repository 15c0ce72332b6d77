"""The regression corpus: an independent generator, a strict loader, the judge and the pytest plugin."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from exact import cli
from exact.corpus import generate
from exact.corpus.judge import check_oracle, formula, judge, run_instance
from exact.corpus.load import load_corpus
from exact.corpus.reference import learn as reference_learn
from exact.errors import InvalidArgument

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    assert cli.main(["corpus", "export", str(d)]) == 0
    return d


def test_generator_uses_only_the_standard_library_and_mpmath():
    tree = ast.parse(Path(generate.__file__).read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import would reach the library under test"
            roots.add(node.module.split(".")[0])
    assert roots - {"mpmath"} <= set(sys.stdlib_module_names), roots
    assert "mpmath" in roots


def test_generator_is_deterministic_and_seeded():
    a, b = generate.build(size="quick"), generate.build(size="quick")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    c = generate.build(size="quick", seed=1)
    assert c["4.1.json"] != a["4.1.json"]
    with pytest.raises(ValueError):
        generate.build(size="huge")


def test_corpus_answers_agree_with_the_library_oracle(corpus_dir):
    corpus = load_corpus(corpus_dir)
    assert set(corpus.instances) == {"4.1", "5.1", "kkg", "ffn", "transformer"}
    for instances in corpus.instances.values():
        for inst in instances:
            assert inst.queries and all(len(q.decimal.replace("-", "").replace(".", "").lstrip("0")) <= 50
                                        for q in inst.queries)
            assert check_oracle(inst) is None, inst.name


def test_exact_forms_describe_the_answers(corpus_dir):
    """The exact forms are exact: the softmax sums' scores and values, and FFN rationals, recompute them."""
    from exact.oracles import ExactOracle

    corpus = load_corpus(corpus_dir)
    for inst in corpus.instances["kkg"] + corpus.instances["4.1"][:3]:
        for q in inst.queries:
            heads = q.exact["heads"]
            for h, head in zip(heads, inst.model.heads if inst.theorem == "kkg" else [inst.model]):
                X = [list(r) for r in q.X]
                s = [sum(Fraction(a) * b for a, b in zip(x, [sum(w * c for w, c in zip(row, X[-1]))
                                                             for row in head.W])) for x in X]
                assert [Fraction(t) for t in h["s"]] == s
                assert [Fraction(t) for t in h["u"]] == [sum(a * b for a, b in zip(head.v, x)) for x in X]
    for inst in corpus.instances["ffn"]:
        for q in inst.queries:
            assert ExactOracle(inst.model).query([list(r) for r in q.X]).rational() == Fraction(q.exact["value"])


def test_reference_learners_are_exact_at_the_counts(corpus_dir):
    corpus = load_corpus(corpus_dir)
    for theorem, instances in corpus.instances.items():
        for inst in instances:
            v = run_instance(reference_learn, inst)
            assert v.exact, (inst.name, v.message)
            want, rule = formula(theorem, inst.d, inst.hints)
            assert v.formula == want
            if rule == "exact":
                assert v.queries == want, inst.name
            else:
                assert v.queries <= want, inst.name


def test_judge_names_the_first_difference(corpus_dir):
    inst = load_corpus(corpus_dir, theorems=["4.1"]).instances["4.1"][2]
    good = reference_learn(_oracle(inst), theorem="4.1", hints={})
    assert judge(inst, good)[0]
    bad = json.loads(json.dumps(good))
    bad["v"][1] = str(Fraction(bad["v"][1]) - Fraction(1, 10**40))
    ok, message = judge(inst, bad)
    assert not ok and message.startswith("v[1] = ") and "off by -1e-40" in message
    for broken, words in (({"W": good["W"]}, "'v'"), ({**good, "W": "x"}, "list of rows"),
                          ({**good, "v": ["nan"] * inst.d}, "v[0]"), ({**good, "v": ["__import__('os')"] * inst.d},
                                                                       "v[0]"), ([], "dict")):
        ok, message = judge(inst, broken)
        assert not ok and "malformed" in message and words in message, message


def test_judge_multi_head_ffn_transformer(corpus_dir):
    corpus = load_corpus(corpus_dir)
    inst = corpus.instances["kkg"][-2]  # two heads share W: the canonical form has one head fewer
    good = reference_learn(_oracle(inst), theorem="kkg", hints=inst.hints)
    assert judge(inst, good)[0] and len(good["heads"]) == inst.hints["heads"] - 1
    split = {"heads": good["heads"] + [{"W": good["heads"][0]["W"], "v": ["0"] * inst.d}]}
    assert judge(inst, split)[0]  # a zero-v head is the same map
    extra = {"heads": good["heads"] + [{"W": [["9"] * inst.d] * inst.d, "v": ["1"] * inst.d}]}
    assert judge(inst, extra) == (False, f"{len(good['heads']) + 1} canonical head(s) returned, the reference has "
                                         f"{len(good['heads'])}")
    ffn = corpus.instances["ffn"][0]
    good = reference_learn(_oracle(ffn), theorem="ffn", hints=ffn.hints)
    scaled = {"A": [[str(2 * Fraction(x)) for x in row] for row in good["A"]],
              "w": [str(Fraction(x) / 2) for x in good["w"]]}
    assert judge(ffn, scaled)[0]  # positive rescaling of units: the same function
    off = {**good, "w": [str(Fraction(good["w"][0]) + Fraction(1, 10**30))] + good["w"][1:]}
    assert not judge(ffn, off)[0]
    tr = corpus.instances["transformer"][0]
    good = reference_learn(_oracle(tr), theorem="transformer", hints=tr.hints)
    assert judge(tr, good)[0]
    bad = {**good, "W": [[str(Fraction(x) + (Fraction(1, 10**30) if (i, j) == (0, 0) else 0)) for j, x in
                          enumerate(row)] for i, row in enumerate(good["W"])]}
    ok, message = judge(tr, bad)
    assert not ok and message.startswith("W[0][0]")


def _oracle(inst):
    from exact.oracles import ExactOracle

    return ExactOracle(inst.model)


def test_loader_rejects_corrupt_corpora(tmp_path, corpus_dir):
    with pytest.raises(InvalidArgument, match="not a directory"):
        load_corpus(tmp_path / "missing")
    (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(InvalidArgument, match="not readable JSON"):
        load_corpus(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(InvalidArgument, match="not an exact-attention corpus"):
        load_corpus(tmp_path)
    manifest = json.loads((corpus_dir / "manifest.json").read_text())
    doc = json.loads((corpus_dir / "4.1.json").read_text())
    for mutate, words in (
        (lambda m, d: d["instances"][0]["model"].__setitem__("W", [["1/0"]]), "4.1.json: instance 0"),
        (lambda m, d: d["instances"][0]["model"].__setitem__("W", [["__import__('os')"]]), "instance 0"),
        (lambda m, d: d["instances"][0]["model"]["W"][0].__setitem__(0, 1.5), "as a string"),
        (lambda m, d: d["instances"][1].__setitem__("name", d["instances"][0]["name"]), "unique"),
        (lambda m, d: d["instances"][0].__setitem__("hints", {"rank": 1}), "hints"),
        (lambda m, d: d["instances"][0].__setitem__("d", 7), "d = 7"),
        (lambda m, d: m.__setitem__("version", 2), "version 2"),
        (lambda m, d: m["theorems"]["4.1"].__setitem__("file", "../4.1.json"), "plain file name"),
    ):
        m, d = json.loads(json.dumps(manifest)), json.loads(json.dumps(doc))
        mutate(m, d)
        (tmp_path / "manifest.json").write_text(json.dumps(m))
        (tmp_path / "4.1.json").write_text(json.dumps(d))
        with pytest.raises(InvalidArgument, match=words.replace("(", r"\(").replace(")", r"\)")):
            load_corpus(tmp_path, theorems=["4.1"])


def test_cli_export_refuses_a_foreign_directory(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert cli.main(["corpus", "export", str(tmp_path)]) == 2
    assert "refusing" in capsys.readouterr().err
    assert cli.main(["corpus", "export", str(tmp_path / "notes.txt")]) == 2
    fresh = tmp_path / "c"
    assert cli.main(["corpus", "export", str(fresh), "--size", "quick", "--seed", "3"]) == 0
    assert cli.main(["corpus", "export", str(fresh), "--size", "quick", "--seed", "3"]) == 0  # a corpus: rewritten
    assert json.loads((fresh / "manifest.json").read_text())["generator"]["seed"] == 3


def _pytest(corpus, learner, *extra, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--exact-attention-corpus", str(corpus), "--learner", learner, *extra],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_plugin_passes_the_package_learners(corpus_dir, tmp_path):
    run = _pytest(corpus_dir, "exact.corpus.reference:learn", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    corpus = load_corpus(corpus_dir)
    n = sum(len(v) for v in corpus.instances.values())
    assert f"{n} passed" in run.stdout
    for theorem, instances in corpus.instances.items():
        k = len(instances)
        total = sum(formula(theorem, i.d, i.hints)[0] for i in instances)
        row = [line.split() for line in run.stdout.splitlines() if line.startswith(theorem + " ")]
        assert row and row[0][:4] == [theorem, str(k), f"{k}/{k}", f"{k}/{k}"], run.stdout
        if formula(theorem, 1, instances[0].hints)[1] == "exact":
            assert row[0][4:7] == [str(total), "/", str(total)]


def test_plugin_passes_a_correct_third_party_learner(corpus_dir, tmp_path):
    run = _pytest(corpus_dir, "corpus_toys:learn", "--exact-attention-theorem", "4.1", cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "11 passed" in run.stdout


def test_plugin_fails_a_learner_off_by_1e30_naming_the_instance(corpus_dir, tmp_path):
    run = _pytest(corpus_dir, "corpus_toys:learn_off_by_1e30", "--exact-attention-theorem", "4.1", cwd=tmp_path)
    assert run.returncode == 1
    assert "11 failed" in run.stdout
    assert ("corpus instance 4.1 / rational d=3: not exact: W[0][0] = " in run.stdout
            and "(off by 1e-30)" in run.stdout), run.stdout[-3000:]


def test_plugin_reports_a_learner_that_raises(corpus_dir, tmp_path):
    run = _pytest(corpus_dir, "corpus_toys:learn", "--exact-attention-theorem", "kkg", cwd=tmp_path)
    assert run.returncode == 1
    assert "the learner raised NotImplementedError: this toy learns single heads only" in run.stdout


@pytest.mark.parametrize("argv, words", [
    (["--learner", "corpus_toys:learn"], "--learner needs --exact-attention-corpus"),
    (["--exact-attention-corpus", "{corpus}"], "needs --learner"),
    (["--exact-attention-corpus", "{corpus}", "--learner", "os.system"], "expected MODULE:FUNCTION"),
    (["--exact-attention-corpus", "{corpus}", "--learner", "no_such_module_xyz:f"], "cannot import"),
    (["--exact-attention-corpus", "{corpus}", "--learner", "corpus_toys:nothing"], "has no 'nothing'"),
    (["--exact-attention-corpus", "{missing}", "--learner", "corpus_toys:learn"], "is not a directory"),
    (["--exact-attention-corpus", "{corpus}", "--learner", "corpus_toys:learn", "--exact-attention-theorem", "9.9"],
     "no theorem 9.9"),
])
def test_plugin_usage_errors(corpus_dir, tmp_path, argv, words):
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    argv = [a.format(corpus=corpus_dir, missing=tmp_path / "missing") for a in argv]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *argv],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert run.returncode == 4, (run.returncode, run.stdout[-800:], run.stderr[-800:])
    assert words in run.stderr, run.stderr[-800:]


def test_plugin_is_inert_without_its_options(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert True\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout and "exact-attention corpus" not in run.stdout


class _Liar(Fraction):
    """A number whose == always says yes (review finding: a subclass's == must not be trusted)."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = Fraction.__hash__


def test_judge_does_not_trust_a_returned_numbers_equality(corpus_dir):
    corpus = load_corpus(corpus_dir)
    inst = corpus.instances["4.1"][2]
    liar = {"W": [[_Liar(0)] * inst.d] * inst.d, "v": [_Liar(0)] * inst.d}
    assert not judge(inst, liar)[0]
    kkg = corpus.instances["kkg"][0]
    H = kkg.hints["heads"]
    heads = {"heads": [{"W": [[_Liar(k + 1)] * kkg.d] * kkg.d, "v": [_Liar(1)] * kkg.d} for k in range(H)]}
    assert not judge(kkg, heads)[0]


def test_the_learner_sees_only_a_counting_proxy(corpus_dir):
    inst = load_corpus(corpus_dir, theorems=["4.1"]).instances["4.1"][1]
    seen = {}

    def nosy(oracle, *, theorem, hints):
        seen["attrs"] = [a for a in dir(oracle) if not a.startswith("__")]
        with pytest.raises(AttributeError):
            oracle._count = 0
        oracle.query_batch([[[1] * oracle.d]] * 3)
        return reference_learn(oracle, theorem=theorem, hints=hints)

    v = run_instance(nosy, inst)
    assert seen["attrs"] == ["d", "query", "query_batch"]
    assert v.exact and v.queries == inst.d ** 2 + inst.d + 3 and not v.count_ok  # exactly d² + d, or it fails


def test_hints_must_be_the_models_own(tmp_path, corpus_dir):
    import shutil

    for theorem, key, value, words in (("ffn", "m", 1000, "hint m = 1000"), ("5.1", "rank", 3, "hint rank = 3"),
                                       ("kkg", "heads", 9, "hint heads = 9")):
        shutil.rmtree(tmp_path / "c", ignore_errors=True)
        shutil.copytree(corpus_dir, tmp_path / "c")
        doc = json.loads((tmp_path / "c" / f"{theorem}.json").read_text())
        doc["instances"][0]["hints"][key] = value
        (tmp_path / "c" / f"{theorem}.json").write_text(json.dumps(doc))
        with pytest.raises(InvalidArgument, match=words):
            load_corpus(tmp_path / "c", theorems=[theorem])


def test_plugin_requires_the_corpus_among_explicit_paths(corpus_dir, tmp_path):
    (tmp_path / "test_other.py").write_text("def test_other():\n    assert True\n")
    run = _pytest(corpus_dir, "corpus_toys:learn", "--exact-attention-theorem", "4.1", "test_other.py", cwd=tmp_path)
    assert run.returncode == 4 and "test paths were given without the corpus" in run.stderr, run.stderr[-2000:]
    run = _pytest(corpus_dir, "corpus_toys:learn", "--exact-attention-theorem", "4.1", "test_other.py",
                  str(corpus_dir), cwd=tmp_path)
    assert run.returncode == 0 and "12 passed" in run.stdout, run.stdout[-2000:]
