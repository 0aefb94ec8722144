//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ByteRope {
    /// How a region created with ``ByteRope/init(bytesNoCopy:deallocator:)`` releases its
    /// memory once nothing refers to it any more.
    ///
    /// Whichever is chosen runs exactly once.
    public enum Deallocator: Sendable {
        /// Release with `free(3)`: the memory came from `malloc`, `calloc`, `realloc`,
        /// `aligned_alloc` or `posix_memalign`.
        case free
        /// Release with `munmap(2)`: the buffer is exactly a mapping returned by `mmap`
        /// (page-aligned base, the mapped length). An empty buffer is not unmapped.
        case unmap
        /// Do nothing: the caller keeps the memory valid for as long as any rope can see it.
        case none
        /// Run `body` asynchronously on `queue`, or on the default global queue when `queue`
        /// is `nil` (as `DispatchData` does).
        case custom(queue: DispatchQueue?, body: @Sendable () -> Void)
    }
}

/// The owner of a region created without copying: its deinit runs the deallocator.
@usableFromInline
internal final class _DeallocatingOwner {
    // MARK: Immutable after init
    private let base: UnsafeMutableRawPointer?
    private let count: Int
    private let deallocator: ByteRope.Deallocator

    internal init(bytes: UnsafeRawBufferPointer, deallocator: ByteRope.Deallocator) {
        self.base = UnsafeMutableRawPointer(mutating: bytes.baseAddress)
        self.count = bytes.count
        self.deallocator = deallocator
    }

    deinit {
        switch self.deallocator {
        case .free:
            free(self.base)
        case .unmap:
            if let base = self.base, self.count > 0 {
                let result = munmap(base, self.count)
                // munmap fails only for a range that is not a mapping (EINVAL): a caller bug
                // we must not hide, since the memory would leak or be unmapped wrongly.
                precondition(result == 0, "ByteRope: munmap of a .unmap region failed (errno \(errno))")
            }
        case .none:
            break
        case .custom(let queue, let body):
            (queue ?? DispatchQueue.global()).async(execute: body)
        }
    }

    internal var kindDescription: String {
        switch self.deallocator {
        case .free: return "free"
        case .unmap: return "unmap"
        case .none: return "none"
        case .custom: return "custom"
        }
    }
}

/// The owner of a region of bytes the rope copied: the bytes are tail-allocated in the
/// object itself, so such a region costs exactly one allocation.
///
/// The header is the number of bytes in use.
@usableFromInline
internal final class _ByteStorage: ManagedBuffer<Int, UInt8> {
    /// A new storage holding a copy of `bytes`, which is not empty.
    internal static func create(copying bytes: UnsafeRawBufferPointer) -> _ByteStorage {
        let storage = _ByteStorage.create(count: bytes.count)
        storage.withUnsafeMutablePointerToElements {
            UnsafeMutableRawPointer($0).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        return storage
    }

    /// A new storage of `count` bytes, not initialized. `count` is positive.
    internal static func create(count: Int) -> _ByteStorage {
        assert(count > 0)
        let buffer = self.create(minimumCapacity: count) { _ in count }
        return unsafeDowncast(buffer, to: _ByteStorage.self)
    }

    /// The whole storage as a slice.
    ///
    /// The element pointer is taken out of `withUnsafeMutablePointerToElements`: that is sound
    /// because tail-allocated elements never move during the object's life, and the slice
    /// holds the object.
    internal var slice: _Slice {
        let base = self.withUnsafeMutablePointerToElements { UnsafeRawPointer($0) }
        return _Slice(owner: self, base: base, count: self.header)
    }

    /// The bytes, writable: only while the storage is being filled, before it is shared.
    internal var unsafeMutableBytes: UnsafeMutableRawBufferPointer {
        let base = self.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0) }
        return UnsafeMutableRawBufferPointer(start: base, count: self.header)
    }
}

// _ByteStorage is not Sendable: ManagedBuffer already makes that conformance unavailable.

@available(*, unavailable)
extension _DeallocatingOwner: Sendable {}
