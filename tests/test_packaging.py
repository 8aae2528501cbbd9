"""One installed package whose layers point one way: language <- runtime <- stdlib <- API/CLI.

The folders ``runtime/`` and ``stdlib/`` install as ``overlog.runtime`` and ``overlog.stdlib``;
no module imports a layer above its own (lazily or not), and nothing imports the folders by
their generic top-level names.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FOLDERS = {"overlog": "overlog", "runtime": "overlog.runtime", "stdlib": "overlog.stdlib"}
API = {"overlog", "overlog.api", "overlog.cli", "overlog.cli_run", "overlog.cli_sim",
       "overlog.repl",
       "overlog.cli_net", "overlog.__main__"}
LAYERS = ["language", "runtime", "stdlib", "api"]


def _modules() -> dict[str, Path]:
    """Installed module name -> source file."""
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _layer(module: str) -> str:
    if module in API:
        return "api"
    for prefix, layer in (("overlog.runtime", "runtime"), ("overlog.stdlib", "stdlib")):
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "language"


def _imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import statement, at any depth."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import module` imports the module; else the names come from base
            submodules = [f"{base}.{alias.name}" for alias in node.names
                          if f"{base}.{alias.name}" in _modules()]
            found += [(node.lineno, target) for target in submodules or [base]]
    return found


def test_every_package_is_installed() -> None:
    """pyproject.toml lists the packages explicitly (package-dir maps the folders)."""
    packages = {name for name, path in _modules().items() if path.name == "__init__.py"}
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = ast.literal_eval(text.split("\npackages = ", 1)[1].split("\n", 1)[0])
    assert set(listed) == packages


def test_no_module_imports_a_layer_above_its_own() -> None:
    problems = []
    for module, path in _modules().items():
        rank = LAYERS.index(_layer(module))
        for line, target in _imports(module, path):
            top = target.split(".")[0]
            if top in ("runtime", "stdlib"):
                problems.append(f"{path.relative_to(ROOT)}:{line}: imports `{target}`: "
                                f"installed, it is `overlog.{target}`")
            elif top == "overlog" and LAYERS.index(_layer(target)) > rank:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {_layer(module)} module "
                                f"imports `{target}` ({_layer(target)})")
    assert problems == []


def test_the_layer_check_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: a language module importing the runtime lazily is caught."""
    path = tmp_path / "bad.py"
    path.write_text("def f():\n    from overlog.runtime.engine import Engine\n    return Engine\n")
    assert (2, "overlog.runtime.engine") in _imports("overlog.bad", path)
    assert _layer("overlog.runtime.engine") == "runtime" and _layer("overlog.bad") == "language"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the sources (a build leaves build/ behind, whose stale
    files a later build of the checkout itself would pack)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(source)],
                   check=True, capture_output=True, cwd=out)
    (found,) = out.glob("overlog-*.whl")
    return found


def test_the_wheel_installs_everything_inside_overlog(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"overlog"}
    expected = {f"{module.replace('.', '/')}{'/__init__' if path.name == '__init__.py' else ''}.py"
                for module, path in _modules().items()}
    assert {n for n in names if n.endswith(".py")} == expected
    assert "overlog/grammar.lark" in names
    assert "overlog/runtime/spark-log4j2.properties" in names


def test_the_installed_wheel_imports_and_runs(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import importlib.util, sys\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        "import overlog, overlog.runtime, overlog.stdlib\n"
        "assert overlog.__file__.startswith(sys.path[0]), overlog.__file__\n"
        "assert overlog.runtime.__file__.startswith(sys.path[0])\n"
        "print(importlib.util.find_spec('runtime'), importlib.util.find_spec('stdlib'))\n"
        "eng = overlog.Engine('t(E) :- periodic[_, E, 1, 2].')\n"
        "eng.run()\n"
        "print(eng.rows('t'))\n")
    result = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True,
                            text=True, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "None None\n[(1,), (2,)]\n"
