//===----------------------------------------------------------------------===//
// RingIO — RingTLS: the BIO between OpenSSL and a stream's buffers.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CRingOpenSSL

/// A custom BIO type: OpenSSL reads ciphertext straight out of the ropes the channel
/// received (no memory BIO in between, so no copy of its own) and writes its records into
/// the stream's output buffer. Neither side ever waits: a read with nothing received answers
/// "retry", which OpenSSL reports as "want read".
///
/// The BIO's data pointer is its `_TLSCore`, unretained: the core owns the `SSL` that owns
/// the BIO, and its deinit clears the pointer before freeing them.
internal enum _TLSBIO {
    /// The method table of a stream that keeps its keys in user space (kTLS off or
    /// unavailable for its socket): its controls are answered in C
    /// (`CRingOpenSSL_BIO_user_space_control`), with no call into Swift. Made once per
    /// process and never freed (it is reachable from here).
    // nonisolated(unsafe): written once, by the global's thread-safe lazy initialization;
    // OpenSSL only reads a method table.
    nonisolated(unsafe) static let userSpaceMethod: OpaquePointer = _TLSBIO.makeMethod(
        "RingTLS stream",
        control: CRingOpenSSL_BIO_user_space_control
    )

    /// The method table of a stream whose socket has the kernel's TLS ULP: its controls reach
    /// the core, which takes the transmit keys when OpenSSL offers them (`BIO_CTRL_SET_KTLS`).
    // nonisolated(unsafe): as `userSpaceMethod`.
    nonisolated(unsafe) static let kernelMethod: OpaquePointer = _TLSBIO.makeMethod(
        "RingTLS stream (kTLS)",
        control: _TLSBIO.control
    )

    private static func makeMethod(
        _ name: String,
        control: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int
    ) -> OpaquePointer {
        let type = BIO_get_new_index() | BIO_TYPE_SOURCE_SINK
        guard let method = BIO_meth_new(type, name) else {  // OpenSSL copies the name
            fatalError("RingTLS: BIO_meth_new failed (out of memory)")
        }
        _ = BIO_meth_set_write_ex(method, _TLSBIO.write)
        _ = BIO_meth_set_read_ex(method, _TLSBIO.read)
        _ = BIO_meth_set_ctrl(method, control)
        _ = BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        _ = BIO_meth_set_destroy(method) { bio in
            BIO_set_data(bio, nil)
            BIO_set_init(bio, 0)
            return 1
        }
        return method
    }

    /// Runs `body` with the BIO's core, without retaining it (the core is alive: it made the
    /// OpenSSL call this callback runs in); `fallback` when the BIO has no core.
    @inline(__always)
    private static func withCore<R>(_ bio: OpaquePointer?, _ fallback: R, _ body: (_TLSCore) -> R) -> R {
        guard let bio, let raw = BIO_get_data(bio) else { return fallback }
        return Unmanaged<_TLSCore>.fromOpaque(raw)._withUnsafeGuaranteedRef(body)
    }

    private static let write:
        @convention(c) (
            OpaquePointer?,
            UnsafePointer<CChar>?,
            Int,
            UnsafeMutablePointer<Int>?
        ) -> Int32 = { bio, bytes, count, written in
            guard let bytes else { return 0 }
            CRingOpenSSL_BIO_clear_retry_flags(bio)
            return _TLSBIO.withCore(bio, 0) { core in
                core.bioWrite(UnsafeRawPointer(bytes), count: count)
                written?.pointee = count
                return 1
            }
        }

    private static let read:
        @convention(c) (
            OpaquePointer?,
            UnsafeMutablePointer<CChar>?,
            Int,
            UnsafeMutablePointer<Int>?
        ) -> Int32 = { bio, buffer, count, read in
            read?.pointee = 0
            guard let buffer else { return 0 }
            CRingOpenSSL_BIO_clear_retry_flags(bio)
            let copied = _TLSBIO.withCore(bio, 0) { $0.bioRead(into: UnsafeMutableRawPointer(buffer), count: count) }
            if copied > 0 {
                read?.pointee = copied
                return 1
            }
            if copied < 0 { CRingOpenSSL_BIO_set_retry_read(bio) }
            return 0  // with the retry flag: nothing yet; without: the end of the input
        }

    /// The kTLS method's controls. Those OpenSSL asks most (flush, the kTLS queries, several
    /// per record) are answered here without the core where they can be.
    private static let control: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = {
        bio,
        command,
        argument,
        pointer in
        switch command {
        case BIO_CTRL_FLUSH: return 1
        case BIO_CTRL_GET_KTLS_RECV: return 0
        case BIO_CTRL_GET_KTLS_SEND, CRingOpenSSL_BIO_CTRL_SET_KTLS, CRingOpenSSL_BIO_CTRL_SET_KTLS_TX_SEND_CTRL_MSG,
            CRingOpenSSL_BIO_CTRL_CLEAR_KTLS_TX_CTRL_MSG:
            guard let bio, let raw = BIO_get_data(bio) else { return 0 }
            return Unmanaged<_TLSCore>.fromOpaque(raw)._withUnsafeGuaranteedRef {
                $0.bioControl(command, argument, pointer)
            }
        default: return 0
        }
    }
}
