#!/usr/bin/env bash
#===----------------------------------------------------------------------===#
# RingIO — benchmarks: fio's io_uring sequential read of the FileRead benchmarks' file, and,
# with --compare, RingIO and DispatchIO reading the same file in the same run, as ratios.
#
# Usage, from the repository root (or anywhere):
#
#     bash Benchmarks/run-fio-baseline.sh             # fio only: prints its MB/s
#     bash Benchmarks/run-fio-baseline.sh --compare   # fio, then the FileRead_* benchmarks, then
#                                                     # RingIO/DispatchIO and RingIO/fio
#
# Non-interactive. Installs fio with apt-get when it is missing (as root, or through
# `sudo -n`). Creates the file when it is missing, in the format the FileRead_* benchmarks
# check (each 8-byte little-endian word holds its offset), so either side can create it and
# the other reuses it. fio reads it with the benchmarks' block size (1 MiB), buffered, with
# --invalidate=0 so that the page cache stays warm (fio drops it by default), after a warm-up pass.
#
# Environment:
#   RINGIO_BENCH_FILE_SIZE  file size: bytes, or with a binary suffix K, M, G (default 2G)
#   RINGIO_BENCH_FILE       file path (default /tmp/ringio-bench-<bytes>.bin)
#   FIO_IODEPTH             fio's iodepth (default 1: one 1 MiB read in flight)
#   FIO_LOOPS               passes over the file fio measures (default 5)
#
# MB/s here is 10^6 bytes per second, as in fio's "(MB/s)" figure and the benchmarks' MB/s row.
#===----------------------------------------------------------------------===#

set -euo pipefail

log() { printf -- '** %s\n' "$*" >&2; }
fatal() { printf -- '** ERROR: %s\n' "$*" >&2; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

compare=false
case "${1:-}" in
    "") ;;
    --compare) compare=true ;;
    *) fatal "unknown argument '$1' (usage: run-fio-baseline.sh [--compare])" ;;
esac

