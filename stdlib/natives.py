"""Resolving ``registerNativeEventHandler["rel", "module:function"]`` targets.

``stdlib.NAME:function`` names a handler of this standard library (installed as
``overlog.stdlib.NAME``); any other module name is imported as it is written.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

PREFIX = "stdlib."


def resolve(target: str) -> Callable:
    """The callable ``module:function`` names; LookupError says what is wrong."""
    module_name, _, function = target.partition(":")
    if not module_name or not function:
        raise LookupError(f"native handler `{target}` must be written `module:function`")
    if module_name.startswith(PREFIX):
        module_name = "overlog." + module_name
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any import failure is the user's to see, not a crash
        shown = target.partition(":")[0]
        raise LookupError(f"unknown native handler `{target}`: cannot import `{shown}` "
                          f"({error})") from None
    handler = getattr(module, function, None)
    if not callable(handler):
        raise LookupError(f"unknown native handler `{target}`: "
                          f"`{target.partition(':')[0]}` has no function `{function}`")
    return handler
