"""Where sparkscope keeps its files, as platformdirs places them on Linux: XDG's variables honoured, the XDG defaults
under HOME otherwise; state and cache made private (0700), config left to the user."""

from __future__ import annotations

import stat


def test_the_xdg_defaults_under_home_when_no_variable_is_set(tmp_path, monkeypatch):
    from sparkscope.client import paths

    for variable in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.config_dir() == tmp_path / ".config" / "sparkscope"
    assert paths.state_dir() == tmp_path / ".local" / "state" / "sparkscope"
    assert paths.cache_dir() == tmp_path / ".cache" / "sparkscope"
    assert stat.S_IMODE(paths.state_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.cache_dir().stat().st_mode) == 0o700
    assert not paths.config_dir().exists()  # only a write makes it


def test_each_xdg_variable_moves_its_folder(tmp_path, monkeypatch):
    from sparkscope.client import paths

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable, folder in (("XDG_CONFIG_HOME", "conf"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")):
        monkeypatch.setenv(variable, str(tmp_path / folder))
    assert paths.config_dir() == tmp_path / "conf" / "sparkscope"
    assert paths.state_dir() == tmp_path / "state" / "sparkscope"
    assert paths.cache_dir() == tmp_path / "cache" / "sparkscope"
    assert paths.config_file() == tmp_path / "conf" / "sparkscope" / "config.toml"
