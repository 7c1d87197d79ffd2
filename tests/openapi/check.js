// Holds dqd's answers to its OpenAPI description, with independent, well-kept
// validators from npm (pinned in package-lock.json). Test-only:
// tests/test_openapi.cc drives every operation against a real dqd, records
// each exchange and runs this on them.
//   node check.js DESCRIPTION.json EXCHANGES.jsonl
// EXCHANGES.jsonl: one {"method", "path" (with its query), "status",
// "headers": {lower-case name: value}, "body"} per line.
// 1. @seriousme/openapi-schema-validator: the description is OpenAPI 3.1
//    (the official JSON Schema of 3.1, its dialect included).
// 2. openapi-backend: each request must match an operation of the
//    description (else the route is missing from it); the answer's status
//    must be one that operation describes, its Content-Type one it lists
//    (none when it lists none), the headers it marks required present and
//    valid, and the body valid against its schema, with Ajv's JSON Schema
//    2020-12 validator (OpenAPI 3.1's dialect).
// 3. Every operation of the description must have been driven.
// Prints each problem and how many there were; exits 1 on any.
"use strict";
const fs = require("fs");
const { default: OpenAPIBackend } = require("openapi-backend");
const Ajv2020 = require("ajv/dist/2020").default;

async function main() {
  const [descriptionPath, exchangesPath] = process.argv.slice(2);
  const text = fs.readFileSync(descriptionPath, "utf8");
  const problems = [];
  let checked = 0;

  const { Validator } = await import("@seriousme/openapi-schema-validator");
  const validator = new Validator();
  const verdict = await validator.validate(JSON.parse(text));
  if (!verdict.valid) {
    problems.push(`description: not valid OpenAPI: ${JSON.stringify(verdict.errors).slice(0, 2000)}`);
  } else if (validator.version !== "3.1") {
    problems.push(`description: OpenAPI ${validator.version}, not 3.1`);
  }

  const api = new OpenAPIBackend({
    definition: JSON.parse(text),
    strict: true,
    validate: true,
    // OpenAPI 3.1 schemas are JSON Schema 2020-12.
    customizeAjv: () => new Ajv2020({ strict: false, allErrors: true }),
  });
  // openapi-backend checks a definition against OpenAPI 3.0's schema only
  // (it refuses every 3.1 keyword); step 1 checked it as 3.1.
  api.validateDefinition = () => api.document;
  await api.init();
  const operations = api.getOperations();
  const driven = new Map(operations.map((op) => [op.operationId, new Set()]));

  const lines = fs.readFileSync(exchangesPath, "utf8").split("\n").filter((line) => line.trim());
  for (const line of lines) {
    const exchange = JSON.parse(line);
    const what = `${exchange.method} ${exchange.path} -> ${exchange.status}`;
    const problem = (why) => problems.push(`${what}: ${why}`);
    checked += 1;
    const [path, query = ""] = exchange.path.split("?");
    const op = api.router.matchOperation({
      method: exchange.method.toLowerCase(),
      path,
      query,
      headers: {},
    });
    if (!op) {
      problem("no operation of the description matches this request");
      continue;
    }
    driven.get(op.operationId).add(exchange.status);
    const response = (op.responses || {})[String(exchange.status)];
    if (!response) {
      problem(`${op.operationId} does not describe status ${exchange.status}`);
      continue;
    }
    const headers = exchange.headers || {};
    for (const [name, header] of Object.entries(response.headers || {})) {
      if (header.required && headers[name.toLowerCase()] === undefined) {
        problem(`${op.operationId}: header ${name} is missing`);
      }
    }
    const checkedHeaders = api.validateResponseHeaders(headers, op, {
      statusCode: exchange.status,
      setMatchType: "superset",
    });
    if (!checkedHeaders.valid) {
      problem(`${op.operationId}: headers: ${JSON.stringify(checkedHeaders.errors)}`);
    }
    const contentType = (headers["content-type"] || "").split(";")[0].trim();
    const content = response.content || {};
    const body = exchange.body || "";
    if (exchange.method === "HEAD") {
      if (body !== "") problem("a HEAD answer has a body");
      continue;
    }
    if (Object.keys(content).length === 0) {
      if (body !== "") problem(`${op.operationId} describes no body for ${exchange.status}`);
      continue;
    }
    if (!content[contentType]) {
      problem(`Content-Type '${contentType}' is not one of ${Object.keys(content).join(", ")}`);
      continue;
    }
    if (contentType !== "application/json") {
      continue;  // text (the Prometheus page): its schema is a string
    }
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch (error) {
      problem(`the body is not JSON: ${body.slice(0, 200)}`);
      continue;
    }
    const result = api.validateResponse(parsed, op, exchange.status);
    if (!result.valid) {
      problem(`${op.operationId}: body does not match: ${JSON.stringify(result.errors)} in ${body.slice(0, 500)}`);
    }
  }
  for (const [operationId, statuses] of driven) {
    if (statuses.size === 0) {
      problems.push(`operation ${operationId} was not driven`);
    }
  }
  for (const problem of problems) {
    console.log(problem);
  }
  const summary = {};
  for (const [operationId, statuses] of driven) {
    summary[operationId] = [...statuses].sort();
  }
  console.log(`statuses seen: ${JSON.stringify(summary)}`);
  console.log(`${checked} answers, ${operations.length} operations`);
  console.log(`openapi check: ${problems.length} problem(s)`);
  process.exit(problems.length === 0 ? 0 : 1);
}

main().catch((error) => {
  console.log(`check.js: ${error.stack || error}`);
  process.exit(2);
});
