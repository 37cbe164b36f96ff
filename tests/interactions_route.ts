/** A harness tweak adding a route to Gemini's own Interactions endpoint (the mock's), for `int-*`. */
import type { Config } from "../src/config/config.ts";

export const interactionsRoute = {
  tweak(config: Config) {
    const gemini = config.providers.find((p) => p.name === "gemini")!;
    config.providers.push({ ...gemini, name: "gemini-int", api: "interactions" });
    config.routes.unshift({ models: ["int-*"], provider: "gemini-int", passthrough: false });
  },
};
