/**
 * Every leaf of the config schema (and of every platform's block) given a value of the wrong
 * type: the report names that field by its full path and what it takes, never the value. The
 * leaves are read from the schemas themselves, so a field added later is walked too.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { checkFormats, ConfigError, configSchema, validateConfig } from "../src/config/config.ts";
import { formatPath } from "../src/kit/validate.ts";
import { readCredentialFile } from "../src/kit/credential_file.ts";
import { PLATFORMS } from "../plugins/platforms/mod.ts";
import { FORMATS } from "./helpers.ts";

/** Never printed: every wrong value carries it. */
const MARK = "sk-never-printed-4815162342";

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
}

interface Leaf {
  path: (string | number)[];
  /** What the report says the field takes. */
  expects: RegExp;
  wrong: unknown;
}

const WORDS: Record<string, [RegExp, unknown]> = {
  number: [/^expected a number$/, MARK],
  integer: [/^expected a number$/, MARK],
  string: [/^expected a string$/, [MARK]],
  boolean: [/^expected true or false$/, MARK],
};

/** Every primitive leaf under `schema`: an array's first item, a mapping's key `name`. */
function leaves(schema: JsonSchema, path: (string | number)[] = []): Leaf[] {
  if (schema.anyOf) {
    // A union of primitives (retry.on's status or kind) is one leaf; of objects, each branch.
    if (schema.anyOf.every((s) => !s.properties)) {
      return [{ path, expects: /^expected .+/, wrong: { [MARK]: 1 } }];
    }
    return schema.anyOf.flatMap((s) => leaves(s, path));
  }
  if (schema.enum) return [{ path, expects: /^expected (one of )?"/, wrong: [MARK] }];
  if (schema.type === "array") return leaves(schema.items!, [...path, 0]);
  if (schema.type === "object") {
    if (schema.properties) {
      return Object.entries(schema.properties).flatMap(([k, s]) => leaves(s, [...path, k]));
    }
    const record = schema.additionalProperties;
    return typeof record === "object" && record.type ? leaves(record, [...path, "name"]) : [];
  }
  const words = WORDS[schema.type ?? ""];
  assert.ok(words, `a leaf of type ${schema.type} at ${formatPath(path)} is walked`);
  return [{ path, expects: words[0], wrong: words[1] }];
}

const inputSchema = (schema: z.ZodType) =>
  z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;

/** A copy of `doc` with `wrong` at `path`, the objects and lists on the way made as needed. */
function withValue(doc: unknown, path: (string | number)[], wrong: unknown): unknown {
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let at = copy;
  path.slice(0, -1).forEach((key, i) => {
    at[key] ??= typeof path[i + 1] === "number" ? [] : {};
    at = at[key] as Record<string | number, unknown>;
  });
  at[path.at(-1)!] = wrong;
  return copy;
}

/** The config report for `doc` (it must be refused), through the platforms' check too. */
function report(doc: unknown): string {
  try {
    checkFormats(validateConfig(doc, FORMATS), FORMATS);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.message;
  }
  assert.fail("accepted");
}

const BASE = {
  keys: [{ name: "team-a", key: "sk-client-key-1" }],
  providers: [{ name: "p", api: "chat", base_url: "http://127.0.0.1:9" }],
  routes: [{ models: ["*"], provider: "p" }],
};

function assertReported(doc: unknown, leaf: Leaf) {
  const text = report(withValue(doc, leaf.path, leaf.wrong));
  const field = formatPath(leaf.path);
  const line = text.split("\n").map((l) => l.trim()).find((l) => l.startsWith(`${field}: `));
  assert.ok(line, `${field} is named:\n${text}`);
  assert.match(line.slice(field.length + 2), leaf.expects, line);
  assert.ok(!text.includes("never-printed") && !text.includes("4815162342"), text);
}

Deno.test("config paths: a wrong type in any field of the schema is reported at its full path", () => {
  const walked = leaves(inputSchema(configSchema));
  assert.ok(walked.length > 60, `${walked.length} leaves`);
  const paths = walked.map((l) => formatPath(l.path));
  for (
    const expected of [
      "keys[0].limits.requests_per_minute",
      "consumers.by_name.name.limits.tokens_per_day",
      "routes[0].targets[0].weight",
      "routes[0].retry.on[0]",
      "providers[0].timeouts.idle_ms",
      "metrics.max_label_values",
    ]
  ) assert.ok(paths.includes(expected), `${expected} is walked`);
  for (const leaf of walked) assertReported(BASE, leaf);
});

Deno.test("config paths: a wrong type in any field of a platform's block is reported at its full path", () => {
  for (const platform of PLATFORMS.filter((p) => p.settings)) {
    const { key, schema } = platform.settings!;
    const provider = { name: "p", api: platform.apis[0], platform: platform.id };
    const doc = { ...BASE, providers: [provider] };
    const walked = leaves(inputSchema(schema));
    assert.ok(walked.length > 0, platform.id);
    for (const leaf of walked) {
      assertReported(doc, { ...leaf, path: ["providers", 0, key, ...leaf.path] });
    }
  }
});

Deno.test("config paths: the issue's own example, in words", () => {
  const doc = withValue(BASE, ["keys", 0, "limits", "requests_per_minute"], "lots");
  assert.match(report(doc), /^ {2}keys\[0\]\.limits\.requests_per_minute: expected a number$/m);
});

Deno.test("config paths: no message repeats a value — names, files and apis are said by their field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/short`, `${MARK.slice(0, 6)}\n`);
    const key = BASE.keys[0];
    const provider = BASE.providers[0];
    const cases: [Record<string, unknown>, string][] = [
      [
        { keys: [key, { ...key, key: MARK }] },
        "keys[1].name: a name another key has: a name is one client's identity",
      ],
      [
        { keys: [{ name: "b", key_file: `${dir}/short` }] },
        "keys[0].key_file: the file's key 1 is shorter than 8 characters",
      ],
      [
        { keys: [{ name: "c", key_file: `${dir}/${MARK}` }] },
        "keys[0].key_file: cannot read the file (NotFound)",
      ],
      [{ keys: [{ ...key, [MARK]: null }] }, "keys[0]: unknown field (its name is not shown)"],
      [
        { providers: [{ ...provider, api: MARK }] },
        "providers[0].api: unknown api (one of chat, responses, messages, generate-content, interactions, converse, demo)",
      ],
      [
        { providers: [provider, { ...provider, api_key: MARK }] },
        "providers[1].name: a name another provider has",
      ],
      [
        { providers: [{ ...provider, api_key_file: MARK }] },
        "providers[0].api_key_file: cannot read the file (NotFound)",
      ],
      [
        { providers: [{ ...provider, platform: MARK }] },
        "providers[0].platform: unknown platform (one of azure-openai, aws-bedrock, aws-anthropic, gcp-vertex)",
      ],
      [
        { routes: [{ models: ["*"], provider: MARK }] },
        "routes[0].provider: unknown provider (one of p)",
      ],
      [
        { routes: [{ models: ["gpt-*"], provider: "p" }], catalog: [{ id: MARK }] },
        "catalog[0].id: no route serves this model",
      ],
    ];
    for (const [change, line] of cases) {
      const text = report({ ...BASE, ...change });
      assert.deepEqual(text.split("\n").slice(1).map((l) => l.trim()), [line]);
      assert.ok(!text.includes("never-printed"), text);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("config paths: a credential file over 1 MiB is refused by its field and the bound, unread", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // A valid key a line, the secret mark in each: a file the config could otherwise use.
    const line = `${MARK}\n`;
    const big = `${dir}/big`;
    await Deno.writeTextFile(big, line.repeat(Math.ceil((1024 * 1024 + 1) / line.length)));
    const exact = `${dir}/exact`;
    await Deno.writeTextFile(exact, `${MARK}\n`.padEnd(1024 * 1024, "#"));
    const provider = BASE.providers[0];
    const vertex = { name: "p", api: "messages", platform: "gcp-vertex" };
    const azure = { name: "p", api: "chat", platform: "azure-openai", base_url: provider.base_url };
    const cases: [Record<string, unknown>, string][] = [
      [{ keys: [{ name: "a", key_file: big }] }, "keys[0].key_file"],
      [{ providers: [{ ...provider, api_key_file: big }] }, "providers[0].api_key_file"],
      [
        {
          providers: [{
            ...vertex,
            gcp: { project: "p", location: "us-east5", credentials_file: big },
          }],
        },
        "providers[0].gcp.credentials_file",
      ],
      [
        { providers: [{ ...azure, azure: { bearer_token_file: big } }] },
        "providers[0].azure.bearer_token_file",
      ],
    ];
    for (const [change, field] of cases) {
      const text = report({ ...BASE, ...change });
      assert.deepEqual(text.split("\n").slice(1).map((l) => l.trim()), [
        `${field}: the file is larger than 1048576 bytes (1 MiB), the limit for a credential file`,
      ]);
      assert.ok(!text.includes("never-printed") && !text.includes(dir), text);
    }
    // An endless file is refused at the bound, not read on.
    assert.throws(() => readCredentialFile("/dev/zero"), /larger than 1048576 bytes/);
    // A file of exactly 1 MiB is read.
    const ok = validateConfig({ ...BASE, keys: [{ name: "a", key_file: exact }] }, FORMATS);
    assert.equal(ok.keys.length, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
