/** The golden conversions (tests/golden/, see golden_runner.ts) across the registered formats. */
import { TEST_FORMATS, UPSTREAM_FORMATS } from "./formats.ts";
import { goldenSuite } from "./golden_runner.ts";

goldenSuite(new URL("./golden/", import.meta.url), TEST_FORMATS, "golden", UPSTREAM_FORMATS);
