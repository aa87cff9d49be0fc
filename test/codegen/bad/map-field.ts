// expect: 3:3 field counts of "tally" has type Map<string, number>, which does not survive JSON
export interface Tally {
  counts: Map<string, number>;
}
export interface Jobs {
  tally: Tally;
}
