/**
 * Model lists: GET /v1/models answers in the shape of the credential sent (Bearer → OpenAI,
 * x-api-key → Anthropic); GET /v1beta/models is no list (the interface lists at /v1/models
 * only) but GET /v1beta/models/{id} answers one model in Gemini's shape; only concrete ids
 * (route names without `*` and the `catalog`), never a pattern.
 */
import assert from "node:assert/strict";
import { codexConfig as codexSettings } from "../plugins/responses/codex.ts";
import { type Config, validateConfig } from "../src/config/config.ts";
import { modelSettings } from "../src/request/router.ts";
import {
  anthropicHeaders,
  googleHeaders,
  type Harness,
  KEY,
  mockConfig,
  openaiHeaders,
  startHarness,
} from "./helpers.ts";

const withCatalog = () =>
  startHarness({
    extraRoutes: [{ models: ["claude-fixed"], provider: "anthropic", passthrough: false }],
    tweak: (c) => {
      // The demo provider lists its own models (tests/model_lists_test.ts): not these lists'.
      c.routes = c.routes.filter((r) => r.provider !== "demo");
      c.catalog = [
        {
          id: "msg-sonnet",
          display_name: "Sonnet (mock)",
          context_window: 200_000,
          max_output_tokens: 64_000,
        },
        { id: "gem-flash", context_window: 1_048_576, max_output_tokens: 65_536 },
      ];
    },
  });

const getJson = async (h: Harness, path: string, headers: Record<string, string>) => {
  const res = await fetch(h.url + path, { headers });
  return { status: res.status, body: await res.json() };
};

Deno.test("models: each dialect's list and model, concrete ids only", async (t) => {
  const h = await withCatalog();
  const ids = ["claude-fixed", "msg-sonnet", "gem-flash"];
  try {
    await t.step("Bearer → OpenAI list", async () => {
      const { status, body } = await getJson(h, "/v1/models", openaiHeaders());
      assert.equal(status, 200);
      assert.equal(body.object, "list");
      assert.deepEqual(body.data.map((m: { id: string }) => m.id), ids);
      assert.deepEqual(body.data[1], {
        id: "msg-sonnet",
        object: "model",
        created: 0,
        owned_by: "anthropic",
      });
    });
    await t.step(
      "x-api-key (Claude Code) → Anthropic list, with and without a version",
      async () => {
        // An Anthropic client may send an unrelated Bearer token too: its x-api-key counts.
        const both = { ...anthropicHeaders(), authorization: "Bearer some-other-token" };
        for (const headers of [anthropicHeaders(), { "x-api-key": KEY }, both]) {
          const { status, body } = await getJson(h, "/v1/models", headers);
          assert.equal(status, 200);
          assert.deepEqual(body.data.map((m: { id: string }) => m.id), ids);
          assert.equal(body.has_more, false);
          assert.equal(body.first_id, "claude-fixed");
          assert.equal(body.last_id, "gem-flash");
          const sonnet = body.data[1];
          assert.equal(sonnet.type, "model");
          assert.equal(sonnet.display_name, "Sonnet (mock)");
          assert.equal(typeof sonnet.created_at, "string");
          assert.equal(sonnet.max_input_tokens, 200_000);
        }
        const page = await getJson(
          h,
          "/v1/models?limit=1&after_id=claude-fixed",
          anthropicHeaders(),
        );
        assert.deepEqual(page.body.data.map((m: { id: string }) => m.id), ["msg-sonnet"]);
        assert.equal(page.body.has_more, true);
      },
    );
    await t.step(
      "GET /v1beta/models (a listing) → Google 404 pointing at GET /v1/models",
      async () => {
        for (const query of ["", "?pageSize=2"]) {
          const { status, body } = await getJson(h, `/v1beta/models${query}`, googleHeaders());
          assert.equal(status, 404);
          assert.deepEqual(body, {
            error: {
              code: 404,
              message: "GET /v1beta/models (listing models) is not supported; " +
                "list models with GET /v1/models",
              status: "NOT_FOUND",
            },
          });
        }
      },
    );
    await t.step("one model by id; unknown → 404 in each dialect", async () => {
      assert.equal(
        (await getJson(h, "/v1/models/msg-sonnet", openaiHeaders())).body.object,
        "model",
      );
      const a = await getJson(h, "/v1/models/msg-sonnet", { "x-api-key": KEY });
      assert.equal(a.body.type, "model");
      const g = await getJson(h, "/v1beta/models/gem-flash", googleHeaders());
      assert.equal(g.body.name, "models/gem-flash");
      const o404 = await getJson(h, "/v1/models/msg-*", openaiHeaders());
      assert.equal(o404.status, 404);
      assert.equal(o404.body.error.code, "model_not_found");
      const a404 = await getJson(h, "/v1/models/nope", { "x-api-key": KEY });
      assert.equal(a404.status, 404);
      assert.equal(a404.body.type, "error");
      assert.equal(a404.body.error.type, "not_found_error");
      const g404 = await getJson(h, "/v1beta/models/nope", googleHeaders());
      assert.equal(g404.status, 404);
      assert.equal(g404.body.error.status, "NOT_FOUND");
      const long = await getJson(h, `/v1/models/${"m".repeat(60_000)}`, openaiHeaders());
      assert.equal(long.status, 404);
      const message: string = long.body.error.message;
      assert.ok(message.length < 400, `an unknown id is quoted clipped (${message.length})`);
    });
    await t.step(
      "x-goog-api-key, where the /v1beta/models 404 sends Gemini clients → the list",
      async () => {
        for (const path of ["/v1/models", "/v1/models/gem-flash"]) {
          const { status, body } = await getJson(h, path, googleHeaders());
          assert.equal(status, 200, JSON.stringify(body));
        }
        const list = await getJson(h, "/v1/models", googleHeaders());
        assert.deepEqual(list.body.data.map((m: { id: string }) => m.id), ids);
        const wrong = await getJson(h, "/v1/models", { "x-goog-api-key": "gw-not-a-key-0123" });
        assert.equal(wrong.status, 401);
      },
    );
    await t.step("a Gemini model's supportedGenerationMethods: only actions served", async () => {
      const { body } = await getJson(h, "/v1beta/models/gem-flash", googleHeaders());
      const methods: string[] = body.supportedGenerationMethods;
      assert.deepEqual(methods, ["generateContent", "streamGenerateContent"]);
      for (const method of methods) {
        const res = await fetch(`${h.url}/v1beta/models/gem-flash:${method}?alt=sse`, {
          method: "POST",
          headers: { ...googleHeaders(), "content-type": "application/json" },
          body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
        });
        assert.equal(res.status, 200, `${method}: ${await res.text()}`);
      }
    });
    await t.step("no key → 401", async () => {
      const res = await fetch(h.url + "/v1/models");
      assert.equal(res.status, 401);
      await res.body?.cancel();
    });
  } finally {
    await h.close();
  }
});

