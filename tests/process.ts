/** The gateway as a child process on loopback, its stdout and stderr read as they come. */

export interface GatewayProcess {
  url: string;
  process: Deno.ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  /** Waits until `count` stdout JSON lines (access or reload) match; returns every match. */
  lines(
    match: (line: Record<string, unknown>) => boolean,
    count?: number,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
  /** Waits for the process to exit; everything it wrote. */
  output(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** Starts `deno run <entry>` on a free port and waits for its listening line. */
export async function spawnGateway(
  entry: string,
  args: string[],
  env: Record<string, string>,
): Promise<GatewayProcess> {
  const process = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--unstable-no-legacy-abort",
      "--allow-net",
      "--allow-env",
      "--allow-read",
      entry,
      ...args,
    ],
    env: { ...env, PORT: "0" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const text = { stdout: "", stderr: "" };
  const changed = new EventTarget();
  const collect = async (name: keyof typeof text, stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text[name] += chunk;
      changed.dispatchEvent(new Event("data"));
    }
  };
  let ended = false;
  const exited = Promise.all([
    collect("stdout", process.stdout),
    collect("stderr", process.stderr),
  ]).then(() => {
    ended = true;
    changed.dispatchEvent(new Event("data"));
    return process.status;
  });
  /** Resolves with `find()`'s first value, tried again as output arrives. */
  const waitFor = <T>(find: () => T | undefined, what: string, timeoutMs: number) => {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    const fail = (why: string) => {
      finish();
      reject(new Error(`${why} ${what}\nstdout:\n${text.stdout}\nstderr:\n${text.stderr}`));
    };
    const check = () => {
      const found = find();
      if (found !== undefined) {
        finish();
        resolve(found);
      } else if (ended) fail("the gateway exited before");
    };
    const timer = setTimeout(() => fail("timed out waiting for"), timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      changed.removeEventListener("data", check);
    };
    changed.addEventListener("data", check);
    check();
    return promise;
  };
  const url = await waitFor(
    () => text.stderr.match(/listening on (http:\/\/[\d.]+:\d+)/)?.[1],
    "its listening line",
    20_000,
  );
  return {
    url,
    process,
    stdout: () => text.stdout,
    stderr: () => text.stderr,
    lines: (match, count = 1, timeoutMs = 10_000) =>
      waitFor(
        () => {
          // Whole lines only: the last may still be arriving.
          const found = text.stdout.split("\n").slice(0, -1).filter((l) => l.startsWith("{"))
            .map((l) => JSON.parse(l)).filter(match);
          return found.length >= count ? found : undefined;
        },
        `${count} matching log line(s)`,
        timeoutMs,
      ),
    async output() {
      const { code } = await exited;
      return { code, ...text };
    },
  };
}
