// expect: 4:3 field onDone of "notify" is a function
export interface Notify {
  to: string;
  onDone: () => void;
}
export interface Jobs {
  notify: Notify;
}
