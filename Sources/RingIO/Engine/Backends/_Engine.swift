//===----------------------------------------------------------------------===//
// RingIO — the engine: io_uring or the readiness engine, behind one type.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The engine of one ring: io_uring, or the readiness engine where io_uring is refused. The
/// one place that tells the two apart: the ring core submits, waits and reaps through it, and
/// never asks which it is.
///
/// A struct of two optionals, exactly one set, rather than a protocol or an enum with
/// payloads: each method tests one optional (a load and a compare, predicted the same way for
/// the ring's whole life) and calls the engine directly — no existential and no copy of an
/// enum that would retain its engine per call (+2% instructions per echo round trip when the
/// core switched over an enum). The core keeps it in a `let`, so calls borrow it.
internal struct _Engine {
    /// io_uring, when the ring runs on it.
    let uring: _URing?
    /// The readiness engine, when the ring runs on it.
    let readiness: _ReadinessEngine?

    private init(uring: _URing) {
        self.uring = uring
        self.readiness = nil
    }

    private init(readiness: _ReadinessEngine) {
        self.uring = nil
        self.readiness = readiness
    }

    /// Sets up the engine for a new ring, on the ring thread: `forced` (or `RINGIO_BACKEND`),
    /// else io_uring when the kernel allows it and has every operation RingIO uses, else the
    /// readiness engine.
    static func make(entries: UInt32, forced: RingLoop.Backend?) throws(RingSetupError) -> (_Engine, _BackendSelection)
    {
        let requested: RingLoop.Backend?
        let why: String
        if let forced {
            requested = forced
            why = "requested by the caller"
        } else {
            requested = try RingLoop.Backend.fromEnvironment()
            why = "RINGIO_BACKEND=\(requested?.rawValue ?? "")"
        }
        switch requested {
        case .ioUring?:
            do throws(Errno) {
                return (
                    _Engine(uring: try _URing(entries: entries, cqMultiple: 4)),
                    _BackendSelection(backend: .ioUring, reason: why)
                )
            } catch {
                throw RingSetupError(errno: error)
            }
        case .epoll?:
            return (try Self.readiness(entries: entries), _BackendSelection(backend: .epoll, reason: why))
        case nil:
            let refusal: String
            do throws(Errno) {
                let uring = try _URing(entries: entries, cqMultiple: 4)
                let missing = uring.missingOperations()
                if missing.isEmpty {
                    return (
                        _Engine(uring: uring), _BackendSelection(backend: .ioUring, reason: "io_uring is available")
                    )
                }
                uring.close()
                refusal =
                    "io_uring lacks operations RingIO uses (\(missing.joined(separator: ", "))): this kernel is too old"
            } catch  where error == .notPermitted || error == .noFunction || error == .invalidArgument {
                refusal = RingSetupError(errno: error).description
            } catch {
                throw RingSetupError(errno: error)  // a resource error is not a reason to switch
            }
            return (try Self.readiness(entries: entries), _BackendSelection(backend: .epoll, reason: refusal))
        }
    }

    private static func readiness(entries: UInt32) throws(RingSetupError) -> _Engine {
        do throws(Errno) {
            return _Engine(readiness: try _ReadinessEngine(entries: entries))
        } catch {
            throw RingSetupError(errno: error, readiness: true)
        }
    }

    // MARK: Set-up

    var submissionEntries: UInt32 {
        self.uring?.submissionEntries ?? self.readiness.unsafelyUnwrapped.submissionEntries
    }

    var completionEntries: UInt32 {
        self.uring?.completionEntries ?? self.readiness.unsafelyUnwrapped.completionEntries
    }

    /// The setup flags io_uring accepted; none for the readiness engine.
    var setupFlags: UInt32 { self.uring?.setupFlags ?? 0 }

    /// Whether io_uring's descriptor is registered with the ring thread; never for the
    /// readiness engine.
    var registeredRingDescriptor: Bool { self.uring?.registeredRingDescriptor ?? false }

    /// io_uring's feature flags; none for the readiness engine.
    var features: UInt32 { self.uring?.features ?? 0 }

