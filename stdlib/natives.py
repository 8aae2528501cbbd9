"""Which Python a program may bind: ``registerNativeEventHandler["rel", "module:function"]``.

A program alone can bind only this standard library's handlers, written
``stdlib.NAME:function`` (a function the module ``overlog.stdlib.NAME`` lists in its
``HANDLERS``). Any other module must be allowed by the user running it (``--native MODULE``,
or ``native_modules=`` from Python): a program must not be able to run arbitrary Python
(``subprocess:call``) on its own. Checking a program never imports an allowed module; only
running it does. An allowed module is looked for on the import path, then in ``search``
(the ``overlog`` command passes the current directory, which it keeps off the import path so
that a file there cannot shadow a module the engine imports).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable

PREFIX = "stdlib."


class Natives:
    """The handlers a program may bind: the standard library's, and those of ``allowed``
    modules. ``check`` (for analysis) imports nothing but the standard library; ``resolve``
    returns the callable, or raises LookupError saying what is wrong."""

    def __init__(self, allowed: Iterable[str] = (), search: Iterable[str] = ()) -> None:
        self.allowed = frozenset(allowed)
        self.search = tuple(search)  # directories to try, after the import path

    def check(self, target: str) -> str | None:
        module, _ = _split(target)
        if module.startswith(PREFIX):
            try:
                self.resolve(target)
            except LookupError as error:
                return str(error.args[0])
        elif module not in self.allowed:
            return self._refusal(target, module)
        return None

    def resolve(self, target: str) -> Callable:
        module, function = _split(target)
        if module.startswith(PREFIX):
            name = module.removeprefix(PREFIX)
            if not name.isidentifier() or importlib.util.find_spec(
                    "overlog.stdlib." + name) is None:
                raise LookupError(f"unknown native handler `{target}`: the standard library "
                                  f"has no module `{name}`")
            found = _find(target, "overlog.stdlib." + name, function)
            if function not in getattr(sys.modules["overlog.stdlib." + name], "HANDLERS", ()):
                raise LookupError(f"unknown native handler `{target}`: `{module}` has no "
                                  f"handler `{function}`")
            return found
        if module not in self.allowed:
            raise LookupError(self._refusal(target, module))
        if self.search and importlib.util.find_spec(module.partition(".")[0]) is None:
            added = [d for d in self.search if d not in sys.path]
            sys.path.extend(added)  # after everything else: it shadows nothing
            try:
                return _find(target, module, function)
            finally:
                for directory in added:
                    sys.path.remove(directory)
        return _find(target, module, function)

    __call__ = resolve  # a NativeResolver

    @staticmethod
    def _refusal(target: str, module: str) -> str:
        return (f"native handler `{target}` is not allowed: a program binds only `stdlib.` "
                f"handlers, and modules its user allows (`--native {module}`)")


def _split(target: str) -> tuple[str, str]:
    module, _, function = target.partition(":")
    if not module or not function:
        raise LookupError(f"native handler `{target}` must be written `module:function`")
    return module, function


def _find(target: str, module_name: str, function: str) -> Callable:
    shown = target.partition(":")[0]
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any failure to import is the user's to see, not a crash
        raise LookupError(f"unknown native handler `{target}`: cannot import `{shown}` "
                          f"({error})") from None
    handler = getattr(module, function, None)
    if not callable(handler):
        raise LookupError(f"unknown native handler `{target}`: `{shown}` has no function "
                          f"`{function}`")
    return handler