# The same parsing as TestFile.swift: digits, optionally one of K, M, G (binary multiples).
size_text="${RINGIO_BENCH_FILE_SIZE:-2G}"
[[ "$size_text" =~ ^([0-9]+)([KkMmGg]?)$ ]] || fatal "RINGIO_BENCH_FILE_SIZE=$size_text: expected 123, 64K, 512M or 2G"
case "${BASH_REMATCH[2]}" in
    K|k) size=$(( 10#${BASH_REMATCH[1]} << 10 )) ;;
    M|m) size=$(( 10#${BASH_REMATCH[1]} << 20 )) ;;
    G|g) size=$(( 10#${BASH_REMATCH[1]} << 30 )) ;;
    *) size=$(( 10#${BASH_REMATCH[1]} )) ;;
esac
(( size > 0 && size % 8 == 0 )) || fatal "RINGIO_BENCH_FILE_SIZE=$size_text: expected a positive multiple of 8 bytes"
file="${RINGIO_BENCH_FILE:-/tmp/ringio-bench-${size}.bin}"
iodepth="${FIO_IODEPTH:-1}"
loops="${FIO_LOOPS:-5}"

# MARK: fio

if ! command -v fio >/dev/null 2>&1; then
    log "fio is missing: installing it with apt-get..."
    if [[ $(id -u) -eq 0 ]]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        fatal "fio is missing and this script can neither run apt-get as root nor use 'sudo -n'; install fio"
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! "${as_root[@]}" apt-get install -y -q fio </dev/null >&2; then
        "${as_root[@]}" apt-get update -q </dev/null >&2
        "${as_root[@]}" apt-get install -y -q fio </dev/null >&2
    fi
fi
command -v fio >/dev/null 2>&1 || fatal "fio is still missing after apt-get"
fio --enghelp 2>/dev/null | grep -qw io_uring || fatal "this fio ($(fio --version)) has no io_uring engine"

# MARK: The file

file_is_right() {
    [[ -f "$file" ]] && [[ $(stat -c %s "$file") -eq $size ]] || return 1
    python3 - "$file" "$size" <<'PY'
import struct, sys
path, size = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    for offset in (0, (size // 2) & ~7, size - 8):
        f.seek(offset)
        if struct.unpack("<Q", f.read(8))[0] != offset:
            sys.exit(1)
PY
}

if ! file_is_right; then
    command -v python3 >/dev/null 2>&1 || fatal "python3 is needed to create $file (or run the FileRead benchmarks once: they create it)"
    log "Creating $file ($size bytes; the format TestFile.swift checks)..."
    python3 - "$file" "$size" <<'PY'
import array, os, sys
path, size = sys.argv[1], int(sys.argv[2])
assert sys.byteorder == "little"
partial = f"{path}.partial-{os.getpid()}"
chunk = 1 << 20
with open(partial, "wb") as f:
    for start in range(0, size, chunk):
        count = min(chunk, size - start)
        f.write(array.array("Q", range(start, start + count, 8)).tobytes())
    f.flush()
    os.fsync(f.fileno())
os.rename(partial, path)
PY
fi

log "Warming the page cache (one pass over $file)..."
cat "$file" >/dev/null

log "fio: io_uring, sequential read, bs=1M, iodepth=$iodepth, buffered, warm cache, $loops passes over $size bytes..."
fio_json="$(fio --name=ringio-seqread --filename="$file" --rw=read --bs=1M --ioengine=io_uring \
    --iodepth="$iodepth" --direct=0 --invalidate=0 --size="$size" --numjobs=1 --loops="$loops" \
    --output-format=json </dev/null)"
fio_bytes_per_second="$(jq -r '.jobs[0].read.bw_bytes' <<<"$fio_json" 2>/dev/null ||
    python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"])' <<<"$fio_json")"
fio_mbps=$(( fio_bytes_per_second / 1000000 ))
fio_mibps=$(( fio_bytes_per_second / 1048576 ))
printf 'fio io_uring sequential read, bs=1M, iodepth=%s: %d MB/s (%d MiB/s)\n' "$iodepth" "$fio_mbps" "$fio_mibps"

$compare || exit 0

# MARK: The benchmarks, and the ratios

command -v jq >/dev/null 2>&1 || fatal "jq is needed for --compare (apt-get install -y jq)"
log "Running the FileRead_* benchmarks on the same file (their median MB/s)..."
cd "$here"
benchmark_log="$(mktemp)"
trap 'rm -f "$benchmark_log"' EXIT
if ! jmh="$(RINGIO_BENCH_FILE_SIZE="$size" RINGIO_BENCH_FILE="$file" swift package benchmark \
    --target ChannelBenchmarks --filter 'FileRead_.*' --format jmh --path stdout --no-progress \
    </dev/null 2>"$benchmark_log")"; then
    cat "$benchmark_log" >&2
    fatal "the FileRead_* benchmarks failed (their output is above)"
fi
jmh="$(sed -n '/^\[/,$p' <<<"$jmh")"
median() {
    jq -r --arg name "$1" \
        '.[] | select(.benchmark | endswith("." + $name)) | .secondaryMetrics["MB/s"].scorePercentiles["50.0"]' \
        <<<"$jmh"
}
ringio_queue="$(median FileRead_RingIOChannelOnDispatchQueue)"
ringio_ring="$(median FileRead_RingIOChannelOnRing)"
dispatch="$(median FileRead_DispatchIO)"
[[ -n "$ringio_queue" && -n "$ringio_ring" && -n "$dispatch" ]] || {
    cat "$benchmark_log" >&2
    fatal "missing FileRead_* results"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '\nReading %d bytes (warm cache), median MB/s, same run:\n' "$size"
printf '  %-44s %7s   %-16s %s\n' "reader" "MB/s" "/ DispatchIO" "/ fio"
printf '  %-44s %7d   %-16s %s\n' "RingIO IOChannel, handlers on a DispatchQueue" "$ringio_queue" \
    "$(ratio "$ringio_queue" "$dispatch")" "$(ratio "$ringio_queue" "$fio_mbps")"
printf '  %-44s %7d   %-16s %s\n' "RingIO IOChannel, handlers on the ring" "$ringio_ring" \
    "$(ratio "$ringio_ring" "$dispatch")" "$(ratio "$ringio_ring" "$fio_mbps")"
printf '  %-44s %7d   %-16s %s\n' "DispatchIO" "$dispatch" "1.00" "$(ratio "$dispatch" "$fio_mbps")"
printf '  %-44s %7d   %-16s %s\n' "fio io_uring, bs=1M, iodepth=$iodepth" "$fio_mbps" \
    "$(ratio "$fio_mbps" "$dispatch")" "1.00"
printf '\nRatios are MB/s over MB/s. Target: RingIO / fio >= 0.9.\n'
