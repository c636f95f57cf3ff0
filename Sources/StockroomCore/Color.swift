import Foundation

/// An RGB colour with a display name; components are in 0...1.
public struct Color: Hashable, Sendable {
    /// The colour's display name (1-50 characters when valid).
    public var name: String
    /// Red component, 0...1.
    public var red: Double
    /// Green component, 0...1.
    public var green: Double
    /// Blue component, 0...1.
    public var blue: Double

    /// Creates a colour.
    public init(name: String, red: Double, green: Double, blue: Double) {
        self.name = name
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// Equal when every field is the same, the name code point by code point (see `Draft`'s `==`).
    public static func == (lhs: Color, rhs: Color) -> Bool {
        lhs.name.utf8.elementsEqual(rhs.name.utf8) && lhs.red == rhs.red && lhs.green == rhs.green && lhs.blue == rhs.blue
    }
}
