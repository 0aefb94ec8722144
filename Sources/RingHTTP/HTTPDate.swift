//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Dates in the IMF-fixdate format of HTTP (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// The current date is formatted at most once per second on each thread: the response
/// writer's `Date` field costs a clock read (`CLOCK_REALTIME`, so the second turns when the
/// clock's does) and a 29-byte copy from the thread's cache — no lock, no memory shared
/// between the threads (the rings) that write responses.
///
///     HTTPDate.string(secondsSince1970: 784_111_777)   // "Sun, 06 Nov 1994 08:49:37 GMT"
public enum HTTPDate {
    /// The length of every IMF-fixdate: 29 bytes.
    public static let length = 29

    /// The IMF-fixdate for a time in whole seconds since 1970-01-01 00:00:00 UTC.
    ///
    /// - Parameter secondsSince1970: The time; clamped to the years 0000 through 9999.
    /// - Complexity: O(1); the result needs one allocation (29 bytes do not fit a small
    ///   string).
    public static func string(secondsSince1970: Int) -> String {
        withUnsafeTemporaryAllocation(byteCount: Self.length, alignment: 1) { buffer in
            Self.write(secondsSince1970: secondsSince1970, to: buffer.baseAddress!)
            return String(decoding: UnsafeRawBufferPointer(buffer), as: UTF8.self)
        }
    }

    /// The IMF-fixdate for the current time, from the per-second cache.
    ///
    /// - Complexity: O(1).
    public static var now: String {
        withUnsafeTemporaryAllocation(byteCount: Self.length, alignment: 1) { buffer in
            Self.writeNow(to: buffer.baseAddress!)
            return String(decoding: UnsafeRawBufferPointer(buffer), as: UTF8.self)
        }
    }

    /// The current whole second since 1970, from the realtime clock.
    ///
    /// `clock_gettime(CLOCK_REALTIME)`, not `time()`: glibc's `time()` reads the coarse clock,
    /// which lags the realtime clock by up to a timer tick and would date the first
    /// milliseconds of a second with the one before.
    static func currentSecond() -> Int {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int(now.tv_sec)
    }

    /// Writes the date for the current second (29 bytes), formatting it only when the
    /// second has changed since this thread's last call.
    static func writeNow(to destination: UnsafeMutableRawPointer) {
        let now = Self.currentSecond()
        let stamp = _DateStamp.ofThisThread()
        if stamp.pointee.second != now {
            stamp.pointee.second = now
            withUnsafeMutableBytes(of: &stamp.pointee.bytes) {
                Self.write(secondsSince1970: now, to: $0.baseAddress!)
            }
        }
        withUnsafeBytes(of: stamp.pointee.bytes) {
            destination.copyMemory(from: $0.baseAddress!, byteCount: Self.length)
        }
    }

    /// Writes the 29 bytes of the IMF-fixdate for `secondsSince1970` to `destination`.
    static func write(secondsSince1970: Int, to destination: UnsafeMutableRawPointer) {
        // 0000-01-01T00:00:00Z ... 9999-12-31T23:59:59Z.
        let seconds = Swift.min(Swift.max(secondsSince1970, -62_167_219_200), 253_402_300_799)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400  // floor
        let secondOfDay = seconds - days * 86_400
        // 1970-01-01 was a Thursday (4, counting Sunday as 0).
        let weekday = ((days % 7) + 11) % 7

        // Civil date from a day count (Howard Hinnant's days_from_civil, inverted).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9  // 1...12
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        let out = destination.assumingMemoryBound(to: UInt8.self)
        let weekdays: StaticString = "SunMonTueWedThuFriSat"
        let months: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"
        func put(_ index: Int, _ byte: UInt8) { out[index] = byte }
        func twoDigits(_ index: Int, _ value: Int) {
            out[index] = UInt8(truncatingIfNeeded: 0x30 + value / 10)
            out[index + 1] = UInt8(truncatingIfNeeded: 0x30 + value % 10)
        }
        for i in 0..<3 {
            out[i] = weekdays.utf8Start[weekday * 3 + i]
            out[8 + i] = months.utf8Start[(month - 1) * 3 + i]
        }
        put(3, UInt8(ascii: ","))
        put(4, UInt8(ascii: " "))
        twoDigits(5, day)
        put(7, UInt8(ascii: " "))
        put(11, UInt8(ascii: " "))
        twoDigits(12, year / 100)
        twoDigits(14, year % 100)
        put(16, UInt8(ascii: " "))
        twoDigits(17, secondOfDay / 3600)
        put(19, UInt8(ascii: ":"))
        twoDigits(20, secondOfDay / 60 % 60)
        put(22, UInt8(ascii: ":"))
        twoDigits(23, secondOfDay % 60)
        put(25, UInt8(ascii: " "))
        put(26, UInt8(ascii: "G"))
        put(27, UInt8(ascii: "M"))
        put(28, UInt8(ascii: "T"))
    }
}

/// The last formatted second and its 29 bytes (in 32), one per thread.
struct _DateStamp {
    var second = Int.min
    var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// This thread's stamp, made at its first use and freed when the thread exits.
    ///
    /// The pointer is valid on this thread until it exits; it is never handed to another
    /// thread, so the stamp needs no lock.
    static func ofThisThread() -> UnsafeMutablePointer<_DateStamp> {
        let key = _dateKey.key
        if let stamp = pthread_getspecific(key) {
            return stamp.assumingMemoryBound(to: _DateStamp.self)
        }
        let stamp = UnsafeMutablePointer<_DateStamp>.allocate(capacity: 1)
        stamp.initialize(to: _DateStamp())
        pthread_setspecific(key, stamp)
        return stamp
    }
}

/// The thread-specific key of the date stamps; each thread's stamp is freed at its exit.
private struct _DateKey: @unchecked Sendable {
    // @unchecked: the key is written once, by the global's initialization, and only read
    // after it.
    let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        let result = pthread_key_create(&key) { stamp in
            #if canImport(Darwin)
            stamp.assumingMemoryBound(to: _DateStamp.self).deallocate()
            #else
            stamp?.assumingMemoryBound(to: _DateStamp.self).deallocate()
            #endif
        }
        precondition(result == 0, "HTTPDate: pthread_key_create failed (\(result))")
        self.key = key
    }
}

private let _dateKey = _DateKey()
