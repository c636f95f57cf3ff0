// An app imports one module: the SDK and the domain types it speaks (`Item`, `Draft`, `Command`,
// `Navigation`, `Destination`, `Transition`), which are the server's own.
@_exported import StockroomCore
