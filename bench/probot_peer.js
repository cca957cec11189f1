// The Probot 13 peer of bench/webhooks.py: Probot's own Node middleware on a
// plain http server, verifying each delivery's signature and handing it to an
// `issues.labeled` handler that does nothing (no durable enqueue).
// Run from the directory where bench/webhooks.py installed probot:
//   node probot_peer.js SECRET PORT
"use strict";
const http = require("node:http");
const { generateKeyPairSync } = require("node:crypto");
const { Probot, createNodeMiddleware } = require("probot");

const [secret, port] = process.argv.slice(2);
// Probot wants an App key to build its clients; no request here ever uses it.
const { privateKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  privateKeyEncoding: { type: "pkcs1", format: "pem" },
  publicKeyEncoding: { type: "spki", format: "pem" },
});
const probot = new Probot({ appId: 1, privateKey, secret, logLevel: "warn" });
const middleware = createNodeMiddleware(
  (app) => {
    app.on("issues.labeled", async () => {});
  },
  { probot, webhooksPath: "/webhooks" },
);
http
  .createServer((req, res) => {
    middleware(req, res, () => {
      res.writeHead(404);
      res.end();
    });
  })
  .listen(Number(port), "127.0.0.1");
