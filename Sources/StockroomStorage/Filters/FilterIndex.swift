import StockroomCore

/// The open feeds' item filters, indexed the way a message broker indexes subscriptions: by the
/// equality terms (`field = value`, `field in (…)`) and the quantity ranges (`quantity >= n`, …)
/// each filter needs to hold. For a written item, `candidates(for:)` looks up only the filters
/// whose indexed term the item satisfies (plus those with no indexable term); the caller checks
/// each candidate with `ItemFilter.matches`. A write costs what the filters it may match cost, not
/// one evaluation per open filter.
///
/// A filter is indexed by one term that every item it matches must satisfy: for an `and`, one of
/// its operands' terms; for an `or`, a term for every branch (the filter is registered under each);
/// a filter where some branch has none (`not …`, `name ^= …`, `quantity != …`) is checked for
/// every item.
public struct FilterIndex<Key: Hashable & Sendable>: Sendable {
    /// A term an item must satisfy for the filter to match.
    enum Term: Hashable, Sendable {
        case equal(ItemFilter.Field, ItemFilter.Value)
        /// `quantity >= n`.
        case atLeast(Int64)
        /// `quantity <= n`.
        case atMost(Int64)
    }

    private var equal: [ItemFilter.Field: [ItemFilter.Value: Set<Key>]] = [:]
    /// `quantity >= n` terms: a quantity q satisfies those with n <= q.
    private var lower = SortedBounds<Key>()
    /// `quantity <= n` terms: a quantity q satisfies those with n >= q.
    private var upper = SortedBounds<Key>()
    private var unindexed: Set<Key> = []
    private var terms: [Key: [Term]] = [:]

    public init() {}

    /// The number of filters indexed.
    public var count: Int { terms.count + unindexed.count }

    /// Adds (or replaces) `key`'s filter.
    public mutating func insert(_ filter: ItemFilter, for key: Key) {
        remove(key)
        guard let needed = Self.terms(of: filter) else {
            unindexed.insert(key)
            return
        }
        terms[key] = needed
        for term in needed {
            switch term {
            case .equal(let field, let value): equal[field, default: [:]][value, default: []].insert(key)
            case .atLeast(let bound): lower.insert(bound, key: key)
            case .atMost(let bound): upper.insert(bound, key: key)
            }
        }
    }

    /// Removes `key`'s filter, if any.
    public mutating func remove(_ key: Key) {
        if unindexed.remove(key) != nil { return }
        guard let old = terms.removeValue(forKey: key) else { return }
        for term in old {
            switch term {
            case .equal(let field, let value):
                equal[field]?[value]?.remove(key)
                if equal[field]?[value]?.isEmpty == true { equal[field]?[value] = nil }
            case .atLeast(let bound): lower.remove(bound, key: key)
            case .atMost(let bound): upper.remove(bound, key: key)
            }
        }
    }

    /// The filters `item` may match: every filter it matches is among them.
    public func candidates(for item: Item) -> Set<Key> {
        var found = unindexed
        for field in ItemFilter.Field.allCases {
            guard let byValue = equal[field], let value = field.value(of: item), let keys = byValue[value] else { continue }
            found.formUnion(keys)
        }
        if case .inStock(let quantity) = item.status {
            let q = Int64(quantity)
            lower.collect(atMost: q, into: &found)
            upper.collect(atLeast: q, into: &found)
        }
        return found
    }

    /// The terms, one of which every item the filter matches satisfies; nil when there are none.
    static func terms(of filter: ItemFilter) -> [Term]? {
        switch filter {
        case .comparison(let field, .equal, let value): return [.equal(field, value)]
        // Quantities are integers: `> n` is `>= n + 1`, `< n` is `<= n - 1` (none past Int64's ends).
        case .comparison(.quantity, .greater, .integer(let bound)): return bound == .max ? [] : [.atLeast(bound + 1)]
        case .comparison(.quantity, .greaterOrEqual, .integer(let bound)): return [.atLeast(bound)]
        case .comparison(.quantity, .less, .integer(let bound)): return bound == .min ? [] : [.atMost(bound - 1)]
        case .comparison(.quantity, .lessOrEqual, .integer(let bound)): return [.atMost(bound)]
        case .oneOf(let field, let values): return values.map { .equal(field, $0) }
        case .and(let operands):
            // The operand with the fewest terms: each of its terms alone implies nothing of the others.
            return operands.compactMap(terms(of:)).min { $0.count < $1.count }
        case .or(let branches):
            var all: [Term] = []
            for branch in branches {
                guard let branchTerms = terms(of: branch) else { return nil }
                all += branchTerms
            }
            return all
        case .not, .comparison:
            return nil
        }
    }
}

/// Bounds kept sorted, each with the keys whose filter holds it, for the range lookups.
struct SortedBounds<Key: Hashable & Sendable>: Sendable {
    /// The distinct bounds, ascending.
    private var bounds: [Int64] = []
    private var keys: [Int64: Set<Key>] = [:]

    mutating func insert(_ bound: Int64, key: Key) {
        if keys[bound] == nil { bounds.insert(bound, at: firstIndex(above: bound - (bound == .min ? 0 : 1))) }
        keys[bound, default: []].insert(key)
    }

    mutating func remove(_ bound: Int64, key: Key) {
        keys[bound]?.remove(key)
        guard keys[bound]?.isEmpty == true else { return }
        keys[bound] = nil
        bounds.remove(at: firstIndex(above: bound) - 1)
    }

    /// Adds the keys of every bound <= `value`.
    func collect(atMost value: Int64, into found: inout Set<Key>) {
        for bound in bounds[..<firstIndex(above: value)] { found.formUnion(keys[bound] ?? []) }
    }

    /// Adds the keys of every bound >= `value`.
    func collect(atLeast value: Int64, into found: inout Set<Key>) {
        let start = value == .min ? 0 : firstIndex(above: value - 1)
        for bound in bounds[start...] { found.formUnion(keys[bound] ?? []) }
    }

    /// The index of the first bound greater than `value` (binary search).
    private func firstIndex(above value: Int64) -> Int {
        var low = 0
        var high = bounds.count
        while low < high {
            let middle = (low + high) / 2
            if bounds[middle] <= value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
