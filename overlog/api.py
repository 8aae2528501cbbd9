"""The public API (``import overlog``): the engine with the standard library installed, and
``compile_program`` checking native handlers against it.

This is the top layer: language <- runtime <- stdlib <- this module and the CLI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from overlog import compile as _compile
from overlog.compile import NativeResolver
from overlog.plan import ProgramPlan
from overlog.runtime import engine as _engine
from overlog.runtime.events import Handler
from overlog.stdlib import default_handlers, resolve_native


class Engine(_engine.Engine):
    """One Overlog node (docs/api.md). ``handlers`` default to the standard library's (the
    ``periodic`` timers, the loopback transport); native handlers resolve through
    ``overlog.stdlib`` unless ``natives`` says otherwise."""

    def __init__(self, source: str | ProgramPlan, path: str | None = None, *,
                 handlers: Sequence[Handler] | None = None,
                 natives: NativeResolver | None = None, **options: Any) -> None:
        super().__init__(source, path,
                         handlers=default_handlers() if handlers is None else handlers,
                         natives=natives or resolve_native, **options)


def compile_program(source: str, path: str | None = None,
                    functions: Mapping[str, tuple[int, float]] | None = None, *,
                    defines: Mapping[str, Any] | None = None,
                    natives: NativeResolver | None = None) -> ProgramPlan:
    """Parse, check and plan a program (see ``overlog.compile.compile_program``); native
    handler targets must resolve (through ``overlog.stdlib`` unless ``natives`` is given)."""
    return _compile.compile_program(
        source, path, functions, defines=defines,
        natives=_compile.natives_check(natives or resolve_native))
