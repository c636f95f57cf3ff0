import Foundation
import StockroomCore
import StockroomWire

/// A filter changed in place (`GET /v1/snapshot?filter=NEW&fromFilter=OLD&since=C`): what a client
/// holding the items that matched OLD at C needs to hold those matching NEW at `cursor`, without a
/// refetch. Applied (items upserted, removed ids dropped) and followed by `filter=NEW` from
/// `cursor`, it leaves the client exactly the items matching NEW.
public struct Refilter: Hashable, Sendable {
    /// The items matching NEW that the client does not hold as they are now: moved in, or changed
    /// since C. Items matching both filters and unchanged since C are not sent again.
    public var items: [Item]
    /// Ids the client may hold that do not match NEW: it drops those it has.
    public var removed: [ItemID]
    /// Where to follow `filter=NEW` from.
    public var cursor: FeedCursor

    public init(items: [Item], removed: [ItemID], cursor: FeedCursor) {
        self.items = items
        self.removed = removed
        self.cursor = cursor
    }
}

/// A `Refilter` gathered one live item at a time, in creation order (`RefilterRules`): a backend
/// reading its rows through a cursor holds the answer's items, not every live item.
package struct RefilterBuilder {
    private var rules: RefilterRules
    private var items: [Item] = []
    private var removed: [ItemID] = []

    package init(changed: Set<String>, from old: ItemFilter?, to new: ItemFilter?) {
        rules = RefilterRules(changed: changed, from: old, to: new)
    }

    package mutating func add(_ item: Item) {
        switch rules.verdict(item) {
        case .send: items.append(item)
        case .remove: removed.append(item.id)
        case .keep: break
        }
    }

    /// The answer, once every live item was added.
    package func finish(cursor: FeedCursor) -> Refilter {
        Refilter(items: items, removed: removed + rules.changedNotSent(), cursor: cursor)
    }
}

/// The rules, once for every backend, over what one consistent read gives: every live item in
/// creation order, taken one at a time so that no backend holds them all, and the ids of the items
/// with a change after C.
///
/// A client at C holds exactly the items that matched OLD at C. An item unchanged since C is as
/// it was then: held iff it matches OLD now. So the live items matching NEW are sent unless held
/// and unchanged; the unchanged ones matching OLD and not NEW are removed; and every changed id
/// that is not now a live item matching NEW is removed (the client may hold it).
package struct RefilterRules {
    package enum Verdict { case send, remove, keep }

    let changed: Set<String>
    let old: ItemFilter?
    let new: ItemFilter?
    /// The changed ids a live item matching NEW took.
    private var sentChanged: Set<String> = []

    package init(changed: Set<String>, from old: ItemFilter?, to new: ItemFilter?) {
        self.changed = changed
        self.old = old
        self.new = new
    }

    package mutating func verdict(_ item: Item) -> Verdict {
        let matchesOld = old?.matches(item) ?? true
        let matchesNew = new?.matches(item) ?? true
        let isChanged = !changed.isEmpty && changed.contains(item.id.description)
        if matchesNew {
            if isChanged { sentChanged.insert(item.id.description) }
            return isChanged || !matchesOld ? .send : .keep
        }
        return !isChanged && matchesOld ? .remove : .keep
    }

    /// Every changed id that is not now a live item matching NEW (the client may hold it), sorted.
    package func changedNotSent() -> [ItemID] {
        changed.sorted().compactMap { id in sentChanged.contains(id) ? nil : ItemID(id) }
    }
}

/// A refilter's answer, `{"items": [Item], "removed": [id], "cursor"}` (the bytes
/// `Refilter`'s JSON has), written as the live items are read: the items go out in chunks of about
/// `ItemStreamEncoding.chunkBytes`, the removed ids (a few bytes each) wait for the end.
package struct RefilterStreamWriter {
    private var rules: RefilterRules
    private var chunk = JSONWriter(capacity: ItemStreamEncoding.chunkBytes + 4096)
    private var removed = JSONWriter(capacity: 1024)
    private var firstItem = true

    package init(changed: Set<String>, from old: ItemFilter?, to new: ItemFilter?) {
        rules = RefilterRules(changed: changed, from: old, to: new)
        chunk.raw(#"{"items":["#)
    }

    /// Takes one live item; returns a chunk to send once enough has gathered.
    package mutating func add(_ item: Item) -> [UInt8]? {
        switch rules.verdict(item) {
        case .send:
            if firstItem { firstItem = false } else { chunk.raw(",") }
            item.write(to: &chunk)
            guard chunk.bytes.count >= ItemStreamEncoding.chunkBytes else { return nil }
            defer { chunk.removeAll() }
            return chunk.bytes
        case .remove:
            append(removed: item.id)
        case .keep:
            break
        }
        return nil
    }

    /// The rest of the answer, once every live item was added.
    package mutating func finish(cursor: FeedCursor) -> [UInt8] {
        for id in rules.changedNotSent() { append(removed: id) }
        chunk.raw(#"],"removed":["#)
        chunk.raw(json: removed.bytes)
        chunk.raw(#"],"cursor":"#)
        chunk.string(cursor.encoded)
        chunk.raw("}")
        return chunk.bytes
    }

    private mutating func append(removed id: ItemID) {
        if !removed.bytes.isEmpty { removed.raw(",") }
        removed.itemID(id)
    }
}
