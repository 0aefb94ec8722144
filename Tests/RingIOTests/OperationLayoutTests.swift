//===----------------------------------------------------------------------===//
// RingIO — tests: the sizes the delivery path's speed depends on.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingIOTestSupport
import Testing

@testable import RingIO

/// The compiler copies and destroys a value of at most four words in line (a retain or a
/// release per reference); a larger one, and an optional of it, through value-witness calls
/// of about 90 instructions each. A handler call is copied several times per delivery.
@Suite("Operation layout")
struct OperationLayoutTests {
    @Test("a handler call, and an optional one, are four words")
    func handlerCall() {
        #expect(MemoryLayout<_HandlerCall>.size == 4 * MemoryLayout<Int>.size)
        #expect(MemoryLayout<_HandlerCall?>.size == 4 * MemoryLayout<Int>.size)
    }
}
