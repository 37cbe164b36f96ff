/** The golden fixtures (tests/golden/) replayed over HTTP across the registered formats. */
import { TEST_FORMATS } from "./formats.ts";
import { goldenReplay } from "./golden_replay.ts";

goldenReplay(new URL("./golden/", import.meta.url), TEST_FORMATS);
