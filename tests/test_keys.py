"""Step idempotency keys: every scope, positional ids, ad hoc calls."""

from __future__ import annotations

import pytest

from ticketiq_pg.runtime import step_keys as keys


def test_agent_call_key_is_stable_and_depends_on_every_part() -> None:
    base = keys.agent_call_key("corr-1", "main", 3, "call_a1B2c3D4e5F6g7H8")
    assert base == keys.agent_call_key("corr-1", "main", 3, "call_a1B2c3D4e5F6g7H8")
    variants = {
        keys.agent_call_key("corr-2", "main", 3, "call_a1B2c3D4e5F6g7H8"),
        keys.agent_call_key("corr-1", "sub", 3, "call_a1B2c3D4e5F6g7H8"),
        keys.agent_call_key("corr-1", "main", 4, "call_a1B2c3D4e5F6g7H8"),
        keys.agent_call_key("corr-1", "main", 3, "call_zzzzzzzzzzzzzzzzzzzz"),
    }
    assert base not in variants
    assert len(variants) == 4
    assert base is not None and base.startswith("tiq1-call-")


@pytest.mark.parametrize("call_id", ["call_0", "call_12", "0", "7", "toolu_0", "tool-3", "fc_1"])
def test_positional_call_ids_give_no_key(call_id: str) -> None:
    assert keys.is_positional(call_id)
    assert keys.agent_call_key("corr", "main", 1, call_id) is None


@pytest.mark.parametrize(
    "call_id",
    ["call_abc123XYZ", "toolu_01A09q90qw90lq917835lq9", "fc_67890abcdef", "a1b2c3"],
)
def test_provider_identities_give_a_key(call_id: str) -> None:
    assert not keys.is_positional(call_id)
    assert keys.agent_call_key("corr", "main", 1, call_id) is not None


def test_workflow_key_same_on_retry_new_on_loop_back() -> None:
    first = keys.workflow_step_key("wf-1", "notify", 5)
    retry = keys.workflow_step_key("wf-1", "notify", 5)
    loop_back = keys.workflow_step_key("wf-1", "notify", 9)
    assert first == retry
    assert loop_back != first
    assert keys.workflow_step_key("wf-2", "notify", 5) != first


def test_approval_key_is_the_same_however_often_sent() -> None:
    assert keys.approval_key("appr-9") == keys.approval_key("appr-9")
    assert keys.approval_key("appr-9") != keys.approval_key("appr-10")


def test_adhoc_calls_get_a_fresh_key_each_time() -> None:
    seen = {keys.adhoc_key() for _ in range(100)}
    assert len(seen) == 100


def test_scopes_never_collide() -> None:
    assert keys.workflow_step_key("x", "y", 1) != keys.approval_key("x")


@pytest.mark.parametrize(
    "call",
    [
        lambda: keys.agent_call_key("", "main", 1, "call_abcdefghij"),
        lambda: keys.agent_call_key("c", "main", -1, "call_abcdefghij"),
        lambda: keys.workflow_step_key("", "s", 1),
        lambda: keys.approval_key(""),
    ],
)
def test_missing_identity_is_an_error(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        call()
