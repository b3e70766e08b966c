import pytest

from sparkscope.core.python_input import syntax_error_text


def _error(source: str) -> SyntaxError:
    with pytest.raises(SyntaxError) as caught:
        compile(source, "<input>", "exec")
    return caught.value


def test_a_syntax_error_in_a_statement_continued_with_backslashes_quotes_the_line_at_fault_alone():
    # the guide's continuous-processing block: a comment after a line-continuation backslash
    source = 'df \\\n  .writeStream \\\n  .trigger(continuous="1 second") \\     # only change in query\n  .start()\n'
    assert syntax_error_text(_error(source)).splitlines() == [
        '  File "<input>", line 3',
        '    .trigger(continuous="1 second") \\     # only change in query',
        "                                     ^",
        "SyntaxError: unexpected character after line continuation character"]


def test_any_other_syntax_error_is_python_s_own_text():
    import traceback

    error = _error("def broken(:\n    pass\n")
    assert syntax_error_text(error) == "".join(traceback.format_exception_only(SyntaxError, error))


def test_calling_is_streaming_gets_its_hint_from_the_line_typed():
    from sparkscope.core.python_input import user_traceback

    class Stream:
        isStreaming = True  # noqa: N815 - pyspark's name

    source = "x = 1\nr.isStreaming()"
    try:
        exec(compile(source, "<input>", "exec"), {"r": Stream()})  # noqa: S102
    except TypeError as exc:
        text = user_traceback(exc, source)
    assert text.splitlines()[-3:] == ["    r.isStreaming()", "TypeError: 'bool' object is not callable",
                                      "hint: isStreaming is a property, not a method: write df.isStreaming without ()"]
