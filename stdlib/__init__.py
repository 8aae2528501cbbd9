"""Native handlers on the event API and .olg library modules: what a P2 runtime hard-codes.

``default_handlers()`` is what ``overlog.Engine`` installs on every engine: the ``periodic``
timers and the loopback transport. ``resolve_native`` resolves native handler names.
"""

from __future__ import annotations

from overlog.runtime.events import Handler
from overlog.stdlib import periodic
from overlog.stdlib.loopback import Loopback
from overlog.stdlib.natives import resolve as resolve_native


def default_handlers() -> list[Handler]:
    """Fresh default handlers for one engine."""
    return [periodic.install, Loopback()]


__all__ = ["Loopback", "default_handlers", "resolve_native"]
