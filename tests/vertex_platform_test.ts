/**
 * The gcp-vertex platform's parts (plugins/platforms/gcp_vertex.ts) against the Vertex mock,
 * which checks the service account's JWT before it mints a token and Vertex's paths and Claude
 * bodies as Vertex does: the paths and bodies they build are answered, the file's token_uri is
 * where tokens come from, every minted token is registered before it is sent.
 */
import assert from "node:assert/strict";
import {
  gcpSchema,
  parseServiceAccount,
  ServiceAccountError,
  vertexBaseUrl,
  vertexBody,
  VertexCredential,
} from "../plugins/platforms/gcp_vertex.ts";
import { vertexPath } from "../plugins/platforms/vertex_wire.ts";
import type { Operation } from "../src/kit/platform.ts";
import { startMockVertex } from "./mock/vertex.ts";

const USER = "Bonjour";
const GCP = { project: "mock-project", location: "us-east5" };

Deno.test("vertex: the default base URL is regional, or aiplatform.googleapis.com for global", () => {
  assert.equal(vertexBaseUrl("us-central1"), "https://us-central1-aiplatform.googleapis.com");
  assert.equal(vertexBaseUrl("global"), "https://aiplatform.googleapis.com");
});

Deno.test("vertex: paths of Gemini and Claude models and token counting; other formats are refused", () => {
  const at = "/v1/projects/mock-project/locations/us-east5/publishers";
  const cases: [string, string, Operation, boolean, string][] = [
    [
      "generate-content",
      "gemini-2.5-flash",
      "generate",
      false,
      "google/models/gemini-2.5-flash:generateContent",
    ],
    [
      "generate-content",
      "gemini-2.5-flash",
      "generate",
      true,
      "google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    ],
    [
      "messages",
      "claude-sonnet-4-5@20250929",
      "generate",
      false,
      "anthropic/models/claude-sonnet-4-5@20250929:rawPredict",
    ],
    [
      "messages",
      "claude-sonnet-4-5@20250929",
      "generate",
      true,
      "anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict",
    ],
    [
      "messages",
      "claude-sonnet-4-5@20250929",
      "count_tokens",
      false,
      "anthropic/models/count-tokens:rawPredict",
    ],
  ];
  for (const [api, model, operation, stream, rest] of cases) {
    assert.equal(vertexPath(GCP, api, model, operation, stream), `${at}/${rest}`);
  }
  assert.equal(
    vertexPath(GCP, "generate-content", "gemini", "generate", true, ""),
    `${at}/google/models/gemini:streamGenerateContent`,
  );
  assert.throws(() => vertexPath(GCP, "chat", "gpt", "generate", false), /serves no chat models/);
});

Deno.test("vertex: the gcp block reads its service-account file; a bad block or file is reported at its field", async () => {
  const mock = await startMockVertex();
  await mock.close();
  const file = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(file, JSON.stringify(mock.serviceAccount));
    const ok = gcpSchema.parse({ ...GCP, credentials_file: file });
    assert.equal(ok.account.client_email, mock.serviceAccount.client_email);
    assert.equal(ok.account.token_uri, mock.serviceAccount.token_uri);
    const bad: [Record<string, unknown>, string, RegExp][] = [
      [{ location: "evil.example/x" }, "location", /expected a GCP location/],
      [{ project: "../p" }, "project", /expected a GCP project id/],
      [
        { credentials_file: `${file}.missing` },
        "credentials_file",
        /^cannot read the file \(NotFound\)$/,
      ],
      [{ credentials_file: import.meta.filename }, "credentials_file", /^the file is not JSON/],
    ];
    for (const [fields, path, message] of bad) {
      const result = gcpSchema.safeParse({ ...GCP, credentials_file: file, ...fields });
      assert.deepEqual(result.error?.issues.map((i) => i.path), [[path]]);
      assert.match(result.error!.issues[0].message, message);
    }
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("vertex: Claude bodies lose model and gain anthropic_version (counting keeps a model); Gemini's stay", () => {
  const body = { model: "claude-x", max_tokens: 5, stream: true, messages: [] };
  const call = (operation: Operation) => ({ operation, model: "claude-up" });
  const headers = new Headers({ "anthropic-version": "2023-06-01", "anthropic-beta": "b1" });
  assert.deepEqual(vertexBody("messages", body, headers, call("generate")), {
    max_tokens: 5,
    stream: true,
    messages: [],
    anthropic_version: "vertex-2023-10-16",
  });
  // The version header moved into the body; betas stay headers on Vertex.
  assert.deepEqual([...headers], [["anthropic-beta", "b1"]]);
  assert.deepEqual(vertexBody("messages", body, new Headers(), call("count_tokens")), {
    model: "claude-up",
    max_tokens: 5,
    stream: true,
    messages: [],
    anthropic_version: "vertex-2023-10-16",
  });
  // A later dated version (the 1.x SDKs' header) goes as is, as AnthropicVertex sends it.
  const dated = new Headers({ "anthropic-version": "2026-10-21" });
  assert.equal(
    vertexBody("messages", body, dated, call("generate")).anthropic_version,
    "2026-10-21",
  );
  const gemini = { contents: [] };
  assert.equal(vertexBody("generate-content", gemini, new Headers(), call("generate")), gemini);
});

Deno.test("vertex: a service-account file is read with its token_uri; a bad one names the field", () => {
  const file = {
    type: "service_account",
    client_email: "a@p.iam.gserviceaccount.com",
    private_key: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    private_key_id: "k1",
    token_uri: "http://127.0.0.1:9/token",
  };
  assert.equal(parseServiceAccount(JSON.stringify(file)).token_uri, file.token_uri);
  const { token_uri: _, ...noUri } = file;
  assert.equal(
    parseServiceAccount(JSON.stringify(noUri)).token_uri,
    "https://oauth2.googleapis.com/token",
  );
  const bad: [unknown, RegExp][] = [
    ["{", /is not JSON/],
    [[], /not a JSON object/],
    [{ ...file, type: "authorized_user" }, /^has a type other than "service_account"$/],
    [{ ...file, client_email: undefined }, /^has no client_email/],
    [{ ...file, private_key: "secret-material" }, /^has a private_key that is not a PEM PKCS#8/],
    [
      { ...file, token_uri: "file:///etc/passwd" },
      /^has a token_uri that is not an http\(s\) URL$/,
    ],
  ];
  for (const [json, message] of bad) {
    const text = typeof json === "string" ? json : JSON.stringify(json);
    assert.throws(() => parseServiceAccount(text), (e: Error) => {
      assert.ok(e instanceof ServiceAccountError);
      assert.match(e.message, message);
      assert.doesNotMatch(e.message, /secret-material|AAAA/);
      return true;
    });
  }
});

/** An outgoing request as the core hands it to a credential. */
const outgoing = (url: string, body = "") => ({
  method: "POST",
  url: new URL(url),
  headers: new Headers({ "content-type": "application/json" }),
  body,
});

Deno.test("vertex: the built paths and bodies, with a token minted at the file's token_uri, are answered by Vertex", async (t) => {
  const mock = await startMockVertex();
  const registered: string[] = [];
  const account = parseServiceAccount(JSON.stringify(mock.serviceAccount));
  const credential = new VertexCredential(account, (token) => registered.push(token));
  const call = async (
    api: string,
    model: string,
    op: Operation,
    stream: boolean,
    body: Record<string, unknown>,
  ) => {
    const path = vertexPath(GCP, api, model, op, stream);
    const adjusted = vertexBody(api, body, new Headers(), { operation: op, model });
    const req = outgoing(mock.url + path, JSON.stringify(adjusted));
    await credential.authorize(req);
    // Registered before it is ever sent.
    assert.equal(req.headers.get("authorization"), `Bearer ${registered.at(-1)}`);
    return fetch(req.url, req);
  };
  const claude = {
    model: "client-name",
    max_tokens: 50,
    messages: [{ role: "user", content: USER }],
  };
  const gemini = { contents: [{ role: "user", parts: [{ text: USER }] }] };
  try {
    await t.step("Gemini JSON and SSE", async () => {
      const res = await call("generate-content", "gemini-2.5-flash", "generate", false, gemini);
      const json = await res.json();
      assert.equal(
        json.candidates[0].content.parts[0].text,
        `Hello from generate-content mock: ${USER}`,
      );
      const sse = await call("generate-content", "gemini-2.5-flash", "generate", true, gemini);
      assert.match(sse.headers.get("content-type")!, /^text\/event-stream/);
      assert.match(await sse.text(), /^data: \{/);
    });
    await t.step("Claude JSON, stream and token count", async () => {
      const res = await call("messages", "claude-sonnet-4-5@20250929", "generate", false, claude);
      assert.equal((await res.json()).content[0].text, `Hello from messages mock: ${USER}`);
      const sse = await call("messages", "claude-sonnet-4-5", "generate", true, {
        ...claude,
        stream: true,
      });
      assert.match(await sse.text(), /event: message_stop/);
      const counted = await call("messages", "claude-sonnet-4-5", "count_tokens", false, claude);
      assert.ok((await counted.json()).input_tokens > 0);
    });
    await t.step("the client's Claude body unadjusted is refused", async () => {
      const path = vertexPath(GCP, "messages", "claude", "generate", false);
      const req = outgoing(mock.url + path, JSON.stringify(claude));
      await credential.authorize(req);
      const res = await fetch(req.url, req);
      assert.equal(res.status, 400);
      await res.body?.cancel();
    });
    await t.step(
      "a refused token is replaced once, however many calls saw it refused",
      async () => {
        const refused = outgoing(mock.url);
        await credential.authorize(refused);
        const calls = Array.from({ length: 10 }, () => outgoing(mock.url));
        for (const [i, req] of calls.entries()) {
          // Each call saw the old token refused; some get a new one before the others say so.
          credential.refused(refused);
          if (i % 2) await credential.authorize(req);
        }
        await Promise.all(calls.map((req) => credential.authorize(req)));
        const fresh = new Set(calls.map((req) => req.headers.get("authorization")));
        assert.equal(fresh.size, 1);
        assert.ok(!fresh.has(refused.headers.get("authorization")));
        assert.equal(mock.tokensIssued(), 2);
      },
    );
    assert.equal(mock.requests[0].path, "/token");
  } finally {
    await mock.close();
  }
});
