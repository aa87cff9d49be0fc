export { runGen, type GenOptions, type GenIo } from "./run-gen.js";
