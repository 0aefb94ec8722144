//===----------------------------------------------------------------------===//
// RingIO — channels: the lanes of a descriptor's operations.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// The three lanes of a descriptor's operations (``_Operation/readLane``, ``_Operation/writeLane``,
/// ``_Operation/fileLane``): in each, the operation at its head (running) and those waiting
/// behind it, in order.
///
/// Stored in the value, lane by lane: as two arrays of three (heads, waiting queues) they
/// cost a descriptor entry two allocations — one for each array, the heads' copied from the
/// literal's constant storage at the first write.
internal struct _OperationLanes {
    private var readHead: _Operation?
    private var writeHead: _Operation?
    private var fileHead: _Operation?
    private var readWaiting = _FIFO<_Operation>()
    private var writeWaiting = _FIFO<_Operation>()
    private var fileWaiting = _FIFO<_Operation>()

    /// The operation at the head of `lane`.
    subscript(head lane: Int) -> _Operation? {
        get {
            switch lane {
            case _Operation.readLane: return self.readHead
            case _Operation.writeLane: return self.writeHead
            default: return self.fileHead
            }
        }
        set {
            switch lane {
            case _Operation.readLane: self.readHead = newValue
            case _Operation.writeLane: self.writeHead = newValue
            default: self.fileHead = newValue
            }
        }
    }

    /// Runs `body` with the operations waiting in `lane` (not its head), in place.
    mutating func withWaiting<Result>(_ lane: Int, _ body: (inout _FIFO<_Operation>) -> Result) -> Result {
        switch lane {
        case _Operation.readLane: return body(&self.readWaiting)
        case _Operation.writeLane: return body(&self.writeWaiting)
        default: return body(&self.fileWaiting)
        }
    }
}
