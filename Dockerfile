# syntax=docker/dockerfile:1
#
# Skyhook: one image for every role. ROLE=api|worker|all picks what `skyhook start` runs; the same image
# also runs the marketplace simulator (`simulator start ...`) and the admin CLI (`companies list`, ...).
#
#   docker build -t skyhook .                                   (podman/buildah: add --format docker)
#   docker run --rm -e ROLE=api -e DATABASE_URL=... -e REDIS_URL=... -e SECRET_KEY=... -e ADMIN_TOKEN=... -p 3000:3000 skyhook
#
# Only compiled JavaScript runs here: bin/skyhook.js loads dist/cli.js because src/ is not in the image.

# Node.js 26: Active LTS since 2026-10-28, Maintenance LTS from 2027-10-20, end of life 2029-04-30 (Node 20's
# was 2026-04-30). On Debian 13 (trixie), Debian's stable release, supported beyond Node 26's end of life.
# Development and CI still run on Node 20.19+ (package.json engines): see docs/operations.md, "The image".
# Fully qualified: podman and buildah refuse short names, Docker alone fills in docker.io/library/.
# For production, pin the digest: --build-arg NODE_IMAGE=docker.io/library/node:26-trixie-slim@sha256:...
ARG NODE_IMAGE=docker.io/library/node:26-trixie-slim
#
# Behind a TLS-intercepting proxy or with a private registry, give `npm ci` a CA bundle and/or an .npmrc
# as build secrets: mounted for those two steps only, never stored in a layer (docs/operations.md).
#   docker build --secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt --secret id=npmrc,src=$HOME/.npmrc .
# Install scripts are not run (--ignore-scripts; package.json `allowScripts` denies the two dependencies
# that have one): esbuild's checks a binary a development tool already has, and msgpackr-extract's would
# build what its prebuilt package already provides. Nothing in the image needs them.
#
# With podman or buildah, build with `--format docker`: the OCI format has no HEALTHCHECK and drops it.

# ---- build: every dependency, TypeScript -> dist/ ---------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm_ca,required=false,target=/run/secrets/npm_ca \
    --mount=type=secret,id=npmrc,required=false,target=/root/.npmrc \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
# The build's second step copies the Redis scripts (src/**/*.lua) beside the compiled JavaScript.
COPY scripts/copy-lua.mjs ./scripts/
COPY src ./src
RUN npm run build

# ---- deps: production dependencies only --------------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm_ca,required=false,target=/run/secrets/npm_ca \
    --mount=type=secret,id=npmrc,required=false,target=/root/.npmrc \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi; \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ---- runtime -----------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
# Owned by root and only readable by the `node` user that runs the process: the code cannot be changed
# from inside a running container. Migrations (drizzle/) must sit beside dist/: dist/db/migrate.js reads
# them from ../../drizzle.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY drizzle ./drizzle
# The operator console's own CSS, script and icon (its libraries come from node_modules).
COPY public ./public
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
# GET /healthz with Node's own fetch (the slim image has no curl): on PORT, or on OPS_PORT for a worker
# (ROLE=worker). A worker without OPS_PORT serves no HTTP, so there is nothing to ask: its liveness is the
# process itself (docker restarts it when it exits). Nor does the image run as the simulator (`simulator
# start`, found in the main process's command line): it listens on a port of its own choosing, so compose
# gives it its own probe.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const port = process.env.ROLE === 'worker' ? process.env.OPS_PORT : (process.env.PORT || 3000); if (!port || require('node:fs').readFileSync('/proc/1/cmdline', 'utf8').split('\\0').includes('simulator')) process.exit(0); fetch('http://127.0.0.1:' + port + '/healthz').then((r) => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"]
ENTRYPOINT ["node", "bin/skyhook.js"]
CMD ["start"]
