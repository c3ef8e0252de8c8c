import Synchronization

/// A call that did not answer within its deadline. Not a refusal: it is tried again.
public struct DeadlinePassed: Error, CustomStringConvertible {
    public var what: String
    public var seconds: Double
    public var description: String { "\(what) did not answer within \(seconds) s" }
}

/// Runs `body` in a task of its own and waits at most `seconds` for it, or until the caller is
/// cancelled. A call that cannot be cancelled (postgres-nio awaiting a promise that no one will
/// complete) is left behind, suspended: the caller goes on, and the call's task is its only
/// cost. A task group would wait for that child for ever, so the wait is a continuation
/// resumed once, by whichever comes first: the answer, the deadline or the cancellation.
func withinDeadline<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            race.wait(continuation)
            let work = Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                race.resume(result)
            }
            let timer = Task {
                try? await Task.sleep(for: .seconds(seconds))
                guard !Task.isCancelled else { return }
                race.resume(.failure(DeadlinePassed(what: what, seconds: seconds)))
            }
            race.started(work: work, timer: timer)
            // Cancelled before the handler could find the waiter.
            if Task.isCancelled { race.resume(.failure(CancellationError())) }
        }
    } onCancel: {
        race.resume(.failure(CancellationError()))
    }
}

/// Who resumes the waiter: the first of the answer, the deadline and the cancellation. The
/// others find it gone. Whatever resumes it stops the timer, and the work unless it answered.
private final class DeadlineRace<T: Sendable>: Sendable {
    private let state = Mutex<(waiter: CheckedContinuation<T, any Error>?, work: Task<Void, Never>?, timer: Task<Void, Never>?, done: Bool)>((nil, nil, nil, false))

    func wait(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0.waiter = continuation } }

    func started(work: Task<Void, Never>, timer: Task<Void, Never>) {
        let done = state.withLock { state -> Bool in
            state.work = work
            state.timer = timer
            return state.done
        }
        if done { timer.cancel() }
    }

    func resume(_ result: Result<T, any Error>) {
        let (waiter, work, timer) = state.withLock { state in
            defer {
                state.waiter = nil
                state.done = true
            }
            return (state.waiter, state.work, state.timer)
        }
        guard let waiter else { return }
        waiter.resume(with: result)
        timer?.cancel()
        if case .failure = result { work?.cancel() }
    }
}
