"""One row per line: the form of ``list --format json`` and of the portable index."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from the_loop.records.rows import rows_document

TEXT = st.text(max_size=12)
ROW = st.dictionaries(TEXT, st.none() | st.booleans() | st.integers() | TEXT, max_size=4)


def test_no_rows_is_an_empty_list_on_one_line():
    assert rows_document("sessions", []) == '{"sessions": []}\n'


def test_each_row_has_a_line_of_its_own():
    text = rows_document("workItems", [{"ref": "a"}, {"ref": "b\nc"}])
    assert text == '{"workItems": [\n  {"ref": "a"},\n  {"ref": "b\\nc"}\n]}\n'


def test_rows_are_consumed_once_from_any_iterable():
    rows = ({"n": number} for number in range(3))
    assert json.loads(rows_document("rows", rows)) == {"rows": [{"n": 0}, {"n": 1}, {"n": 2}]}


@given(st.lists(ROW, max_size=5), TEXT)
def test_the_document_is_the_json_of_the_rows(rows: list[dict[str, object]], key: str):
    text = rows_document(key, rows)
    assert json.loads(text) == {key: rows}
    assert text.endswith("\n") and text.count("\n") == (len(rows) + 2 if rows else 1)
