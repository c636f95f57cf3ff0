// BaselineServer: the floor that Stockroom's read path is compared against.
//
// A bare Hummingbird 2 application with no middleware, no auth, no database and no JSON
// encoding: `GET /v1/items/:id` answers a constant body of the same shape and size as a
// Stockroom item, with the same content type and an ETag, so that the difference to
// `stockroom` measures what Stockroom itself adds per request (auth, lookup, encoding,
// logging/metrics middleware).
//
// Usage: BaselineServer [PORT]   (default 8090; listens on 127.0.0.1)
import Hummingbird
import Logging

let port = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 8090 : 8090

// The same fields and length (241 bytes) as what `stockroom` returns for a demo item.
let itemJSON = #"{"id":"3b9cae79-8edb-454f-984b-3139c68c24f7","name":"Keyboard","color":{"name":"Red","red":1,"green":0,"blue":0},"status":{"inStock":{"quantity":100}},"version":1,"createdAt":"2026-11-22T07:07:35.233Z","updatedAt":"2026-11-22T07:07:35.233Z"}"#
let itemBody = ByteBuffer(string: itemJSON)
let healthBody = ByteBuffer(string: #"{"status":"ok"}"#)

var logger = Logger(label: "BaselineServer")
logger.logLevel = .warning

let router = Router()
router.get("/v1/items/:id") { _, _ -> Response in
    Response(
        status: .ok,
        headers: [.contentType: "application/json; charset=utf-8", .eTag: "\"1\""],
        body: .init(byteBuffer: itemBody)
    )
}
router.get("/health") { _, _ -> Response in
    Response(
        status: .ok,
        headers: [.contentType: "application/json; charset=utf-8"],
        body: .init(byteBuffer: healthBody)
    )
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "baseline"),
    logger: logger
)
try await app.runService()
