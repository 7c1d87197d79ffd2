// Adds, reads, deletes and batch-adds jobs: node examples/produce.js [URL] [TOKEN]
"use strict";
const { Client, DqError } = require("..");

async function main() {
  const client = new Client({
    baseUrl: process.argv[2] || "http://127.0.0.1:6780",
    token: process.argv[3] || process.env.DQ_TOKEN,
  });
  await client.putTopic("orders", { callback_url: "http://127.0.0.1:8080/check-order" });
  console.log(await client.add("orders", "order-42", { amount: 42 }, { delay: 600 }));
  console.log((await client.get("orders", "order-42")).state);
  console.log(await client.addBatch("orders", [{ id: "order-43", body: 1 }, { id: "bad\u0001id", body: 2 }]));
  await client.delete("orders", "order-42");
  try {
    await client.get("orders", "order-42");
  } catch (error) {
    if (!(error instanceof DqError)) throw error;
    console.log("not there any more:", error.status, error.serverMessage);
  }
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
