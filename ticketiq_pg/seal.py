"""Seals: HMAC-SHA256 over a canonical encoding of a checkpoint or an answer.

A checkpoint is sealed before it is written and verified before a resume
executes anything in it (invariant I9).  The seal binds the run id, the step,
what is sealed (``checkpoint`` or ``answer``) and the body, so a body changed
through psql, or moved to another run or step, does not verify.

The canonical encoding is stable across a round trip through ``jsonb``:
object keys are sorted, no white space, and every number is written the way
both Python and PostgreSQL give it back (the digits of a float's shortest
repr; an integral value as an integer).  NaN and infinities are refused.

A call row (``ticketiq.calls``) is sealed at each state a resume acts on:
pending (with its checkpoint), in doubt (with its mark) and finished (with
its outcome).  :func:`call_fields` is what such a seal covers: the call's
identity as its sealed checkpoint lists it and the row's state.

A checkpoint since schema 12 is a link of its run's chain (kind ``link``):
its seal covers its own body and the previous link's seal, so a resume
that verifies the chain in order has verified the conversation so far.

Keys come from ``TICKETIQ_SEAL_KEYS`` (see :mod:`ticketiq_pg.config`): several
keys with ids, the first signs, all verify, so a key can be rotated.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ticketiq_pg.errors import InvalidPayload, SealMismatch


def canonical(value: Any) -> str:
    """The canonical JSON text of ``value`` (raises InvalidPayload if not JSON).

    A body without floats (the usual case) is encoded by the C encoder of
    :mod:`json`, which then writes exactly the canonical text; anything
    else goes through the slower encoder below.
    """
    text = _fast_text(value)
    return text if text is not None else _slow(value)


def _slow(value: Any) -> str:
    parts: list[str] = []
    try:
        _encode(value, parts)
    except RecursionError as exc:
        raise InvalidPayload("nested too deeply, or it contains itself") from exc
    return "".join(parts)


_FAST = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def _fast_text(value: Any) -> str | None:
    """The canonical text as the C encoder writes it, or None where it would not be that.

    The C encoder runs first: it refuses what is not JSON, NaN and a body
    that contains itself (the slow encoder then says why).  Its text is the
    canonical one unless a NUL hides in it (written as an escape, which
    ``jsonb`` refuses) or the body holds an integral float or a key that is
    not a string, which :func:`_plain` looks for.
    """
    try:
        text = _FAST.encode(value)
    except (TypeError, ValueError, RecursionError):
        return None
    if "\\u0000" in text or not _plain(value):
        return None
    return text


_CONTAINERS = (dict, list, tuple)
_SCALARS = (str, int, bool)


def _fraction(value: float) -> bool:
    """A finite float that is not integral: the C encoder writes its shortest repr,
    exactly what the canonical text writes (an integral one it writes as an integer)."""
    return math.isfinite(value) and not value.is_integer()


def _plain(value: Any) -> bool:
    """True when ``value`` holds no integral float, no odd type and only string keys.

    Only for a value the C encoder has taken, so one with no cycle: a loop
    over a stack (it runs on every checkpoint), which looks at the type of
    each member once.  A container shared by two places (the step loop's
    bodies share messages) is looked at twice, and that is fine.  A float
    with a fraction (a run's ``deadline_at``, in every checkpoint) is plain:
    without it, every seal and every verify took the slow encoder (about a
    third of the client's time per step at 32 runs at once, bench section 10).
    """
    kind = type(value)
    if kind not in _CONTAINERS:
        return kind in _SCALARS or value is None or (kind is float and _fraction(value))
    stack: list[Any] = [value]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        if type(item) is dict:
            for key in item:
                if type(key) is not str:
                    return False
            members = item.values()
        else:
            members = item
        for member in members:
            kind = type(member)
            if kind is dict or kind is list or kind is tuple:
                push(member)
            elif not (kind is str or kind is int or kind is bool or member is None
                      or (kind is float and _fraction(member))):
                return False
    return True


class JsonText:
    """A body with its canonical JSON text, which the driver sends as it is.

    :meth:`Sealer.seal_encoded` makes one only where that text is exactly
    what sending the body would store: a body with no integral float (the
    canonical text writes one as an integer; a float with a fraction is
    written as its shortest repr, the digits PostgreSQL stores) and ASCII only (psycopg
    sends a JSON text as UTF-8 whatever the connection's client encoding;
    the escapes ``json.dumps`` writes are safe in any).  Then a checkpoint
    is encoded once per step, not twice.
    """

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Any) -> None:
        self.text = text
        self.value = value


def _encode(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidPayload(f"{value!r} cannot be stored in a checkpoint")
        # The shortest repr's digits are what PostgreSQL stores and gives back;
        # an integral value comes back as an integer, so it is written as one.
        digits = Decimal(repr(value))
        integral = digits == digits.to_integral_value()
        out.append(str(int(digits)) if integral else repr(value))
    elif isinstance(value, str):
        if "\x00" in value:
            raise InvalidPayload("a NUL character cannot be stored in a checkpoint")
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif isinstance(value, Mapping):
        out.append("{")
        for index, key in enumerate(sorted(value)):
            if not isinstance(key, str):
                raise InvalidPayload(f"object keys must be strings, got {key!r}")
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    else:
        raise InvalidPayload(f"{type(value).__name__} is not JSON")


def _message(
    kind: str, run_id: uuid.UUID | str, step: int, text: str, prev: str | None = None
) -> bytes:
    head = f"ticketiq-seal-v1\n{kind}\n{run_id}\n{int(step)}\n"
    if prev is not None:
        # a link of a chain: its seal covers the previous link's seal ("" at a base)
        head += f"{prev}\n"
    return (head + text).encode("utf-8")


def call_fields(
    call: Mapping[str, Any],
    state: str,
    marked: str | None = None,
    settlement: str | None = None,
    outcome: Any = None,
) -> dict[str, Any]:
    """What the seal of a call row covers (with its run and step, in the seal's head).

    The identity comes from the checkpoint's call (id, tool, a digest of the
    arguments, classification, step key); the state is the row's: in doubt
    with the classification its mark recorded (I7), done or settled with
    its settlement and outcome.
    """
    finished = state in ("done", "settled")
    return {
        "call_id": call["call_id"],
        "tool": call["tool"],
        "args": hashlib.sha256(canonical(call["arguments"]).encode("utf-8")).hexdigest(),
        "classification": call["classification"],
        "step_key": call.get("step_key"),
        "state": state,
        "marked": marked if state == "in_doubt" else None,
        "settlement": settlement if finished else None,
        "outcome": outcome if finished else None,
    }


class Sealer:
    """Seals with the first key and verifies with any configured key."""

    def __init__(self, keys: Mapping[str, bytes], signing_key_id: str | None = None) -> None:
        if not keys:
            raise ValueError("a Sealer needs at least one key")
        self._keys = dict(keys)
        self.signing_key_id = signing_key_id or next(iter(self._keys))
        if self.signing_key_id not in self._keys:
            raise ValueError(f"signing key {self.signing_key_id!r} is not configured")

    def seal(self, kind: str, run_id: uuid.UUID | str, step: int, body: Any) -> tuple[str, str]:
        """Return ``(seal, key_id)`` for the body."""
        seal, key_id, _ = self.seal_encoded(kind, run_id, step, body)
        return seal, key_id

    def seal_encoded(
        self, kind: str, run_id: uuid.UUID | str, step: int, body: Any, prev: str | None = None
    ) -> tuple[str, str, Any]:
        """Return ``(seal, key_id, to_send)``: the seal, and the body to send.

        ``to_send`` is a :class:`JsonText` holding the canonical text the seal
        covers where sending that text stores what sending the body would
        (a plain, ASCII body), and ``body`` itself otherwise.
        """
        fast = _fast_text(body)
        text = fast if fast is not None else _slow(body)
        key = self._keys[self.signing_key_id]
        digest = hmac.new(key, _message(kind, run_id, step, text, prev), hashlib.sha256).hexdigest()
        to_send = JsonText(text, body) if fast is not None and text.isascii() else body
        return digest, self.signing_key_id, to_send

    def seal_call(
        self, run_id: uuid.UUID | str, step: int, call: Mapping[str, Any], state: str, **row: Any
    ) -> tuple[str, str]:
        """``(seal, key_id)`` of a call row in ``state`` (see :func:`call_fields`)."""
        return self.seal("call", run_id, step, call_fields(call, state, **row))

    def verify_call(
        self, run_id: uuid.UUID | str, step: int, call: Mapping[str, Any], row: Mapping[str, Any]
    ) -> None:
        """Raise SealMismatch unless the row, as stored, is one a key holder sealed for ``call``."""
        fields = call_fields(call, row.get("state") or "", row.get("marked_classification"),
                             row.get("settlement"), row.get("outcome"))
        try:
            self.verify("call", run_id, step, fields, row.get("seal"), row.get("seal_key_id"))
        except SealMismatch as exc:
            raise SealMismatch(f"call {call['call_id']!r}: {exc}") from exc

    def verify(
        self,
        kind: str,
        run_id: uuid.UUID | str,
        step: int,
        body: Any,
        seal: str | None,
        key_id: str | None,
        prev: str | None = None,
    ) -> None:
        """Raise SealMismatch unless ``seal`` is the seal of the body under ``key_id``."""
        if not seal or not key_id:
            raise SealMismatch(f"{kind} of run {run_id} step {step} has no seal")
        key = self._keys.get(key_id)
        if key is None:
            raise SealMismatch(
                f"{kind} of run {run_id} step {step} is sealed with key {key_id!r}, "
                "which is not configured"
            )
        try:
            message = _message(kind, run_id, step, canonical(body), prev)
        except InvalidPayload as exc:
            raise SealMismatch(f"{kind} of run {run_id} step {step} is not JSON: {exc}") from exc
        expected = hmac.new(key, message, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, seal):
            raise SealMismatch(f"{kind} of run {run_id} step {step} does not match its seal")
