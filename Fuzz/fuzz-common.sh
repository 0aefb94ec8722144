# Shared by the run-*-fuzzer.sh scripts (sourced, not run): options, the rebuild check and
# the libFuzzer run. A script sets `out` (its default FUZZ_OUT) and `binary`, sources this file,
# calls `fuzz_parse_args "$@"`, builds when `fuzz_needs_build <sources…>` says so (then
# `fuzz_built`), and ends with `fuzz_run <per-input timeout> [extra libFuzzer flags…]`.
#
# Environment (see each script's header): FUZZ_SECONDS, FUZZ_MAX_LEN, FUZZ_OUT,
# FUZZ_SANITIZE, SWIFTC.

script_dir="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
repo_root="$(cd "$script_dir/.." && pwd)"
cd "$repo_root"

seconds="${FUZZ_SECONDS:-60}"
max_len="${FUZZ_MAX_LEN:-4096}"
out="${FUZZ_OUT:-$out}"
sanitize="${FUZZ_SANITIZE-address}"
swiftc="${SWIFTC:-swiftc}"
sanitizers="fuzzer"
[[ -n "$sanitize" ]] && sanitizers="fuzzer,$sanitize"
build_only=0
passthrough=()
have_inputs=0

# Reads the scripts' options: --time N, --build-only, --help (the calling script's header),
# anything else goes to libFuzzer (files and directories are inputs to run on).
fuzz_parse_args() {
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
                sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
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
    mkdir -p "$out/corpus" "$out/artifacts" "$out/obj"
}

# Succeeds when $binary is missing, older than one of the given sources (or the scripts), or
# was built with other sanitizers.
fuzz_needs_build() {
    [[ -x "$binary" ]] || return 0
    local source
    for source in "$@" "$0" "${BASH_SOURCE[0]}"; do
        [[ "$source" -nt "$binary" ]] && return 0
    done
    [[ -f "$out/.sanitizers" && "$(cat "$out/.sanitizers")" != "$sanitizers" ]] && return 0
    return 1
}

# Records the sanitizers of a build just made.
fuzz_built() {
    echo "$sanitizers" >"$out/.sanitizers"
}

# Runs libFuzzer: bounded in time on the corpus under $out, or on exactly the inputs given.
fuzz_run() {
    local timeout="$1"
    shift
    # The Swift runtime's own crash backtracer would run (and can hang) next to libFuzzer's
    # crash handling; libFuzzer and ASan print the stack.
    export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
    # ASan: LeakSanitizer on (libFuzzer checks leaks per input); shallower allocation stacks
    # and a smaller quarantine keep the many small region allocations cheaper (about 60% of
    # the default's RSS on big ropes). Override ASAN_OPTIONS for fuller reports.
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:malloc_context_size=8:quarantine_size_mb=64}"
    local args=(-max_len="$max_len" -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$@")
    if [[ $have_inputs -eq 0 ]]; then
        args+=(-max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048)
        exec "$binary" "${args[@]}" "${passthrough[@]}" "$out/corpus"
    else
        exec "$binary" "${args[@]}" "${passthrough[@]}"
    fi
}
