"""Pure logic of server/sizing: no server."""

from __future__ import annotations


import pytest
from sparkscope.server.sizing import local_master



@pytest.mark.parametrize("ram_gib, heap", [(2, "1g"), (8, "2g"), (24, "6g"), (64, "8g"), (6, "1536m")])
def test_the_embedded_servers_heap_is_a_quarter_of_the_ram_within_bounds(ram_gib, heap):
    from sparkscope.server.sizing import default_driver_memory

    assert default_driver_memory(ram_gib * 2**30) == heap


def test_a_bad_driver_memory_is_one_line():
    from sparkscope.client.errors import ServerError
    from sparkscope.server.sizing import check_memory

    assert check_memory("4G") == "4g"
    with pytest.raises(ServerError) as err:
        check_memory("lots")
    assert str(err.value) == "'lots' is not a memory size. Write a number and a unit, e.g. 4g or 512m."


def test_local_star_gets_four_slots_per_core_and_one_task_per_core():
    assert local_master("local[*]", cores=2) == ("local[8]", {"spark.default.parallelism": "2"})
    assert local_master("local[3]", cores=2) == ("local[3]", {})
    assert local_master("spark://127.0.0.1:7077", cores=2) == ("spark://127.0.0.1:7077", {})
