import Foundation
import Synchronization

/// The store's running tasks, cancelled together (also from `deinit`, which runs on no actor).
final class TaskBag: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    var isEmpty: Bool { tasks.withLock { $0.isEmpty } }

    func add(_ task: Task<Void, Never>) {
        tasks.withLock { $0.append(task) }
    }

    func cancelAll() {
        let all = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in all { task.cancel() }
    }
}
