
/// The contract's `Color` object, `{"name","red","green","blue"}`.
public struct ColorJSON<Name: JSONText> {
    public var name: Name
    public var red: Double
    public var green: Double
    public var blue: Double

    @inlinable
    public init(name: Name, red: Double, green: Double, blue: Double) {
        self.name = name
        self.red = red
        self.green = green
        self.blue = blue
    }

    @inlinable
    public func write(to json: inout JSONWriter) {
        json.raw(#"{"name":"#)
        name.writeQuoted(to: &json)
        json.raw(#","red":"#)
        json.double(red)
        json.raw(#","green":"#)
        json.double(green)
        json.raw(#","blue":"#)
        json.double(blue)
        json.raw("}")
    }
}
