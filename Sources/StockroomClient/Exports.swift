// An app imports one module: the SDK, the domain types it speaks (`Item`, `Draft`, `Command`,
// `Navigation`, `Destination`, `Transition`) and the wire types it reads (`ErrorCode`, `FeedCursor`),
// which are the server's own.
@_exported import StockroomCore
@_exported import StockroomWire
