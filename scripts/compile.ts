/**
 * `deno task compile`: `deno compile` with the task's arguments. Compiling needs the Deno runtime
 * (`denort`) for the target, downloaded on first use; offline, Deno answers with a DNS backtrace.
 * This says it in one line and names the offline way, `deno task bundle`.
 */

const OFFLINE =
  "gateway: deno compile could not download the Deno runtime it builds on (offline?); " +
  "`deno task bundle` writes dist/gateway.js, one file that any Deno runs without a download " +
  "(docs/testing.md), or set DENORT_BIN to a denort binary of this Deno version";

/** Deno's own words when the runtime's download fails, whatever the network said. */
const DOWNLOAD_FAILED = /Setting up base binary|denort-[\w-]+\.zip/;

const run = await new Deno.Command(Deno.execPath(), {
  args: ["compile", ...Deno.args],
  stdin: "null",
  stdout: "inherit",
  stderr: "piped",
}).output();
const said = new TextDecoder().decode(run.stderr);
if (run.code !== 0 && DOWNLOAD_FAILED.test(said)) console.error(OFFLINE);
else await Deno.stderr.write(run.stderr);
Deno.exit(run.code);
