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
# requests: each seed file is written when it is missing, so an old corpus gains new seeds),
# crash and timeout files (artifacts/). Nothing goes into the source tree.
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

# Seed the corpus with a few requests: each seed file is written when it is missing, so a
# corpus from an earlier run gains the seeds added since. Each input starts with the harness's
# header bytes: limits 0x6b (the defaults); flags 0x09 (nextHead and re-parse), or 0x10 and
# 0x20 for the Host and chunk-extension grammar modes; then one cut (or none).
seed() { [[ -e "$out/corpus/seed-$1" ]] || printf '%b' "$2" >"$out/corpus/seed-$1"; }
seed get '\x6b\x09\x01\x07\x00GET / HTTP/1.1\r\nHost: x\r\n\r\n'
seed post '\x6b\x09\x01\x30\x00POST /u?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello'
seed chunked '\x6b\x09\x01\x40\x00PUT /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n'
seed pipelined '\x6b\x01\x02\x10\x00\x38\x00GET /1 HTTP/1.1\r\nHost: x\r\n\r\nHEAD /%2e%2e/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
seed small-limits '\x00\x03\x03\x01\x00\x02\x00\x09\x00GET / HTTP/1.1\r\nHost: x\r\n\r\n'
# The Host field, the target forms, versions and fragments (RFC 9112 §3.2, RFC 9110 §6.2, §7.2).
seed host-ipv6 '\x6b\x09\x01\x1a\x00GET / HTTP/1.1\r\nHost: [2001:db8::ffff:192.0.2.1]:8080\r\n\r\n'
seed host-future '\x6b\x09\x01\x1a\x00GET / HTTP/1.1\r\nHost: [v1.a:b,c]\r\n\r\n'
seed host-userinfo '\x6b\x09\x01\x1a\x00GET / HTTP/1.1\r\nHost: user:pw@Example.COM:80\r\n\r\n'
seed host-list '\x6b\x09\x01\x1a\x00GET / HTTP/1.1\r\nHost: a.example, b%41.example\r\nHost: c\r\n\r\n'
seed absolute-form '\x6b\x09\x01\x1a\x00GET http://Example.com:80/a?b HTTP/1.1\r\nHost: example.com\r\n\r\n'
seed absolute-no-authority '\x6b\x09\x01\x1a\x00GET urn:isbn:1 HTTP/1.0\r\nHost:\r\n\r\n'
seed connect '\x6b\x09\x01\x1a\x00CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n'
seed options '\x6b\x09\x01\x1a\x00OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n'
seed version-1-5 '\x6b\x09\x01\x1a\x00GET / HTTP/1.5\r\nHost: x\r\n\r\n'
seed fragment '\x6b\x09\x01\x1a\x00GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n'
# Chunk extensions (RFC 9112 §7.1.1).
seed chunk-extensions '\x6b\x09\x01\x40\x00POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5 ; a = b;c="d\\"e";f\r\nhello\r\n0;x=y\r\n\r\n'
# The grammar modes: the data is a Host value, or a chunk extension after its ";".
seed grammar-host '\x6b\x10\x00[::ffff:1.2.3.4]:80'
seed grammar-host-name '\x6b\x10\x00 ex%41mple.com:8080 '
seed grammar-chunk-extension '\x6b\x20\x00a=b ; c="d\\"e";f'

fuzz_run 10 -dict=Fuzz/http-parser.dict
