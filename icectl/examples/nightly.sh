#!/bin/sh
# Nightly ingestion and maintenance of one table, for cron:
#   15 2 * * *  /path/to/nightly.sh /data/wh/db/events /data/landing/events >> /var/log/icectl-nightly.log 2>&1
# 1. copy every Parquet file of the landing directory into the table's data location and commit
#    the copies: icectl never changes or deletes the landing files, so archive or remove them
#    whenever you like (within $KEEP: a file is recognised by its bytes while the snapshot that
#    took it is kept). Files whose bytes the table already took are skipped (a rerun, or the
#    same file under a new name, adds nothing); a file whose rows span partitions is
#    rewritten partitioned; a file that cannot be appended (unreadable, wrong columns) is
#    quarantined: left in landing, named in the log, the others committed. An empty directory
#    is a no-op. With RUN_ID set (e.g. RUN_ID=2024-06-01), a second run with the same RUN_ID
#    commits nothing at all.
# 2. expire snapshots older than $KEEP (files outside the table location are never deleted),
# 3. delete orphan files older than $ORPHAN_AGE (a cut-off far past any commit still in flight).
# One JSON line per run on stdout; exit status 0, 15 when files were quarantined (the rest was
# committed and the run went on), or the exit code of the step that failed.
set -u

TABLE=${1:?usage: nightly.sh TABLE LANDING_DIR}
LANDING=${2:?usage: nightly.sh TABLE LANDING_DIR}
ICECTL=${ICECTL:-icectl}          # e.g. ICECTL="/opt/icectl/.venv/bin/icectl"
KEEP=${KEEP:-7d}
ORPHAN_AGE=${ORPHAN_AGE:-3d}
RUN_ID=${RUN_ID:-}

out=$(mktemp) || exit 1
trap 'rm -f "$out" "$out.err"' EXIT

# a top-level field of a command's --json output (one key a line, two spaces in)
field() {
    sed -n "s/^  \"$1\": \(.*\)$/\1/p" "$out" | sed 's/,$//'
}

# the values of KEY in the objects of the top-level list NAME, comma-separated (JSON strings)
items() {
    sed -n "/^  \"$1\": \[\$/,/^  \]/p" "$out" | sed -n "s/^      \"$2\": \(.*\)\$/\1/p" \
        | sed 's/,$//' | paste -s -d, - | sed 's/,/, /g'
}

# the number of entries of the top-level list NAME
count() {
    sed -n "/^  \"$1\": \[\$/,/^  \]/p" "$out" | grep -c "^    [^ ]"
}

json_text() {  # a JSON string of its argument
    printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"]/\\&/g' | tr '\n\t' '  ')"
}

log() {  # log STATUS STEP CODE EXTRA
    printf '{"job": "icectl-nightly", "time": "%s", "table": %s, "status": "%s", "step": "%s", "exit-code": %s%s}\n' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(json_text "$TABLE")" "$1" "$2" "$3" "$4"
}

fail() {  # fail STEP CODE: the error object icectl printed (--json), else the last stderr line
    error=$(sed -n 's/^{"error": \(.*\)}$/\1/p' "$out.err" 2>/dev/null | tail -n 1)
    if [ -z "$error" ]; then
        error="{\"kind\": \"error\", \"message\": $(json_text "$(tail -n 1 "$out.err" 2>/dev/null)"), \"exit-code\": $2}"
    fi
    log failed "$1" "$2" ", \"error\": $error"
    exit "$2"
}

if [ ! -d "$LANDING" ]; then
    echo "no landing directory: $LANDING" > "$out.err"
    fail append 2
fi

set -- --copy --skip-duplicates --on-error skip --rewrite-spanning --allow-empty --json
if [ -n "$RUN_ID" ]; then
    set -- "$@" --idempotency-key "icectl-nightly-$RUN_ID"
fi
find "$LANDING" -type f -name '*.parquet' | sort | $ICECTL append "$TABLE" - "$@" > "$out" 2> "$out.err"
rc=$?
status=ok
code=0
if [ "$rc" -eq 15 ]; then
    status=partial
    code=15
elif [ "$rc" -ne 0 ]; then
    fail append "$rc"
fi
committed=$(field committed)
added=$(field added-files)
records=$(field added-records)
snapshot=$(field snapshot-id)
skipped=$(count skipped-files)
rewritten=$(count rewritten-files)
quarantined=$(items quarantined-files path)

$ICECTL expire "$TABLE" --older-than "$KEEP" --json > "$out" 2> "$out.err"
rc=$?
if [ "$rc" -ne 0 ]; then fail expire "$rc"; fi
expired=$(field expired-snapshots-count)

$ICECTL orphans "$TABLE" --older-than "$ORPHAN_AGE" --delete --json > "$out" 2> "$out.err"
rc=$?
if [ "$rc" -ne 0 ]; then fail orphans "$rc"; fi
orphans=$(field deleted-files-count)
case "$snapshot" in ''|null) snapshot=null ;; *) snapshot="\"$snapshot\"" ;; esac  # a string: jq keeps all 64 bits

log "$status" done "$code" ", \"appended\": ${committed:-null}, \"added-files\": ${added:-null}, \"added-records\": ${records:-null}, \"snapshot-id\": $snapshot, \"skipped-files\": ${skipped:-0}, \"rewritten-files\": ${rewritten:-0}, \"quarantined-files\": [$quarantined], \"expired-snapshots\": ${expired:-null}, \"deleted-orphans\": ${orphans:-null}"
exit "$code"
