"""incident.io: incidents and their edits, each applied once per idempotency key.

Keys are kept forever (longer than any resume); a key reused to edit another incident
is 409.
"""

from __future__ import annotations

import json

from harness.vendor_sim.store import INCIDENT, INCIDENT_EDIT, dumps, iso, ulid
from harness.vendor_sim.wire import Call, Outcome, Reject, Route, text_field

_INCIDENT_FIELDS = ("name", "summary", "severity_id", "incident_status_id", "visibility")


def incident_create(call: Call, _params: list[str]) -> Outcome:
    body = call.json_object()
    key = text_field(body, "idempotency_key", required=True, max_len=512)
    call.key, call.key_kind = key, "idempotency_key"
    name = text_field(body, "name", required=True, max_len=1000)
    summary = text_field(body, "summary", required=False, nullable=True)
    severity_id = text_field(body, "severity_id", required=False, nullable=True)
    visibility = text_field(body, "visibility", required=False) or "public"
    if visibility not in ("public", "private"):
        raise Reject(400, "visibility must be 'public' or 'private'", field="visibility")
    seen = call.conn.execute(
        "SELECT object_id FROM idempotency WHERE vendor='incidentio' "
        "AND operation='incidents.create' AND key=?",
        (key,),
    ).fetchone()
    if seen:
        incident = call.get(INCIDENT, seen[0])
        return Outcome(200, {"incident": incident}, "deduplicated", INCIDENT, seen[0])
    number = call.counter("incident.reference")
    incident = {
        "id": ulid(call.now),
        "reference": f"INC-{number}",
        "name": name,
        "summary": summary,
        "severity_id": severity_id,
        "incident_status_id": "triage",
        "visibility": visibility,
        "created_at": iso(call.now),
        "updated_at": iso(call.now),
    }
    call.insert(INCIDENT, incident["id"], incident["id"], key, incident)
    response = {"incident": incident}
    call.conn.execute(
        "INSERT INTO idempotency VALUES ('incidentio', 'incidents.create', ?, ?, 201, ?, ?)",
        (key, incident["id"], dumps(response), call.now),
    )
    return Outcome(201, response, "created", INCIDENT, incident["id"])


def incident_edit(call: Call, params: list[str]) -> Outcome:
    incident_id = params[0]
    body = call.json_object()
    key = text_field(body, "idempotency_key", required=True, max_len=512)
    call.key, call.key_kind = key, "idempotency_key"
    fields = body.get("incident")
    if not isinstance(fields, dict) or not fields:
        raise Reject(
            400, "incident must be a non-empty object of the fields to change", field="incident"
        )
    unknown = sorted(set(fields) - set(_INCIDENT_FIELDS))
    if unknown:
        raise Reject(
            400,
            f"incident has fields that cannot be edited: {', '.join(unknown)} "
            f"(editable: {', '.join(_INCIDENT_FIELDS)})",
            field="incident",
        )
    for name in _INCIDENT_FIELDS:
        if name in fields:
            text_field(
                fields,
                name,
                required=name in ("name", "visibility"),
                nullable=name not in ("name", "visibility"),
                where="incident.",
            )
    if fields.get("visibility", "public") not in ("public", "private"):
        raise Reject(
            400,
            "incident.visibility must be 'public' or 'private'",
            field="incident.visibility",
        )
    seen = call.conn.execute(
        "SELECT object_id, status, response FROM idempotency WHERE vendor='incidentio' "
        "AND operation='incidents.edit' AND key=?",
        (key,),
    ).fetchone()
    if seen:
        edit = call.get(INCIDENT_EDIT, seen[0]) or {}
        if edit.get("incident_id") != incident_id:
            raise Reject(
                409,
                f"idempotency_key {key!r} was already used to edit incident "
                f"{edit.get('incident_id')}",
                field="idempotency_key",
            )
        return Outcome(
            int(seen[1]), json.loads(seen[2]), "deduplicated", INCIDENT_EDIT, seen[0]
        )
    incident = call.get(INCIDENT, incident_id)
    if incident is None:
        raise Reject(404, f"no incident with id {incident_id!r}")
    incident.update(fields)
    incident["updated_at"] = iso(call.now)
    call.update(INCIDENT, incident_id, incident)
    edit_id = ulid(call.now)
    call.insert(
        INCIDENT_EDIT,
        edit_id,
        incident_id,
        key,
        {
            "id": edit_id,
            "incident_id": incident_id,
            "fields": fields,
            "idempotency_key": key,
            "created_at": iso(call.now),
        },
    )
    response = {"incident": incident}
    call.conn.execute(
        "INSERT INTO idempotency VALUES ('incidentio', 'incidents.edit', ?, ?, 200, ?, ?)",
        (key, edit_id, dumps(response), call.now),
    )
    return Outcome(200, response, "created", INCIDENT_EDIT, edit_id)


def incident_get(call: Call, params: list[str]) -> Outcome:
    incident = call.get(INCIDENT, params[0])
    if incident is None:
        raise Reject(404, f"no incident with id {params[0]!r}")
    return Outcome(200, {"incident": incident}, "read", INCIDENT, params[0])


def incident_list(call: Call, _params: list[str]) -> Outcome:
    rows = call.conn.execute(
        "SELECT data FROM objects WHERE kind = ? ORDER BY seq", (INCIDENT,)
    ).fetchall()
    incidents = [json.loads(row[0]) for row in rows]
    return Outcome(
        200, {"incidents": incidents, "pagination_meta": {"page_size": len(incidents)}}, "read"
    )


ROUTES = [
    Route("incidentio", "POST", ("v2", "incidents"), incident_create),
    Route("incidentio", "GET", ("v2", "incidents"), incident_list),
    Route("incidentio", "GET", ("v2", "incidents", "{}"), incident_get),
    Route("incidentio", "POST", ("v2", "incidents", "{}", "actions", "edit"), incident_edit),
]
