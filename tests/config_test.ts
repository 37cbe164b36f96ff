import assert from "node:assert/strict";
import {
  applyListenEnv,
  checkFormats,
  ConfigError,
  defaultConfig,
  parseConfigText,
  stableDevKey,
} from "../src/config/config.ts";
import { FORMATS } from "./helpers.ts";
import { spawn } from "./process.ts";
import { createServiceAccount } from "./mock/service_account.ts";

const env = (vars: Record<string, string>) => (name: string) => vars[name];

const VALID = `
listen: {hostname: 127.0.0.1, port: 8080}
keys:
  - {name: team-a, key: \${TEAM_A_KEY}}
providers:
  - {name: openai, api: responses, base_url: https://api.openai.com/v1, api_key: \${OPENAI_API_KEY}}
  - {name: anthropic, api: messages, base_url: https://api.anthropic.com, api_key: x}
routes:
  - {models: ["gpt-*"], provider: openai, passthrough: true}
  - {models: ["claude-*"], provider: anthropic}
  - {models: ["local-*"], provider: anthropic, model: llama3}
`;

function configError(fn: () => unknown): string {
  let message = "";
  assert.throws(fn, (e: Error) => {
    assert(e instanceof ConfigError, `expected ConfigError, got ${e}`);
    message = e.message;
    return true;
  });
  return message;
}

Deno.test("config: ${ENV} substitution fills every string", () => {
  const cfg = parseConfigText(VALID, env({ TEAM_A_KEY: "sk-team-a-123", OPENAI_API_KEY: "sk-o" }));
  assert.deepEqual(cfg.keys[0], { name: "team-a", key: "sk-team-a-123" });
  assert.deepEqual(cfg.providers[0].api_key, "sk-o");
  assert.deepEqual(cfg.routes[2].model, "llama3");
  assert.deepEqual(cfg.providers[0].timeouts.idle_ms, 300_000, "timeouts default");
});

Deno.test("config: a missing environment variable is a startup error naming it", () => {
  const msg = configError(() => parseConfigText(VALID, env({ TEAM_A_KEY: "sk-team-a-123" })));
  assert.deepEqual(msg, "providers[0].api_key: environment variable OPENAI_API_KEY is not set");
});

