import TestSupport
import Testing
@testable import StockroomCore

private func draft(
    name: String = "Keyboard",
    color: Color? = nil,
    status: Status = .inStock(quantity: 1)
) -> Draft {
    Draft(name: name, color: color, status: status)
}

private func color(_ name: String = "Red", red: Double = 1, green: Double = 0, blue: Double = 0) -> Color {
    Color(name: name, red: red, green: green, blue: blue)
}

private func validate(_ draft: Draft) -> Result<ValidDraft, DomainError> {
    Result { () throws(DomainError) -> ValidDraft in try ValidDraft(draft) }
}

private let emptyName = DomainError.validationFailed(field: "name", message: "name must not be empty")
private let longName = DomainError.validationFailed(field: "name", message: "name must be at most 200 characters and 8192 UTF-8 bytes")
private let badColorName = DomainError.validationFailed(
    field: "color.name", message: "color name must be 1-50 characters and at most 2048 UTF-8 bytes")
private let badQuantity = DomainError.validationFailed(
    field: "status.inStock.quantity", message: "quantity must be between 0 and 1000000000"
)
private func badComponent(_ name: String) -> DomainError {
    .validationFailed(field: "color.\(name)", message: "color \(name) must be between 0 and 1")
}

/// One grapheme cluster made of several scalars: thumbs up with a skin tone (2 scalars, 8 UTF-8 bytes).
private let thumbsUp = "\u{1F44D}\u{1F3FD}"
/// One grapheme cluster: family (7 scalars joined by ZWJ).
private let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}"
/// One grapheme cluster: "e" + combining acute accent.
private let eAcute = "e\u{0301}"

@Suite("Draft validation")
struct ValidationTests {
    // MARK: name

    @Test("the name is stored trimmed", arguments: [
        ("  Keyboard  ", "Keyboard"),
        ("\n\tKeyboard\r\n", "Keyboard"),
        ("\u{00A0}Keyboard\u{3000}", "Keyboard"),
        ("Bluetooth  Keyboard", "Bluetooth  Keyboard"),
        (" Blue tooth ", "Blue tooth"),
        ("K", "K"),
        // A space carrying a mark is one character that is not whitespace alone: it stays whole.
        (" \u{301}abc", " \u{301}abc"),
        ("abc \u{301}", "abc \u{301}"),
        ("abc\u{00A0}\u{301} ", "abc\u{00A0}\u{301}"),
        (" \u{200D}abc", " \u{200D}abc"),
        ("abc \u{FE0F}", "abc \u{FE0F}"),
    ])
    func nameTrimmed(_ input: String, _ stored: String) throws {
        let valid = try ValidDraft(draft(name: input))
        #expect(valid.name == stored)
        #expect(valid.draft == draft(name: stored))
    }

    @Test("an empty or whitespace-only name fails on field name", arguments: [
        "", " ", "   ", "\t", "\n", " \r\n\t ", "\u{00A0}", "\u{2003}\u{3000}",
    ])
    func nameEmpty(_ name: String) {
        #expect(validate(draft(name: name)) == .failure(emptyName))
        #expect(emptyName.code == "validationFailed")
    }

    @Test("names of 1 and 200 characters pass, 201 fails (counted in Characters)", arguments: [
        "a", "é", thumbsUp, family, eAcute,
    ])
    func nameLength(_ unit: String) throws {
        #expect(unit.count == 1)
        let ok200 = String(repeating: unit, count: 200)
        let bad201 = String(repeating: unit, count: 201)
        #expect(ok200.count == 200)
        #expect(try ValidDraft(draft(name: ok200)).name == ok200)
        #expect(validate(draft(name: bad201)) == .failure(longName))
        #expect(try ValidDraft(draft(name: unit)).name == unit)
    }

    @Test("a name of 200 characters with extra whitespace around it passes (length after trimming)")
    func nameLengthAfterTrimming() throws {
        let name = String(repeating: "x", count: 200)
        #expect(try ValidDraft(draft(name: "   \(name)\n\t ")).name == name)
    }

    @Test("a 200-character name of multi-byte graphemes passes though its UTF-8 and UTF-16 are longer")
    func nameLengthNotBytes() throws {
        let name = String(repeating: thumbsUp, count: 200)
        #expect(name.utf8.count == 1600)
        #expect(name.utf16.count == 800)
        #expect(try ValidDraft(draft(name: name)).name == name)
    }

    @Test("mixed 200 characters pass, one more fails")
    func mixedLength() {
        let name = String(repeating: "ab\(eAcute)\(thumbsUp)", count: 50) // 200 characters
        #expect(name.count == 200)
        #expect((try? ValidDraft(draft(name: name))) != nil)
        #expect(validate(draft(name: name + family)) == .failure(longName))
    }

    // MARK: colour

    @Test("no colour is valid and stays nil")
    func noColor() throws {
        #expect(try ValidDraft(draft(color: nil)).color == nil)
    }

