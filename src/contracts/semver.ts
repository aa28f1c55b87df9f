/**
 * The semver functions svc uses, each loaded from its own module: semver's index loads all of its
 * ~45 modules, ~10 ms of every process's start-up. Same functions, same answers.
 */
export { default as gt } from "semver/functions/gt.js";
export { default as lt } from "semver/functions/lt.js";
export { default as rcompare } from "semver/functions/rcompare.js";
export { default as satisfies } from "semver/functions/satisfies.js";
export { default as valid } from "semver/functions/valid.js";
export { default as validRange } from "semver/ranges/valid.js";
