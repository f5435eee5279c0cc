#!/usr/bin/env bash
# Check for the system packages the test suite needs and install the missing ones
# (Debian, as root).  Needed: PostgreSQL server binaries (initdb), pgTAP, pg_prove,
# plpgsql_check, all for the same major version as the server binaries, and psql;
# chromium and chromedriver for the console's browser test; prometheus for the metrics test;
# haproxy, patroni, etcd and pgbouncer for the kill trials in the production shape
# (tests/unit/test_kill_trials.py).
set -euo pipefail

# Major version: the highest installed server, else Debian bookworm's default.
server_version() {
    local v
    v=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null |
        sed -E 's#/usr/lib/postgresql/([0-9]+)/bin/initdb#\1#' | sort -n | tail -1)
    echo "${v:-15}"
}

missing=()
check() {
    missing=()
    [[ -x /usr/lib/postgresql/$PGVER/bin/initdb ]] || missing+=("PostgreSQL $PGVER server (initdb)")
    [[ -f /usr/share/postgresql/$PGVER/extension/pgtap.control ]] || missing+=("pgTAP for PostgreSQL $PGVER")
    command -v pg_prove >/dev/null 2>&1 || missing+=("pg_prove")
    [[ -f /usr/share/postgresql/$PGVER/extension/plpgsql_check.control ]] ||
        missing+=("plpgsql_check for PostgreSQL $PGVER")
    command -v psql >/dev/null 2>&1 || missing+=("psql")
    [[ -x /usr/bin/chromium ]] || missing+=("chromium")
    [[ -x /usr/bin/chromedriver ]] || missing+=("chromedriver")
    command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || missing+=("haproxy")
    command -v patroni >/dev/null 2>&1 || missing+=("patroni")
    command -v etcd >/dev/null 2>&1 || missing+=("etcd")
    command -v pgbouncer >/dev/null 2>&1 || [[ -x /usr/sbin/pgbouncer ]] || missing+=("pgbouncer")
    [[ -x /usr/bin/prometheus ]] || missing+=("prometheus")
    return 0
}

PGVER=$(server_version)
check
if ((${#missing[@]} == 0)); then
    echo "system deps: ok (PostgreSQL $PGVER server, pgTAP, pg_prove, plpgsql_check, chromium," \
        "prometheus, haproxy, patroni, etcd, pgbouncer)"
    exit 0
fi

pkgs=(postgresql-$PGVER postgresql-$PGVER-pgtap libtap-parser-sourcehandler-pgtap-perl postgresql-$PGVER-plpgsql-check
      chromium chromium-driver prometheus haproxy patroni etcd-server pgbouncer)
if [[ $PGVER == 15 ]]; then
    pkgs=(postgresql postgresql-contrib "${pkgs[@]}")
fi
cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${pkgs[*]}"

printf 'system deps missing: %s\n' "$(printf '%s; ' "${missing[@]}")"
if [[ $(id -u) -ne 0 || ! -f /etc/debian_version ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install them as root on Debian with:"
    echo "    $cmd"
    exit 1
fi

echo "installing: ${pkgs[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
PGVER=$(server_version)
check
if ((${#missing[@]})); then
    printf 'system deps still missing after apt-get install: %s\n' "$(printf '%s; ' "${missing[@]}")"
    exit 1
fi
echo "system deps: installed (PostgreSQL $PGVER server, pgTAP, pg_prove, plpgsql_check, chromium, prometheus)"
