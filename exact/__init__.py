"""exact-attention: learn attention parameters from black-box queries, exactly.

The main entry points are re-exported here; see the submodules for details.
"""

from .certify import Certificate, CheckReport, check_transcript
from .errors import (
    CertificateInvalid,
    ExactAttentionError,
    InvalidArgument,
    InvalidFormat,
    MissingDependency,
    SolverFailed,
    InvalidNumber,
    NotIdentifiable,
    OracleInconsistent,
    PrecisionInsufficient,
    QueryBudgetExceeded,
    ShapeError,
)
from .grids import parse_grid
from .learn import (
    LearnResult,
    learn_low_rank,
    learn_low_rank_cs,
    learn_multi_head,
    learn_noisy,
    learn_noisy_frame,
    learn_noisy_refine,
    learn_single_head,
    low_rank_query_count,
    single_head_query_count,
)
from .canonical import canonical_factors, canonical_form
from .models import SingleHead
from .multihead import MultiHead
from .noise import NoisyOracle, parse_noise
from .oracles import BaseOracle, CallableOracle, ExactAnswer, ExactOracle, FloatOracle
from .protocols import Model, Oracle
from . import registry
from .registry import LearnerSpec, register
from .sequences import Sequence

__version__ = "0.1.0"

__all__ = [
    "SingleHead",
    "MultiHead",
    "canonical_form",
    "canonical_factors",
    "Sequence",
    "Oracle",
    "Model",
    "BaseOracle",
    "ExactOracle",
    "FloatOracle",
    "CallableOracle",
    "ExactAnswer",
    "NoisyOracle",
    "parse_noise",
    "learn_single_head",
    "single_head_query_count",
    "learn_low_rank",
    "learn_multi_head",
    "low_rank_query_count",
    "learn_low_rank_cs",
    "learn_noisy",
    "learn_noisy_frame",
    "learn_noisy_refine",
    "LearnResult",
    "registry",
    "LearnerSpec",
    "register",
    "Certificate",
    "CheckReport",
    "check_transcript",
    "parse_grid",
    "ExactAttentionError",
    "InvalidNumber",
    "ShapeError",
    "NotIdentifiable",
    "PrecisionInsufficient",
    "QueryBudgetExceeded",
    "OracleInconsistent",
    "CertificateInvalid",
    "InvalidArgument",
    "InvalidFormat",
    "MissingDependency",
    "SolverFailed",
    "__version__",
]
