// An esbuild app. esbuild leaves `new URL("...wasm", import.meta.url)` as it is, so the package's self-loading
// bundler entry would fetch a .wasm esbuild never emitted: the app takes the web builds, imports each .wasm by
// its path (esbuild's file loader emits it and gives its URL) and hands that URL to init.
import initMain, * as tinyPi from "tiny-pi/web";
import initLesson, { ScriptedModel } from "tiny-pi/lesson/web";
import mainWasm from "tiny-pi/web/tiny_pi_bg.wasm";
import lessonWasm from "tiny-pi/lesson/tiny_pi_lesson_bg.wasm";
import { readmeRoundTrip } from "../round-trip.mjs";
import { show } from "../show.mjs";

await Promise.all([initMain({ module_or_path: mainWasm }), initLesson({ module_or_path: lessonWasm })]);
show(readmeRoundTrip({ ...tinyPi, ScriptedModel }));
