# Stockroom's production image: a release build of `stockroom` (Swift runtime linked statically)
# on Debian bookworm-slim, running as a non-root user with its database on the volume /data.
# Builds with BuildKit and with the classic builder (DOCKER_BUILDKIT=0).

# ---- build ----
FROM swift:6.3-bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Options added to deploy/release-build.sh's (the release build: the Swift runtime linked
# statically, the code a request runs laid out together).
ARG SWIFT_BUILD_FLAGS=""

# The packages, resolved from the manifest alone in a layer of their own: a change to Stockroom's
# sources does not fetch them again. (Package.resolve[d]: copied when present, no error when not.)
# Compiling them in a layer of their own would not pay: SwiftPM's build system compares each
# file's device number, which an overlay filesystem gives anew in every build step, so the next
# step would compile them all again.
COPY Package.swift Package.resolve[d] ./
RUN swift package resolve

# The manifest's test targets are not built, but their folders must exist; an empty source file
# each keeps the manifest's checks quiet.
RUN for target in Tests/StockroomCoreTests Tests/StockroomWireTests Tests/StorageContractTests Tests/StockroomStoreTests \
        Tests/StockroomServerTests Tests/StockroomClientTests Tests/StockroomPostgresTests Tests/TestSupport; do \
        mkdir -p "$target" && touch "$target/Empty.swift"; done \
    && mkdir -p Tests/CSpawn/include && touch Tests/CSpawn/Empty.c

# Stockroom, with every package it uses. The staging folder is the application: the binary (debug
# info stripped; its symbols stay, for backtraces), the resource bundles it finds beside itself
# (migrations, the OpenAPI document, the inspector) and the runtime's crash reporter for a static
# binary.
COPY Sources ./Sources
COPY Migrations ./Migrations
COPY deploy/release-build.sh deploy/link-order.txt ./deploy/
RUN deploy/release-build.sh $SWIFT_BUILD_FLAGS \
    && bin="$(deploy/release-build.sh $SWIFT_BUILD_FLAGS --show-bin-path)" \
    && mkdir /staging \
    && cp "$bin/stockroom" /staging/ \
    && strip --strip-debug /staging/stockroom \
    && cp -R "$bin"/*.resources /staging/ \
    && cp "$(dirname "$(readlink -f "$(command -v swift)")")/../libexec/swift/linux/swift-backtrace-static" /staging/

# ---- runtime ----
FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libsqlite3-0 ca-certificates \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
    && useradd --system --uid 10001 --user-group --home-dir /app --shell /usr/sbin/nologin stockroom \
    && mkdir -p /data \
    && chown stockroom:stockroom /data \
    && chmod 0700 /data

WORKDIR /app
COPY --from=build /staging/ /app/

ENV HTTP_HOST=0.0.0.0 \
    DB_PATH=/data/stockroom.sqlite \
    SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/app/swift-backtrace-static
VOLUME /data
EXPOSE 8080
USER stockroom:stockroom

# Healthy means ready: `/ready` answers 200 when a write would succeed now. bash's /dev/tcp, so
# that the image needs no HTTP client. (No --start-interval: the classic builder refuses it.)
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${HTTP_PORT:-8080} && printf 'GET /ready HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && read -r _ status _ <&3 && [ \"$status\" = 200 ]"]

# Exec form: the server is PID 1 and gets SIGTERM itself; it exits 0 within 5 s of it.
ENTRYPOINT ["/app/stockroom"]
CMD ["serve"]
