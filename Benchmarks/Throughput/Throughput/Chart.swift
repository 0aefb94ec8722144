//===----------------------------------------------------------------------===//
// RingIO — throughput comparison: the ratios as an SVG bar chart (hand-written SVG).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Foundation

/// Two panels, one row per workload and one bar per peer: the peer's throughput over RingIO's,
/// and its server CPU per operation over RingIO's, on a log₂ axis around RingIO (= 1).
enum RatioChart {
    static let palette: [String: String] = [
        "ringio-async": "#72b7b2", "uring": "#4c78a8", "nio": "#f58518", "nio-async": "#ffbf79",
        "dispatch": "#e45756", "nginx": "#54a24b", "hummingbird": "#b279a2", "dispatchio": "#e45756",
        "fio": "#4c78a8", "ringio-epoll": "#9d755d", "ringio-async-epoll": "#d8b5a5",
        "ringio-interval-epoll": "#bab0ac", "haproxy": "#54a24b", "nio-recvmmsg": "#ffbf79",
    ]
    static let width = 960.0
    static let labelWidth = 330.0
    static let plotWidth = 520.0
    static let barHeight = 13.0
    static let rowGap = 10.0
    /// The axis: 2^-4 … 2^4 (1/16 … 16); ratios beyond are drawn to the edge with their value.
    static let lowExponent = -4.0
    static let highExponent = 4.0

    static func svg(_ report: RunReport) -> String {
        var body = ""
        var y = 56.0
        body += self.text(
            x: 16,
            y: 28,
            "RingIO beside its peers: ratios to RingIO from one interleaved run (medians)",
            size: 16,
            weight: "bold"
        )
        body += self.text(
            x: 16,
            y: 46,
            "\(report.machine.cpu) · \(report.machine.cpus) CPUs · Linux \(report.machine.kernel) · "
                + "\(report.date) · `\(report.command)`",
            size: 11,
            fill: "#555"
        )
        for (title, cpu, note) in [
            ("Throughput ÷ RingIO's", false, "left of 1: slower than RingIO"),
            ("Server CPU per operation ÷ RingIO's", true, "right of 1: more CPU per operation than RingIO"),
        ] {
            y += 18
            body += self.text(x: 16, y: y, title, size: 14, weight: "bold")
            body += self.text(x: self.labelWidth, y: y, note, size: 11, fill: "#555")
            y += 10
            let top = y
            for workload in report.workloads {
                let base = report.base(workload)
                let peers = workload.servers.filter { $0.key != base }
                guard !peers.isEmpty else { continue }
                let rowHeight = Double(peers.count) * self.barHeight + self.rowGap
                body += self.text(x: 16, y: y + rowHeight / 2, workload.title, size: 12)
                for (index, peer) in peers.enumerated() {
                    let barTop = y + Double(index) * self.barHeight
                    guard let ratio = report.ratio(workload.key, peer.key, over: base, cpu: cpu), ratio > 0 else {
                        body += self.text(
                            x: self.x(1) + 4,
                            y: barTop + 10,
                            "\(peer.name): no figure",
                            size: 10,
                            fill: "#999"
                        )
                        continue
                    }
                    let (start, end) = (self.x(1), self.x(ratio))
                    let colour = self.palette[peer.key] ?? "#888"
                    body +=
                        "<rect x=\"\(f(min(start, end)))\" y=\"\(f(barTop + 1))\" width=\"\(f(max(1, abs(end - start))))\" "
                        + "height=\"\(f(self.barHeight - 2))\" fill=\"\(colour)\"><title>\(peer.name): "
                        + "\(Format.ratio(ratio))</title></rect>\n"
                    let labelX = end >= start ? end + 4 : end - 4
                    body += self.text(
                        x: labelX,
                        y: barTop + 10,
                        "\(peer.name) \(Format.ratio(ratio))",
                        size: 10,
                        anchor: end >= start ? "start" : "end"
                    )
                }
                y += rowHeight
            }
            body += self.axis(top: top - 4, bottom: y)
            y += 30
        }
        let height = y + 10
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(f(self.width))" height="\(f(height))" \
            viewBox="0 0 \(f(self.width)) \(f(height))" font-family="Helvetica, Arial, sans-serif">
            <rect width="100%" height="100%" fill="white"/>
            \(body)</svg>

            """
    }

    /// Grid lines at powers of two, RingIO's line at 1 drawn darker.
    private static func axis(top: Double, bottom: Double) -> String {
        var text = ""
        var exponent = self.lowExponent
        while exponent <= self.highExponent {
            let value = pow(2, exponent)
            let x = self.x(value)
            let isOne = exponent == 0
            text +=
                "<line x1=\"\(f(x))\" y1=\"\(f(top))\" x2=\"\(f(x))\" y2=\"\(f(bottom))\" "
                + "stroke=\"\(isOne ? "#222" : "#ddd")\" stroke-width=\"\(isOne ? 1.5 : 1)\"/>\n"
            let label = exponent >= 0 ? "\(Int(value))" : "1/\(Int(1 / value))"
            text += self.text(
                x: x,
                y: bottom + 12,
                isOne ? "RingIO = 1" : label,
                size: 10,
                anchor: "middle",
                fill: "#555"
            )
            exponent += 1
        }
        return text
    }

    /// The x coordinate of `ratio` (clamped to the axis).
    private static func x(_ ratio: Double) -> Double {
        let exponent = min(max(log2(ratio), self.lowExponent), self.highExponent)
        return self.labelWidth + (exponent - self.lowExponent) / (self.highExponent - self.lowExponent) * self.plotWidth
    }

    private static func text(
        x: Double,
        y: Double,
        _ content: String,
        size: Int,
        weight: String = "normal",
        anchor: String = "start",
        fill: String = "#111"
    ) -> String {
        let escaped = content.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
        return "<text x=\"\(f(x))\" y=\"\(f(y))\" font-size=\"\(size)\" font-weight=\"\(weight)\" "
            + "text-anchor=\"\(anchor)\" fill=\"\(fill)\">\(escaped)</text>\n"
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
