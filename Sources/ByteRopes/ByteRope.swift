//===----------------------------------------------------------------------===//
// RingIO — ByteRopes
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

/// An immutable sequence of bytes made of retained memory regions, in the spirit of
/// `dispatch_data_t`.
///
/// A rope never copies bytes to concatenate or slice: it records *which part of which
/// region* each piece of its content is, and keeps every region alive for as long as any
/// rope, subrange or ``Region`` refers to it. Regions come from bytes the rope copied
/// (``init(copying:)-(UnsafeRawBufferPointer)``), from caller memory handed over with a
/// ``Deallocator`` (``init(bytesNoCopy:deallocator:)``), from `DispatchData`, and — inside
/// RingIO — straight from the kernel's receive buffers.
///
///     let head = ByteRope(copying: "HTTP/1.1 200 OK\r\n\r\n".utf8)
///     let body = ByteRope(copying: "Hello, World!".utf8)
///     let response = head + body              // two regions, no bytes copied
///     response.regionCount                    // 2
///     response.firstRange(of: "\r\n\r\n".utf8) // 15..<19
///     response.subrange(19..<32)              // "Hello, World!", still no copy
///
/// ## Layout
///
/// A rope of at most two regions is stored inline in the value; longer ropes are a
/// persistent B-tree whose leaves hold up to 16 slices. Every node caches the byte and
/// region counts of its subtree, so concatenation, subrange and byte indexing are
/// O(log *r*) in the number of regions *r*:
///
///     ByteRope ─┬─ empty
///               ├─ one(slice)                 0 or 1 region: no allocation of its own
///               ├─ two(slice, slice)
///               └─ tree(_Node) ──┬─ _Node ─ [slice … slice]    leaves: 8…16 slices
///                                └─ _Node ─ [slice … slice]    (the root: 1…16)
///
///     slice = (owner: AnyObject, base: UnsafeRawPointer, count: Int)
///              │                                          count > 0, always
///              └─ keeps the region's memory alive; its deinit runs the deallocator
///
/// Regions are never merged or split by concatenation: the regions of `a + b` are exactly
/// the regions of `a` followed by those of `b` (rule R7 of <doc:DispatchDataContract>), so what
/// a reader sees as regions is what the producers made.
///
/// ## Value semantics and sharing
///
/// `ByteRope` is a value type. Copies share their tree nodes; a mutation (``append(_:)``)
/// copies only the nodes on the path it changes, and none at all when this rope is their
/// only owner — which is what makes an append loop linear.
///
/// ## Differences from `DispatchData`
///
/// <doc:DispatchDataContract> goes through `DispatchData`'s behaviour rule by rule (R1–R19);
/// in short:
///
/// - `append` and `+` are O(log *r*), not O(*r*): a million appends take well under a second
///   (`DispatchData` needs 46 s for 40,000).
/// - `.free` and `.unmap` deallocators work (they crash `DispatchData` on Linux).
/// - Out-of-bounds indices and ranges are a precondition failure with a message, where
///   dispatch clamps silently.
/// - ``withUnsafeBytes(_:)`` on an empty rope passes a valid, empty buffer with a non-nil
///   base address.
/// - Ropes are `Equatable` and `Hashable` by content.
/// - Slicing with `rope[a..<b]` gives a `Slice<ByteRope>` that keeps the base's indices, as
///   the `Collection` protocol requires; ``subrange(_:)-(Range<Int>)`` gives a new rope re-based at 0.
public struct ByteRope {
    @usableFromInline
    internal var _repr: _Representation

    @inlinable
    internal init(_repr: _Representation) {
        self._repr = _repr
    }
}

// @unchecked: a rope's slices reference regions that are immutable after creation, and
// their owners are only retained and released (atomic reference counts). Tree nodes are
// mutated only while uniquely referenced (`isKnownUniquelyReferenced`), so a node reachable
// from two threads is never written.
extension ByteRope: @unchecked Sendable {}

