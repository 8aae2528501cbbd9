"""Native handlers on the event API and .olg library modules: what a P2 runtime hard-codes.

``default_handlers()`` is what ``overlog.Engine`` installs on every engine: the ``periodic``
timers and the loopback transport. ``Natives`` says which native handlers a program may bind.
"""

from __future__ import annotations

from overlog.runtime.events import Handler
from overlog.stdlib import periodic
from overlog.stdlib.loopback import Loopback
from overlog.stdlib.natives import Natives


def default_handlers() -> list[Handler]:
    """Fresh default handlers for one engine."""
    return [periodic.install, Loopback()]


__all__ = ["Loopback", "Natives", "default_handlers"]
