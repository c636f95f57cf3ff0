import Foundation
import StockroomWire

/// A freshly created token, with the secret shown this once.
public struct IssuedToken: Sendable, Hashable {
    /// The token's information.
    public var info: TokenInfo
    /// The bearer secret.
    public var secret: String

    public init(info: TokenInfo, secret: String) {
        self.info = info
        self.secret = secret
    }
}
