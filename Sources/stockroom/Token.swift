import ArgumentParser
import Foundation
import StockroomCore

/// `stockroom token create|list|revoke`.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage bearer tokens.", subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a token; its secret is the last line of output.")

        @Option(help: "The user the token acts for.")
        var user: String

        @Option(help: "viewer, editor or admin.")
        var role: Role

        @OptionGroup var storage: StorageOptions

        func validate() throws {
            do {
                _ = try UserID(validating: user)
            } catch {
                throw ValidationError("--user: \(error.message)")
            }
        }

        func run() async throws {
            let token = try await storage.withStorage { database in
                try await database.createToken(user: try UserID(validating: user), role: role)
            }
            print("Created token \(token.info.id) for \(token.info.user.rawValue.terminalSafe) (\(token.info.role.rawValue)). The secret is shown once:")
            print(token.secret)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (never their secrets).")

        @OptionGroup var storage: StorageOptions

        func run() async throws {
            for token in try await storage.withStorage(existing: true, { database in try await database.listTokens() }) {
                let state = token.revokedAt.map { "revoked \(Timestamp.format($0))" } ?? "active"
                print("\(token.id)\t\(token.user.rawValue.terminalSafe)\t\(token.role.rawValue)\t\(Timestamp.format(token.createdAt))\t\(state)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token; when this returns, running servers refuse it.")

        @Argument(help: "The token's id (see `token list`).")
        var id: String

        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let settings = try Startup.settings(try await storage.reader())
            guard try await storage.withStorage(settings: settings, existing: true, { database in try await database.revokeToken(id: TokenID(id)) }) else {
                throw Startup.failure("no token \(id.terminalSafe) (see `stockroom token list`)")
            }
            // A server on this file reads the token generation every `revocationCheck`: ten of
            // those later, every one of them refuses the token.
            try await Task.sleep(for: settings.revocationCheck * 10)
            print("Revoked \(id.terminalSafe).")
        }
    }
}

extension Role: ExpressibleByArgument {}
