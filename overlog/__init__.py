"""overlog: an engine for Overlog, the declarative-networking dialect of Datalog from P2.

The public API is re-exported here lazily (PEP 562), so importing ``overlog`` stays cheap:
each name loads its module when first used (``Engine`` and ``compile_program`` load the
runtime and the standard library; the language layer alone is ``overlog.compile``).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "compile_program": "overlog.api",
    "ProgramPlan": "overlog.plan",
    "CheckedProgram": "overlog.analysis",
    "parse": "overlog.parser",
    "format_program": "overlog.printer",
    "Diagnostic": "overlog.diagnostics",
    "OverlogError": "overlog.errors",
    "CompileError": "overlog.errors",
    "ParseError": "overlog.errors",
    "SemanticError": "overlog.errors",
    "OverlogRuntimeError": "overlog.errors",
    "StepError": "overlog.errors",
    "DeliveryError": "overlog.errors",
    "Engine": "overlog.api",
    "StepReport": "overlog.runtime.report",
    "ANY": "overlog.runtime.events",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'overlog' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
