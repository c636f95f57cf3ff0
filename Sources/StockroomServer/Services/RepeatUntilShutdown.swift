import ServiceLifecycle

/// Runs `body`, then again every `interval`, until graceful shutdown (the loop of the periodic services).
func repeatUntilShutdown(every interval: Duration, _ body: @escaping @Sendable () async -> Void) async {
    await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            await body()
            try? await Task.sleep(for: interval)
        }
    }
}
