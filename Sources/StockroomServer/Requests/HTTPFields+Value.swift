import HTTPTypes

extension HTTPFields {
    /// The value of the fields named `name`, as `self[name]` reads it: nil when there is none, the
    /// one field's value as it is, several joined as the subscript joins them. The subscript joins
    /// even one field's value, through the standard library's `joined(separator:)` on a lazy map,
    /// which runs unspecialized (a metadata look-up per element), on every request that reads a
    /// header; what that cost is in Benchmarks/README, "Request headers read without joining".
    func value(of name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}
