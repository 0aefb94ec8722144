//===----------------------------------------------------------------------===//
// RingIO — rope-tour: a short walk through ByteRope (`swift run --package-path Examples rope-tour`).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import Dispatch

#if canImport(Glibc)
import Glibc
#endif

// An HTTP response as it might arrive from the network: in pieces, each its own region.
let chunks = ["HTTP/1.1 200 OK\r\nCont", "ent-Type: text/pl", "ain\r\nContent-Length: 13\r", "\n\r", "\nHello, World!"]
var response = ByteRope()
for chunk in chunks {
    response.append(ByteRope(copying: chunk.utf8))  // concatenation copies no bytes
}
print("received:", response)
print(response.debugDescription)

// Find the end of the head across region boundaries, without gluing the pieces together.
if let headEnd = response.firstRange(of: "\r\n\r\n".utf8) {
    let head = response.subrange(0..<headEnd.lowerBound)  // zero-copy sub-ropes
    let body = response.subrange(headEnd.upperBound...)
    print("head:", head.count, "bytes in", head.regionCount, "regions")
    print("body:", String(decoding: body, as: UTF8.self), "— from", body.regionCount, "region")
}

// Walk the regions the way a vectored write would.
for region in response.regions {
    print("region at \(region.offset): \(region.count) bytes")
}

// Memory the rope does not copy: released by its deallocator when the last reference goes.
do {
    let memory = UnsafeMutableRawBufferPointer(start: malloc(5)!, count: 5)
    memory.copyBytes(from: "bytes".utf8)
    let borrowed = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(memory), deallocator: .free)
    let word = borrowed.subrange(1..<4)  // keeps the whole region alive
    print("sub-rope of caller memory:", String(decoding: word, as: UTF8.self))
}  // the last reference is gone: the memory is freed here with free(3)

// A million appends stay linear.
var many = ByteRope()
let one: ByteRope = [0x2A]
let start = DispatchTime.now()
for _ in 0..<1_000_000 {
    many.append(one)
}
let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6
// The time says little in a debug build (unoptimized, and ByteRopes with it): say which ran.
#if DEBUG
let build = "a debug build; `swift run -c release --package-path Examples rope-tour` times the optimized code"
#else
let build = "a release build"
#endif
print("1,000,000 appends: \(many.regionCount) regions in \(Int(elapsed)) ms (\(build))")
