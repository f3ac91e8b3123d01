# Slipway as a container image. The build context is a folder where the packed Slipway is
# installed with its production dependencies only (`npm pack`, then `npm install --omit=dev
# slipway-*.tgz` in an empty folder, on Debian bookworm with Node 20 like this image): its native
# modules (better-sqlite3) are built there, so the image build needs neither the npm registry nor
# a compiler. scripts/build-image.sh makes that folder and builds the image.
FROM node:20-bookworm-slim
RUN groupadd --system slipway && useradd --system --gid slipway --home-dir /data --no-create-home slipway \
  && mkdir /data && chown slipway:slipway /data
COPY node_modules /opt/slipway/node_modules
# Listen on every interface of the container; state (SQLite, secret.key, stored bytes) in the volume.
ENV DATA_DIR=/data HOST=0.0.0.0 PORT=8080
USER slipway
WORKDIR /data
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/opt/slipway/node_modules/slipway/bin/slipway.mjs"]
CMD ["serve"]
