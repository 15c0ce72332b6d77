"""pytest configuration shared by the test suite and the doctests.

* ``arithmetic`` runs a learner test once per arithmetic (certified, symbolic,
  float); ``exact_arithmetic`` once per exact arithmetic (certified, symbolic), for
  learners or claims that exist only in exact arithmetic.
* One hypothesis profile for the whole suite: derandomized (a failure reproduces on
  every machine), no deadline (certified precision escalation and symbolic runs vary
  in time), 50 examples unless a test asks for another number.  Set
  ``HYPOTHESIS_PROFILE`` to load another registered profile (hypothesis's own
  ``ci``, for example, or one registered by a plug-in).
"""

import os

import pytest
from hypothesis import settings

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
