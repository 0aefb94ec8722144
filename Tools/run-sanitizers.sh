#!/usr/bin/env bash
# Runs the test suite under a sanitizer. Any report — in the test process or in a process it
# starts (an exit test's child) — fails the run.
#
#   Tools/run-sanitizers.sh address                      # AddressSanitizer, leak detection on
#   Tools/run-sanitizers.sh thread                       # ThreadSanitizer
#   Tools/run-sanitizers.sh thread --filter RingIOTests  # more arguments go to `swift test`
#
# Builds with `--sanitize=<mode>` into its own scratch path (.build-asan, .build-tsan), then
# runs the swift-testing suites, with the ServiceLifecycle trait (`--disable-xctest`: the
# package has no XCTest test, and the empty XCTest pass leaks inside XCTest itself). Every
# process writes its reports to a file of its own under $SANITIZER_LOGS (default: a new
# temporary directory); they are printed at the end, and the run fails if there is any,
# whatever the exit codes said.
#
# Suppressions (Tools/sanitizers/*.supp) name only what is not a bug of RingIO, each with its
# reason and its reproduction; see Tools/sanitizers/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-}"
if [ $# -gt 0 ]; then shift; fi
case "$mode" in
    address) scratch=.build-asan ;;
    thread) scratch=.build-tsan ;;
    *)
        echo "usage: $0 address|thread [swift test arguments…]" >&2
        exit 2
        ;;
esac

logs="${SANITIZER_LOGS:-$(mktemp -d -t ringio-sanitizer.XXXXXX)}"
mkdir -p "$logs"
rm -f "$logs"/report.*
sanitizers="$(pwd)/Tools/sanitizers"

case "$mode" in
    address)
        # halt_on_error: the first memory error ends the process (and fails its test);
        # detect_leaks: LeakSanitizer at every process's exit, whose report fails it too.
        export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:exitcode=86:log_path=$logs/report"
        export LSAN_OPTIONS="suppressions=$sanitizers/lsan.supp:print_suppressions=0"
        ;;
    thread)
        # Every report is collected (halt_on_error=0) and fails the run through the log files
        # and the exit code.
        export TSAN_OPTIONS="halt_on_error=0:exitcode=66:suppressions=$sanitizers/tsan.supp:log_path=$logs/report"
        ;;
esac

# Every bounded wait of the tests three times as long (Tests/RingIOTestSupport/Waiting.swift):
# a sanitizer makes the suite several times slower, and CI runs it beside builds and other
# tests. A bound ends only a wait for an event that should come; it says nothing of speed.
export RINGIO_TEST_TIME_SCALE="${RINGIO_TEST_TIME_SCALE:-3}"

echo "== build (--sanitize=$mode, --scratch-path $scratch)"
start=$(date +%s)
swift build --build-tests --traits ServiceLifecycle --sanitize="$mode" --scratch-path "$scratch"
echo "built in $(($(date +%s) - start)) s"

echo "== test under the $mode sanitizer (reports: $logs)"
start=$(date +%s)
status=0
# RingIOServiceLifecycleTests run on their own, after the rest: a ServiceGroup is an actor, so
# its work runs on the cooperative pool, which the suite's synchronous tests hold (two threads
# on a 2-core machine) for tens of seconds under a sanitizer. In the parallel run the service
# tests' shutdowns waited past their bounds (three CI runs in a row, each time in a service
# test); alone they pass. The plain `swift test` runs them with the rest.
swift test --skip-build --traits ServiceLifecycle --disable-xctest --sanitize="$mode" --scratch-path "$scratch" \
    --skip RingIOServiceLifecycleTests "$@" || status=$?
if [ $# -eq 0 ] && [ "$status" -eq 0 ]; then
    swift test --skip-build --traits ServiceLifecycle --disable-xctest --sanitize="$mode" --scratch-path "$scratch" \
        --filter RingIOServiceLifecycleTests || status=$?
fi
echo "tests ran in $(($(date +%s) - start)) s (exit status $status)"

reports=("$logs"/report.*)
if [ -e "${reports[0]}" ]; then
    for report in "${reports[@]}"; do
        echo "== $report"
        cat "$report"
    done
    echo "FAILED: ${#reports[@]} process(es) reported under the $mode sanitizer" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "FAILED: swift test exited with $status" >&2
    exit "$status"
fi
echo "OK: no $mode sanitizer report"
