#!/bin/sh
# Nightly maintenance of one table, for cron:
#   15 2 * * *  /path/to/nightly.sh /data/wh/db/events /data/landing/events >> /var/log/icectl-nightly.log 2>&1
# 1. append every Parquet file of the landing directory (files already in the table are skipped,
#    an empty directory is a no-op), 2. expire snapshots older than $KEEP, 3. delete orphan files
#    older than $ORPHAN_AGE (a cut-off far past any commit still in flight).
# One JSON line per run on stdout; exit status 0, or the exit code of the step that failed.
set -u

TABLE=${1:?usage: nightly.sh TABLE LANDING_DIR}
LANDING=${2:?usage: nightly.sh TABLE LANDING_DIR}
ICECTL=${ICECTL:-icectl}          # e.g. ICECTL="/opt/icectl/.venv/bin/icectl"
KEEP=${KEEP:-7d}
ORPHAN_AGE=${ORPHAN_AGE:-3d}

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

# a top-level field of a command's --json output (one key a line, two spaces in)
field() {
    sed -n "s/^  \"$1\": \(.*\)$/\1/p" "$out" | sed 's/,$//'
}

log() {  # log STATUS STEP CODE EXTRA
    printf '{"job": "icectl-nightly", "time": "%s", "table": "%s", "status": "%s", "step": "%s", "exit-code": %s%s}\n' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(printf '%s' "$TABLE" | sed 's/[\\"]/\\&/g')" "$1" "$2" "$3" "$4"
}

fail() {  # fail STEP CODE
    log failed "$1" "$2" ", \"error\": \"$(tail -n 1 "$out.err" 2>/dev/null | sed 's/[\\"]/\\&/g')\""
    rm -f "$out.err"
    exit "$2"
}

if [ ! -d "$LANDING" ]; then
    echo "no landing directory: $LANDING" > "$out.err"
    fail append 2
fi

find "$LANDING" -type f -name '*.parquet' | sort \
    | $ICECTL append "$TABLE" - --skip-existing --allow-empty --json > "$out" 2> "$out.err"
rc=$?
if [ "$rc" -ne 0 ]; then fail append "$rc"; fi
committed=$(field committed)
added=$(field added-files)
records=$(field added-records)
snapshot=$(field snapshot-id)

$ICECTL expire "$TABLE" --older-than "$KEEP" --json > "$out" 2> "$out.err"
rc=$?
if [ "$rc" -ne 0 ]; then fail expire "$rc"; fi
expired=$(field expired-snapshots-count)

$ICECTL orphans "$TABLE" --older-than "$ORPHAN_AGE" --delete --json > "$out" 2> "$out.err"
rc=$?
if [ "$rc" -ne 0 ]; then fail orphans "$rc"; fi
orphans=$(field deleted-files-count)
case "$snapshot" in ''|null) snapshot=null ;; *) snapshot="\"$snapshot\"" ;; esac  # a string: jq keeps all 64 bits

rm -f "$out.err"
log ok done 0 ", \"appended\": ${committed:-null}, \"added-files\": ${added:-null}, \"added-records\": ${records:-null}, \"snapshot-id\": $snapshot, \"expired-snapshots\": ${expired:-null}, \"deleted-orphans\": ${orphans:-null}"
