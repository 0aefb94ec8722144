//===----------------------------------------------------------------------===//
// RingIO — RingTLS: a buffer per thread for gathering small regions into one record.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#endif

/// A buffer per thread for gathering a rope's small regions into one record. A stream
/// encrypts on its ring's thread, one call at a time (OpenSSL calls back into no user code
/// while it encrypts), so one buffer per thread is enough: no allocation per write, and 16 KiB
/// per ring thread rather than per connection. Freed when its thread exits.
internal enum _GatherScratch {
    static let size = 16_384

    /// The thread-specific key; made once per process, never deleted.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let result = pthread_key_create(&key) { pointer in free(pointer) }
        precondition(result == 0, "RingTLS: pthread_key_create failed (\(result))")
        return key
    }()

    /// The calling thread's buffer of `size` bytes.
    static var buffer: UnsafeMutableRawPointer {
        if let existing = pthread_getspecific(Self.key) { return existing }
        guard let fresh = malloc(Self.size) else { fatalError("RingTLS: out of memory") }
        pthread_setspecific(Self.key, fresh)
        return fresh
    }
}