Deno.test("config: errors name the path of each bad field", () => {
  const text = VALID.replace("provider: anthropic}", "provider: anth}")
    .replace("port: 8080", "port: eighty");
  const msg = configError(() =>
    parseConfigText(text, env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" }))
  );
  assert.match(msg, /routes\[1\]\.provider: unknown provider \(one of openai, anthropic\)/);
  assert.match(msg, /listen\.port: /);
});

Deno.test("config: long_decode defaults to auto, 32 hops; bad values name the field", () => {
  const vars = env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" });
  const set = (value: string) =>
    VALID.replace(
      '{models: ["claude-*"], provider: anthropic}',
      `{models: ["claude-*"], provider: anthropic, long_decode: ${value}}`,
    );
  assert.equal(parseConfigText(VALID, vars).routes[1].long_decode, undefined);
  assert.deepEqual(parseConfigText(set("{}"), vars).routes[1].long_decode, {
    mode: "auto",
    max_hops: 32,
  });
  assert.deepEqual(parseConfigText(set("{mode: off}"), vars).routes[1].long_decode, {
    mode: "off",
    max_hops: 32,
  });
  assert.match(
    configError(() => parseConfigText(set("{max_hops: 0}"), vars)),
    /routes\[1\]\.long_decode\.max_hops: /,
  );
  assert.match(
    configError(() => parseConfigText(set("{mode: always}"), vars)),
    /routes\[1\]\.long_decode\.mode: /,
  );
  assert.match(
    configError(() => parseConfigText(set("{hops: 3}"), vars)),
    /routes\[1\]\.long_decode\.hops: unknown field/,
  );
});

Deno.test("config: the format plugins judge apis, passthrough and upstream model names", () => {
  const base = env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" });
  const checked = (text: string) => () => checkFormats(parseConfigText(text, base), FORMATS);
  checked(VALID)();
  const passthrough = VALID.replace(
    '["claude-*"], provider: anthropic}',
    '["claude-*"], provider: anthropic, passthrough: true}',
  );
  assert.match(
    configError(checked(passthrough)),
    /routes\[1\]\.passthrough: allowed only on routes with an api: responses target \("anthropic" is api messages\)/,
  );
  assert.match(
    configError(checked(VALID.replace("api: messages", "api: mesages"))),
    /providers\[1\]\.api: unknown api \(one of chat, responses, messages, generate-content, interactions, converse, demo\)/,
  );
  // With the formats at parse time, an unknown api comes in the same report as the rest.
  const both = VALID.replace("api: messages", "api: mesages").replace("port: 8080", "port: x");
  const report = configError(() => parseConfigText(both, base, FORMATS));
  assert.match(report, /providers\[1\]\.api: unknown api \(one of /);
  assert.doesNotMatch(report, /mesages/);
  assert.match(report, /listen\.port: /);
  assert.doesNotMatch(report, /base_url/);
  const gemini = VALID.replace("api: messages", "api: generate-content")
    .replace("model: llama3", 'model: "m/../../x"');
  assert.match(configError(checked(gemini)), /routes\[2\]\.model: cannot be sent in a Gemini URL/);
});

Deno.test("config: unknown fields and bad YAML are rejected", () => {
  const base = env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" });
  assert.match(configError(() => parseConfigText(VALID + "extra: 1\n", base)), /extra/);
  assert.match(configError(() => parseConfigText("keys: [", base)), /not valid YAML/);
});

Deno.test("config: default config wires vendors from env and always the demo provider", () => {
  const cfg = defaultConfig(
    env({
      GATEWAY_API_KEYS: "sk-aaaaaaaa1, sk-bbbbbbbb2",
      ANTHROPIC_API_KEY: "ak",
      ANTHROPIC_BASE_URL: "http://127.0.0.1:9/",
    }),
    FORMATS,
  );
  assert.deepEqual(cfg.keys.length, 2);
  assert.deepEqual(cfg.providers.map((p) => p.name), ["anthropic", "demo"]);
  assert.deepEqual(cfg.providers[0].base_url, "http://127.0.0.1:9/");
  assert.deepEqual(cfg.routes.map((r) => r.models), [["claude-*"], ["demo-*"]]);
});

Deno.test("config: default config needs keys unless in dev mode, which supplies one", () => {
  const none = configError(() => defaultConfig(env({}), FORMATS));
  assert.match(none, /GATEWAY_API_KEYS/);
  // The form the README starts with, for a machine with only Node/npm.
  assert.match(none, /`deno task dev` \(`npx -y deno@2\.9\.6 task dev` without Deno installed\)/);
  const cfg = defaultConfig(env({}), FORMATS, { dev: true, devKey: "gw-dev-x" });
  assert.deepEqual(cfg.keys[0], { name: "key-1", key: "gw-dev-x" });
  let generated = "";
  const made = defaultConfig(env({}), FORMATS, {
    dev: true,
    onGeneratedKey: (k) => generated = k,
  });
  assert.match(generated, /^gw-dev-[0-9a-f]{32}$/);
  assert.deepEqual(made.keys[0], { name: "key-1", key: generated });
});

Deno.test("config: the dev key is created once and then reused", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const path = `${dir}/.gateway/dev-key`;
    const key = stableDevKey(path);
    assert.match(key, /^gw-dev-[0-9a-f]{32}$/);
    assert.equal(stableDevKey(path), key);
    assert.equal(Deno.readTextFileSync(path).trim(), key);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("config: PORT and HOST override listen", () => {
  const cfg = parseConfigText(VALID, env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" }));
  assert.deepEqual(applyListenEnv(cfg, env({ PORT: "9999", HOST: "0.0.0.0" })).listen, {
    hostname: "0.0.0.0",
    port: 9999,
  });
  assert.match(configError(() => applyListenEnv(cfg, env({ PORT: "x" }))), /PORT/);
});

Deno.test("config: main.ts stops at startup with the messages, exit code 2", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/bad.yaml`;
  await Deno.writeTextFile(path, VALID.replace("provider: anthropic}", "provider: anth}"));
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-env", "--allow-read", "--allow-net", "main.ts", "--config", path],
    env: { TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(dir, { recursive: true });
  assert.deepEqual(out.code, 2);
  assert.match(
    new TextDecoder().decode(out.stderr),
    /routes\[1\]\.provider: unknown provider \(one of openai, anthropic\)/,
  );
});

Deno.test("config: key files are read at load; every bad one is named by its field", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(
      `${dir}/clients`,
      "# rotating: old, then new\nsk-client-old\n\nsk-client-new\n",
    );
    await Deno.writeTextFile(`${dir}/provider`, "sk-provider-from-file\n");
    const text = (provider: string) => `
keys:
  - {name: team-a, key_file: ${dir}/clients}
providers:
  - {name: p, api: chat, base_url: "http://127.0.0.1:9", ${provider}}
routes:
  - {models: ["*"], provider: p}
`;
    const cfg = parseConfigText(text(`api_key_file: ${dir}/provider`), env({}));
    assert.deepEqual(cfg.keys, [
      { name: "team-a", key: "sk-client-old" },
      { name: "team-a", key: "sk-client-new" },
    ]);
    assert.equal(cfg.providers[0].api_key, "sk-provider-from-file");
    assert.ok(!("api_key_file" in cfg.providers[0]), "loaded: the key, not where it was");

    assert.match(
      configError(() => parseConfigText(text(`api_key_file: ${dir}/clients`), env({}))),
      /providers\[0\]\.api_key_file: the file holds 2 keys; a provider takes one/,
    );
    assert.match(
      configError(() =>
        parseConfigText(text(`api_key: sk-inline-key, api_key_file: ${dir}/provider`), env({}))
      ),
      /providers\[0\]\.api_key_file: give api_key or api_key_file, not both/,
    );
    await Deno.writeTextFile(`${dir}/clients`, "# nothing yet\n");
    const msg = configError(() => parseConfigText(text(`api_key_file: ${dir}/gone`), env({})));
    assert.match(msg, /keys\[0\]\.key_file: the file holds no key/);
    assert.match(msg, /providers\[0\]\.api_key_file: cannot read the file \(NotFound\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("config: a YAML error does not quote the document (it may hold a key)", () => {
  const msg = configError(() => parseConfigText("keys: [\n  {key: sk-secret-in-yaml: x}", env({})));
  assert.match(msg, /not valid YAML: .* at line \d+, column \d+$/);
  assert.doesNotMatch(msg, /sk-secret-in-yaml/);
});

Deno.test("config: YAML problems and schema errors name a kind and a place, never a value", () => {
  const secret = "sk-value-never-printed-0123";
  const cases: [string, RegExp][] = [
    // An unresolved tag (a warning to the parser) would use the text as the key: an error here.
    [`api_key: !secret ${secret}`, /not valid YAML: TAG_RESOLVE_FAILED at line 7, column \d+$/],
    // An unquoted `*…` is an alias; the parser's message quotes its name.
    [`api_key: *${secret}`, /not valid YAML: an alias names no anchor before it at line 7/],
    [`api_key: [${secret}]`, /providers\[1\]\.api_key: expected a string$/m],
    [`api_key: x, timeouts: {idle_ms: ${secret}}`, /providers\[1\]\.timeouts\.idle_ms: /],
  ];
  for (const [field, says] of cases) {
    const text = VALID.replace("api_key: x", field);
    const vars = env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" });
    const msg = configError(() => parseConfigText(text, vars));
    assert.match(msg, says);
    assert.ok(!msg.includes(secret) && !msg.includes("sk-value"), msg);
  }
});

Deno.test("config: a redis_url the Redis client could not read is an error naming the field", () => {
  const withUrl = (store: string, url: string) =>
    parseConfigText(
      `${VALID}${store}: {redis_url: "${url}"}\n`,
      env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" }),
    );
  for (const store of ["response_store", "limits_store"]) {
    for (const url of ["redis://:pa%ZZsecret@localhost:6379", "redis://localhost:6379/db-secret"]) {
      const msg = configError(() => withUrl(store, url));
      assert.match(msg, new RegExp(`${store}\\.redis_url: expected redis\\[s\\]://`));
      assert.ok(!msg.includes("secret"), msg);
    }
  }
  const good = "rediss://user:p%40ss@localhost:6380/2";
  assert.equal(withUrl("response_store", good).response_store.redis_url, good);
  assert.equal(withUrl("limits_store", good).limits_store.redis_url, good);
});

Deno.test("config: main.ts prints no value of a config it refuses (no parser warning either)", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/tagged.yaml`;
  const secret = "sk-tagged-value-0123456789";
  await Deno.writeTextFile(path, VALID.replace("api_key: x", `api_key: !secret ${secret}`));
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-env", "--allow-read", "--allow-net", "main.ts", "--config", path],
    env: { TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" },
    stdout: "piped",
    stderr: "piped",
    // A gateway that took the tagged text as its key would run on.
    signal: AbortSignal.timeout(10_000),
  }).output();
  await Deno.remove(dir, { recursive: true });
  const printed = new TextDecoder().decode(out.stderr) + new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 2, printed);
  assert.match(printed, /TAG_RESOLVE_FAILED at line 7/);
  assert.ok(!printed.includes(secret), printed);
});

Deno.test("config: relative *_file paths are read from the config file's folder, not the cwd", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/keys`);
    await Deno.writeTextFile(`${dir}/keys/clients`, "sk-client-from-file\n");
    await Deno.writeTextFile(`${dir}/provider`, "sk-provider-from-file\n");
    const text = `
keys: [{name: team-a, key_file: keys/clients}]
providers: [{name: p, api: chat, base_url: "http://127.0.0.1:9", api_key_file: ./provider}]
routes: [{models: ["*"], provider: p}]
`;
    const cfg = parseConfigText(text, env({}), FORMATS, dir);
    assert.deepEqual(cfg.keys, [{ name: "team-a", key: "sk-client-from-file" }]);
    assert.equal(cfg.providers[0].api_key, "sk-provider-from-file");
    // Without the folder (no config file: the built-in default has no files) the cwd is used.
    assert.match(configError(() => parseConfigText(text, env({}))), /cannot read the file/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("config: the README's configuration example starts as written, copied next to the files it names", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const section = readme.slice(readme.indexOf("## Configuration essentials"));
  const yaml = section.match(/```yaml\n([^]*?)```/)![1];
  assert.match(yaml, /credentials_file: sa\.json/, "the example names a file beside it");
  const dir = await Deno.makeTempDir();
  const elsewhere = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/gw`);
    await Deno.writeTextFile(`${dir}/gw/gateway.yaml`, yaml);
    const account = await createServiceAccount("http://127.0.0.1:9/token", "my-proj");
    await Deno.writeTextFile(`${dir}/gw/sa.json`, JSON.stringify(account.json));
    const root = new URL("..", import.meta.url).pathname;
    // Started from another folder, as a service manager would.
    const gateway = spawn(Deno.execPath(), [
      "run",
      `--config=${root}deno.json`,
      "--allow-net",
      "--allow-env",
      "--allow-read",
      `${root}main.ts`,
      "--config",
      `${dir}/gw/gateway.yaml`,
    ], {
      NO_COLOR: "1",
      PORT: "0",
      GATEWAY_ACCESS_LOG: "off",
      TEAM_A_KEY: "sk-team-a-key-0123",
      OPENAI_API_KEY: "sk-openai",
      ANTHROPIC_API_KEY: "sk-ant",
      GEMINI_API_KEY: "gemini-key",
    }, elsewhere);
    try {
      const [, port] = await gateway.wait(/gateway listening on http:\/\/[\d.]+:(\d+)/, "gateway");
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(res.status, 200);
      await res.body?.cancel();
    } finally {
      await gateway.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(elsewhere, { recursive: true });
  }
});

Deno.test("config: workers is a number or auto, from the file or GATEWAY_WORKERS", () => {
  const vars = { TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" };
  const cfg = parseConfigText(VALID, env(vars));
  assert.equal(cfg.workers, 1, "one by default");
  assert.equal(parseConfigText(`${VALID}workers: auto\n`, env(vars)).workers, "auto");
  assert.equal(applyListenEnv(cfg, env({ GATEWAY_WORKERS: "4" })).workers, 4);
  assert.equal(applyListenEnv(cfg, env({ GATEWAY_WORKERS: "auto" })).workers, "auto");
  for (const bad of ["0", "many", "1.5"]) {
    assert.match(
      configError(() => applyListenEnv(cfg, env({ GATEWAY_WORKERS: bad }))),
      /GATEWAY_WORKERS: expected a number or "auto"/,
    );
  }
  assert.match(
    configError(() => parseConfigText(`${VALID}workers: many\n`, env(vars))),
    /workers: expected a number of workers \(1 to 256\) or "auto"/,
  );
});

Deno.test("config: redis_cluster is a list of node URLs, not beside redis_url", () => {
  const vars = env({ TEAM_A_KEY: "k".repeat(9), OPENAI_API_KEY: "o" });
  const nodes = '["redis://10.0.0.1:6379", "rediss://:p%40ss@10.0.0.2:6379"]';
  for (const store of ["response_store", "limits_store"] as const) {
    const cfg = parseConfigText(`${VALID}${store}: {redis_cluster: ${nodes}}\n`, vars);
    assert.deepEqual(cfg[store].redis_cluster, JSON.parse(nodes));
    assert.match(
      configError(() =>
        parseConfigText(
          `${VALID}${store}: {redis_url: "redis://a:6379", redis_cluster: ${nodes}}\n`,
          vars,
        )
      ),
      new RegExp(`${store}\\.redis_cluster: give redis_url .* or redis_cluster .*, not both`),
    );
    const db = configError(() =>
      parseConfigText(`${VALID}${store}: {redis_cluster: ["redis://a:6379/3"]}\n`, vars)
    );
    assert.match(db, new RegExp(`${store}\\.redis_cluster\\[0\\]: a Redis Cluster has database 0`));
  }
});

Deno.test("config: prompt_cache on routes and providers; a bad value names its path", () => {
  const text = VALID.replace(
    "api: messages, base_url: https://api.anthropic.com, api_key: x}",
    "api: messages, base_url: https://api.anthropic.com, api_key: x, prompt_cache: client}",
  ).replace(
    '{models: ["claude-*"], provider: anthropic}',
    '{models: ["claude-*"], provider: anthropic, prompt_cache: off}',
  );
  const cfg = parseConfigText(text, env({ TEAM_A_KEY: "sk-team-a-123", OPENAI_API_KEY: "sk-o" }));
  assert.equal(cfg.providers[1].prompt_cache, "client");
  assert.equal(cfg.routes[1].prompt_cache, "off");
  assert.equal(cfg.routes[0].prompt_cache, undefined, "absent: the provider's, else auto");
  const bad = text.replace("prompt_cache: off", "prompt_cache: always");
  const message = configError(() =>
    parseConfigText(bad, env({ TEAM_A_KEY: "sk-team-a-123", OPENAI_API_KEY: "sk-o" }))
  );
  assert.match(message, /routes\[1\]\.prompt_cache: .*"auto".*"client".*"off"/);
});

Deno.test("config: configuration.md's providers[].api row names every api a provider may take", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/configuration.md", import.meta.url));
  const row = doc.split("\n").find((l) => l.startsWith("| `providers[].api` "))!;
  const named = [...row.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]);
  assert.deepEqual(FORMATS.ids.filter((id) => !named.includes(id)), []);
});
