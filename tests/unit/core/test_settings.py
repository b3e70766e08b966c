"""REPL settings from the config file."""

from __future__ import annotations


def test_repl_settings_of_the_wrong_type_are_named_once_and_the_default_applies(tmp_path, monkeypatch, caplog):
    import logging

    from sparkscope.core import settings

    (tmp_path / "sparkscope").mkdir()
    (tmp_path / "sparkscope" / "config.toml").write_text('[repl]\ncommand_timeout = "soon"\npager = 7\nvi = true\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(settings, "_said", set())
    logger = logging.getLogger("sparkscope")
    monkeypatch.setattr(logger, "propagate", True)
    with caplog.at_level(logging.WARNING, logger="sparkscope"):
        settings.check_repl_settings()
        assert settings.repl_setting("command_timeout") == 300.0
        assert settings.repl_setting("pager") is None
        assert settings.repl_setting("vi") is True
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2, said
    assert "command_timeout = 'soon'" in said[0] and "a number of seconds" in said[0]
    assert "pager = 7" in said[1] and "pager = false" in said[1]
