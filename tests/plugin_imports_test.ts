/**
 * Plugins import only the contract (src/contract/) and the shared leaf utilities: what else a
 * handler needs of the core it asks through its context (`HandlerContext`). Files still typed
 * with the core's own request context are listed, each with why; the list only shrinks.
 */
import assert from "node:assert/strict";

/** Leaf modules of src/ that any plugin may use: they import nothing of the core's path. */
const SHARED = ["http.ts", "validate.ts", "signature.ts", "model_segment.ts", "limits/windows.ts"];

/**
 * Still on the core: the Responses WebSocket runs its own socket session on the core's request
 * context (auth, failover, the provider socket, stream stages), so its plugin and the registry
 * list are typed with it.
 */
const PENDING = [
  "mod.ts",
  "responses/plugin.ts",
  "responses/ws.ts",
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
  const pending = new Set<string>();
  for await (const file of files(root)) {
    const text = await Deno.readTextFile(new URL(file, root));
    for (const [, spec] of text.matchAll(/from "([^"]+)"/g)) {
      const path = new URL(spec, new URL(file, root)).pathname;
      if (!path.startsWith(src)) continue;
      const inSrc = path.slice(src.length);
      if (inSrc.startsWith("contract/") || SHARED.includes(inSrc)) continue;
      if (PENDING.includes(file)) pending.add(file);
      else offending.push(`plugins/${file} imports src/${inSrc}`);
    }
  }
  assert.deepEqual(offending, []);
  // A file that no longer needs the core leaves the list.
  assert.deepEqual([...pending].sort(), [...PENDING].sort());
});
