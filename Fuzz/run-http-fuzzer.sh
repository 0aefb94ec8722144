#!/usr/bin/env bash
# Builds the HTTP request parser's libFuzzer target and runs it.
#
#   Fuzz/run-http-fuzzer.sh                      # build, then fuzz for $FUZZ_SECONDS (60)
#   FUZZ_SECONDS=30 Fuzz/run-http-fuzzer.sh      # CI: a short bounded run
#   Fuzz/run-http-fuzzer.sh --time 300           # same, as an argument
#   Fuzz/run-http-fuzzer.sh -runs=100000         # extra libFuzzer flags are passed through
#   Fuzz/run-http-fuzzer.sh crash-<sha1>         # re-run one input (a file argument)
#   Fuzz/run-http-fuzzer.sh --build-only
#
# Environment:
#   FUZZ_SECONDS   duration of a fuzzing run (default 60); --time N overrides it
#   FUZZ_MAX_LEN   -max_len (default 4096)
#   FUZZ_OUT       build and output directory (default .build/fuzz-http)
#   FUZZ_SANITIZE  sanitizers besides the fuzzer (default address; "" for none)
#   SWIFTC         the compiler (default: swiftc on PATH)
#
# Everything is written under $FUZZ_OUT: the binary, the corpus (corpus/, seeded with a few
# requests on first use), crash and timeout files (artifacts/). Nothing goes into the source
# tree.
set -euo pipefail

out=".build/fuzz-http"
# shellcheck source=Fuzz/fuzz-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/fuzz-common.sh"
fuzz_parse_args "$@"

binary="$out/http-fuzzer"
modules="$out/obj/modules"
mkdir -p "$modules"

# Rebuild only when a source changed.
rope_sources=(Sources/ByteRopes/*.swift)
http_sources=(Sources/RingHTTP/*.swift)
if fuzz_needs_build "${rope_sources[@]}" "${http_sources[@]}" Fuzz/HTTPParserFuzzer.swift; then
    echo "building $binary (-sanitize=$sanitizers)" >&2
    start=$(date +%s)
    # Three modules, as in the package: the harness sees only the public API of RingHTTP and
    # ByteRopes. -assert-config Debug keeps the libraries' internal `assert`s on in the
    # optimized build.
    common=(-O -assert-config Debug -sanitize="$sanitizers" -parse-as-library -swift-version 6
        -package-name RingIO -module-cache-path "$out/obj/module-cache" -I "$modules")
    "$swiftc" "${common[@]}" -wmo -module-name ByteRopes \
        -emit-module -emit-module-path "$modules/ByteRopes.swiftmodule" \
        -c "${rope_sources[@]}" -o "$out/obj/ByteRopes.o"
    "$swiftc" "${common[@]}" -wmo -module-name RingHTTP \
        -emit-module -emit-module-path "$modules/RingHTTP.swiftmodule" \
        -c "${http_sources[@]}" -o "$out/obj/RingHTTP.o"
    "$swiftc" "${common[@]}" -use-ld=lld -module-name HTTPParserFuzz \
        Fuzz/HTTPParserFuzzer.swift "$out/obj/ByteRopes.o" "$out/obj/RingHTTP.o" \
        -o "$binary"
    fuzz_built
    echo "built in $(($(date +%s) - start)) s" >&2
fi

[[ $build_only -eq 1 ]] && exit 0

# Seed an empty corpus with a few requests. Each input starts with the harness's three
# header bytes: limits 0x6b (the defaults), flags 0x09 (nextHead and re-parse), one cut.
if [[ -z "$(ls -A "$out/corpus")" ]]; then
    seed() { printf '%b' "$2" >"$out/corpus/seed-$1"; }
    seed get '\x6b\x09\x01\x07\x00GET / HTTP/1.1\r\nHost: x\r\n\r\n'
    seed post '\x6b\x09\x01\x30\x00POST /u?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello'
    seed chunked '\x6b\x09\x01\x40\x00PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n'
    seed pipelined '\x6b\x01\x02\x10\x00\x38\x00GET /1 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /%2e%2e/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
    seed small-limits '\x00\x03\x03\x01\x00\x02\x00\x09\x00GET / HTTP/1.1\r\nHost: x\r\n\r\n'
fi
fuzz_run 10 -dict=Fuzz/http-parser.dict
