import StockroomCore

/// `GET /v1/users/me/navigation`: every device of the user that has written its navigation, the
/// most recently changed first.
public struct NavigationList: Hashable, Sendable, Codable {
    public var clients: [Navigation]

    public init(clients: [Navigation]) {
        self.clients = clients
    }
}
