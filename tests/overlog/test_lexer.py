"""The Pygments lexer (overlog/lexer.py): found through its entry point, lossless and free of
errors on every program in the repository, and the tokens it gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename, get_lexer_for_mimetype
from pygments.token import (
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
)

from overlog.lexer import OverlogLexer

ROOT = Path(__file__).parents[2]
PROGRAMS = sorted(p for folder in ("tests/golden", "programs") for p in (ROOT / folder).rglob("*")
                  if p.suffix in (".olg", ".inc"))
# golden programs whose syntax error is lexical: the Error tokens the lexer gives them
LEXICAL_ERRORS = {
    "tests/golden/syntax/bad_escape.olg": ["\\d"],  # E104: `\d` is no escape
    "tests/golden/syntax/single_equals.olg": ["="],  # E102: a lone `=` (`==` or `:=`)
    "tests/golden/syntax/unterminated_string.olg": ['"hello).'],  # E102: not closed
}


def _tokens(text: str) -> list[tuple[object, str]]:
    return list(OverlogLexer(stripnl=False).get_tokens(text))


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_entry_point_registers_the_lexer() -> None:
    assert type(get_lexer_by_name("overlog")) is OverlogLexer
    assert type(get_lexer_by_name("olg")) is OverlogLexer
    assert type(get_lexer_for_filename("x.olg")) is OverlogLexer
    assert type(get_lexer_for_mimetype("text/x-overlog")) is OverlogLexer


def test_the_programs_are_found() -> None:
    names = {_name(p) for p in PROGRAMS}
    assert len(PROGRAMS) >= 90
    assert {"programs/tc.olg", "tests/golden/eval/p2_common.inc", *LEXICAL_ERRORS} <= names


@pytest.mark.parametrize("path", PROGRAMS, ids=_name)
def test_every_program_lexes_losslessly_without_errors(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tokens = _tokens(text)
    # Pygments ends the text with a newline when it has none
    assert "".join(value for _, value in tokens) == (text if text.endswith("\n") else text + "\n")
    errors = [value for kind, value in tokens if kind in Error]
    assert errors == LEXICAL_ERRORS.get(_name(path), [])


def test_a_rule_a_fact_and_a_comment() -> None:
    text = ("// reachability\n"
            "r1 reach(@X, Y) :- link(@X, Z), reach(@Z, Y), C := f_min(A, 2) + 1.\n"
            'link("a\\n", 2.5, true).\n')
    sp = (Whitespace, " ")
    assert _tokens(text) == [
        (Comment.Single, "// reachability"), (Whitespace, "\n"),
        (Name.Label, "r1"), sp, (Name.Function, "reach"), (Punctuation, "("),
        (Name.Decorator, "@X"), (Punctuation, ","), sp, (Name.Variable, "Y"),
        (Punctuation, ")"), sp, (Operator, ":-"), sp,
        (Name.Function, "link"), (Punctuation, "("), (Name.Decorator, "@X"), (Punctuation, ","),
        sp, (Name.Variable, "Z"), (Punctuation, ")"), (Punctuation, ","), sp,
        (Name.Function, "reach"), (Punctuation, "("), (Name.Decorator, "@Z"), (Punctuation, ","),
        sp, (Name.Variable, "Y"), (Punctuation, ")"), (Punctuation, ","), sp,
        (Name.Variable, "C"), sp, (Operator, ":="), sp, (Name.Builtin, "f_min"),
        (Punctuation, "("), (Name.Variable, "A"), (Punctuation, ","), sp,
        (Number.Integer, "2"), (Punctuation, ")"), sp, (Operator, "+"), sp,
        (Number.Integer, "1"), (Punctuation, "."), (Whitespace, "\n"),
        (Name.Function, "link"), (Punctuation, "("), (String.Double, '"'), (String.Double, "a"),
        (String.Escape, "\\n"), (String.Double, '"'), (Punctuation, ","), sp,
        (Number.Float, "2.5"), (Punctuation, ","), sp, (Keyword.Constant, "true"),
        (Punctuation, ")"), (Punctuation, "."), (Whitespace, "\n"),
    ]


def _visible(text: str) -> list[tuple[object, str]]:
    return [(kind, value) for kind, value in _tokens(text) if kind is not Whitespace]


def test_declarations_aggregates_and_the_p2_dialect() -> None:
    text = ("#!/usr/bin/env overlog\n"
            '#include "common.olg"  // shared\n'
            "#define N 3\n"
            "materialize(best, infinity, 100, keys(1:str, 2)).\n"
            "%% RapidNet's argmin\n"
            "bp best(@S, a_MIN<C>, count<*>) :- link(@S, C), notin cut[S], C in (0x1fI, N].\n"
            'watchmod(best, "id").\n'
            "delete best(S, _) :- periodic(@S, _, 1), f_now() >= 1e3 && !(S != null).\n")
    assert _visible(text) == [
        (Comment.Hashbang, "#!/usr/bin/env overlog"),
        (Comment.Preproc, "#include"), (Comment.PreprocFile, '"common.olg"'),
        (Comment.Single, "// shared"),
        (Comment.Preproc, "#define N 3"),
        (Keyword, "materialize"), (Punctuation, "("), (Name.Function, "best"),
        (Punctuation, ","), (Keyword.Constant, "infinity"), (Punctuation, ","),
        (Number.Integer, "100"), (Punctuation, ","), (Keyword, "keys"), (Punctuation, "("),
        (Number.Integer, "1"), (Punctuation, ":"), (Keyword.Type, "str"), (Punctuation, ","),
        (Number.Integer, "2"), (Punctuation, ")"), (Punctuation, ")"), (Punctuation, "."),
        (Comment.Single, "%% RapidNet's argmin"),
        (Name.Label, "bp"), (Name.Function, "best"), (Punctuation, "("),
        (Name.Decorator, "@S"), (Punctuation, ","), (Name.Builtin, "a_MIN"), (Punctuation, "<"),
        (Name.Variable, "C"), (Punctuation, ">"), (Punctuation, ","), (Name.Builtin, "count"),
        (Punctuation, "<"), (Operator, "*"), (Punctuation, ">"), (Punctuation, ")"),
        (Operator, ":-"), (Name.Function, "link"), (Punctuation, "("), (Name.Decorator, "@S"),
        (Punctuation, ","), (Name.Variable, "C"), (Punctuation, ")"), (Punctuation, ","),
        (Keyword, "notin"), (Name.Function, "cut"), (Punctuation, "["), (Name.Variable, "S"),
        (Punctuation, "]"), (Punctuation, ","), (Name.Variable, "C"), (Operator.Word, "in"),
        (Punctuation, "("), (Number.Hex, "0x1fI"), (Punctuation, ","), (Name.Variable, "N"),
        (Punctuation, "]"), (Punctuation, "."),
        (Keyword, "watchmod"), (Punctuation, "("), (Name.Function, "best"), (Punctuation, ","),
        (String.Double, '"id"'), (Punctuation, ")"), (Punctuation, "."),
        (Keyword, "delete"), (Name.Function, "best"), (Punctuation, "("), (Name.Variable, "S"),
        (Punctuation, ","), (Name.Variable, "_"), (Punctuation, ")"), (Operator, ":-"),
        (Name.Builtin, "periodic"), (Punctuation, "("), (Name.Decorator, "@S"),
        (Punctuation, ","), (Name.Variable, "_"), (Punctuation, ","), (Number.Integer, "1"),
        (Punctuation, ")"), (Punctuation, ","), (Name.Builtin, "f_now"), (Punctuation, "("),
        (Punctuation, ")"), (Operator, ">="), (Number.Float, "1e3"), (Operator, "&&"),
        (Operator, "!"), (Punctuation, "("), (Name.Variable, "S"), (Operator, "!="),
        (Keyword.Constant, "null"), (Punctuation, ")"), (Punctuation, "."),
    ]


def test_the_jol_dialect() -> None:
    text = ("program ping;\n"
            "import java.lang.String;\n"
            "define(pings, keys(0), {String, Integer});\n"
            "timer(clock, physical, 1000, 3, 0);\n"
            "send\n"
            "public pings(X, N + 1L) :- clock(_, _, _), pings(X, N), best(X, topk<N, 2>);\n")
    assert _visible(text) == [
        (Keyword.Namespace, "program"), (Name.Namespace, "ping"), (Punctuation, ";"),
        (Keyword.Namespace, "import"), (Name.Namespace, "java.lang.String"), (Punctuation, ";"),
        (Keyword, "define"), (Punctuation, "("), (Name.Function, "pings"), (Punctuation, ","),
        (Keyword, "keys"), (Punctuation, "("), (Number.Integer, "0"), (Punctuation, ")"),
        (Punctuation, ","), (Punctuation, "{"), (Keyword.Type, "String"), (Punctuation, ","),
        (Keyword.Type, "Integer"), (Punctuation, "}"), (Punctuation, ")"), (Punctuation, ";"),
        (Keyword, "timer"), (Punctuation, "("), (Name.Function, "clock"), (Punctuation, ","),
        (Keyword.Pseudo, "physical"), (Punctuation, ","), (Number.Integer, "1000"),
        (Punctuation, ","), (Number.Integer, "3"), (Punctuation, ","), (Number.Integer, "0"),
        (Punctuation, ")"), (Punctuation, ";"),
        (Name.Label, "send"), (Keyword, "public"), (Name.Function, "pings"), (Punctuation, "("),
        (Name.Variable, "X"), (Punctuation, ","), (Name.Variable, "N"), (Operator, "+"),
        (Number.Integer.Long, "1L"), (Punctuation, ")"), (Operator, ":-"),
        (Name.Function, "clock"), (Punctuation, "("), (Name.Variable, "_"), (Punctuation, ","),
        (Name.Variable, "_"), (Punctuation, ","), (Name.Variable, "_"), (Punctuation, ")"),
        (Punctuation, ","), (Name.Function, "pings"), (Punctuation, "("), (Name.Variable, "X"),
        (Punctuation, ","), (Name.Variable, "N"), (Punctuation, ")"), (Punctuation, ","),
        (Name.Function, "best"), (Punctuation, "("), (Name.Variable, "X"), (Punctuation, ","),
        (Name.Builtin, "topk"), (Punctuation, "<"), (Name.Variable, "N"), (Punctuation, ","),
        (Number.Integer, "2"), (Punctuation, ">"), (Punctuation, ")"), (Punctuation, ";"),
    ]


@pytest.mark.parametrize(("text", "expected"), [
    # words that are keywords only in their statements' shapes may name relations
    ("timer(X) :- keys(X), define(X).\n",
     [(Name.Function, "timer"), (Punctuation, "("), (Name.Variable, "X"), (Punctuation, ")"),
      (Operator, ":-"), (Name.Function, "keys"), (Punctuation, "("), (Name.Variable, "X"),
      (Punctuation, ")"), (Punctuation, ","), (Name.Function, "define"), (Punctuation, "("),
      (Name.Variable, "X"), (Punctuation, ")"), (Punctuation, ".")]),
    # `<` after a name is a comparison unless an aggregate's `<X>` follows
    ("p(X) :- q(Min, X), Min < X.\n",
     [(Name.Function, "p"), (Punctuation, "("), (Name.Variable, "X"), (Punctuation, ")"),
      (Operator, ":-"), (Name.Function, "q"), (Punctuation, "("), (Name.Variable, "Min"),
      (Punctuation, ","), (Name.Variable, "X"), (Punctuation, ")"), (Punctuation, ","),
      (Name.Variable, "Min"), (Operator, "<"), (Name.Variable, "X"), (Punctuation, ".")]),
    # a comment nests; lowercase arguments are names
    ("/* a /* b */ c */ p(x, -3).\n",
     [(Comment.Multiline, "/*"), (Comment.Multiline, " a "), (Comment.Multiline, "/*"),
      (Comment.Multiline, " b "), (Comment.Multiline, "*/"), (Comment.Multiline, " c "),
      (Comment.Multiline, "*/"), (Name.Function, "p"), (Punctuation, "("), (Name, "x"),
      (Punctuation, ","), (Operator, "-"), (Number.Integer, "3"), (Punctuation, ")"),
      (Punctuation, ".")]),
])
def test_context(text: str, expected: list[tuple[object, str]]) -> None:
    assert _visible(text) == expected


def test_guessing() -> None:
    assert OverlogLexer.analyse_text("// dialect: p2\np(1).\n") == 1.0
    assert OverlogLexer.analyse_text("materialize(t, infinity, 10, keys(1)).\n") == 0.6
    assert OverlogLexer.analyse_text("int main(void) { return 0; }\n") == 0.0


def test_pygmentize_highlights_a_program() -> None:
    path = ROOT / "tests/golden/explain/constructs.olg"
    result = subprocess.run([sys.executable, "-m", "pygments", "-l", "overlog", "-f", "html",
                             str(path)], capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (0, "")
    assert '<span class="k">materialize</span>' in result.stdout
    assert '<span class="nd">@S</span>' in result.stdout
