# The agentsvc service image (compose.yaml builds it). Sandboxes use runners/docker/Dockerfile.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json tsconfig.plugin.json ./
COPY bin bin
COPY src src
COPY runners runners
COPY plugins plugins
COPY templates templates
COPY web web
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
# bubblewrap confines every command, passt (pasta) forwards the egress proxy into it when network
# is allowed, util-linux has prlimit, git keeps the checkpoints' snapshots.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap passt util-linux git ca-certificates && rm -rf /var/lib/apt/lists/*
# The service runs as an unprivileged user: sandboxed commands map to it, never to root.
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home agentsvc && mkdir -p /data && chown agentsvc:agentsvc /data && chmod 0700 /data
WORKDIR /app
COPY --from=build /app /app
ENV AGENTSVC_HOME=/data AGENTSVC_HOST=0.0.0.0 NODE_ENV=production
USER agentsvc
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["node", "/app/bin/run.js"]
CMD ["up"]
