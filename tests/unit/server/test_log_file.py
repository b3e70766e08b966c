"""Pure logic of server/log_file: no server."""

from __future__ import annotations





def test_the_start_up_stage_comes_from_the_server_log():
    from sparkscope.server.log_file import startup_stage

    assert startup_stage([]) == "starting Java"
    begun = ["26/11/22 18:33:00 INFO SparkConnectServer: Starting Spark session."]
    assert startup_stage(begun) == "starting the Spark session"
    assert startup_stage(begun + ["26/11/22 18:33:04 INFO SparkConnectServer: Spark Connect server started at: "
                                  "127.0.0.1:34155"]) == "opening a session"
