"""Pure logic of repl/statements: no server."""

from __future__ import annotations



from sparkscope.core.statements import enter_submits, is_complete, script_statements


def test_python_completeness():
    assert not is_complete("def f(x):")
    assert not is_complete("foo(1,")
    assert is_complete("x = 1")
    assert is_complete(":start counts")


def test_a_script_keeps_a_blank_line_inside_a_def():
    script = ("def double(x):\n    y = x * 2\n\n    return y\n\nprint(double(2))\n"
              "df = (spark.range(3)\n.filter('id > 0'))\n:queries; :progress\nfor i in range(2):\n    pass\nelse:\n"
              "    pass\n# a comment\nx = 1")
    assert list(script_statements(script)) == [
        "def double(x):\n    y = x * 2\n\n    return y\n", "print(double(2))",
        "df = (spark.range(3)\n.filter('id > 0'))\n", ":queries; :progress",
        "for i in range(2):\n    pass\nelse:\n    pass\n# a comment\n", "x = 1"]
    for piece in script_statements(script):
        if not piece.startswith(":"):
            compile(piece, "<script>", "exec")  # each piece runs on its own: no "unexpected indent"


def test_enter_at_the_prompt_follows_the_interpreter():
    assert enter_submits("x = 1") and enter_submits(":start counts")
    assert not enter_submits("def f(x):")
    assert not enter_submits("def f(x):\n    return x")  # a block ends with a blank line
    assert enter_submits("def f(x):\n    return x\n")
    assert not enter_submits("foo(1,\n")  # an open bracket continues past a blank line
    assert enter_submits("foo(1,\n2)")


def test_a_pasted_complete_cell_runs_on_one_enter_as_in_ipython():
    # seed cells: a backslash chain, and the inside of a bracket block, each ending on an indented line
    chain = ('query = df.writeStream \\\n    .format("memory") \\\n    .queryName("counts") \\\n'
             '    .start()')
    assert enter_submits(chain)
    assert enter_submits('q = (df.writeStream\n     .format("console")\n     .start())')
    assert enter_submits('rows = [\n    (1, "a"),\n    (2, "b"),\n    ]')
    # a compound statement still waits for its blank line, however it ends
    assert not enter_submits("for x in range(3):\n    print(x)")
    assert not enter_submits('with open("f") as f:\n    q = (df\n        .start())')
    assert not enter_submits("def f(x):\n    return (x +\n        1)")
    # a compound statement followed by an unindented one is a complete cell
    assert enter_submits("for x in range(3):\n    pass\nprint(1)")
    assert not enter_submits("q = (df\n    .start(")  # still open