extension ByteRope {
    /// The storage of a rope.
    @usableFromInline
    internal enum _Representation {
        /// No bytes.
        case empty
        /// One region.
        case one(_Slice)
        /// Two regions, in order, held by one small object (see `_Pair`).
        case two(_Pair)
        /// Three or more regions: the root of a valid B-tree (see `_Node`).
        case tree(_Node)
    }
}

/// A non-empty piece of one region: the region's owner and the bytes of it in use.
///
/// Invariant: `count > 0`, and `base..<base + count` stays valid and unchanged for as long
/// as `owner` is alive.
@usableFromInline
internal struct _Slice {
    /// Keeps the region's memory alive; releasing the last reference frees it.
    @usableFromInline
    internal let owner: AnyObject
    @usableFromInline
    internal let base: UnsafeRawPointer
    @usableFromInline
    internal let count: Int

    @inlinable
    internal init(owner: AnyObject, base: UnsafeRawPointer, count: Int) {
        assert(count > 0, "a slice is never empty")
        self.owner = owner
        self.base = base
        self.count = count
    }

    @inlinable
    internal var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: self.base, count: self.count)
    }

    /// The part of this slice at `range`, relative to its start. `range` is not empty and
    /// lies within `0..<count`.
    @inlinable
    internal func slice(_ range: Range<Int>) -> _Slice {
        assert(range.lowerBound >= 0 && range.upperBound <= self.count && !range.isEmpty)
        return _Slice(owner: self.owner, base: self.base + range.lowerBound, count: range.count)
    }
}

// @unchecked: see ByteRope's conformance — the owner is only retained and released and the
// bytes are immutable while it lives.
extension _Slice: @unchecked Sendable {}

/// The two slices of a two-region rope, in order.
///
/// They live in an object, not inline in the rope, so that every case of `_Representation`
/// is one reference and at most two plain words: a rope is then three words, and a copy or
/// destroy of a rope, of an optional rope and of a small struct holding one is a single
/// retain or release in line. With the two slices inline (six words), the compiler copies
/// and destroys those through value-witness calls — about 90 instructions each, several
/// times per message on the engine's delivery path (callgrind, echo-server).
///
/// Immutable after creation, like the slices it holds.
@usableFromInline
internal final class _Pair {
    @usableFromInline
    internal let first: _Slice
    @usableFromInline
    internal let second: _Slice
    /// `first.count + second.count`, kept so a rope's `count` is one load.
    @usableFromInline
    internal let count: Int

    @inlinable
    internal init(_ first: _Slice, _ second: _Slice) {
        self.first = first
        self.second = second
        self.count = first.count &+ second.count
    }
}

// @unchecked: immutable after creation; see `_Slice`.
extension _Pair: @unchecked Sendable {}

// MARK: - Creating ropes

extension ByteRope {
    /// Creates an empty rope.
    ///
    /// - Complexity: O(1); allocates nothing.
    @inlinable
    public init() {
        self._repr = .empty
    }

    /// The empty rope.
    ///
    /// - Complexity: O(1).
    public static let empty = ByteRope()

