#!/usr/bin/env bash
# Shows ThreadSanitizer's false positive on a continuation resumed from another thread, and
# that tsan.supp's one entry silences exactly it (continuation-handoff.swift explains why).
#
#   Tools/sanitizers/check-continuation-false-positive.sh
#
# Fails when the program loses a value, or is still reported with tsan.supp. When it is no
# longer reported without the suppression either, it says so: the toolchain then orders the
# handoff visibly, and the entry can go.
set -euo pipefail
cd "$(dirname "$0")"
out="${TMPDIR:-/tmp}/ringio-continuation-handoff"
mkdir -p "$out"
# -Onone, as the suites are built: optimized, withUnsafeContinuation is inlined and the
# report names the caller instead.
swiftc -sanitize=thread -Onone continuation-handoff.swift -o "$out/continuation-handoff"

run() {
    local status=0
    TSAN_OPTIONS="halt_on_error=0:exitcode=66$1" "$out/continuation-handoff" >"$out/$2.log" 2>&1 || status=$?
    grep -q "every value arrived" "$out/$2.log" || { cat "$out/$2.log"; echo "FAILED: $2: a value was lost" >&2; exit 1; }
    echo "$status"
}

plain=$(run "" plain)
suppressed=$(run ":suppressions=$PWD/tsan.supp" suppressed)
if [ "$suppressed" -ne 0 ] || grep -q "WARNING: ThreadSanitizer" "$out/suppressed.log"; then
    cat "$out/suppressed.log"
    echo "FAILED: TSan reports the handoff even with tsan.supp (exit status $suppressed)" >&2
    exit 1
fi
if grep -q "WARNING: ThreadSanitizer" "$out/plain.log"; then
    echo "without tsan.supp: TSan reports a race (exit status $plain) that is not one — the false positive"
    grep -m1 -A3 "WARNING: ThreadSanitizer" "$out/plain.log"
else
    echo "without tsan.supp: no report this time (the toolchain may order the handoff visibly now)"
fi
echo "with tsan.supp: no report"
