"""Run a script with the ``overlog`` package imported from a checkout, whatever is installed.

    python bench/checkout.py ROOT SCRIPT [ARGS...]

The package's parts live in three folders of a checkout (``overlog/``, ``runtime/`` as
``overlog.runtime``, ``stdlib/`` as ``overlog.stdlib``: pyproject.toml's package-dir). An
editable install maps them to the folders it was made from, so a script run from another
checkout (``bench/run.py --baseline DIR``) would otherwise import that checkout's
``overlog`` and this one's ``overlog.runtime``. A finder placed first maps all three to
ROOT's folders.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

FOLDERS = {"overlog": "overlog", "overlog.runtime": "runtime", "overlog.stdlib": "stdlib"}


class CheckoutFinder:
    """Finds the package's three parts in ``root``; everything else as usual."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, name: str, path=None, target=None):
        folder = FOLDERS.get(name)
        if folder is None:
            return None
        where = self.root / folder
        return importlib.util.spec_from_file_location(
            name, where / "__init__.py", submodule_search_locations=[str(where)])


def main() -> None:
    root, script = Path(sys.argv[1]).resolve(), sys.argv[2]
    sys.meta_path.insert(0, CheckoutFinder(root))
    sys.argv = sys.argv[2:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
