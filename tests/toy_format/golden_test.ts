/**
 * The toy format joins the golden matrix from its own folder: its cases (golden/) convert to
 * and from every registered format, in process and over HTTP, by the shared runners.
 */
import { TEST_FORMATS } from "../formats.ts";
import { goldenReplay } from "../golden_replay.ts";
import { goldenSuite } from "../golden_runner.ts";
import { toyTestFormat } from "./test_side.ts";

const ROOT = new URL("./golden/", import.meta.url);
const FORMATS = [...TEST_FORMATS, toyTestFormat];

goldenSuite(ROOT, FORMATS, "toy golden");
goldenReplay(ROOT, FORMATS, "toy golden");
