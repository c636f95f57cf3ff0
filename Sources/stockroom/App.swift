import ArgumentParser

/// The `stockroom` command: serve, migrate and manage tokens.
@main
struct App: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stockroom",
        abstract: "Inventory and per-device navigation state over HTTP, stored in SQLite.",
        subcommands: [Serve.self, Migrate.self, Token.self],
        defaultSubcommand: Serve.self
    )
}
