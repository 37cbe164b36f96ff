/**
 * A malformed `%` escape in a path parameter is the client's 400 naming the parameter, in its
 * dialect (issue 25, point 6), never an internal error; the escape is not quoted back.
 */
import assert from "node:assert/strict";
import { anthropicHeaders, googleHeaders, openaiHeaders, startHarness } from "./helpers.ts";

const BAD = ["%ZZ", "%E2%82", "%", "resp_%C0%AF"];

Deno.test("path escapes: malformed %-escapes in model and response ids are a 400 naming the field", async () => {
  const h = await startHarness();
  // [method, path, the client's headers (its dialect), the field named]
  const cases: [string, (s: string) => string, Record<string, string>, string][] = [
    ["GET", (s) => `/v1/models/${s}`, openaiHeaders(), "model"],
    ["GET", (s) => `/v1/models/${s}`, anthropicHeaders(), "model"],
    ["GET", (s) => `/v1beta/models/${s}`, googleHeaders(), "model"],
    ["GET", (s) => `/v1/responses/${s}`, openaiHeaders(), "response_id"],
    ["DELETE", (s) => `/v1/responses/${s}`, openaiHeaders(), "response_id"],
    ["GET", (s) => `/v1/responses/${s}/input_items`, openaiHeaders(), "response_id"],
  ];
  try {
    for (const [method, path, headers, field] of cases) {
      for (const bad of BAD) {
        const where = `${method} ${path(bad)} (${Object.keys(headers)[0]})`;
        const res = await fetch(h.url + path(bad), { method, headers });
        const body = await res.json();
        assert.equal(res.status, 400, `${where}: ${JSON.stringify(body)}`);
        // Every dialect's envelope has error.message; OpenAI's names the field in `param` too.
        assert.ok(
          body.error.message.startsWith(`${field}: malformed percent-encoding`),
          `${where}: ${JSON.stringify(body)}`,
        );
        if (headers.authorization) assert.equal(body.error.param, field, where);
        if (headers["x-api-key"]) assert.equal(body.type, "error", where);
        if (headers["x-goog-api-key"]) assert.equal(body.error.status, "INVALID_ARGUMENT", where);
      }
    }
  } finally {
    await h.close();
  }
});
