#!/usr/bin/env bash
#===----------------------------------------------------------------------===#
# RingIO — benchmarks: build the Benchmarks package and check the malloc-count thresholds.
#
# Usage, from the repository root (or anywhere):
#
#     bash Benchmarks/run-threshold-check.sh
#
# Non-interactive: reads no standard input and asks for no permission. It checks only the
# checked benchmarks (names matching CHECKED_FILTER: the ByteRope ones and four engine ones) and
# only their mallocCountTotal, against Thresholds/<swift major.minor>/ (allocations are a
# contract, time is a report: Benchmarks/README.md). Any deviation fails, an improvement
# included: thresholds are exact (the engine ones within 2%, see checkedIO in
# IOBenchmarkSupport), so an improvement must be recorded deliberately with the update command
# printed below.
#
# Exit status: 0 when every checked malloc count equals its threshold; non-zero on a build
# failure, a missing threshold directory, or any deviation.
#
# Environment:
#   SWIFT_VERSION   the Thresholds/ subdirectory to use (default: major.minor of `swift --version`)
#===----------------------------------------------------------------------===#

set -euo pipefail

# The ByteRope benchmarks, and the engine benchmarks whose count per operation is deterministic
# (one thread does all the work, or the other only enqueues): the ping-pong on one ring with the
# server on handlers and as a task on the ring's executor (async/await allocates no more).
readonly CHECKED_FILTER='.*_ByteRope.*|NopChain_RingIO|CrossThreadRoundTrip_RingIONopDeliveredOnRing|PingPong64B_RingIOChannelOnOneRing|PingPong64B_RingIOAsyncServerOnOneRing'
readonly CHECKED_METRIC='mallocCountTotal'
# The targets with checked benchmarks. Without --target, package-benchmark builds (and starts,
# to list their benchmarks) every benchmark target, ChannelBenchmarks included.
readonly CHECKED_TARGETS=(ByteRopeBenchmarks EngineBenchmarks)
target_arguments=()
for target in "${CHECKED_TARGETS[@]}"; do target_arguments+=(--target "$target"); done

log() { printf -- '** %s\n' "$*" >&2; }
fatal() { printf -- '** ERROR: %s\n' "$*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

swift_version="${SWIFT_VERSION:-$(swift --version 2>/dev/null | sed -nE 's/.*Swift version ([0-9]+\.[0-9]+).*/\1/p' | head -n 1)}"
[[ -n "$swift_version" ]] || fatal "could not tell the Swift version from 'swift --version'; set SWIFT_VERSION"
thresholds="Thresholds/${swift_version}/"
[[ -d "$thresholds" ]] || fatal "no thresholds for Swift ${swift_version} (Benchmarks/${thresholds} is missing). Generate them with:
    cd Benchmarks && swift package --allow-writing-to-package-directory benchmark thresholds update ${target_arguments[*]} --path ${thresholds} --filter '${CHECKED_FILTER}' --metric ${CHECKED_METRIC}"

start=$SECONDS

log "Resolving and building the Benchmarks package (release)..."
for target in "${CHECKED_TARGETS[@]}"; do swift build -c release --product "$target" </dev/null; done
log "Built in $((SECONDS - start)) s."

log "Checking ${CHECKED_METRIC} of '${CHECKED_FILTER}' against Benchmarks/${thresholds}..."
output="$(mktemp)"
trap 'rm -f "$output"' EXIT
set +e
swift package --allow-writing-to-package-directory benchmark thresholds check \
    "${target_arguments[@]}" \
    --path "$thresholds" \
    --filter "$CHECKED_FILTER" \
    --metric "$CHECKED_METRIC" \
    --no-progress </dev/null 2>&1 | tee "$output"
rc=${PIPESTATUS[0]}
set -e
log "Build and check took $((SECONDS - start)) s."

if [[ $rc -eq 0 ]]; then
    log "OK: every checked malloc count equals its threshold."
    exit 0
fi

update_command="cd Benchmarks && swift package --allow-writing-to-package-directory benchmark thresholds update ${target_arguments[*]} --path ${thresholds} --filter '${CHECKED_FILTER}' --metric ${CHECKED_METRIC}"
if grep -q 'is WORSE than the defined thresholds' "$output"; then
    log "FAILED: a checked benchmark allocates more than its threshold (see the table above)."
    log "Fix the regression, or, if the extra allocations are intended, record them deliberately with:"
    log "    ${update_command}"
elif grep -q 'is BETTER than the defined thresholds' "$output"; then
    log "FAILED: a checked benchmark allocates less than its threshold (see the table above)."
    log "Thresholds are exact; record the improvement deliberately with:"
    log "    ${update_command}"
else
    log "FAILED: 'thresholds check' exited ${rc} without a threshold verdict (a build or run failure; see above)."
fi
exit "$rc"
