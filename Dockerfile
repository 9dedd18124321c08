# The agentsvc service image (compose.yaml builds it). Sandboxes use runners/docker/Dockerfile.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY src src
COPY runners runners
COPY plugins plugins
COPY templates templates
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app /app
ENV AGENTSVC_HOME=/data AGENTSVC_HOST=0.0.0.0 NODE_ENV=production
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["node", "/app/bin/run.js"]
CMD ["up"]
