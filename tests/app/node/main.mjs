// A Node 20 ES-module app: `import ... from "tiny-pi"` (and its ScriptedModel from "tiny-pi/lesson"), no
// flags, no init.
import * as tinyPi from "tiny-pi";
import * as lesson from "tiny-pi/lesson";
import { readmeRoundTrip } from "../round-trip.mjs";

console.log(JSON.stringify(await readmeRoundTrip({ ...tinyPi, ScriptedModel: lesson.ScriptedModel })));
