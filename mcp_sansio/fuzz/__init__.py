"""The pure half of ``mcp-sansio fuzz``: a stateful MCP server fuzzer's generators,
protocol model, oracles, shrinker and trace format. No I/O (the runner in
``mcp_sansio_fuzz`` moves the bytes); entropy comes in as a seeded :class:`Rng`.
"""

from .case import Case, CaseStep, Check, Expect
from .errors import TraceError
from .oracles import judge
from .plan import Planner
from .records import Context, Ended, HttpAnswer, Received, Record, Sent, TimedOut
from .rng import Rng
from .rules import RULES, Finding, Rule
from .schemacheck import schema_problems, validate
from .shrink import ddmin
from .surface import Surface
from .trace import Trace, dump_trace, load_trace
from .values import Variant, boundary_values, valid_value, violations

__all__ = [
    "RULES",
    "Case",
    "Check",
    "Context",
    "Ended",
    "Expect",
    "Finding",
    "HttpAnswer",
    "Planner",
    "Received",
    "Record",
    "Rng",
    "Rule",
    "Sent",
    "CaseStep",
    "Surface",
    "TimedOut",
    "Trace",
    "TraceError",
    "Variant",
    "boundary_values",
    "ddmin",
    "dump_trace",
    "judge",
    "load_trace",
    "schema_problems",
    "valid_value",
    "validate",
    "violations",
]
