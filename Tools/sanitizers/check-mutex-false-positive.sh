#!/usr/bin/env bash
# Shows ThreadSanitizer's false positive on a contended Synchronization.Mutex, and that the
# extra atomic of RingIO's `_Lock` removes it (mutex-handoff.swift explains why).
#
#   Tools/sanitizers/check-mutex-false-positive.sh
#
# Fails when the `_Lock` way (`handoff`) is reported, or when either program loses an increment.
# When plain Mutex is no longer reported either, it says so: the toolchain then orders its
# slow path visibly, and `_Lock` can go back to being a Mutex.
set -euo pipefail
cd "$(dirname "$0")"
out="${TMPDIR:-/tmp}/ringio-mutex-handoff"
mkdir -p "$out"
swiftc -sanitize=thread -O mutex-handoff.swift -o "$out/mutex-handoff"

run() {
    local status=0
    TSAN_OPTIONS="halt_on_error=0:exitcode=66" "$out/mutex-handoff" "$1" >"$out/$1.log" 2>&1 || status=$?
    grep -q "increments, none lost" "$out/$1.log" || { cat "$out/$1.log"; echo "FAILED: $1 lost increments" >&2; exit 1; }
    echo "$status"
}

mutex=$(run mutex)
handoff=$(run handoff)
if [ "$handoff" -ne 0 ] || grep -q "WARNING: ThreadSanitizer" "$out/handoff.log"; then
    cat "$out/handoff.log"
    echo "FAILED: TSan reports the handoff lock (exit status $handoff)" >&2
    exit 1
fi
if grep -q "WARNING: ThreadSanitizer" "$out/mutex.log"; then
    echo "plain Mutex: TSan reports a race (exit status $mutex) that is not one — the false positive"
    grep -m1 -A3 "WARNING: ThreadSanitizer" "$out/mutex.log"
else
    echo "plain Mutex: no report this time (the toolchain may order its slow path visibly now)"
fi
echo "handoff (_Lock): no report"
