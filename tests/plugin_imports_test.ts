/**
 * Plugins import only the contract (src/contract/) and the shared leaf utilities: what else a
 * handler needs of the core it asks through its context (`HandlerContext`), a WebSocket's
 * session included (`ctx.socket`).
 */
import assert from "node:assert/strict";

/** Leaf modules of src/ that any plugin may use: they import nothing of the core's path. */
const SHARED = [
  "http.ts",
  "validate.ts",
  "signature.ts",
  "model_segment.ts",
  "nesting.ts",
  "limits/windows.ts",
];

const root = new URL("../plugins/", import.meta.url);
const src = new URL("../src/", import.meta.url).pathname;

async function* files(dir: URL, prefix = ""): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) yield* files(new URL(`${e.name}/`, dir), `${prefix}${e.name}/`);
    else if (e.name.endsWith(".ts")) yield `${prefix}${e.name}`;
  }
}

Deno.test("plugins: imports of src/ are the contract's or shared leaf utilities", async () => {
  const offending: string[] = [];
  for await (const file of files(root)) {
    const text = await Deno.readTextFile(new URL(file, root));
    for (const [, spec] of text.matchAll(/from "([^"]+)"/g)) {
      const path = new URL(spec, new URL(file, root)).pathname;
      if (!path.startsWith(src)) continue;
      const inSrc = path.slice(src.length);
      if (inSrc.startsWith("contract/") || SHARED.includes(inSrc)) continue;
      offending.push(`plugins/${file} imports src/${inSrc}`);
    }
  }
  assert.deepEqual(offending, []);
});
