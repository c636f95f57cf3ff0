/// A JSON text with one to three random edits (a byte replaced, removed or inserted, from
/// `alphabet`), for checking that a fast reader takes a damaged text only as `JSONDecoder` does.
func damaged(_ text: [UInt8], alphabet: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
    var text = text
    for _ in 0..<Int.random(in: 1...3, using: &generator) {
        guard !text.isEmpty else { break }
        let index = Int.random(in: 0..<text.count, using: &generator)
        switch Int.random(in: 0..<3, using: &generator) {
        case 0: text[index] = alphabet.randomElement(using: &generator)!
        case 1: text.remove(at: index)
        default: text.insert(alphabet.randomElement(using: &generator)!, at: index)
        }
    }
    return text
}
