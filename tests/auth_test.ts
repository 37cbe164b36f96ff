/** Client keys: digests compared in full, matched keys remembered and compared the same way. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { KeyStore } from "../src/request/auth.ts";

const TEAM_A = "sk-test-key-team-a";
const TEAM_B = "sk-test-key-team-b-longer";

function store(): KeyStore {
  const digest = createHash("sha256").update(TEAM_B).digest("hex");
  return KeyStore.from({
    keys: [{ name: "team-a", key: TEAM_A }, { name: "team-b", sha256: digest }],
  });
}

/** Near misses of a key: a prefix, an extension, one character changed, another length. */
const nearMisses = (key: string) => [
  key.slice(0, -1),
  key + "x",
  key.slice(0, -1) + "X",
  "X" + key.slice(1),
  "",
  key.repeat(2),
];

Deno.test("KeyStore: each key matches its own name, the first time and once remembered", () => {
  const keys = store();
  for (let round = 0; round < 3; round++) {
    assert.equal(keys.match(TEAM_A), "team-a", `round ${round}`);
    assert.equal(keys.match(TEAM_B), "team-b", `round ${round}`);
  }
});

Deno.test("KeyStore: near misses of a remembered key are refused", () => {
  const keys = store();
  for (const miss of [...nearMisses(TEAM_A), ...nearMisses(TEAM_B)]) {
    assert.equal(keys.match(miss), undefined, `before: ${JSON.stringify(miss)}`);
  }
  keys.match(TEAM_A);
  keys.match(TEAM_B);
  for (const miss of [...nearMisses(TEAM_A), ...nearMisses(TEAM_B)]) {
    assert.equal(keys.match(miss), undefined, `remembered: ${JSON.stringify(miss)}`);
  }
  // A refused key is not remembered either: the valid ones still match after it.
  assert.equal(keys.match(TEAM_A), "team-a");
});
