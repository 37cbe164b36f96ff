/**
 * Bad input gets a clear error, never a crash: every field of a rich request in each registered
 * client format (its test side's `client.rich`), replaced by each value of the wrong shape, sent
 * to each provider of the mock config. Every answer
 * must be a success or a 4xx in the client's dialect with a message — never a 5xx.
 */
import assert from "node:assert/strict";
import { CLIENTS, MOCK_PROVIDERS, post, startHarness } from "./helpers.ts";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const WRONG: Json[] = [null, 1, -1, "x", [], {}, true, [1], [{}], [null], { type: "x" }, [{
  type: "x",
}]];

/** Every (path, wrong value) pair inside a document. */
function* mutations(doc: Json, path: (string | number)[] = []): Generator<(string | number)[]> {
  if (doc === null || typeof doc !== "object") return;
  for (const [k, child] of Object.entries(doc)) {
    const at = [...path, Array.isArray(doc) ? Number(k) : k];
    yield at;
    yield* mutations(child, at);
  }
}

function replaced(doc: Json, path: (string | number)[], value: Json): Json {
  const copy = structuredClone(doc) as Record<string | number, Json>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, Json>;
  node[path.at(-1)!] = value;
  return copy;
}

/** The error message, wherever each dialect keeps it. */
const messageOf = (body: { error?: { message?: string } }) => body.error?.message;

Deno.test("malformed input: never a 5xx, always a message in the client's dialect", async () => {
  const h = await startHarness();
  let checked = 0;
  try {
    for (const c of CLIENTS) {
      assert.ok(c.rich, `${c.name}: no client.rich in tests/formats/${c.name}.ts`);
      for (const { prefix } of MOCK_PROVIDERS) {
        const model = `${prefix}-text`;
        // A format that names the model in its path has none in its body.
        const rich = c.rich as { [k: string]: Json };
        const base: Json = c.path(model, false).includes(model) ? rich : { model, ...rich };
        for (const path of mutations(base)) {
          if (path[0] === "model") continue;
          for (const value of WRONG) {
            const res = await post(
              h.url + c.path(model, false),
              c.headers,
              replaced(base, path, value),
            );
            const text = await res.text();
            const where = `${c.name} → ${prefix}: ${path.join(".")} = ${JSON.stringify(value)}`;
            assert.ok(res.status < 500, `${where}: ${res.status} ${text.slice(0, 300)}`);
            if (res.status >= 400) assert.ok(messageOf(JSON.parse(text)), `${where}: ${text}`);
            checked++;
          }
        }
      }
    }
  } finally {
    await h.close();
  }
  assert.ok(checked > 5000, `only ${checked} requests`);
});
