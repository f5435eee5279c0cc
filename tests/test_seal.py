"""Seals: canonical encoding, tamper detection, key rotation, jsonb round trips."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.types.json import Jsonb

from ticketiq_pg.errors import InvalidPayload, SealMismatch
from ticketiq_pg.seal import Sealer, canonical

KEY_A = b"A" * 32
KEY_B = b"B" * 32
RUN = uuid.UUID("00000000-0000-0000-0000-000000000001")


def test_canonical_sorts_keys_and_normalises_numbers() -> None:
    assert canonical({"b": 1, "a": [1.0, 2.5, None, True]}) == '{"a":[1,2.5,null,true],"b":1}'
    assert canonical(1e20) == "100000000000000000000"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "a\x00b", {1: "x"}, object()])
def test_canonical_refuses_what_jsonb_cannot_hold(bad: object) -> None:
    with pytest.raises(InvalidPayload):
        canonical(bad)


def test_seal_verifies_and_detects_tampering() -> None:
    sealer = Sealer({"k1": KEY_A})
    body = {"conversation": [{"role": "user", "content": "hi"}], "calls": []}
    seal, key_id = sealer.seal("checkpoint", RUN, 1, body)
    sealer.verify("checkpoint", RUN, 1, body, seal, key_id)
    tampered = json.loads(json.dumps(body))
    tampered["conversation"][0]["content"] = "HI"
    with pytest.raises(SealMismatch):
        sealer.verify("checkpoint", RUN, 1, tampered, seal, key_id)
    with pytest.raises(SealMismatch):
        sealer.verify("checkpoint", RUN, 2, body, seal, key_id)  # moved to another step
    with pytest.raises(SealMismatch):
        sealer.verify("checkpoint", uuid.uuid4(), 1, body, seal, key_id)  # another run
    with pytest.raises(SealMismatch):
        sealer.verify("answer", RUN, 1, body, seal, key_id)  # another kind


def test_rotation_old_key_still_verifies_unknown_key_does_not() -> None:
    old = Sealer({"k1": KEY_A})
    seal, key_id = old.seal("checkpoint", RUN, 1, {"x": 1})
    rotated = Sealer({"k2": KEY_B, "k1": KEY_A})
    assert rotated.signing_key_id == "k2"
    rotated.verify("checkpoint", RUN, 1, {"x": 1}, seal, key_id)
    with pytest.raises(SealMismatch):
        Sealer({"k2": KEY_B}).verify("checkpoint", RUN, 1, {"x": 1}, seal, key_id)
    with pytest.raises(SealMismatch):
        rotated.verify("checkpoint", RUN, 1, {"x": 1}, None, key_id)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                max_size=6),
        children,
        max_size=4,
    ),
    max_leaves=20,
)


def test_seal_survives_a_jsonb_round_trip(empty_db_url: str) -> None:
    """Whatever JSON a checkpoint holds, what PostgreSQL gives back verifies."""
    sealer = Sealer({"k1": KEY_A})
    with psycopg.connect(empty_db_url, autocommit=True) as conn:

        @settings(max_examples=300, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(json_values)
        def round_trip(value: object) -> None:
            seal, key_id = sealer.seal("checkpoint", RUN, 3, value)
            (back,) = conn.execute("select %s::jsonb", [Jsonb(value)]).fetchone()
            sealer.verify("checkpoint", RUN, 3, back, seal, key_id)

        round_trip()


def test_the_fast_encoder_writes_the_canonical_text() -> None:
    """Whenever the C encoder is used (no floats, NULs or odd types), it writes what the
    canonical encoder writes."""
    from ticketiq_pg.seal import _encode, _fast_text

    @settings(max_examples=500, deadline=None)
    @given(json_values)
    def same(value: object) -> None:
        parts: list[str] = []
        _encode(value, parts)
        fast = _fast_text(value)
        if fast is not None:
            assert fast == "".join(parts)
        assert canonical(value) == "".join(parts)

    same()
    for slow in ({"a": [1, {"b": 2.0}]}, {"a": "x\x00"}, {"x\x00": 1}, {1: "a"}, {10: 1, 9: 2},
                 [object()], [float("nan")], ("a", 1.0)):
        assert _fast_text(slow) is None, slow
    assert _fast_text({"a": [None, True, 3, ("b",)]}) == '{"a":[null,true,3,["b"]]}'
    assert _fast_text({"a": "x\\u0000"}) is None  # only slower: the slow encoder agrees
    assert canonical({"a": "x\\u0000"}) == '{"a":"x\\\\u0000"}'


def test_a_float_with_a_fraction_takes_the_fast_encoder() -> None:
    """A run's deadline_at (a float with a fraction, in every checkpoint) is written by the
    C encoder as the canonical encoder writes it; an integral float still is not."""
    from ticketiq_pg.seal import _encode, _fast_text

    for value in ({"counters": {"deadline_at": 1796173572.2795796}}, [0.1, -2.5e-7, 1e-300],
                  1.5, {"a": [1, {"b": 1.5}]}):
        parts: list[str] = []
        _encode(value, parts)
        assert _fast_text(value) == "".join(parts), value
    for integral in (2.0, -0.0, 1e22, {"x": [3.0]}):
        assert _fast_text(integral) is None, integral


def test_the_sealed_text_is_sent_as_it_is_and_verifies(empty_db_url: str) -> None:
    """seal_encoded returns the seal and what to send: the canonical text it covers for a
    plain ASCII body, the body itself otherwise; either way the database stores exactly what
    sending the body stores, and what comes back verifies."""
    from psycopg.types.json import Jsonb

    from ticketiq_pg.db.transport import json_param as _json
    from ticketiq_pg.seal import JsonText, _fast_text

    sealer = Sealer({"k1": KEY_A})
    with psycopg.connect(empty_db_url, autocommit=True) as conn:

        @settings(max_examples=300, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])
        @given(json_values)
        def round_trip(value: object) -> None:
            seal, key_id, sent = sealer.seal_encoded("checkpoint", RUN, 3, value)
            assert (seal, key_id) == sealer.seal("checkpoint", RUN, 3, value)
            if isinstance(sent, JsonText):
                assert sent.text == canonical(value) and sent.value is value
                assert _fast_text(value) is not None and sent.text.isascii()
            else:
                assert sent is value
            (back, same) = conn.execute(
                "select %s::jsonb, %s::jsonb = %s::jsonb", [_json(sent), _json(sent), Jsonb(value)]
            ).fetchone()
            assert same, (value, back)
            sealer.verify("checkpoint", RUN, 3, back, seal, key_id)

        round_trip()
    for plain in ({"a": [1, "b"]}, {"a": 1.5}):  # a float with a fraction: its shortest repr
        assert isinstance(sealer.seal_encoded("checkpoint", RUN, 1, plain)[2], JsonText)
    for body in ({"a": 1.0}, {"a": "caf\u00e9"}):
        assert sealer.seal_encoded("checkpoint", RUN, 1, body)[2] is body


def test_a_body_that_contains_itself_is_refused_not_looped_over() -> None:
    import threading

    looped: dict[str, object] = {"a": 1}
    looped["self"] = looped
    outcome: list[BaseException | str] = []

    def encode() -> None:
        try:
            outcome.append(canonical(looped))
        except BaseException as exc:  # noqa: BLE001 - what it raised is the result
            outcome.append(exc)

    worker = threading.Thread(target=encode, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "canonical() did not return on a body that contains itself"
    assert len(outcome) == 1 and isinstance(outcome[0], InvalidPayload)
    shared = {"x": [1, 2]}
    assert canonical({"p": shared, "q": shared}) == '{"p":{"x":[1,2]},"q":{"x":[1,2]}}'
    # shared, not cyclic: the fast encoder still takes it (the step loop's bodies share
    # messages; the slow encoder would cost hundreds of microseconds a step)
    from ticketiq_pg.seal import _fast_text

    assert _fast_text({"p": shared, "q": [shared, shared]}) is not None
    assert _fast_text(looped) is None
