// A Node 20 CommonJS app: `require("tiny-pi")`.
const tinyPi = require("tiny-pi");

import("../round-trip.mjs")
  .then(({ readmeRoundTrip }) => readmeRoundTrip(tinyPi))
  .then((out) => console.log(JSON.stringify(out)));
