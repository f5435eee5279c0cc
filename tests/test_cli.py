"""The ``ticketiq-pg`` command line without a database: durations, seal keys, finding the app.

Every duration argument (``--since``, ``--older-than``, ``--lapse-within``,
``--seen-within``) goes through one parser; each keeps the forms it took and its error
message.  ``seal-key`` prints a key ``TICKETIQ_SEAL_KEYS`` accepts.  ``load_app`` finds an
app module in the current directory or an ``--app-dir``, in this process, and says where it
looked when the module is not there.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ticketiq_pg.config import parse_seal_keys
from ticketiq_pg.ops.args import age_arg, duration, seconds_arg, since_arg
from ticketiq_pg.ops.cli import build_parser, load_app, main
from ticketiq_pg.runtime.worker import App

# -- durations --------------------------------------------------------------------------------


def test_one_duration_parser() -> None:
    assert duration("30") == (30.0, False)
    assert duration(" 1.5 ") == (1.5, False)
    for text, seconds in (("90s", 90), ("90sec", 90), ("15m", 900), ("15 min", 900),
                          ("2H", 7200), ("3d", 259200), ("1w", 604800), ("0s", 0)):
        assert duration(text) == (seconds, True), text
    for text in ("", "s", "soon", "-5m", "inf", "nan", "5x", "1e999s"):
        assert duration(text) is None, text


def rejects(parse: object, text: str) -> str:
    with pytest.raises(argparse.ArgumentTypeError) as exc:
        parse(text)  # type: ignore[operator]
    return str(exc.value)


def test_since_takes_an_age_with_a_unit_or_a_timestamp() -> None:
    assert since_arg("90m") == timedelta(minutes=90)
    assert since_arg("1w") == timedelta(weeks=1)
    assert since_arg("2026-01-02T03:04:05") == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    offset = since_arg("2026-01-02T03:04:05+02:00")
    assert isinstance(offset, datetime) and offset.utcoffset() == timedelta(hours=2)
    for text in ("yesterday", "-5m", "90"):
        assert rejects(since_arg, text) == (
            f"not a time: {text!r} (an age such as 15m, 2h, 3d, or an ISO 8601 timestamp)")


def test_older_than_takes_seconds_or_an_age_above_zero() -> None:
    assert age_arg("3600") == 3600
    assert age_arg("30d") == 30 * 86400
    assert age_arg("1.5h") == 5400
    for text in ("0", "0s", "soon", "-1", "inf"):
        assert rejects(age_arg, text) == (
            f"not an age > 0 (seconds, or 90s, 15m, 2h, 30d, 1w): {text!r}")


def test_seconds_take_no_unit() -> None:
    assert seconds_arg("0") == 0
    assert seconds_arg("7200") == 7200
    for text in ("5s", "-1", "many", "nan"):
        assert rejects(seconds_arg, text) == f"not a number of seconds >= 0: {text!r}"


def test_bad_durations_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["status", "--seen-within", "5m"], ["purge", "--older-than", "0"]):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--database-url", "postgresql://unused"])
        assert exc.value.code == 2, argv
    err = capsys.readouterr().err
    assert "argument --seen-within: not a number of seconds >= 0: '5m'" in err
    assert "argument --older-than: not an age > 0" in err


# -- seal-key ---------------------------------------------------------------------------------


def seal_key(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["seal-key", *argv]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.count("\n") == 1
    return out.strip()


def test_seal_key_prints_a_fresh_key(capsys: pytest.CaptureFixture[str]) -> None:
    first, second = seal_key(capsys), seal_key(capsys)
    assert first != second
    keys = parse_seal_keys(f"{first},{second}")  # two keys at once: as when rotating
    assert len(keys) == 2 and all(len(key) == 32 for key in keys.values())
    assert len(set(keys.values())) == 2
    key_id = next(iter(keys))
    assert key_id.startswith(f"k{datetime.now(UTC):%Y}")

    named = seal_key(capsys, "--key-id", "prod-2")
    assert list(parse_seal_keys(named)) == ["prod-2"]


def test_seal_key_refuses_an_id_the_variable_cannot_carry(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key_id in ("a:b", "a,b", "a b", ""):
        with pytest.raises(SystemExit) as exc:
            main(["seal-key", "--key-id", key_id])
        assert exc.value.code == 2
    assert "not a key id" in capsys.readouterr().err


def test_seal_key_help_says_how_to_rotate(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["seal-key", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "The first key of TICKETIQ_SEAL_KEYS seals" in out
    assert "every key listed verifies" in out
    assert "put the new key first (new:...,old:...)" in out


def test_the_help_is_plain_text_for_a_person(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["migrate", "--help"], ["worker", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = capsys.readouterr().out
        assert ":class:" not in out and ":mod:" not in out and "``" not in out, (argv, out)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "ticketiq-pg migrate --create-database" in capsys.readouterr().out


# -- load_app ---------------------------------------------------------------------------------

APP_MODULE = """
from ticketiq_pg.agent import ModelStep, Tools
from ticketiq_pg.runtime.worker import App


