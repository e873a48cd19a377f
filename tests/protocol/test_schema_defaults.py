"""Default values of absent and tagged fields: equal to a fresh ``cls()``, never shared."""

from __future__ import annotations

from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.schema import INT32, STRING, A, F, Struct

INNER = Struct("Inner", [F("a", INT32, default=-1), F("items", A(INT32))])
OUTER = Struct(
    "Outer",
    [
        F("name", STRING),
        F("inner", INNER),
        F("maybe", INNER, nullable="0+"),
        F("tags", A(STRING), default=[]),
    ],
)


def test_make_default_equals_a_constructed_value() -> None:
    made = OUTER.make_default()
    assert made == OUTER.cls()
    assert (made.name, made.inner.a, made.inner.items, made.maybe, made.tags) == (
        "",
        -1,
        [],
        None,
        [],
    )


def test_defaults_are_fresh_objects() -> None:
    one, two = OUTER.make_default(), OUTER.make_default()
    assert one.inner is not two.inner
    one.inner.items.append(1)
    one.tags.append("x")
    assert two.inner.items == [] and two.tags == []
    assert OUTER.make_default() == OUTER.cls()


def test_tagged_defaults_of_decoded_partitions_are_not_shared() -> None:
    version = FETCH.max_version
    response = {
        "responses": [
            {
                "topic": "t",
                "topic_id": None,
                "partitions": [{"partition_index": 0}, {"partition_index": 1}],
            }
        ]
    }
    data = FETCH.encode_response(version, response)
    decoded = FETCH.decode_response(version, data)
    first, second = decoded.responses[0].partitions
    assert first.diverging_epoch == second.diverging_epoch
    assert first.diverging_epoch is not second.diverging_epoch