Deno.test("models: a catalog id no route serves is a startup error", async () => {
  const config = await mockConfig("http://127.0.0.1:9");
  assert.throws(
    () => validateConfig({ ...config, catalog: [{ id: "llama-3" }, { id: "msg-ok" }] }),
    /catalog\[0\]\.id: no route serves this model/,
  );
  assert.throws(
    () => validateConfig({ ...config, catalog: [{ id: "msg-*" }] }),
    /catalog\[0\]\.id: a concrete model id/,
  );
});

/** Codex's settings as `main.ts --codex-config` resolves the model for them. */
function codexConfig(config: Config, model: string, baseUrl: string): string {
  return codexSettings(modelSettings(config, model), baseUrl);
}

Deno.test("models: Codex settings for a route carry the catalog's window", async () => {
  const config = await mockConfig("http://127.0.0.1:9");
  const withCatalog = validateConfig({
    ...config,
    catalog: [{ id: "msg-sonnet", context_window: 200_000 }],
  });
  const toml = codexConfig(withCatalog, "msg-sonnet", "https://llm.example.com/");
  assert.match(toml, /^model = "msg-sonnet"$/m);
  assert.match(toml, /^openai_base_url = "https:\/\/llm.example.com\/v1"$/m);
  assert.match(toml, /^model_context_window = 200000$/m);
  assert.match(toml, /^model_auto_compact_token_limit = 180000$/m);
  // Hosted web search is mapped on converted routes: Codex keeps it.
  assert.doesNotMatch(toml, /web_search/);
  const passthrough = codexConfig(withCatalog, "pt-x", "http://gw");
  assert.doesNotMatch(passthrough, /web_search|model_context_window =/);
  // Where it cannot run, Codex is told to leave it off, and why.
  assert.match(codexConfig(withCatalog, "chat-x", "http://gw"), /^web_search = "disabled" # chat/m);
  const rejecting = validateConfig({
    ...config,
    routes: [{ models: ["msg-*"], provider: "anthropic", hosted_tools: "reject" }],
  });
  assert.match(
    codexConfig(rejecting, "msg-x", "http://gw"),
    /^web_search = "disabled" # the route rejects hosted tools/m,
  );
  assert.throws(() => codexConfig(withCatalog, "nope", "http://gw"), /no route matches/);
});