class Done:
    async def step(self, request):
        return ModelStep(text="done")


def make_app():
    return App(model=Done(), tools=Tools(), agent_loop={loop!r})
"""


@pytest.fixture
def app_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A uniquely named app module in tmp_path/app; sys.path and sys.modules put back after."""
    name = f"triage_app_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / f"{name}.py").write_text(textwrap.dedent(APP_MODULE.format(loop=name)))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    for module in (name, "broken_app_module"):
        sys.modules.pop(module, None)


def test_load_app_finds_the_module_in_the_current_directory(
    app_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = str((tmp_path / "app").resolve())
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", cwd)])
    monkeypatch.chdir(tmp_path / "app")
    app = load_app(f"{app_module}:make_app")
    assert isinstance(app, App) and app.agent_loop == app_module
    assert sys.path[0] == cwd


def test_load_app_finds_the_module_in_an_app_dir(
    app_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    app = load_app(f"{app_module}:make_app", [tmp_path / "app"])
    assert isinstance(app, App) and app.agent_loop == app_module
    assert sys.path[:2] == [str((tmp_path / "app").resolve()), str(elsewhere.resolve())]


def test_load_app_names_the_module_and_where_it_looked(
    app_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(SystemExit) as exc:
        load_app("no_such_triage_app:make_app", [tmp_path / "app"])
    message = str(exc.value.code)
    assert message.startswith("ticketiq-pg worker: no module named 'no_such_triage_app' ")
    assert f"in {(tmp_path / 'app').resolve()}, {elsewhere.resolve()} or the rest of" in message
    assert "--app-dir DIR" in message

    # the module is there but imports one that is not: that one is named
    broken = tmp_path / "app" / "broken_app_module.py"
    broken.write_text("import no_such_dependency_module\n")
    with pytest.raises(SystemExit) as exc:
        load_app("broken_app_module:make_app", [tmp_path / "app"])
    assert str(exc.value.code) == (
        "ticketiq-pg worker: cannot import 'broken_app_module': "
        "No module named 'no_such_dependency_module'")

    with pytest.raises(SystemExit) as exc:
        load_app(f"{app_module}:no_such_factory", [tmp_path / "app"])
    assert f"{app_module!r} has no 'no_such_factory'" in str(exc.value.code)


def test_worker_takes_app_dirs() -> None:
    opts = build_parser().parse_args(
        ["worker", "--app", "m:f", "--app-dir", "one", "--app-dir", "two"])
    assert opts.app_dir == ["one", "two"]
    assert build_parser().parse_args(["worker"]).app_dir is None


@pytest.mark.parametrize("port", ["eighty", "0", "70000", "-1"])
def test_a_bad_http_port_in_the_environment_is_named_not_a_traceback(
        port: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from ticketiq_pg.ops.cli import main

    monkeypatch.setenv("TICKETIQ_HTTP_PORT", port)
    assert main(["worker", "--app", "no_such_module:app"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"ticketiq-pg: TICKETIQ_HTTP_PORT must be a port number (1-65535), not {port!r}")
