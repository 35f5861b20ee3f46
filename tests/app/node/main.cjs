// A Node 20 CommonJS app: `require("tiny-pi")`, and `require("tiny-pi/lesson")` (an ES module without
// top-level await, which Node >= 20.19 requires).
const tinyPi = require("tiny-pi");
const lesson = require("tiny-pi/lesson");

import("../round-trip.mjs")
  .then(({ readmeRoundTrip }) => readmeRoundTrip({ ...tinyPi, ScriptedModel: lesson.ScriptedModel }))
  .then((out) => console.log(JSON.stringify(out)));
