import Foundation

/// The app's top-level tabs.
public enum Tab: String, Hashable, Sendable, CaseIterable {
    case inventory
    case settings
}
