# syntax=docker/dockerfile:1
# The mailroom image: one image for both apps of distributed mode (the api and the mailer; the
# Deployment's command picks the entry point) and for embedded mode (`docker run -p 3000:3000`).
# TypeScript runs as-is, its types stripped by Node 24 (runtime/load-typescript.mjs; tsx, a runtime
# dependency, where Node cannot): there is no build step.
#
#   docker build -t mailroom:latest .

# Production dependencies only, resolved from package-lock.json. (`prepare` builds the dashboard
# only where scripts/ is: not here, the stage below does.)
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# The dashboard (web/dist): Vite's production build of web/ and the shared schemas of domain/.
FROM deps AS web
COPY tsconfig.json ./
COPY domain domain
COPY web web
RUN node node_modules/vite/bin/vite.js build web

FROM node:24-slim
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
# The source, owned by root and read-only to the app user (.dockerignore keeps out tests, tools,
# bench results, local data and node_modules), then the production node_modules.
COPY . .
COPY --from=deps /app/node_modules ./node_modules
COPY --from=web /app/web/dist ./web/dist
# DATA_DIR: embedded-mode persistence, and the dev outbox when SMTP_URL is unset. Kubernetes mounts
# a volume here; `docker run -v mailroom-data:/data` keeps it across containers.
RUN mkdir -p /data && chown 1000:1000 /data
# The `node` user of the base image, by number so that `runAsNonRoot` can check it.
USER 1000:1000
EXPOSE 3000
# Node is PID 1 and handles SIGTERM itself (graceful shutdown in runtime/main.ts).
CMD ["node", "--import", "./runtime/load-typescript.mjs", "apps/api/main.ts"]
