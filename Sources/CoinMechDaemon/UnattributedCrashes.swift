import Foundation

/// The daemon's deaths that no link's breadcrumb explains, counted across starts in
/// `<state>/unattributed-crashes`. A plugin run in process that writes past its memory corrupts
/// the heap; the abort comes later, outside any plugin call, so the breadcrumb names no link
/// and each restart crashes again. After `limit` such deaths in a row the daemon starts with
/// every in-process link from outside the shipped set quarantined, and says why.
struct UnattributedCrashes {
    static let limit = 3
    let path: String

    init(stateDirectory: String) {
        path = "\(stateDirectory)/unattributed-crashes"
    }

    /// Counts the last run: one more if it died of a fatal signal outside any plugin call,
    /// else the count starts again. Returns the count in a row.
    func record(lastRunDiedOutsidePlugins died: Bool) -> Int {
        let before = (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        let now = died ? before + 1 : 0
        if now != before { write(now) }
        return now
    }

    /// After the suspects are quarantined: counting starts again.
    func reset() { write(0) }

    private func write(_ count: Int) {
        try? "\(count)\n".write(toFile: path, atomically: true, encoding: .utf8)
    }
}
