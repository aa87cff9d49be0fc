export { ManualClock } from "./manual-clock.js";
