#!/usr/bin/env bash
#===----------------------------------------------------------------------===#
# RingIO — benchmarks: count the instructions per operation of RingIO's servers under
# callgrind and check them against thresholds.
#
# Usage, from the repository root (or anywhere):
#
#     bash Benchmarks/run-instruction-check.sh             # check (what CI runs)
#     bash Benchmarks/run-instruction-check.sh --update    # record the counts as the thresholds
#     bash Benchmarks/run-instruction-check.sh --runs 5    # each case in 5 server processes: the spread
#     bash Benchmarks/run-instruction-check.sh --only echo  # the cases whose names match a regex
#
# Non-interactive: reads no standard input and asks for no permission. It builds echo-server,
# http-server, tcp-proxy and udp-echo-server in release (the Benchmarks package,
# `Benchmarks/.build/` unless SCRATCH_PATH says otherwise), strips the debug information from copies of
# them (valgrind 3.19 cannot read Swift 6.3's and gives up on the binary), and runs
# instruction-check.py, which serves each case from a server under `valgrind --tool=callgrind`
# to a one-connection ping-pong client and counts the instructions of the server's every thread
# over 1,000 operations (see that file and Benchmarks/README.md, "Checked thresholds:
# instructions"). Cases: echo 64 B ping-pong, HTTP GET keep-alive, HTTP GET pipelined ×16, a
# static file, each with completion handlers and with async/await; HTTP GET on a connection of
# its own (`Connection: close`) with completion handlers; the echo with a strict
# interval; HTTPS GET keep-alive (RingTLS); tcp-proxy forwarding a 64 B ping-pong to echo-server;
# UDP echo of 64 B datagrams.
#
# An instruction count does not depend on the machine's load, unlike time: a count more than
# TOLERANCE percent above its threshold is a regression, one more than TOLERANCE below is an
# improvement to record; both fail, and the script prints the update command.
#
# Exit status: 0 when every count is within TOLERANCE of its threshold; non-zero on a build
# failure, a missing valgrind or threshold file, a failed run, or any count out of tolerance.
#
# Environment:
#   SWIFT_VERSION   the thresholds file to use, Thresholds/instructions/<version>.txt
#                   (default: major.minor of `swift --version`)
#   SCRATCH_PATH    the Benchmarks package's build directory (default: Benchmarks/.build; CI's
#                   release build of the package builds the servers as dependencies of its
#                   throughput comparison)
#   TOLERANCE       percent (default: 1)
#===----------------------------------------------------------------------===#

set -euo pipefail

log() { printf -- '** %s\n' "$*" >&2; }
fatal() { printf -- '** ERROR: %s\n' "$*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

extra_arguments=()
runs=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --update) extra_arguments+=(--update); shift ;;
        --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
        --only) extra_arguments+=(--only "${2:?--only needs a regular expression}"); shift 2 ;;
        *) fatal "unknown argument '$1' (expected --update, --runs N or --only REGEX)" ;;
    esac
done

command -v valgrind >/dev/null && command -v callgrind_control >/dev/null \
    || fatal "valgrind is not installed (apt-get install -y valgrind)"
swift_version="${SWIFT_VERSION:-$(swift --version 2>/dev/null | sed -nE 's/.*Swift version ([0-9]+\.[0-9]+).*/\1/p' | head -n 1)}"
[[ -n "$swift_version" ]] || fatal "could not tell the Swift version from 'swift --version'; set SWIFT_VERSION"
thresholds="Benchmarks/Thresholds/instructions/${swift_version}.txt"
scratch="${SCRATCH_PATH:-Benchmarks/.build}"
tolerance="${TOLERANCE:-1}"
update_command="bash Benchmarks/run-instruction-check.sh --update"
if [[ " ${extra_arguments[*]} " != *" --update "* && ! -f "$thresholds" ]]; then
    fatal "no thresholds for Swift ${swift_version} (${thresholds} is missing). Record them with:
    ${update_command}"
fi

start=$SECONDS
log "Building echo-server, http-server, tcp-proxy and udp-echo-server (release, ${scratch})..."
for product in echo-server http-server tcp-proxy udp-echo-server; do
    swift build -c release --package-path Benchmarks --scratch-path "$scratch" --product "$product" </dev/null
done
bin="$(swift build -c release --package-path Benchmarks --scratch-path "$scratch" --show-bin-path </dev/null)"
log "Built in $((SECONDS - start)) s."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
for product in echo-server http-server tcp-proxy udp-echo-server; do
    cp "$bin/$product" "$work/bin/$product"
    strip --strip-debug "$work/bin/$product"
done

measured=$SECONDS
log "Counting instructions per operation under callgrind (${runs} run(s) per case)..."
set +e
python3 "$here/instruction-check.py" \
    --binaries "$work/bin" \
    --work "$work" \
    --thresholds "$thresholds" \
    --tolerance "$tolerance" \
    --runs "$runs" \
    --update-command "$update_command" \
    "${extra_arguments[@]}" </dev/null
rc=$?
set -e
log "Measured in $((SECONDS - measured)) s; build and check took $((SECONDS - start)) s."
exit "$rc"
