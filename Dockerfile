# streamd container image: `docker build -t streamd .` from the repository root.
#
# Two stages: the build stage installs the toolchain with `scripts/setup --build` (the Debian 12
# packages a developer machine builds with, without the tests' clients) and builds streamd and
# streamctl in Release; the runtime stage carries only the two binaries, the production config and
# the shared libraries they link, and runs as an unprivileged user. Running it, mounting a config and
# the data volume: docs/OPERATIONS.md.

FROM debian:12 AS build
# The setup script first, alone, so that editing the sources does not reinstall the toolchain.
COPY scripts/setup /src/scripts/setup
RUN /src/scripts/setup --build && rm -rf /var/lib/apt/lists/*
COPY . /src
# Release, no tests: the image ships what `scripts/test` has already verified. Warnings are not
# errors here (STREAMD_WERROR is off): CI's Release build of the whole tree (.ci/run) holds them.
# `cmake --install` stages exactly what the install rules (cmake/packaging.cmake) put in the .deb.
# Sources are compiled a batch at a time (CMAKE_UNITY_BUILD): an image is built whole, never edited.
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_TESTING=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
 && cmake --build /build --target streamd streamctl \
 && DESTDIR=/stage cmake --install /build --prefix /usr --strip --component server \
 && DESTDIR=/stage cmake --install /build --prefix /usr --strip --component client

FROM debian:12
# The shared libraries streamd and streamctl link (Asio and CLI11 are header-only), the Kafka
# listener's codecs, OpenSSL (TLS and SCRAM) and the postgres engine's libpq among them; ldd proves
# none is missing, so a changed dependency fails the image build instead of the container start.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libprotobuf32 libspdlog1.10 libyaml-cpp0.7 libfmt9 \
      zlib1g libsnappy1v5 liblz4-1 libzstd1 libssl3 libpq5 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /stage/usr/bin/streamd /stage/usr/bin/streamctl /usr/bin/
COPY --from=build /stage/etc/streamd/streamd.yaml /etc/streamd/streamd.yaml
RUN ! ldd /usr/bin/streamd /usr/bin/streamctl | grep -F "not found"

# A fixed numeric id, so that a bind-mounted data directory can be chowned to it (10001:10001) and
# orchestrators can check runAsNonRoot. streamd refuses a data directory writable by group or others.
RUN groupadd --system --gid 10001 streamd \
 && useradd --system --uid 10001 --gid streamd --home-dir /var/lib/streamd --shell /usr/sbin/nologin streamd \
 && install -d -m 0700 -o streamd -g streamd /var/lib/streamd
VOLUME /var/lib/streamd
USER 10001:10001
WORKDIR /var/lib/streamd

# 7411: the protocol; 7412: /healthz, /readyz and /metrics.
EXPOSE 7411 7412
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["streamctl", "--broker", "127.0.0.1:7411", "--timeout", "3s", "health"]

# Configuration: the baked-in /etc/streamd/streamd.yaml (deploy/streamd.yaml) or a file mounted over
# it, then these flags, which win over the file. Inside a container streamd must listen on 0.0.0.0 to
# be reachable through published ports; whoever replaces CMD keeps these two flags (or sets listen
# and http_listen in the mounted file).
ENTRYPOINT ["/usr/bin/streamd"]
CMD ["--config", "/etc/streamd/streamd.yaml", "--listen", "0.0.0.0:7411", "--http-listen", "0.0.0.0:7412"]
