// A callback receiver that verifies dq's signatures:
//   DQ_SIGNING_SECRET=whsec_... node examples/receiver.js 8080
"use strict";
const http = require("http");
const { Receiver, WebhookVerificationError } = require("..");

const receiver = new Receiver({ secrets: [process.env.DQ_SIGNING_SECRET] });
const seen = new Set(); // in production: a shared store with an expiry (Redis SET id 1 NX EX 600)

http
  .createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      try {
        const callback = receiver.verify(Buffer.concat(chunks), request.headers);
        if (!seen.has(callback.webhookId)) {
          seen.add(callback.webhookId);
          console.log("job", callback.topic, callback.jobId, "attempt", callback.attempt, callback.body);
        }
        response.writeHead(200);
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        console.log("refused:", error.message);
        response.writeHead(401);
      }
      response.end();
    });
  })
  .listen(Number(process.argv[2] || 8080), "127.0.0.1");