    @Test("colour names of 1 and 50 characters pass", arguments: [
        "R", String(repeating: "c", count: 50), String(repeating: thumbsUp, count: 50), String(repeating: eAcute, count: 50),
    ])
    func colorNameOK(_ name: String) throws {
        let c = color(name)
        #expect(try ValidDraft(draft(color: c)).color == c)
    }

    @Test("colour names of 0 or 51 characters fail on field color.name", arguments: [
        "", String(repeating: "c", count: 51), String(repeating: family, count: 51),
    ])
    func colorNameBad(_ name: String) {
        #expect(validate(draft(color: color(name))) == .failure(badColorName))
    }

    @Test("components 0 and 1 pass", arguments: [0.0, 0.5, 1.0, -0.0])
    func componentsOK(_ value: Double) throws {
        let c = color(red: value, green: value, blue: value)
        #expect(try ValidDraft(draft(color: c)).color == c)
    }

    @Test("components outside 0...1 fail on their field", arguments: [
        -0.000001, 1.000001, -1, 2, 255, Double.infinity, -Double.infinity, Double.nan,
    ])
    func componentsBad(_ value: Double) {
        #expect(validate(draft(color: color(red: value, green: 0.5, blue: 0.5))) == .failure(badComponent("red")))
        #expect(validate(draft(color: color(red: 0.5, green: value, blue: 0.5))) == .failure(badComponent("green")))
        #expect(validate(draft(color: color(red: 0.5, green: 0.5, blue: value))) == .failure(badComponent("blue")))
    }

    // MARK: status

    @Test("quantities 0 and 1_000_000_000 pass", arguments: [0, 1, 999_999_999, 1_000_000_000])
    func quantityOK(_ quantity: Int) throws {
        #expect(try ValidDraft(draft(status: .inStock(quantity: quantity))).status == .inStock(quantity: quantity))
    }

    @Test("quantities -1 and 1_000_000_001 fail on field status.inStock.quantity", arguments: [
        -1, 1_000_000_001, Int.min, Int.max,
    ])
    func quantityBad(_ quantity: Int) {
        #expect(validate(draft(status: .inStock(quantity: quantity))) == .failure(badQuantity))
    }

    @Test("outOfStock is always valid", arguments: [true, false])
    func outOfStock(_ backOrdered: Bool) throws {
        let valid = try ValidDraft(draft(status: .outOfStock(isOnBackOrder: backOrdered)))
        #expect(valid.status == .outOfStock(isOnBackOrder: backOrdered))
    }

    // MARK: whole draft

    @Test("a valid draft keeps colour and status and trims only the name")
    func keepsFields() throws {
        let c = Color(name: "Sky Blue", red: 0.1, green: 0.5, blue: 1)
        let valid = try ValidDraft(Draft(name: "  Mouse  ", color: c, status: .outOfStock(isOnBackOrder: true)))
        #expect(valid.draft == Draft(name: "Mouse", color: c, status: .outOfStock(isOnBackOrder: true)))
        #expect(ValidDraft.maxQuantity == 1_000_000_000)
        #expect(ValidDraft.maxNameLength == 200)
        #expect(ValidDraft.maxColorNameLength == 50)
    }

    @Test("the blank add draft is invalid until a name is typed")
    func blankDraft() throws {
        #expect(validate(.blank) == .failure(emptyName))
        var typed = Draft.blank
        typed.name = "Cable"
        #expect(try ValidDraft(typed).draft == Draft(name: "Cable", color: nil, status: .inStock(quantity: 1)))
    }

    @Test("an item's own fields validate to themselves")
    func itemDraftRoundTrip() throws {
        #expect(try ValidDraft(Fixture.mouse.draft).draft == Fixture.mouse.draft)
        #expect(try ValidDraft(Fixture.keyboard.draft).draft == Fixture.keyboard.draft)
    }

    // MARK: error codes

    @Test("every DomainError has its stable code")
    func codes() {
        #expect(DomainError.validationFailed(field: nil, message: "x").code == "validationFailed")
        #expect(DomainError.invalidTransition("x").code == "invalidTransition")
        #expect(DomainError.itemNotFound(Fixture.keyboardID).code == "notFound")
        #expect(DomainError.clientNotFound("phone").code == "notFound")
        #expect(DomainError.itemDeleted(Fixture.keyboardID).code == "itemDeleted")
        #expect(DomainError.conflict(current: Fixture.keyboard).code == "conflict")
        #expect(emptyName.message == "name must not be empty")
    }

    // MARK: client ids

    @Test("client ids are 1-64 characters of [A-Za-z0-9._-]", arguments: [
        ("a", true), ("iPhone-15.home_1", true), (String(repeating: "x", count: 64), true),
        ("", false), (String(repeating: "x", count: 65), false), ("has space", false),
        ("slash/", false), ("é", false), ("emoji\u{1F44D}", false), ("tab\t", false),
    ])
    func clientID(_ id: String, _ valid: Bool) {
        #expect(ClientID.isValid(id) == valid)
    }
}
