// A Vite app imports the package by name; the bundler picks the package's browser build.
import * as tinyPi from "tiny-pi";
import { readmeRoundTrip } from "../round-trip.mjs";
import { show } from "../show.mjs";

show(readmeRoundTrip(tinyPi));
