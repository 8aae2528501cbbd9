"""The front end never fails with anything but a CompileError, whatever the input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from overlog.compile import compile_program
from overlog.errors import CompileError
from overlog.printer import format_program
from tests.overlog.strategies import programs

ALPHABET = st.sampled_from([*'abXY_(),.[]@:-=<>!*/%+"\\ \n19', ":-", "notin ", "/*", "*/", "//",
                            "f_now("])


def _compile_or_compile_error(text: str) -> None:
    try:
        compile_program(text, "fuzz.olg")
    except CompileError as error:
        assert error.diagnostics
        assert any(d.is_error for d in error.diagnostics)
        assert error.render()


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_random_text(text: str) -> None:
    _compile_or_compile_error(text)


@settings(max_examples=300)
@given(st.lists(ALPHABET, max_size=30).map("".join))
def test_random_tokens(text: str) -> None:
    _compile_or_compile_error(text)


@settings(max_examples=300)
@given(programs, st.data())
def test_mutated_programs(program, data) -> None:
    text = format_program(program)
    for _ in range(data.draw(st.integers(0, 3))):
        if not text:
            break
        i = data.draw(st.integers(0, len(text) - 1))
        action = data.draw(st.sampled_from(["delete", "insert", "replace"]))
        piece = data.draw(ALPHABET)
        if action == "delete":
            text = text[:i] + text[i + 1:]
        elif action == "insert":
            text = text[:i] + piece + text[i:]
        else:
            text = text[:i] + piece + text[i + 1:]
    _compile_or_compile_error(text)


@settings(max_examples=300)
@given(programs)
def test_generated_programs_compile_or_report(program) -> None:
    _compile_or_compile_error(format_program(program))
