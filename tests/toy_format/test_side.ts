/** What the shared test runners need of the toy format (it is not in the registry). */
import { testFormat } from "../formats.ts";
import { NDJSON } from "./ndjson.ts";
import { toyPlugin } from "./plugin.ts";

export const toyTestFormat = testFormat(toyPlugin, {
  providerBase: "",
  client: {
    path: () => "/toy/v1/generate",
    headers: (key) => ({ "x-toy-key": key, "content-type": "application/json" }),
    body: (model, stream) => ({ model, prompt: "hi there", stream }),
  },
  streams: { ext: ".ndjson", framing: NDJSON },
});
