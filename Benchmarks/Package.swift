// swift-tools-version:6.2
// A separate package, so that the main package's `swift build` / `swift test` never builds it.
// Build: swift build -c release --package-path Benchmarks --scratch-path Benchmarks/.build-bench
import PackageDescription

let package = Package(
    name: "stockroom-benchmarks",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "BaselineServer", targets: ["BaselineServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "BaselineServer",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
    ]
)
