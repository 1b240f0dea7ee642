"""The I/O half of ``mcp-sansio fuzz``: a blocking runner (``subprocess`` + ``selectors`` +
sockets) that drives the pure fuzzer core in :mod:`mcp_sansio.fuzz` against a stdio or
Streamable HTTP server, samples its memory and counts the processes it leaves behind.

Use from a server's own test suite::

    from mcp_sansio_fuzz import Fuzzer, Options, Target
    report = Fuzzer(Target.stdio("python my_server.py"), Options(seed=1, budget=30)).run()
    assert not report.findings, report.findings
"""

from .clients import ClientFuzzer, run_scenario
from .connections import HttpConnection, StdioConnection, TargetUnavailable
from .execute import execute
from .model import Options, Report, ReportedFinding, Stats, Target, load_schema
from .runner import Fuzzer

__all__ = [
    "ClientFuzzer",
    "Fuzzer",
    "HttpConnection",
    "Options",
    "Report",
    "ReportedFinding",
    "Stats",
    "StdioConnection",
    "Target",
    "TargetUnavailable",
    "execute",
    "load_schema",
    "run_scenario",
]
