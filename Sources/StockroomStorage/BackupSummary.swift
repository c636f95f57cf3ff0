import Foundation

/// What a verified copy holds.
public struct BackupSummary: Sendable {
    /// The copy's size in pages and bytes.
    public var pages: Int
    public var bytes: Int
    /// The last migration applied to the copy.
    public var migration: String
    /// The copy's database epoch (new after a restore).
    public var epoch: String

    public init(pages: Int, bytes: Int, migration: String, epoch: String) {
        self.pages = pages
        self.bytes = bytes
        self.migration = migration
        self.epoch = epoch
    }
}