    /// The ring's own wake-up eventfd: the readiness engine keeps its registration for good.
    func adoptWakeUpDescriptor(_ fd: CInt) {
        self.readiness?.persistentFD = fd
    }

    // MARK: Submitting

    /// Hands a request to the engine for the next flush: an SQE for io_uring, a queued request
    /// for the readiness engine. False when io_uring's submission queue is full: flush, then
    /// push again.
    @inline(__always)
    func push(_ request: RingRequest, userData: UInt64) -> Bool {
        if let engine = self.readiness {
            engine.push(request, userData: userData)
            return true
        }
        guard let sqe = self.uring.unsafelyUnwrapped.nextSQE() else { return false }
        request.prepare(sqe, userData: userData)
        return true
    }

    /// Whether `count` requests can be pushed now without a flush (always, for the readiness
    /// engine).
    @inline(__always)
    func hasSubmissionSpace(_ count: UInt32) -> Bool {
        guard let uring = self.uring else { return true }
        return uring.submissionSpaceLeft >= count
    }

    /// Pushes `first` and `second` as a chain: `second` starts once `first` has completed in
    /// full; a `first` that fails or comes up short ends `second` with ECANCELED
    /// (IOSQE_IO_LINK; the readiness engine runs the same rule).
    ///
    /// - Precondition: ``hasSubmissionSpace(_:)`` for 2: a chain cut by a flush between its
    ///   entries is no chain.
    func pushLinked(
        _ first: RingRequest,
        userData firstUserData: UInt64,
        then second: RingRequest,
        userData secondUserData: UInt64
    ) {
        if let engine = self.readiness {
            engine.push(first, userData: firstUserData, linkedToNext: true)
            engine.push(second, userData: secondUserData)
            return
        }
        let uring = self.uring.unsafelyUnwrapped
        guard let firstEntry = uring.nextSQE(), let secondEntry = uring.nextSQE() else {
            preconditionFailure("RingIO: a linked pair pushed without room for both")
        }
        first.prepareLinkedToNext(firstEntry, userData: firstUserData)
        second.prepare(secondEntry, userData: secondUserData)
    }

    /// Submits what was pushed and, when `wait`, waits for a completion. Returns how many
    /// requests were submitted.
    ///
    /// - Throws: `EBUSY`/`EAGAIN` when io_uring's completion queue overflowed: reap, then
    ///   call again.
    @inline(__always)
    func submit(wait: Bool) throws(Errno) -> Int {
        if let engine = self.readiness { return try engine.submit(wait: wait) }
        return try self.uring.unsafelyUnwrapped.submit(wait: wait)
    }

    // MARK: Completing

    /// Copies up to `buffer.count` ready completions into `buffer`.
    @inline(__always)
    func reap(into buffer: UnsafeMutableBufferPointer<RingCompletion>) -> Int {
        if let engine = self.readiness { return engine.reap(into: buffer) }
        return self.uring.unsafelyUnwrapped.reap(into: buffer)
    }

    /// Whether completions wait in io_uring's overflow list (never on the readiness engine).
    @inline(__always)
    var hasOverflow: Bool {
        self.uring?.hasOverflow ?? false
    }

    // MARK: Descriptors and buffers

    /// The ring's user is done with `fd`: the readiness engine lets go of its registration
    /// (io_uring registers nothing).
    func forget(_ fd: CInt) {
        self.readiness?.forget(fd)
    }

    func registerBufferRing(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        if let engine = self.readiness { return try engine.registerBufferRing(entries: entries, group: group) }
        return try self.uring.unsafelyUnwrapped.registerBufferRing(entries: entries, group: group)
    }

    func unregisterBufferRing(_ handle: _BufferRingHandle) {
        if let engine = self.readiness {
            engine.unregisterBufferRing(handle)
        } else {
            self.uring.unsafelyUnwrapped.unregisterBufferRing(handle)
        }
    }

    /// Tears the engine down.
    func close() {
        if let engine = self.readiness {
            engine.close()
        } else {
            self.uring.unsafelyUnwrapped.close()
        }
    }
}
