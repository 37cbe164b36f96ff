/**
 * Running the published coding CLIs (tests/clients/package.json) as subprocesses, aimed at a
 * gateway: each in a clean environment, its own process group and throwaway directories.
 */
import { KEY } from "../helpers.ts";

export const BIN = new URL("./node_modules/.bin/", import.meta.url).pathname;
/** Upper bound of one CLI run; the process group is killed when it expires. */
export const RUN_TIMEOUT_MS = 60_000;
/** The prompt of every run; the mock echoes the last user text in its reply. */
export const PROMPT = "say hi";

export function installed(): boolean {
  try {
    return ["claude", "gemini", "codex"].every((c) => Deno.statSync(BIN + c).isFile);
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Running a CLI
// ---------------------------------------------------------------------------------------------

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

/**
 * Runs `BIN/cli args` in its own process group with a clean environment (no inherited proxy or
 * API-key variables), stdin closed, and a throwaway HOME/TMPDIR/cwd; kills the whole group when
 * RUN_TIMEOUT_MS expires (and any stragglers when it exits).
 */
async function runCli(
  cli: string,
  args: string[],
  env: Record<string, string>,
  setup?: (home: string) => Promise<void>,
): Promise<RunResult> {
  const root = await Deno.makeTempDir({ prefix: `gw-${cli}-` });
  const home = `${root}/home`;
  const tmp = `${root}/tmp`;
  const work = `${root}/work`;
  for (const dir of [home, tmp, work]) await Deno.mkdir(dir);
  await setup?.(home);
  const started = Date.now();
  const child = new Deno.Command(BIN + cli, {
    args,
    cwd: work,
    clearEnv: true,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: home,
      TMPDIR: tmp,
      LANG: "C.UTF-8",
      TERM: "dumb",
      NO_COLOR: "1",
      CI: "1",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();
  const killGroup = () => {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch {
      // The group is already gone.
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, RUN_TIMEOUT_MS);
  try {
    const out = await child.output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return {
      code: out.code,
      stdout: decode(out.stdout),
      stderr: decode(out.stderr),
      ms: Date.now() - started,
      timedOut,
    };
  } finally {
    clearTimeout(timer);
    killGroup();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

/** `env`: Claude Code's own settings for the run (e.g. `CLAUDE_CODE_MAX_OUTPUT_TOKENS`). */
export function claude(
  url: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<RunResult> {
  return runCli("claude", ["-p", ...args], {
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: KEY,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    ...env,
  });
}

/**
 * Claude Code in Vertex AI mode, aimed at the gateway: Vertex's base URL (ending in `/v1`), no
 * Google auth (`CLAUDE_CODE_SKIP_VERTEX_AUTH`), the gateway key as its bearer token.
 */
export function claudeVertex(url: string, args: string[]): Promise<RunResult> {
  return runCli("claude", ["-p", ...args], {
    CLAUDE_CODE_USE_VERTEX: "1",
    CLAUDE_CODE_SKIP_VERTEX_AUTH: "1",
    ANTHROPIC_VERTEX_BASE_URL: `${url}/v1`,
    ANTHROPIC_VERTEX_PROJECT_ID: "client-project",
    CLOUD_ML_REGION: "us-east5",
    ANTHROPIC_AUTH_TOKEN: KEY,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
  });
}

const GEMINI_SETTINGS = {
  security: { auth: { selectedType: "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
};

export function gemini(url: string, args: string[]): Promise<RunResult> {
  return runCli(
    "gemini",
    args,
    {
      GOOGLE_GEMINI_BASE_URL: url,
      GEMINI_API_KEY: KEY,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
    },
    async (home) => {
      await Deno.mkdir(`${home}/.gemini`);
      await Deno.writeTextFile(
        `${home}/.gemini/settings.json`,
        JSON.stringify(GEMINI_SETTINGS),
      );
    },
  );
}

export function codex(url: string, args: string[]): Promise<RunResult> {
  return runCli("codex", [
    "exec",
    "--skip-git-repo-check",
    "--disable",
    "plugins",
    "--disable",
    "apps",
    "-c",
    "analytics.enabled=false",
    "-c",
    "check_for_update_on_startup=false",
    "-c",
    `openai_base_url="${url}/v1"`,
    ...args,
  ], { CODEX_API_KEY: KEY });
}
