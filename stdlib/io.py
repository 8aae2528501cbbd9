"""Printing handlers, bound with ``registerNativeEventHandler["rel", "stdlib.io:print_row"].``"""

from __future__ import annotations

import sys

from overlog.printer import format_value

HANDLERS = ("print_row",)  # what a program may bind (overlog.stdlib.natives)


def print_row(row: tuple) -> None:
    """Print an event's row as an Overlog tuple, one per line, on stdout."""
    print("[" + ", ".join(format_value(v) for v in row) + "]", file=sys.stdout)
