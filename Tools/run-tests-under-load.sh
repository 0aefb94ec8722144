#!/usr/bin/env bash
# Runs the full test suite several times in a row (five by default) while a compile keeps
# every core busy: a suite whose tests wait on events, not on the clock, passes every time.
#
#   Tools/run-tests-under-load.sh                    # swift test, five times, under load
#   Tools/run-tests-under-load.sh --runs 2           # fewer (or more) runs
#   RINGIO_BACKEND=epoll Tools/run-tests-under-load.sh   # the readiness engine (passed on)
#   Tools/run-tests-under-load.sh -- --filter Source # more arguments go to `swift test`
#
# The load: release builds of this package into a scratch path of its own (.build-load), one
# after another (each from clean), with as many jobs as there are cores, from before the
# first run until the last has ended. The suite is built once first (debug, as `swift test`
# builds it) and each run uses that build. Every run's log is kept under $LOAD_LOGS (default:
# a new temporary directory); the script prints one line per run and fails if any run failed,
# or if the load was not running while it ran.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
test_arguments=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs)
            runs="$2"
            shift 2
            ;;
        --)
            shift
            test_arguments=("$@")
            break
            ;;
        *)
            echo "usage: $0 [--runs N] [-- swift test arguments…]" >&2
            exit 2
            ;;
    esac
done

logs="${LOAD_LOGS:-$(mktemp -d -t ringio-load.XXXXXX)}"
mkdir -p "$logs"
cores="$(nproc)"

echo "== build the suite (debug)"
swift build --build-tests --traits ServiceLifecycle

echo "== resolve the load's packages into .build-load (once)"
swift package --scratch-path .build-load resolve >/dev/null

echo "== start the load: release builds into .build-load, $cores jobs, one after another"
# Its own session (setsid), so that the whole compile — swift-build, and the drivers and
# frontends it starts (each in a process group of its own) — is stopped at the end by session,
# and nothing else.
setsid bash -c '
    while true; do
        rm -rf .build-load/release .build-load/x86_64-unknown-linux-gnu .build-load/aarch64-unknown-linux-gnu
        swift build -c release --scratch-path .build-load -j "$1" >/dev/null 2>&1 || true
    done
' load "$cores" &
load=$!
stop_load() {
    pkill -TERM -s "$load" 2>/dev/null || true
    wait "$load" 2>/dev/null || true
}
trap stop_load EXIT

# The compile is under way once a compiler process of it runs (within 5 minutes: it plans
# first).
for _ in $(seq 1 3000); do
    if pgrep -s "$load" -f swift-frontend >/dev/null 2>&1; then break; fi
    sleep 0.1
done
if ! pgrep -s "$load" -f swift-frontend >/dev/null 2>&1; then
    echo "error: the load did not start compiling" >&2
    exit 1
fi

failed=0
for run in $(seq 1 "$runs"); do
    start=$(date +%s)
    status=0
    swift test --skip-build --traits ServiceLifecycle "${test_arguments[@]}" >"$logs/run-$run.log" 2>&1 || status=$?
    seconds=$(($(date +%s) - start))
    load_average="$(cut -d' ' -f1 /proc/loadavg)"
    if ! kill -0 "$load" 2>/dev/null; then
        echo "error: the load stopped during run $run" >&2
        exit 1
    fi
    summary="$(grep -aE 'Test run with' "$logs/run-$run.log" | tail -n 1 || true)"
    if [ "$status" -eq 0 ]; then
        echo "run $run of $runs: passed in $seconds s (load average $load_average): $summary"
    else
        failed=$((failed + 1))
        echo "run $run of $runs: FAILED (exit status $status) in $seconds s (load average $load_average): $summary"
        grep -aE '✘' "$logs/run-$run.log" | head -n 20 || true
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "FAILED: $failed of $runs runs under load failed (logs: $logs)" >&2
    exit 1
fi
echo "OK: $runs of $runs runs passed under load (logs: $logs)"
