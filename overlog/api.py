"""The public API (``import overlog``): the engine with the standard library installed, and
``compile_program`` checking native handlers against it.

This is the top layer: language <- runtime <- stdlib <- this module and the CLI.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from overlog import compile as _compile
from overlog.compile import NativeResolver
from overlog.plan import ProgramPlan
from overlog.runtime import engine as _engine
from overlog.runtime.events import Handler
from overlog.stdlib import Natives, default_handlers


class Engine(_engine.Engine):
    """One Overlog node (docs/engine.md). ``handlers`` default to the standard library's
    (the ``periodic`` timers, the loopback transport). A program may bind the standard
    library's native handlers, and those of ``native_modules`` (the CLI's ``--native``;
    looked for on the import path, then in the current directory); ``natives`` replaces
    that policy with a resolver of your own."""

    def __init__(self, source: str | ProgramPlan, path: str | None = None, *,
                 handlers: Sequence[Handler] | None = None,
                 native_modules: Iterable[str] = (),
                 natives: NativeResolver | None = None, **options: Any) -> None:
        super().__init__(source, path,
                         handlers=default_handlers() if handlers is None else handlers,
                         natives=natives or Natives(native_modules, [os.getcwd()]), **options)


def compile_program(source: str, path: str | None = None,
                    functions: Mapping[str, tuple[int, float]] | None = None, *,
                    defines: Mapping[str, Any] | None = None,
                    native_modules: Iterable[str] = (),
                    natives: NativeResolver | None = None) -> ProgramPlan:
    """Parse, check and plan a program (see ``overlog.compile.compile_program``). Native
    handlers must be the standard library's or come from ``native_modules`` (which are not
    imported here), unless ``natives`` says otherwise."""
    check = Natives(native_modules).check if natives is None else \
        _compile.natives_check(natives)
    return _compile.compile_program(source, path, functions, defines=defines, natives=check)
