import NIOConcurrencyHelpers

/// The store's running tasks, cancelled together (also from `deinit`, which runs on no actor).
final class TaskBag: Sendable {
    private let tasks = NIOLockedValueBox<[Task<Void, Never>]>([])

    var isEmpty: Bool { tasks.withLockedValue { $0.isEmpty } }

    func add(_ task: Task<Void, Never>) {
        tasks.withLockedValue { $0.append(task) }
    }

    func cancelAll() {
        let all = tasks.withLockedValue { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in all { task.cancel() }
    }
}
