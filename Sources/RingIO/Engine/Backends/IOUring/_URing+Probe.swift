//===----------------------------------------------------------------------===//
// RingIO — io_uring: probing the kernel for what RingIO uses.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension _URing {
    /// The operations RingIO submits that this kernel's io_uring lacks (by name), from its
    /// probe (not supported before Linux 5.6: then only the buffer ring is checked), and the
    /// provided-buffer ring every receive uses (Linux 5.19), tried by registering one.
    /// The corresponding liburing calls are `io_uring_get_probe_ring` and
    /// `io_uring_opcode_supported`.
    func missingOperations() -> [String] {
        let needed: [(io_uring_op, String)] = [
            (IORING_OP_NOP, "NOP"), (IORING_OP_READ, "READ"), (IORING_OP_WRITE, "WRITE"),
            (IORING_OP_WRITEV, "WRITEV"), (IORING_OP_SEND, "SEND"), (IORING_OP_SENDMSG, "SENDMSG"),
            (IORING_OP_RECV, "RECV"), (IORING_OP_ACCEPT, "ACCEPT"), (IORING_OP_OPENAT, "OPENAT"),
            (IORING_OP_CLOSE, "CLOSE"), (IORING_OP_TIMEOUT, "TIMEOUT"), (IORING_OP_POLL_ADD, "POLL_ADD"),
            (IORING_OP_SPLICE, "SPLICE"), (IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"),
            (IORING_OP_CONNECT, "CONNECT"), (IORING_OP_SHUTDOWN, "SHUTDOWN"), (IORING_OP_RECVMSG, "RECVMSG"),
        ]
        var missing: [String] = []
        if let probe = self.probe() {
            defer { io_uring_free_probe(probe) }
            missing = needed.filter { io_uring_opcode_supported(probe, Int32($0.0.rawValue)) == 0 }
                .map { "IORING_OP_" + $0.1 }
        }
        // Provided-buffer rings (Linux 5.19) are no opcode: registering one is the probe.
        do throws(Errno) {
            self.unregisterBufferRing(try self.registerBufferRing(entries: 1, group: UInt16.max))
        } catch {
            missing.append("IORING_REGISTER_PBUF_RING")
        }
        return missing
    }
}
