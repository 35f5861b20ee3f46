// A plain page with no bundler: the package's web build, loaded from the installed package
// (the test serves the app folder's parent, so /node_modules/tiny-pi/ is the npm-installed copy).
import init, * as tinyPi from "/node_modules/tiny-pi/web/tiny_pi.js";
import initLesson, * as lesson from "/node_modules/tiny-pi/lesson/tiny_pi_lesson.js";
import { readmeRoundTrip } from "../round-trip.mjs";
import { show } from "../show.mjs";

show(Promise.all([init(), initLesson()]).then(() => readmeRoundTrip({ ...tinyPi, ScriptedModel: lesson.ScriptedModel })));
