// A Node 20 ES-module app: `import ... from "tiny-pi"`, no flags, no init.
import * as tinyPi from "tiny-pi";
import { readmeRoundTrip } from "../round-trip.mjs";

console.log(JSON.stringify(await readmeRoundTrip(tinyPi)));
