//===----------------------------------------------------------------------===//
// RingIO — RingHTTP tests: reading HTTP-dates (IMF-fixdate, RFC 850, asctime).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import ByteRopes
import RingHTTP
import RingIOTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("HTTPDate parsing")
struct HTTPDateParsingTests {
    @Test(
        "RFC 9110's three formats of its example date, and other known dates",
        arguments: [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
            ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
            ("Sun Nov  6 08:49:37 1994", 784_111_777),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
            ("Tue, 29 Feb 2000 00:00:00 GMT", 951_782_400),
            ("Tue Feb 29 00:00:00 2000", 951_782_400),
            ("Tuesday, 14-Nov-23 22:13:20 GMT", 1_700_000_000),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
            ("Sat, 01 Jan 0000 00:00:00 GMT", -62_167_219_200),
            // A leap second counts as the next second's first.
            ("Sat, 31 Dec 2016 23:59:60 GMT", 1_483_228_800),
        ]
    )
    func known(text: String, seconds: Int) {
        #expect(HTTPDate.secondsSince1970(parsing: text.utf8, currentYear: 2026) == seconds)
        #expect(HTTPDate.secondsSince1970(parsing: ByteRope(copying: text.utf8), currentYear: 2026) == seconds)
    }

    @Test(
        "Not HTTP-dates",
        arguments: [
            "", "garbage", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37 +0000", " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 23:60:00 GMT",
            "Sun, 06 Nov 1994 23:59:61 GMT", "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
            "Mon, 29 Feb 1900 00:00:00 GMT", "Fun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 06 08:49:37 1994 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94",
            "Sun, 06 Nov 1994 08:49:37 GMTX", "Wednesday, 09-Nov-94 08:49:37 GMT and more",
            "1994-11-06T08:49:37Z", "784111777",
        ]
    )
    func invalid(text: String) {
        #expect(HTTPDate.secondsSince1970(parsing: text.utf8, currentYear: 2026) == nil, "\(text.debugDescription)")
    }

    @Test("An RFC 850 year more than 50 years ahead is taken in the century before")
    func twoDigitYears() {
        // In 2026: 76 is 2076 (50 years ahead), 77 is 1977.
        #expect(
            HTTPDate.secondsSince1970(parsing: "Wednesday, 01-Jan-76 00:00:00 GMT".utf8, currentYear: 2026)
                == 3_345_062_400
        )
        #expect(
            HTTPDate.secondsSince1970(parsing: "Saturday, 01-Jan-77 00:00:00 GMT".utf8, currentYear: 2026)
                == 220_924_800
        )
        // Without a year given, the clock's year decides; this one is in the past either way.
        #expect(HTTPDate.secondsSince1970(parsing: "Sunday, 06-Nov-94 08:49:37 GMT".utf8) == 784_111_777)
    }

    @Test("Reads back every date it writes, over 1901...2100")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let seconds = Int.random(in: -2_208_988_800...4_102_444_799, using: &generator)
            let text = HTTPDate.string(secondsSince1970: seconds)
            #expect(HTTPDate.secondsSince1970(parsing: text.utf8) == seconds, "\(text)")
        }
    }
}
