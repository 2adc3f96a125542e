"""The escape-probe catalogue is a packaged data file, validated into EscapeProbe objects when it is loaded."""

from __future__ import annotations

from importlib.resources import files

import pytest

from toolcode.testing._catalog import PROBES, Category, EscapeProbe, Judge, load_probes

MINIMAL = """
[[probe]]
id = "one"
category = "network"
title = "connects"
source = "somewhere"
code = '''
"x"
'''
"""


def test_probes_are_the_packaged_catalogue_in_file_order() -> None:
    text = files("toolcode.testing").joinpath("probes.toml").read_text(encoding="utf-8")
    assert load_probes(text) == PROBES
    ids = [line.split('"')[1] for line in text.splitlines() if line.startswith("id = ")]
    assert [p.id for p in PROBES] == ids


def test_optional_keys_take_their_defaults_and_code_keeps_its_lines() -> None:
    (probe,) = load_probes(MINIMAL)
    assert probe == EscapeProbe("one", Category.NETWORK, "connects", "somewhere", '"x"\n')
    assert (probe.judge, probe.escapes_plain_exec, probe.settle_s) == (Judge.LEAK, True, 0.0)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        # A misspelt optional key is refused, not dropped (the probe would silently take the default).
        (('title = "connects"', 'title = "connects"\nescape_plain_exec = false'), "escape_plain_exec"),
        (('source = "somewhere"\n', ""), "source"),
        (('category = "network"', 'category = "telepathy"'), "category"),
        (('title = "connects"', 'title = "connects"\njudge = "lenient"'), "judge"),
        (('title = "connects"', 'title = "connects"\nsettle_s = "soon"'), "settle_s"),
    ],
)
def test_a_malformed_probe_is_refused_naming_the_field(change: tuple[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        load_probes(MINIMAL.replace(*change))


def test_a_repeated_id_is_refused() -> None:
    with pytest.raises(ValueError, match="'one'"):
        load_probes(MINIMAL + MINIMAL)


def test_a_file_that_is_not_a_catalogue_is_refused() -> None:
    for text in ("[[probe]\n", 'title = "no probes"\n'):
        with pytest.raises(ValueError):
            load_probes(text)
