#!/usr/bin/env bash
# Builds the ByteRope libFuzzer target and runs it.
#
#   Fuzz/run-byterope-fuzzer.sh                      # build, then fuzz for $FUZZ_SECONDS (60)
#   FUZZ_SECONDS=30 Fuzz/run-byterope-fuzzer.sh      # CI: a short bounded run
#   Fuzz/run-byterope-fuzzer.sh --time 300           # same, as an argument
#   Fuzz/run-byterope-fuzzer.sh -runs=100000         # extra libFuzzer flags are passed through
#   Fuzz/run-byterope-fuzzer.sh crash-<sha1>         # re-run one input (a file argument)
#   Fuzz/run-byterope-fuzzer.sh --build-only
#
# Environment:
#   FUZZ_SECONDS   duration of a fuzzing run (default 60); --time N overrides it
#   FUZZ_MAX_LEN   -max_len (default 4096)
#   FUZZ_OUT       build and output directory (default .build/fuzz)
#   FUZZ_SANITIZE  sanitizers besides the fuzzer (default address; "" for none)
#   SWIFTC         the compiler (default: swiftc on PATH)
#
# Everything is written under $FUZZ_OUT: the binary, the corpus (corpus/), crash and
# timeout files (artifacts/). Nothing goes into the source tree.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/.." && pwd)"
cd "$repo_root"

seconds="${FUZZ_SECONDS:-60}"
max_len="${FUZZ_MAX_LEN:-4096}"
out="${FUZZ_OUT:-.build/fuzz}"
sanitize="${FUZZ_SANITIZE-address}"
swiftc="${SWIFTC:-swiftc}"
build_only=0

passthrough=()
have_inputs=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --time)
            [[ $# -ge 2 ]] || { echo "--time needs a number of seconds" >&2; exit 2; }
            seconds="$2"
            shift 2
            ;;
        --time=*)
            seconds="${1#--time=}"
            shift
            ;;
        --build-only)
            build_only=1
            shift
            ;;
        -h | --help)
            sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*)
            passthrough+=("$1")
            shift
            ;;
        *)
            # A file or directory for libFuzzer: crash files to re-run, or corpus dirs.
            passthrough+=("$1")
            have_inputs=1
            shift
            ;;
    esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "duration must be whole seconds, got '$seconds'" >&2; exit 2; }

binary="$out/byterope-fuzzer"
mkdir -p "$out/corpus" "$out/artifacts" "$out/obj"

sanitizers="fuzzer"
[[ -n "$sanitize" ]] && sanitizers="fuzzer,$sanitize"

# Rebuild only when a source changed.
sources=(Sources/ByteRopes/*.swift Fuzz/ByteRopeFuzzer.swift)
needs_build=0
if [[ ! -x "$binary" ]]; then
    needs_build=1
else
    for source in "${sources[@]}" "$0"; do
        [[ "$source" -nt "$binary" ]] && needs_build=1
    done
fi
if [[ -f "$out/.sanitizers" && "$(cat "$out/.sanitizers")" != "$sanitizers" ]]; then
    needs_build=1
fi

if [[ $needs_build -eq 1 ]]; then
    echo "building $binary (-sanitize=$sanitizers)" >&2
    start=$(date +%s)
    # -assert-config Debug keeps the library's internal `assert`s on in the optimized build.
    "$swiftc" -O -assert-config Debug \
        -sanitize="$sanitizers" \
        -parse-as-library -swift-version 6 -use-ld=lld \
        -module-name ByteRopeFuzz -package-name RingIO \
        -module-cache-path "$out/obj/module-cache" \
        "${sources[@]}" \
        -o "$binary"
    echo "$sanitizers" >"$out/.sanitizers"
    echo "built in $(($(date +%s) - start)) s" >&2
fi

[[ $build_only -eq 1 ]] && exit 0

# The Swift runtime's own crash backtracer would run (and can hang) next to libFuzzer's
# crash handling; libFuzzer and ASan print the stack.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
# ASan: LeakSanitizer on (libFuzzer checks leaks per input); shallower allocation stacks and
# a smaller quarantine keep the many small region allocations cheaper (about 60% of the
# default's RSS on big trees). Override ASAN_OPTIONS for fuller reports.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:malloc_context_size=8:quarantine_size_mb=64}"

args=(-max_len="$max_len" -artifact_prefix="$out/artifacts/" -print_final_stats=1)
if [[ $have_inputs -eq 0 ]]; then
    # Fuzzing: bounded in time, growing the corpus under $out.
    args+=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048)
    exec "$binary" "${args[@]}" "${passthrough[@]}" "$out/corpus"
else
    # Inputs given (a crash file to reproduce, or corpus directories): run on exactly those.
    exec "$binary" "${args[@]}" "${passthrough[@]}"
fi
