"""pytest configuration shared by the test suite and the doctests.

* ``arithmetic`` runs a learner test once per arithmetic (certified, symbolic,
  float); ``exact_arithmetic`` once per exact arithmetic (certified, symbolic), for
  learners or claims that exist only in exact arithmetic.
* A doctest that needs an optional extra (``torch``, ``cvxpy``, ...) is listed in
  :data:`DOCTEST_EXTRAS`; it runs when the extra is installed and is skipped, naming it,
  when it is not.  (Test functions skip with ``pytest.importorskip``.)
* One hypothesis profile for the whole suite: derandomized (a failure reproduces on
  every machine), no deadline (certified precision escalation and symbolic runs vary
  in time), 50 examples unless a test asks for another number.  Set
  ``HYPOTHESIS_PROFILE`` to load another registered profile (hypothesis's own
  ``ci``, for example, or one registered by a plug-in).
"""

import importlib.util
import os

import pytest
from hypothesis import settings

try:
    from pytest import DoctestItem
except ImportError:  # pytest < 8.1
    from _pytest.doctest import DoctestItem

collect_ignore = ["exact/__main__.py", "tests/data/generate_reference.py", "tests/mutation.py"]

#: The arithmetics a learner can run in (``exact.arith.MODES``), exact ones first.
ARITHMETICS = ("certified", "symbolic", "float")
EXACT_ARITHMETICS = ("certified", "symbolic")

settings.register_profile("default", derandomize=True, deadline=None, max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(params=ARITHMETICS)
def arithmetic(request) -> str:
    """The learner's ``mode=``: each test using it runs in every arithmetic."""
    return request.param


@pytest.fixture(params=EXACT_ARITHMETICS)
def exact_arithmetic(request) -> str:
    """The learner's ``mode=`` among the exact arithmetics only."""
    return request.param


#: Doctests that need an optional extra: the doctest's name -> the module it needs.
DOCTEST_EXTRAS = {
    "exact.native.TorchOracle": "torch",
    "exact.native.causal_prefix_answers": "torch",
    "exact.native.learn_module": "torch",
    "exact.native_ffn.native_ffn": "torch",
    "exact.native_block.torch_block": "torch",
    "exact.learn.low_rank_cs.learn_low_rank_cs": "cvxpy",
}


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (found without importing it: torch takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None in sys.modules
        return False


def missing_extras(items, *, extras=DOCTEST_EXTRAS, is_installed=installed) -> dict:
    """The collected doctests among ``items`` whose extra is not installed: item -> the module."""
    out = {}
    for item in items:
        if isinstance(item, DoctestItem):
            module = extras.get(item.name)
            if module is not None and not is_installed(module):
                out[item] = module
    return out


def pytest_collection_modifyitems(config, items):
    for item, module in missing_extras(items).items():
        item.add_marker(pytest.mark.skip(reason=f"needs the optional {module!r} (not installed)"))
