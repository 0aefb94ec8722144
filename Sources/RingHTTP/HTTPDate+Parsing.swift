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

extension HTTPDate {
    /// The time an HTTP-date names, in whole seconds since 1970-01-01 00:00:00 UTC; `nil`
    /// when `text` is not an HTTP-date.
    ///
    /// Accepts the three formats RFC 9110 §5.6.7 requires a recipient to accept:
    ///
    ///     HTTPDate.secondsSince1970(parsing: "Sun, 06 Nov 1994 08:49:37 GMT".utf8)    // IMF-fixdate
    ///     HTTPDate.secondsSince1970(parsing: "Sunday, 06-Nov-94 08:49:37 GMT".utf8)   // obsolete RFC 850
    ///     HTTPDate.secondsSince1970(parsing: "Sun Nov  6 08:49:37 1994".utf8)         // asctime
    ///     // all three: 784_111_777
    ///
    /// Names of days and months are matched case-sensitively, as the grammar spells them; the
    /// day of the week must be a day's name but is not checked against the date. The day of
    /// the month must exist in its month (no 30 February), hours run to 23, minutes to 59,
    /// seconds to 60 (a leap second, counted as the next second's first). An RFC 850 date's
    /// two-digit year is taken in the current century unless that is more than 50 years
    /// ahead of now, then in the one before. Anything else — other spacing, another zone than
    /// `GMT`, surrounding whitespace — is not an HTTP-date: for `If-Modified-Since` a server
    /// then ignores the field.
    ///
    /// - Parameter text: The field value's bytes, such as `String.utf8` or a `ByteRope`.
    /// - Returns: The seconds since 1970, or `nil`.
    /// - Complexity: O(1): at most 33 bytes are looked at; no allocation.
    public static func secondsSince1970(parsing text: some Sequence<UInt8>) -> Int? {
        Self.secondsSince1970(parsing: text, currentYear: nil)
    }

    /// ``secondsSince1970(parsing:)`` with the current year given, for the RFC 850 format's
    /// two-digit years (`nil`: read the clock when a date needs it).
    package static func secondsSince1970(parsing text: some Sequence<UInt8>, currentYear: Int?) -> Int? {
        // The longest HTTP-date: "Wednesday, 09-Nov-94 08:49:37 GMT".
        let longest = 33
        return withUnsafeTemporaryAllocation(byteCount: longest, alignment: 1) { buffer -> Int? in
            var count = 0
            for byte in text {
                guard count < longest else { return nil }
                buffer[count] = byte
                count += 1
            }
            var cursor = _DateCursor(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            return cursor.parse(currentYear: currentYear)
        }
    }

    /// The day number (days since 1970-01-01, negative before) of a civil date in the
    /// proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The number of days in `month` (1...12) of `year`.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// The current year (UTC), from the realtime clock.
    static func currentYear() -> Int {
        var now = time_t(Self.currentSecond())
        var parts = tm()
        _ = gmtime_r(&now, &parts)
        return Int(parts.tm_year) + 1900
    }
}

/// Reads one HTTP-date out of at most 33 bytes.
private struct _DateCursor {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private static let shortDays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    mutating func parse(currentYear: Int?) -> Int? {
        // The day's name decides the format: "Sun," (IMF-fixdate), "Sunday," (RFC 850) or
        // "Sun " (asctime).
        var nameLength = 0
        while nameLength < self.bytes.count, Self.isLetter(self.bytes[nameLength]) { nameLength += 1 }
        guard nameLength < self.bytes.count else { return nil }
        let separator = self.bytes[nameLength]
        if nameLength == 3 && separator == UInt8(ascii: ",") {
            return self.imfFixdate()
        } else if nameLength > 3 && separator == UInt8(ascii: ",") {
            return self.rfc850(currentYear: currentYear)
        } else if nameLength == 3 && separator == UInt8(ascii: " ") {
            return self.asctime()
        }
        return nil
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private mutating func imfFixdate() -> Int? {
        guard self.name(Self.shortDays) != nil, self.literal(", "),
            let day = self.digits(2), self.literal(" "),
            let month = self.name(Self.months), self.literal(" "),
            let year = self.digits(4), self.literal(" "),
            let time = self.timeOfDay(), self.literal(" GMT"), self.atEnd
        else { return nil }
        return Self.seconds(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private mutating func rfc850(currentYear: Int?) -> Int? {
        guard self.name(Self.longDays) != nil, self.literal(", "),
            let day = self.digits(2), self.literal("-"),
            let month = self.name(Self.months), self.literal("-"),
            let shortYear = self.digits(2), self.literal(" "),
            let time = self.timeOfDay(), self.literal(" GMT"), self.atEnd
        else { return nil }
        // RFC 9110 §5.6.7: a year more than 50 years ahead is the most recent past one with
        // the same last two digits.
        let now = currentYear ?? HTTPDate.currentYear()
        var year = now - now % 100 + shortYear
        if year > now + 50 { year -= 100 }
        return Self.seconds(year: year, month: month + 1, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day of the month padded with a space, not a zero)
    private mutating func asctime() -> Int? {
        guard self.name(Self.shortDays) != nil, self.literal(" "),
            let month = self.name(Self.months), self.literal(" ")
        else { return nil }
        let day: Int
        if self.literal(" ") {
            guard let single = self.digits(1) else { return nil }
            day = single
        } else {
            guard let double = self.digits(2) else { return nil }
            day = double
        }
        guard self.literal(" "), let time = self.timeOfDay(), self.literal(" "),
            let year = self.digits(4), self.atEnd
        else { return nil }
        return Self.seconds(year: year, month: month + 1, day: day, time: time)
    }

    /// `08:49:37`, as seconds into the day.
    private mutating func timeOfDay() -> Int? {
        guard let hour = self.digits(2), self.literal(":"),
            let minute = self.digits(2), self.literal(":"),
            let second = self.digits(2),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        return hour * 3_600 + minute * 60 + second
    }

    private static func seconds(year: Int, month: Int, day: Int, time: Int) -> Int? {
        guard day >= 1, day <= HTTPDate.daysIn(month: month, year: year) else { return nil }
        return HTTPDate.days(year: year, month: month, day: day) * 86_400 + time
    }

    private var atEnd: Bool { self.index == self.bytes.count }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
    }

    /// Exactly `count` decimal digits.
    private mutating func digits(_ count: Int) -> Int? {
        guard self.bytes.count - self.index >= count else { return nil }
        var value = 0
        for _ in 0..<count {
            let byte = self.bytes[self.index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            self.index += 1
        }
        return value
    }

    /// Consumes `text` when the bytes at the cursor are exactly it.
    private mutating func literal(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard self.bytes.count - self.index >= count else { return false }
        for offset in 0..<count where self.bytes[self.index + offset] != text.utf8Start[offset] {
            return false
        }
        self.index += count
        return true
    }

    /// The index in `names` of the letters at the cursor (the whole run of letters must be
    /// one of them).
    private mutating func name(_ names: [String]) -> Int? {
        var end = self.index
        while end < self.bytes.count, Self.isLetter(self.bytes[end]) { end += 1 }
        let word = UnsafeRawBufferPointer(rebasing: self.bytes[self.index..<end])
        guard let found = names.firstIndex(where: { $0.utf8.elementsEqual(word) }) else { return nil }
        self.index = end
        return found
    }
}
