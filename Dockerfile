# syntax=docker/dockerfile:1

# ---- build ----
FROM swift:6.2-bookworm AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# One layer for sources and dependencies: the manifest names target folders (Migrations/),
# so resolving before they are copied is not reliable.
COPY . .
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

ENTRYPOINT ["/app/stockroom"]
CMD ["serve"]
