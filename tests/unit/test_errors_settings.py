"""Error codes are unique and stable; Settings read only the mapping they are given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cnki_mcp.errors import CnkiError, ConfigInvalid, all_error_classes
from cnki_mcp.settings import load_settings


def test_every_error_class_has_a_unique_code() -> None:
    codes = [cls.code for cls in all_error_classes()]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)


def test_error_serialises_code_message_retryable_and_details() -> None:
    from cnki_mcp.errors import RateLimited

    err = RateLimited(path="/kns8s/brief/grid")
    assert err.to_dict() == {
        "code": "RATE_LIMITED",
        "message": RateLimited.default_message,
        "retryable": True,
        "details": {"path": "/kns8s/brief/grid"},
    }
    assert isinstance(err, CnkiError)


def test_settings_defaults_follow_the_contract(tmp_path: Path) -> None:
    s = load_settings({"CNKI_DATA_DIR": str(tmp_path)})
    assert s.data_dir == tmp_path.resolve()
    assert (s.request_interval_ms, s.max_inflight, s.workers, s.inline_wait_seconds) == (500, 6, 8, 40.0)
    assert s.headless is None and s.site_origin is None
    assert s.origin("kns") == "https://kns.cnki.net"
    for flag in ("--disable-background-networking", "--disable-quic", "--disable-sync", "--no-first-run"):
        assert flag in s.browser_args


def test_site_origin_moves_every_cnki_host_to_one_origin(tmp_path: Path) -> None:
    s = load_settings({"CNKI_DATA_DIR": str(tmp_path), "CNKI_SITE_ORIGIN": "http://127.0.0.1:8123/"})
    assert {s.origin(h) for h in ("kns", "navi", "bar", "login", "www")} == {"http://127.0.0.1:8123"}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CNKI_REQUEST_INTERVAL_MS", "fast"),
        ("CNKI_MAX_INFLIGHT", "0"),
        ("CNKI_HEADLESS", "maybe"),
        ("CNKI_SITE_ORIGIN", "ftp://x"),
        ("CNKI_SITE_ORIGIN", "https://user:pw@example.org"),
        # a WebVPN prefix: its path was dropped, every request went to the proxy's own /kns8s/…
        ("CNKI_SITE_ORIGIN", "https://webvpn.example.edu.cn/https/77726476706e69737468656265737421/"),
        ("CNKI_INLINE_WAIT_SECONDS", "90"),
        ("CNKI_LOG_LEVEL", "verbose"),  # used to fall back to INFO without a word
    ],
)
def test_bad_environment_values_give_config_invalid(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(ConfigInvalid) as info:
        load_settings({"CNKI_DATA_DIR": str(tmp_path), name: value})
    assert info.value.code == "CONFIG_INVALID"


def test_headless_override_and_browser_flags(tmp_path: Path) -> None:
    s = load_settings(
        {
            "CNKI_DATA_DIR": str(tmp_path),
            "CNKI_HEADLESS": "0",
            "CNKI_HOST_RESOLVER_RULES": "MAP *.cnki.net 127.0.0.1:9443",
            "CNKI_IGNORE_CERT_ERRORS": "1",
        }
    )
    assert s.headless is False
    assert "--host-resolver-rules=MAP *.cnki.net 127.0.0.1:9443" in s.browser_args
    assert "--ignore-certificate-errors" in s.browser_args


def test_log_level_is_case_insensitive_and_the_token_loses_surrounding_whitespace(tmp_path: Path) -> None:
    """A token pasted with a trailing newline could never be sent in an Authorization header
    (the server compares the stripped header value), and a blank one would count as set."""
    settings = load_settings({"CNKI_DATA_DIR": str(tmp_path), "CNKI_LOG_LEVEL": "warn", "CNKI_MCP_TOKEN": " s3cret\n"})
    assert settings.log_level == "WARNING" and settings.mcp_token == "s3cret"
    blank = load_settings({"CNKI_DATA_DIR": str(tmp_path), "CNKI_LOG_LEVEL": "debug", "CNKI_MCP_TOKEN": "   "})
    assert blank.log_level == "DEBUG" and blank.mcp_token is None


@pytest.mark.skipif(os.name != "posix", reason="the password database")
@pytest.mark.parametrize("environ", [{}, {"CNKI_DATA_DIR": "~/cnki"}])
def test_no_home_directory_at_all_is_config_invalid_naming_cnki_data_dir(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str]
) -> None:
    """HOME unset and the user not in the password database (a container run with a bare UID,
    `env -i`): every command ended in platformdirs' RuntimeError traceback."""
    import pwd

    def unknown(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for name in ("HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", unknown)
    with pytest.raises(ConfigInvalid) as info:
        load_settings(environ)
    assert info.value.code == "CONFIG_INVALID" and info.value.details["name"] == "CNKI_DATA_DIR"
