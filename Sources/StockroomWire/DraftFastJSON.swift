import StockroomCore

/// A type whose common JSON shape is read straight from the bytes, before `JSONDecoder` (which the
/// server's `decodeJSON` uses for whatever this does not take).
public protocol FastJSONDecodable: Decodable {
    /// The value of a JSON text of the type's common shape; nil for anything else, which the caller
    /// then decodes with `JSONDecoder`.
    init?(fastJSON bytes: UnsafeRawBufferPointer)
}

/// A draft read straight from the bytes of a request body, for the common shape only.
///
/// `JSONDecoder` is costly for the draft of three fields that item writes send: its generic
/// containers, the enum's keyed containers and the error bookkeeping. This reads
/// the shape clients send — `{"name": "…", "color": null | {"name": "…", "red": 0.5, "green": …,
/// "blue": …}, "status": {"inStock": {"quantity": 3}} | {"outOfStock": {"isOnBackOrder": true}}}`,
/// keys in any order, JSON whitespace anywhere — and gives up (nil) on anything else: escapes in a
/// string, an unknown, missing or repeated key, a number with an exponent, invalid UTF-8, trailing
/// bytes. The caller then decodes with `JSONDecoder`, so whatever this does not take gets exactly
/// the answer, value or error, that `JSONDecoder` gives; what it takes decodes to the same value
/// (`DraftFastJSONTests` holds it to that against `JSONDecoder`).
extension Draft: FastJSONDecodable {
    public init?(fastJSON bytes: UnsafeRawBufferPointer) {
        var scanner = FastJSONScanner(bytes)
        guard let draft = scanner.draft(), scanner.atEnd() else { return nil }
        self = draft
    }
}

extension Command {
    /// The command of a command request's body, `{"command": {"<name>": {…}}}`, read as `Draft`'s
    /// `init(fastJSON:)` reads a draft, for the commands of an edit: `openEdit`, `openDuplicate`,
    /// `openDeleteAlert` (`{"itemID": "…"}`), `updateDraft` (`{"draft": …}`) and those without
    /// fields (`{}`: `save`, `cancel`, `pop`, `popToRoot`, `openAdd`, `confirmDelete`). Nil for
    /// anything else, which the caller decodes with `JSONDecoder`.
    public init?(fastRequestJSON bytes: UnsafeRawBufferPointer) {
        var scanner = FastJSONScanner(bytes)
        guard let command = scanner.commandRequest(), scanner.atEnd() else { return nil }
        self = command
    }
}

/// A change read straight from the bytes of a feed message, as `Draft(fastJSON:)` reads a draft:
/// the item changes the feed sends (`ChangeJSON`), keys in any order, `move` present or not. Nil
/// for anything else (a navigation or presence change, an escape in a string, an unknown, missing
/// or repeated key, trailing bytes), which the caller decodes with `JSONDecoder`; what it takes
/// decodes to `JSONDecoder`'s value (`ChangeFastJSONTests`).
extension Change: FastJSONDecodable {
    public init?(fastJSON bytes: UnsafeRawBufferPointer) {
        self.init(fastJSON: bytes, knownEpoch: nil)
    }

    /// `init(fastJSON:)`, with the cursor's epoch shared with `knownEpoch` when it is the same text
    /// (a feed's changes are of one epoch: one string for all of them, not one each).
    package init?(fastJSON bytes: UnsafeRawBufferPointer, knownEpoch: String?) {
        var scanner = FastJSONScanner(bytes, knownEpoch: knownEpoch)
        guard let change = scanner.itemChange(), scanner.atEnd() else { return nil }
        self = change
    }
}
