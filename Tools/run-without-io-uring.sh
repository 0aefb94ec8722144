#!/usr/bin/env bash
# Runs the test suite under a seccomp filter that refuses io_uring with EPERM, as Docker's
# default seccomp profile does, so RingIO has to fall back to its readiness (epoll) engine by
# itself — the way a container makes it. Tools/seccomp/README.md.
#
#   Tools/run-without-io-uring.sh                                   # swift test, all of it
#   Tools/run-without-io-uring.sh --skip-build --filter 'Channel'   # more arguments go to `swift test`
#
# Builds Tools/seccomp/deny-io-uring.c into its own scratch directory (.build-seccomp), checks
# that the filter really refuses the three io_uring calls (and that without it they are not
# refused, or the run would prove nothing), then runs `swift test "$@"` under it. Every process
# the tests start (exit tests' children, the servers a test runs) inherits the filter.
# RINGIO_BACKEND is cleared, so that the engine is chosen as it would be in a container.
#
# Fails when `swift test` fails, and also when it "passed" without proving anything: when no
# test passed, or when a selected suite was skipped whole (suites gated on io_uring skip where
# it is refused). Tests that skip on their own (io_uring-only ones) are counted, not failed.
set -euo pipefail
cd "$(dirname "$0")/.."

helper=.build-seccomp/deny-io-uring
mkdir -p .build-seccomp
# $CC, else cc, else the Swift toolchain's clang.
compiler="${CC:-$(command -v cc || command -v clang || echo cc)}"
# Built beside it and renamed into place: two runs at once (CI's tests and benchmarks lanes)
# never see a half-written helper, nor write over one that is running.
"$compiler" -std=c11 -O2 -Wall -Wextra -Werror -o "$helper.$$" Tools/seccomp/deny-io-uring.c
mv -f "$helper.$$" "$helper"

# Calls io_uring_setup (a one-entry ring), io_uring_enter and io_uring_register (on
# descriptor -1) and prints what each gave: "ok" or the errno's name.
probe='
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *arguments):
    result = libc.syscall(ctypes.c_long(number), *arguments)
    if result < 0:
        code = ctypes.get_errno()
        return errno.errorcode.get(code, str(code))
    if number == 425:
        os.close(result)
    return "ok"
params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
print(call(425, ctypes.c_uint(1), params),
      call(426, ctypes.c_int(-1), ctypes.c_uint(0), ctypes.c_uint(0), ctypes.c_uint(0), None, ctypes.c_size_t(0)),
      call(427, ctypes.c_int(-1), ctypes.c_uint(0), None, ctypes.c_uint(0)))
'
without="$(python3 -c "$probe")"
with="$("$helper" python3 -c "$probe")"
echo "io_uring_setup, _enter, _register without the filter: $without; under it: $with"
if [ "$with" != "EPERM EPERM EPERM" ]; then
    echo "error: under $helper the io_uring calls were not all refused with EPERM" >&2
    exit 1
fi
case " $without " in
*" EPERM "*)
    echo "error: io_uring is refused with EPERM here without the filter too (kernel.io_uring_disabled," >&2
    echo "       or a container's seccomp profile): this run could not tell whether the filter works" >&2
    exit 1
    ;;
esac

echo "== swift test $* (io_uring refused by a seccomp filter)"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
env -u RINGIO_BACKEND "$helper" swift test "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then exit "$status"; fi

# A suite gated on io_uring skips cleanly where it is refused, and the run still "passes": a
# run that skipped its suites proved nothing. Fail unless tests passed and no selected suite
# was skipped whole (select io_uring-only suites out with --skip). Swift Testing's lines:
# "✔ Test "…" passed after…", "➜ Suite "…" skipped: "…"", "➜ Test "…" skipped: "…"".
plain="$(sed -e 's/\x1b\[[0-9;]*m//g' "$log")"
passed="$(grep -cE '^✔ Test "' <<<"$plain" || true)"
skipped_tests="$(grep -cE '^➜ Test "' <<<"$plain" || true)"
skipped_suites="$(grep -E '^➜ Suite "' <<<"$plain" || true)"
echo "under the filter: $passed tests passed, $skipped_tests skipped"
if [ -n "$skipped_suites" ]; then
    echo "error: suites were skipped whole under the filter (the fallback did not run them):" >&2
    echo "$skipped_suites" >&2
    exit 1
fi
if [ "$passed" -eq 0 ]; then
    echo "error: no test passed under the filter (none selected, or every one skipped)" >&2
    exit 1
fi