    /// Creates a rope holding a copy of `bytes`, in one region.
    ///
    /// Later changes to the memory `bytes` points to are not seen by the rope.
    ///
    /// - Parameter bytes: The bytes to copy. May be empty, with or without a base address.
    /// - Complexity: O(*n*); one allocation (none for empty input).
    public init(copying bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            self._repr = .empty
            return
        }
        let storage = _ByteStorage.create(copying: UnsafeRawBufferPointer(start: base, count: bytes.count))
        self._repr = .one(storage.slice)
    }

    /// Creates a rope holding a copy of the bytes of `sequence`, in one region.
    ///
    ///     let rope = ByteRope(copying: "GET / HTTP/1.1\r\n".utf8)
    ///
    /// - Parameter sequence: The bytes to copy.
    /// - Complexity: O(*n*). One allocation when `sequence` has contiguous storage (arrays,
    ///   native strings' UTF-8 views, one-region ropes); otherwise the bytes are first
    ///   gathered into a temporary array.
    public init(copying sequence: some Sequence<UInt8>) {
        if let rope = sequence as? ByteRope {
            self = rope.contiguousCopy()
            return
        }
        if let copied = sequence.withContiguousStorageIfAvailable({ ByteRope(copying: UnsafeRawBufferPointer($0)) }) {
            self = copied
            return
        }
        let gathered = ContiguousArray(sequence)
        self = gathered.withUnsafeBytes { ByteRope(copying: $0) }
    }

    /// Creates a rope over `bytes` without copying them; `deallocator` releases the memory
    /// once no rope, subrange or region refers to it any more.
    ///
    ///     let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    ///     // … fill memory …
    ///     let rope = ByteRope(bytesNoCopy: UnsafeRawBufferPointer(memory), deallocator: .free)
    ///
    /// The deallocator runs exactly once, after the last reference to the region is gone —
    /// including references held by subranges and by ropes built from this one. For an empty
    /// buffer (zero `count`, with or without a base address) it runs at once and the result is
    /// the empty rope. (`DispatchData` skips the deallocator of a buffer with a nil base
    /// address; a rope always runs it, so ownership never leaks.)
    ///
    /// - Parameters:
    ///   - bytes: The memory to reference. It must stay valid and must not change until the
    ///     deallocator runs.
    ///   - deallocator: How to release the memory; see ``Deallocator``.
    /// - Complexity: O(1); one small allocation (the region's owner).
    /// - Warning: The rope reads `bytes` for as long as it lives. Writing to that memory
    ///   before the deallocator runs breaks the rope's immutability.
    public init(bytesNoCopy bytes: UnsafeRawBufferPointer, deallocator: Deallocator) {
        let owner = _DeallocatingOwner(bytes: bytes, deallocator: deallocator)
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            // The owner is released here, which runs the deallocator at once.
            self._repr = .empty
            return
        }
        self._repr = .one(_Slice(owner: owner, base: base, count: bytes.count))
    }

    /// Creates a rope of one region over memory kept alive by `owner`.
    ///
    /// RingIO's engine uses this for kernel receive buffers: the owner's deinit returns the
    /// buffer to its ring.
    ///
    /// - Parameters:
    ///   - owner: An object that keeps `bytes` valid and unchanged until it is deinitialized.
    ///   - bytes: The region's bytes. An empty buffer gives the empty rope.
    /// - Complexity: O(1); allocates nothing.
    package init(unsafeOwner owner: AnyObject, bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            self._repr = .empty
            return
        }
        self._repr = .one(_Slice(owner: owner, base: base, count: bytes.count))
    }
}

extension ByteRope: ExpressibleByArrayLiteral {
    /// Creates a rope holding a copy of the given bytes, in one region.
    ///
    ///     let crlf: ByteRope = [0x0D, 0x0A]
    ///
    /// - Complexity: O(*n*); one allocation.
    public init(arrayLiteral elements: UInt8...) {
        self = elements.withUnsafeBytes { ByteRope(copying: $0) }
    }
}

// MARK: - Size

extension ByteRope {
    /// The number of bytes in the rope.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var count: Int {
        switch self._repr {
        case .empty: return 0
        case .one(let slice): return slice.count
        case .two(let pair): return pair.count
        case .tree(let root): return root.count
        }
    }

    /// Whether the rope holds no bytes.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var isEmpty: Bool {
        if case .empty = self._repr { return true }
        return false
    }

    /// The number of contiguous regions the rope is made of; 0 for an empty rope.
    ///
    /// - Complexity: O(1).
    @inlinable
    public var regionCount: Int {
        switch self._repr {
        case .empty: return 0
        case .one: return 1
        case .two: return 2
        case .tree(let root): return root.regionCount
        }
    }
}
