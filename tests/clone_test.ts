/**
 * What a public clone gets: a repository that needs nothing beside it (the spec documents the
 * tests validate against live in tests/specs/), and a root lockfile that holds only the
 * gateway's runtime packages — Deno installs every package of the lock the entry point uses, so
 * a test SDK in it would be downloaded by the first `deno task start`.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** What a clone (or a downloaded archive) does not have: git data, installed and built output. */
const NOT_IN_A_CLONE = new Set([".git", "node_modules", "dist", ".gateway"]);

/** Copies the repository's files into `to`, without what a clone would not have. */
async function copyRepository(from: URL, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (NOT_IN_A_CLONE.has(entry.name)) continue;
    if (entry.isDirectory) {
      await copyRepository(new URL(`${entry.name}/`, from), `${to}/${entry.name}`);
    } else if (entry.isFile) await Deno.copyFile(new URL(entry.name, from), `${to}/${entry.name}`);
  }
}

Deno.test("clone: the spec-validation tests pass from a copy of the repository with nothing beside it", async () => {
  const outer = await Deno.makeTempDir();
  try {
    const clone = `${outer}/clone`;
    await copyRepository(ROOT, clone);
    assert.deepEqual([...Deno.readDirSync(outer)].map((e) => e.name), ["clone"]);
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "test",
        "--lock=tests/deno.lock",
        "--allow-net",
        "--allow-env",
        "--allow-read",
        "--allow-write",
        "--allow-run",
        "--allow-sys",
        "--sanitize-ops",
        "--sanitize-resources",
        "tests/responses_spec_test.ts",
      ],
      cwd: clone,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, `${stdout.slice(-3000)}\n${new TextDecoder().decode(out.stderr)}`);
    assert.match(stdout, /^ok \| [1-9]\d* passed .*\| 0 failed/m);
  } finally {
    await Deno.remove(outer, { recursive: true });
  }
});

/** `npm:name@version[/subpath]` → `npm:name@version`. */
const npmPackage = (specifier: string) => specifier.match(/^npm:(@[^/]+\/)?[^/]+/)![0];

Deno.test("clone: the root deno.lock holds only the import map's packages and their dependencies", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const lock = JSON.parse(await Deno.readTextFile(new URL("deno.lock", ROOT)));
  const imported = new Set(
    (Object.values(config.imports) as string[]).filter((s) => s.startsWith("npm:")).map(
      npmPackage,
    ),
  );
  const locked = Object.keys(lock.specifiers ?? {});
  assert.deepEqual(
    locked.filter((s) => !imported.has(s)),
    [],
    "deno.lock holds packages the gateway does not import (written by a run without " +
      "--lock=tests/deno.lock?); rebuild it: rm deno.lock && deno cache main.ts",
  );
  // Every package of the lock is reached from those specifiers (no leftover dependency trees).
  const packages: Record<string, { dependencies?: string[] }> = lock.npm ?? {};
  const byName = (dep: string) =>
    dep in packages ? dep : Object.keys(packages).find((k) => k.startsWith(`${dep}@`));
  const reached = new Set<string>();
  const visit = (key: string | undefined) => {
    if (!key || reached.has(key)) return;
    reached.add(key);
    for (const dep of packages[key]?.dependencies ?? []) visit(byName(dep));
  };
  for (const s of locked) visit(byName(`${s.slice(4, s.lastIndexOf("@"))}@${lock.specifiers[s]}`));
  assert.deepEqual(Object.keys(packages).filter((k) => !reached.has(k)), []);
  const testing = await Deno.readTextFile(new URL("docs/testing.md", ROOT));
  const said = testing.match(/— (\d+) packages, [\d.]+ MB on an empty\s+cache/)?.[1];
  assert.equal(Number(said), Object.keys(packages).length, "docs/testing.md's package count");
});
