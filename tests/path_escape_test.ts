/**
 * A malformed `%` escape in a path parameter is the client's 400 naming the parameter, in its
 * dialect (issue 25, point 6), never an internal error; the escape is not quoted back.
 */
import assert from "node:assert/strict";
import { anthropicHeaders, googleHeaders, openaiHeaders, startHarness } from "./helpers.ts";

const BAD = ["%ZZ", "%E2%82", "%", "resp_%C0%AF"];

/** The three dialects' error envelopes, as far as the checks read them. */
type ErrorBody = { type?: string; error?: { param?: string; message: string; status?: string } };

Deno.test("path escapes: malformed %-escapes in model and response ids are a 400 naming the field", async () => {
  const h = await startHarness();
  const cases: {
    method: string;
    path: (s: string) => string;
    headers: Record<string, string>;
    field: string;
    envelope: (j: ErrorBody) => unknown;
  }[] = [
    {
      method: "GET",
      path: (s) => `/v1/models/${s}`,
      headers: openaiHeaders(),
      field: "model",
      envelope: (j) => j.error?.param,
    },
    {
      method: "GET",
      path: (s) => `/v1/models/${s}`,
      headers: anthropicHeaders(),
      field: "model",
      envelope: (j) =>
        j.type === "error" && j.error?.message.startsWith("model:") ? "model" : undefined,
    },
    {
      method: "GET",
      path: (s) => `/v1beta/models/${s}`,
      headers: googleHeaders(),
      field: "model",
      envelope: (j) =>
        j.error?.status === "INVALID_ARGUMENT" && j.error.message.startsWith("model:")
          ? "model"
          : undefined,
    },
    {
      method: "GET",
      path: (s) => `/v1/responses/${s}`,
      headers: openaiHeaders(),
      field: "response_id",
      envelope: (j) => j.error?.param,
    },
    {
      method: "DELETE",
      path: (s) => `/v1/responses/${s}`,
      headers: openaiHeaders(),
      field: "response_id",
      envelope: (j) => j.error?.param,
    },
    {
      method: "GET",
      path: (s) => `/v1/responses/${s}/input_items`,
      headers: openaiHeaders(),
      field: "response_id",
      envelope: (j) => j.error?.param,
    },
  ];
  try {
    for (const c of cases) {
      for (const bad of BAD) {
        const where = `${c.method} ${c.path(bad)} (${Object.keys(c.headers)[0]})`;
        const res = await fetch(h.url + c.path(bad), { method: c.method, headers: c.headers });
        const text = await res.text();
        assert.equal(res.status, 400, `${where}: ${text}`);
        assert.equal(c.envelope(JSON.parse(text)), c.field, `${where}: ${text}`);
        assert.match(text, /malformed percent-encoding/, where);
      }
    }
  } finally {
    await h.close();
  }
});
