import Foundation

/// An `If-Match` condition on a resource's version.
public enum VersionPrecondition: Hashable, Sendable {
    /// `*`: the resource must exist.
    case any
    /// The current version must be one of these.
    case oneOf([Int])

    /// Whether `version` satisfies the condition.
    public func matches(_ version: Int) -> Bool {
        switch self {
        case .any: true
        case .oneOf(let versions): versions.contains(version)
        }
    }
}
