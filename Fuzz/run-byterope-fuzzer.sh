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

out=".build/fuzz"
# shellcheck source=Fuzz/fuzz-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/fuzz-common.sh"
fuzz_parse_args "$@"

binary="$out/byterope-fuzzer"

# Rebuild only when a source changed.
sources=(Sources/ByteRopes/*.swift Fuzz/ByteRopeFuzzer.swift)
if fuzz_needs_build "${sources[@]}"; then
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
    fuzz_built
    echo "built in $(($(date +%s) - start)) s" >&2
fi

[[ $build_only -eq 1 ]] && exit 0
fuzz_run 25
