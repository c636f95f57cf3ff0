import HTTPTypes
import Hummingbird
import StockroomStorage
import StockroomWire
import Synchronization

/// `GET /v1/items/export`: every item (matching `filter=`, when given) as CSV (`ItemCSV`), read in
/// one transaction and streamed as it is read; `Stockroom-Cursor` is the feed cursor of that read.
extension FeedController {
    static let cursorHeader = HTTPField.Name("Stockroom-Cursor")!

    @Sendable func export(_ request: Request, context: CallerContext) async throws -> Response {
        let filter = try Self.itemFilter(request, name: "filter")
        let lease = try snapshotLimits.acquire(token: context.caller.id)
        let cursor = Mutex<FeedCursor?>(nil)
        let encoding = ItemStreamEncoding(
            header: { read in
                cursor.withLock { $0 = read }
                return ItemCSV.header
            },
            item: ItemCSV.write)
        let pipe = database.streamItems(matching: filter, encoding: encoding, depth: 4, stallTimeout: settings.writeTimeout)
        let headers: HTTPFields = [
            .contentType: "text/csv; charset=utf-8", .cacheControl: "no-store",
            .contentDisposition: #"attachment; filename="items.csv""#,
        ]
        // The header row comes once the read holds, its cursor known by then.
        return try await streamed(pipe, lease: lease, headers: headers, context: context) { _ in
            cursor.withLock { $0 }.map { [Self.cursorHeader: $0.encoded] } ?? [:]
        }
    }
}
