//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: `file-read`, a whole warm-cache file read in a process of its
// own, by a random-access IOChannel or by DispatchIO, so `throughput` can set them beside fio.
//
//     file-read ringio|dispatchio [--passes N]
//
// Reads TestFile (RINGIO_BENCH_FILE_SIZE, default 2 GiB; created when missing) once checking
// every page (this also warms the page cache), then N more times unchecked, measured, as fio
// reads it. Prints one JSON object: {"bytes": …, "seconds": …, "cpuSeconds": …} (the measured
// passes; CPU time of the whole process). Exit status 2 on bad arguments.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import IOBenchmarkSupport
import ThroughputSupport

#if canImport(Glibc)
import Glibc
#endif

func usage(_ message: String) -> Never {
    printToStandardError("file-read: \(message)\nusage: file-read ringio|dispatchio [--passes N]")
    exit(2)
}

var arguments = CommandLine.arguments.dropFirst()
guard let kind = arguments.popFirst() else { usage("which reader?") }
var passes = 3
while let argument = arguments.popFirst() {
    switch argument {
    case "--passes":
        guard let text = arguments.popFirst(), let value = Int(text), value > 0 else { usage("--passes wants a count") }
        passes = value
    default:
        usage("unknown argument \(argument)")
    }
}

let reader: any WholeFileReader
switch kind {
case "ringio":
    // Handlers on the ring's thread: RingIO's fast path (DispatchQueue handlers measure the same
    // within noise for 1 MiB chunks: see Benchmarks/README.md).
    do { reader = try RingIOFileReader(handlersOnRing: true) } catch { usage("no ring: \(error)") }
case "dispatchio":
    reader = DispatchIOFileReader()
default:
    usage("unknown reader \(kind)")
}

let checked = reader.readWholeFile(checking: true)
check(checked == TestFile.size, "file-read: read \(checked) bytes of \(TestFile.size)")
let startCPU = ownCPUSeconds()
let start = monotonicSeconds()
var bytes = 0
for _ in 0..<passes {
    let count = reader.readWholeFile(checking: false)
    check(count == TestFile.size, "file-read: read \(count) bytes of \(TestFile.size)")
    bytes += count
}
let elapsed = monotonicSeconds() - start
let cpu = ownCPUSeconds() - startCPU
reader.tearDown()
print(#"{"bytes": \#(bytes), "seconds": \#(elapsed), "cpuSeconds": \#(cpu)}"#)
