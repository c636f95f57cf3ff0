// Room for a catch-up's items: `itemsByID` grown once for many arrivals, not doubled again and again.

extension SyncedStore {
    /// How much larger than what it holds `itemsByID` may be made for a catch-up's items still to
    /// come: at most this many times (a doubling's own slack is 2).
    static let catchUpRoomFactor = 4

    /// Before `shown` takes item `id`: when it is full and `id` is new to it, during a catch-up,
    /// grows it for the rest of the catch-up as well: room for as many items as the log has
    /// entries left up to the head the feed's stream opened at (`catchUpHead`; `position` is the
    /// last change taken), and at most `catchUpRoomFactor` times what it holds. Growing hashes
    /// every id it holds again into a new table, so a catch-up of a million new items, doubled at
    /// each step, hashes about a million ids more. Entries that turn out not to be new items
    /// (updates, navigation, other users' entries the head counts) leave room unused, never more
    /// than the factor allows (the items' array is reserved, not written: of the room, only the
    /// table of ids and places is touched before it is used). Outside a catch-up it grows as usual.
    func makeRoom(in shown: inout ItemsByID, for id: ItemID, through position: FeedCursor?) {
        guard shown.count == shown.capacity, let head = catchUpHead, let position, head.epoch == position.epoch,
            head.seq > position.seq, !shown.contains(id)
        else { return }
        let needed = shown.count + 1
        // Bounded before it is added: a head the server put anywhere cannot overflow the sum.
        let ahead = min(Int(clamping: head.seq - position.seq), needed * (Self.catchUpRoomFactor - 1))
        shown.reserveCapacity(needed + ahead)
    }
}
