/**
 * The folders of src/ are its layers (docs/design.md#folders). A plugin imports only the plugin
 * kit (src/kit/): what else a handler needs of the core it asks through its context
 * (`HandlerContext`), a WebSocket's session included (`ctx.socket`). Each folder of src/ imports
 * only its own and those below it, and src/ never imports plugins/.
 */
import assert from "node:assert/strict";

/** src/'s folders from the ground up; "" is src/ itself (the composition root). */
const LAYERS = ["kit", "config", "ops", "state", "request", ""];

const repo = new URL("../", import.meta.url);

async function* files(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(new URL(dir, repo))) {
    if (e.isDirectory) yield* files(`${dir}${e.name}/`);
    else if (e.name.endsWith(".ts")) yield `${dir}${e.name}`;
  }
}

/** Every relative module a file imports, as a path from the repository's root. */
async function importsOf(file: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(file, repo));
  const out: string[] = [];
  for (const [, from, dynamic] of text.matchAll(/from "(\.[^"]+)"|import\(\s*"(\.[^"]+)"\s*\)/g)) {
    const url = new URL(from ?? dynamic, new URL(file, repo));
    out.push(url.pathname.slice(repo.pathname.length));
  }
  return out;
}

/** src/'s folder a path is in ("" for src/ itself), or undefined outside src/. */
function layerOf(path: string): string | undefined {
  if (!path.startsWith("src/")) return undefined;
  const rest = path.slice("src/".length);
  return rest.includes("/") ? rest.slice(0, rest.indexOf("/")) : "";
}

Deno.test("folders: plugins (and the toy format and platform) import nothing of src/ but the kit", async () => {
  const offending: string[] = [];
  for (const dir of ["plugins/", "tests/toy_format/", "tests/toy_platform/"]) {
    for await (const file of files(dir)) {
      for (const path of await importsOf(file)) {
        const layer = layerOf(path);
        if (layer !== undefined && layer !== "kit") offending.push(`${file} imports ${path}`);
      }
    }
  }
  assert.deepEqual(offending, []);
});

Deno.test("folders: each folder of src/ imports its own and those below it, never plugins/", async () => {
  const offending: string[] = [];
  for await (const file of files("src/")) {
    const own = LAYERS.indexOf(layerOf(file)!);
    assert.notEqual(own, -1, `${file}: a folder of src/ that LAYERS does not place`);
    for (const path of await importsOf(file)) {
      const layer = layerOf(path);
      if (layer === undefined || LAYERS.indexOf(layer) > own) {
        offending.push(`${file} imports ${path}`);
      }
    }
  }
  assert.deepEqual(offending, []);
});
