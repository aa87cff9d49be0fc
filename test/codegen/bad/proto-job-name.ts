// expect: 4:3 job name "__proto__" cannot be used
export interface Jobs {
  ok: { n: number };
  __proto__: { n: number };
}
