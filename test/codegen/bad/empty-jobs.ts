// expect: 2:18 interface Jobs declares no jobs
export interface Jobs {}
