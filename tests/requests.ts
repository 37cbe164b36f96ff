/**
 * What a test client sends: the client keys, each dialect's key headers and minimal request
 * bodies. A leaf (it imports nothing of the tests): the formats' test sides use it, and
 * tests/helpers.ts, which reads those sides, re-exports it.
 */

export const KEY = "sk-test-key-team-a";
/** A second client key, configured only by its SHA-256 digest. */
export const HASHED_KEY = "sk-test-key-team-b";
export const openaiHeaders = (key = KEY) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
});
export const anthropicHeaders = (key = KEY) => ({
  "x-api-key": key,
  "anthropic-version": "2023-06-01",
  "content-type": "application/json",
});
export const googleHeaders = (key = KEY) => ({
  "x-goog-api-key": key,
  "content-type": "application/json",
});
/** A Google client on Vertex AI: the key is its access token. */
export const vertexHeaders = (key = KEY) => ({
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
});
/** Where a Vertex client puts a model: `/v1/projects/{p}/locations/{l}/publishers/{publisher}/models/`. */
export const vertexModels = (publisher: string, location = "us-east5", version = "v1") =>
  `/${version}/projects/client-project/locations/${location}/publishers/${publisher}/models/`;

/** Minimal valid bodies per endpoint. */
export const bodies = {
  chat: (model: string, stream = false) => ({
    model,
    stream,
    messages: [{ role: "user", content: "hi there" }],
  }),
  responses: (model: string, stream = false) => ({ model, stream, input: "hi there" }),
  messages: (model: string, stream = false) => ({
    model,
    stream,
    max_tokens: 100,
    messages: [{ role: "user", content: "hi there" }],
  }),
  gemini: () => ({ contents: [{ role: "user", parts: [{ text: "hi there" }] }] }),
  /** Claude on Vertex: no model (the path names it), Vertex's anthropic_version. */
  vertexClaude: (_model: string, stream = false) => ({
    anthropic_version: "vertex-2023-10-16",
    stream,
    max_tokens: 100,
    messages: [{ role: "user", content: "hi there" }],
  }),
  /** A messages body whose history carries an Anthropic thinking signature (family-bound). */
  signedMessages: (model: string) => ({
    ...bodies.messages(model),
    messages: [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "A greeting.", signature: THINKING_SIGNATURE },
          { type: "text", text: "Hello." },
        ],
      },
      { role: "user", content: "and again" },
    ],
  }),
};

/** The Anthropic thinking signature in `bodies.signedMessages`. */
export const THINKING_SIGNATURE = "EqQBCkYIBxgCKkBsig";

/** The function tool a tool loop declares (the mock calls it with `{"city":"Paris"}`). */
export const LOOP_TOOL = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
