/**
 * The platforms under test, from the registry (plugins/platforms/mod.ts): each registered platform
 * with its test side, found by its id in tests/platforms/<id>.ts — the routes the platform
 * matrix (tests/platform_matrix_test.ts) sends every client format to, and how to start a gateway
 * in front of the platform's mock. Registering a platform with such a file is enough for it to
 * join the matrix.
 */
import { PLATFORMS } from "../plugins/platforms/mod.ts";
import type { Served } from "./platform_harness.ts";

/** A platform route: client models `<prefix>-…` go to it unrenamed (the name picks the scenario). */
export interface PlatformRoute {
  prefix: string;
  /** The mock vendor that answers (its text says `Hello from <vendor> mock`). */
  vendor: string;
  /** The upstream path a call of `model` goes to. */
  path(model: string, stream: boolean): string;
  /** The signature the mock puts on its reasoning; absent: the wire format carries none. */
  signature?(model: string): string;
}

/** What tests need of a platform: tests/platforms/<id>.ts exports it as `side`. */
export interface PlatformSide {
  routes: PlatformRoute[];
  /** A gateway in front of the platform's mock, with every route configured. */
  start(): Promise<Served>;
}

/** A registered platform with its test side. */
export interface TestPlatform extends PlatformSide {
  id: string;
}

/** Each registered platform with its side from tests/platforms/<id>.ts (missing: an error). */
export const TEST_PLATFORMS: readonly TestPlatform[] = await Promise.all(
  PLATFORMS.map(async ({ id }) => {
    const file = new URL(`./platforms/${id}.ts`, import.meta.url);
    let side: PlatformSide;
    try {
      ({ side } = await import(file.href));
    } catch (e) {
      throw new Error(`platform ${id}: no test side in ${file.pathname}`, { cause: e });
    }
    return { id, ...side };
  }),
);
