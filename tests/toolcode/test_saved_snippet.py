"""A saved snippet's catalog tool tells its saved version apart, and its stored form keeps what does."""

from __future__ import annotations

import json
from dataclasses import replace

from toolcode._saved_snippet import REVISION_META_KEY, SavedSnippet
from tooldocs import definition_fingerprint

ALICES = SavedSnippet("report", "{'n': 1}", "The monthly report.", {"type": "object"}, 1.0, 2.0, "alice", revision="r1")


def test_each_saved_version_is_another_definition() -> None:
    # The same name, description and arguments: only who saved it, and which save, tell them apart.
    assert ALICES.tool().meta == {REVISION_META_KEY: "r1"}
    fingerprint = definition_fingerprint(ALICES.tool())
    assert fingerprint != definition_fingerprint(replace(ALICES, owner="bob", revision="r2").tool())
    assert fingerprint != definition_fingerprint(replace(ALICES, revision="r3").tool())
    assert fingerprint == definition_fingerprint(replace(ALICES).tool())


def test_the_revision_is_stored_but_not_shown() -> None:
    snippet = replace(ALICES, revision="f" * 32)
    assert SavedSnippet.decode(snippet.encode()) == snippet
    assert "f" * 32 not in json.dumps(snippet.to_dict())


def test_a_record_saved_before_revisions_derives_its_definition_from_who_saved_what_when() -> None:
    record = json.loads(ALICES.encode())
    del record["revision"]
    old = SavedSnippet.decode(json.dumps(record).encode())
    assert old is not None and old.revision == ""
    again = SavedSnippet.decode(json.dumps(record).encode())
    assert again is not None and old.definition == again.definition  # every replica derives the same
    others = [
        {**record, "owner": "bob"},
        {**record, "code": "{'n': 2}"},
        {**record, "updated": 3.0},
        {**record, "shared": True},
    ]
    for other in others:
        changed = SavedSnippet.decode(json.dumps(other).encode())
        assert changed is not None and changed.definition != old.definition, other
