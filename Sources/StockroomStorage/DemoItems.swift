import StockroomCore

/// The four items of the inventory example that `serve --demo` seeds into an empty store.
package enum DemoItems {
    package static let drafts: [Draft] = [
        Draft(name: "Keyboard", color: Color(name: "Red", red: 1, green: 0, blue: 0), status: .inStock(quantity: 100)),
        Draft(name: "Mouse", color: Color(name: "Blue", red: 0, green: 0, blue: 1), status: .inStock(quantity: 200)),
        Draft(name: "Monitor", color: Color(name: "Green", red: 0, green: 1, blue: 0), status: .inStock(quantity: 20)),
        Draft(name: "Chair", color: Color(name: "Yellow", red: 1, green: 1, blue: 0), status: .outOfStock(isOnBackOrder: true)),
    ]
}
