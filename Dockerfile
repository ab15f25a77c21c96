# Eddy in a container: `docker build -t eddy .` then
#   docker run -p 9081:9081 -p 10081:10081 -v eddy-home:/var/lib/eddy eddy
# Every kuiper.yaml key can be overridden with KUIPER__SECTION__KEY (e.g. -e KUIPER__BASIC__CONSOLELOG=true).

# --- build: install with the toolchain better-sqlite3 falls back to when no prebuilt binary can be fetched,
#     compile src/ into dist/server/, then drop the development dependencies
FROM node:20-bookworm AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/ scripts/
COPY src/ src/
RUN node scripts/build-server.mjs && npm prune --omit=dev --no-audit --no-fund

# --- runtime: Node and the compiled server only (no compiler, no sources, no dev dependencies)
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    EDDY_HOME=/var/lib/eddy \
    KUIPER__BASIC__CONSOLELOG=true
WORKDIR /opt/eddy
COPY --from=build /app/node_modules/ node_modules/
COPY --from=build /app/dist/server/ dist/server/
COPY package.json ./
COPY bin/ bin/
COPY scripts/build-server.mjs scripts/
COPY etc/ etc/
COPY console/ console/
RUN mkdir -p /var/lib/eddy && chown node:node /var/lib/eddy
USER node
VOLUME ["/var/lib/eddy"]
# REST API and console; data server (httppush sources, websocket endpoints)
EXPOSE 9081 10081
HEALTHCHECK --interval=30s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+(process.env.KUIPER__BASIC__RESTPORT||9081)+'/ping').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "/opt/eddy/bin/eddy.mjs"]
CMD ["start"]
