from sparkscope.client.errors import Cancelled
from sparkscope.repl.worker import cancel_notice


def test_ctrl_c_on_a_wait_in_the_repl_says_the_query_keeps_running():
    cancel = Cancelled(waited_on="console_1", by_keyboard=True)
    assert cancel_notice(cancel) == "Stopped waiting for console_1; it keeps running (:stop console_1 ends it)."


def test_ctrl_c_on_a_wait_in_a_script_says_the_script_stopped_and_promises_nothing_it_will_not_keep():
    cancel = Cancelled(waited_on="console_1", by_keyboard=True)
    assert cancel_notice(cancel, interactive=False) == ("KeyboardInterrupt: the script stopped while waiting for "
                                                        "console_1.")
    assert cancel_notice(Cancelled(by_keyboard=True), interactive=False) == "KeyboardInterrupt: the script stopped."


def test_a_cancel_by_the_server_in_a_script_is_not_called_a_keyboard_interrupt():
    assert cancel_notice(Cancelled(), interactive=False).startswith("Cancelled:")
