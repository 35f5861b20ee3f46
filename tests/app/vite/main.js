// A Vite app imports the package by name; the bundler picks the package's browser build (and the lesson
// entry's, for its ScriptedModel).
import * as tinyPi from "tiny-pi";
import * as lesson from "tiny-pi/lesson";
import { readmeRoundTrip } from "../round-trip.mjs";
import { show } from "../show.mjs";

show(readmeRoundTrip({ ...tinyPi, ScriptedModel: lesson.ScriptedModel }));
