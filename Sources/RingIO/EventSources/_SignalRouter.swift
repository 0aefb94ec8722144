//===----------------------------------------------------------------------===//
// RingIO — event sources: catching signals for signal sources.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Routes signals to signal sources.
///
/// While at least one source watches a signal, RingIO's handler is installed for it (the
/// previous disposition is saved and restored when the last source goes). The handler adds 1
/// to the eventfd of every source watching the signal; each source keeps a ring read armed on
/// its eventfd, whose 8-byte counter is the number of signals since the last read — the
/// coalescing comes for free.
///
/// Async-signal safety: the handler only loads descriptor numbers from `slots` (lock-free
/// atomics, allocated before any handler is installed, never freed) and calls `write(2)`,
/// saving and restoring `errno`. Registrations store to the slots under `state`'s lock; the
/// handler, which may interrupt any thread — one holding that lock included — takes no lock and
/// loads them atomically, so there is no data race between a store and the handler's load. A
/// slot is emptied (-1) before its source lets its eventfd go, and the eventfd is not closed but
/// kept for the next registration (drained first): a handler still holding the old number writes
/// to a descriptor that is still an eventfd of ours.
internal enum _SignalRouter {
    /// Signals 1 ..< 65 (SIGRTMAX is 64 on Linux).
    static let signalLimit: CInt = 65
    /// Sources per signal.
    static let slotsPerSignal = 16

    struct Registration {
        let signal: CInt
        let slot: Int
        let eventFD: CInt
    }

    private struct State {
        /// Sources per signal, and the disposition to restore when the count drops to 0.
        var watchers: [CInt: (count: Int, previous: sigaction)] = [:]
        /// Eventfds no longer watching a signal, for reuse.
        var spareEventFDs: [CInt] = []
    }

    private static let state = _Lock(State())

    /// Registers a source for `signal`: its eventfd counts the signal from now on.
    static func register(_ signal: CInt) -> Registration? {
        let slots = _signalSlots
        return self.state.withLock { state -> Registration? in
            let base = Int(signal) * slotsPerSignal
            guard let slot = (0..<slotsPerSignal).first(where: { slots[base + $0].load(ordering: .relaxed) < 0 })
            else {
                preconditionFailure(
                    "IOSource.makeSignalSource(signal: \(signal)): more than \(slotsPerSignal) sources watch this signal"
                )
            }
            let eventFD: CInt
            if let spare = state.spareEventFDs.popLast() {
                eventFD = spare
                _EventFD.drain(eventFD)
            } else {
                guard let made = try? _EventFD.make() else { return nil }
                eventFD = made
            }
            // Releasing: a handler that loads the number sees a descriptor that is open.
            slots[base + slot].store(eventFD, ordering: .releasing)
            if var watching = state.watchers[signal] {
                watching.count += 1
                state.watchers[signal] = watching
            } else {
                let previous = _POSIX.setSignalHandler(signal, _signalHandler)
                state.watchers[signal] = (1, previous)
            }
            return Registration(signal: signal, slot: slot, eventFD: eventFD)
        }
    }

    /// Stops counting `registration`'s signal; the last source restores the disposition.
    static func unregister(_ registration: Registration) {
        let slots = _signalSlots
        self.state.withLock { state in
            slots[Int(registration.signal) * slotsPerSignal + registration.slot].store(-1, ordering: .releasing)
            state.spareEventFDs.append(registration.eventFD)
            guard var watching = state.watchers[registration.signal] else { return }
            watching.count -= 1
            if watching.count == 0 {
                _POSIX.restoreSignalAction(registration.signal, watching.previous)
                state.watchers[registration.signal] = nil
            } else {
                state.watchers[registration.signal] = watching
            }
        }
    }
}

/// The eventfds of the sources watching each signal (-1: none): `signalLimit × slotsPerSignal`
/// atomics, loaded by the signal handler. Allocated once, never freed (a handler may run at any
/// time while the process lives); the one allocation LeakSanitizer may see as still reachable.
///
/// `nonisolated(unsafe)`: the pointer itself is immutable once made; the memory it points to
/// is only accessed through the atomics.
nonisolated(unsafe) private let _signalSlots: UnsafeMutablePointer<Atomic<CInt>> = {
    let count = Int(_SignalRouter.signalLimit) * _SignalRouter.slotsPerSignal
    let slots = UnsafeMutablePointer<Atomic<CInt>>.allocate(capacity: count)
    for index in 0..<count { (slots + index).initialize(to: Atomic(-1)) }
    return slots
}()

/// Adds 1 to the eventfd of every source watching `signal`. Async-signal-safe (see above).
private let _signalHandler: @convention(c) (CInt) -> Void = { signal in
    let savedErrno = errno
    var one: UInt64 = 1
    let base = Int(signal) * _SignalRouter.slotsPerSignal
    for index in 0..<_SignalRouter.slotsPerSignal {
        let eventFD = _signalSlots[base + index].load(ordering: .acquiring)
        if eventFD >= 0 { _ = write(eventFD, &one, 8) }
    }
    errno = savedErrno
}
