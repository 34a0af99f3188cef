"""write_json / atomic_write_bytes never leave a half-written file."""

import json

import pytest

from medaudit.io.output import atomic_write_bytes, write_json


def test_write_json_replaces_atomically_and_leaves_no_temp(tmp_path):
    p = tmp_path / "r.json"
    write_json(p, {"b": 1, "a": float("nan")})
    write_json(p, {"b": 2})
    assert json.loads(p.read_text()) == {"b": 2}
    assert [q.name for q in tmp_path.iterdir()] == ["r.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "r.json"
    write_json(p, {"ok": True})

    with pytest.raises(TypeError):
        atomic_write_bytes(p, object())  # not bytes: the write fails midway
    assert json.loads(p.read_text()) == {"ok": True}
    assert [q.name for q in tmp_path.iterdir()] == ["r.json"]
