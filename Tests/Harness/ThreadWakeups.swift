import Foundation

/// Every thread of a process by name, with how often it has slept and been woken so far
/// (`voluntary_ctxt_switches` in /proc/<pid>/task/<tid>/status): a count of wake-ups that the
/// machine's noise cannot blur, as latency figures are blurred on a shared virtual machine.
public struct ThreadWakeups: Sendable {
    /// Thread name → voluntary context switches, summed over threads of the same name.
    public let byThread: [String: Int]

    public init(pid: Int32) {
        var counts: [String: Int] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for tid in tasks {
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8),
                  let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("voluntary_ctxt_switches:") }),
                  let count = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else { continue }
            counts[Self.family(name.trimmingCharacters(in: .whitespacesAndNewlines)), default: 0] += count
        }
        byThread = counts
    }

    /// NIO names each event loop thread by its number: one family for all of them.
    private static func family(_ name: String) -> String {
        name.hasPrefix("NIO-ELT-") ? "NIO-ELT-*" : name
    }

    /// Wake-ups per unit between `before` and `after`, by thread, for threads that woke at all.
    public static func perUnit(from before: ThreadWakeups, to after: ThreadWakeups, units: Int) -> [String: Double] {
        var result: [String: Double] = [:]
        for (name, count) in after.byThread {
            let woken = count - (before.byThread[name] ?? 0)
            if woken > 0 { result[name] = Double(woken) / Double(max(1, units)) }
        }
        return result
    }
}
