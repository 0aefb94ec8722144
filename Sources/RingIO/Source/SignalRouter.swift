//===----------------------------------------------------------------------===//
// RingIO — event sources: catching signals for signal sources.
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
/// Async-signal safety: the handler only loads descriptor numbers from `slots` (plain memory,
/// allocated before any handler is installed, never freed) and calls `write(2)`, saving and
/// restoring `errno`. A slot is emptied (-1) before its source lets its eventfd go, and the
/// eventfd is not closed but kept for the next registration (drained first): a handler still
/// holding the old number writes to a descriptor that is still an eventfd of ours.
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

    private static let state = Mutex(State())

    /// Registers a source for `signal`: its eventfd counts the signal from now on.
    static func register(_ signal: CInt) -> Registration? {
        let slots = _signalSlots
        return self.state.withLock { state -> Registration? in
            let base = Int(signal) * slotsPerSignal
            guard let slot = (0..<slotsPerSignal).first(where: { slots[base + $0] < 0 }) else {
                preconditionFailure("IOSource.signal(\(signal)): more than \(slotsPerSignal) sources watch this signal")
            }
            let eventFD: CInt
            if let spare = state.spareEventFDs.popLast() {
                eventFD = spare
                drain(eventFD)
            } else {
                guard let made = try? _EventFD.make() else { return nil }
                eventFD = made
            }
            slots[base + slot] = eventFD
            if var watching = state.watchers[signal] {
                watching.count += 1
                state.watchers[signal] = watching
            } else {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = _signalHandler
                action.sa_flags = SA_RESTART
                sigemptyset(&action.sa_mask)
                var previous = sigaction()
                sigaction(signal, &action, &previous)
                state.watchers[signal] = (1, previous)
            }
            return Registration(signal: signal, slot: slot, eventFD: eventFD)
        }
    }

    /// Stops counting `registration`'s signal; the last source restores the disposition.
    static func unregister(_ registration: Registration) {
        let slots = _signalSlots
        self.state.withLock { state in
            slots[Int(registration.signal) * slotsPerSignal + registration.slot] = -1
            state.spareEventFDs.append(registration.eventFD)
            guard var watching = state.watchers[registration.signal] else { return }
            watching.count -= 1
            if watching.count == 0 {
                var previous = watching.previous
                sigaction(registration.signal, &previous, nil)
                state.watchers[registration.signal] = nil
            } else {
                state.watchers[registration.signal] = watching
            }
        }
    }

    /// Empties an eventfd's counter without blocking.
    private static func drain(_ eventFD: CInt) {
        var descriptor = pollfd(fd: eventFD, events: Int16(POLLIN), revents: 0)
        var value: UInt64 = 0
        while poll(&descriptor, 1, 0) == 1 && read(eventFD, &value, 8) == 8 {}
    }
}

/// The eventfds of the sources watching each signal (-1: none): `signalLimit × slotsPerSignal`
/// entries, read by the signal handler. Allocated once, never freed.
nonisolated(unsafe) private let _signalSlots: UnsafeMutablePointer<CInt> = {
    let count = Int(_SignalRouter.signalLimit) * _SignalRouter.slotsPerSignal
    let slots = UnsafeMutablePointer<CInt>.allocate(capacity: count)
    slots.initialize(repeating: -1, count: count)
    return slots
}()

/// Adds 1 to the eventfd of every source watching `signal`. Async-signal-safe (see above).
private let _signalHandler: @convention(c) (CInt) -> Void = { signal in
    let savedErrno = errno
    var one: UInt64 = 1
    let base = Int(signal) * _SignalRouter.slotsPerSignal
    for index in 0..<_SignalRouter.slotsPerSignal {
        let eventFD = _signalSlots[base + index]
        if eventFD >= 0 { _ = write(eventFD, &one, 8) }
    }
    errno = savedErrno
}
