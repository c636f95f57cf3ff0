# syntax=docker/dockerfile:1
# Untested here (no Docker engine on the build machine); built as written in CI or by hand.

# ---- build ----
FROM swift:6.2-bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# Dependencies first, in their own layer: only a change to the manifest fetches packages again.
# The manifest names its target folders, so empty ones stand in for the sources while resolving.
# (Package.resolve[d]: copied when present, without failing when it is not.)
COPY Package.swift Package.resolve[d] ./
RUN mkdir -p Sources/StockroomCore Sources/StockroomStore Sources/StockroomServer/Resources Sources/stockroom \
       Migrations/sql Tests/StockroomCoreTests Tests/StockroomStoreTests Tests/StockroomServerTests \
    && swift package resolve

# Then the sources: a source change rebuilds from here on, with the packages above.
COPY Sources ./Sources
COPY Migrations ./Migrations
COPY Tests ./Tests
RUN swift build -c release --product stockroom --static-swift-stdlib \
    && mkdir /staging \
    && cp .build/release/stockroom /staging/ \
    && cp -R .build/release/*.resources /staging/

# ---- runtime ----
FROM debian:bookworm-slim
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       libsqlite3-0 libstdc++6 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /app --shell /usr/sbin/nologin stockroom \
    && mkdir -p /data \
    && chown stockroom:stockroom /data

WORKDIR /app
# The binary finds its resource bundles (migrations, OpenAPI document) next to itself.
COPY --from=build /staging/ /app/

ENV HTTP_HOST=0.0.0.0 DB_PATH=/data/stockroom.sqlite
VOLUME /data
EXPOSE 8080
USER stockroom:stockroom

# exec form: the server is PID 1's only process and gets SIGTERM itself.
ENTRYPOINT ["/app/stockroom"]
CMD ["serve"]
