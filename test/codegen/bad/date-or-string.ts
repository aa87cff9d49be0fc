// expect: 3:3 field at of "remind" may hold a Date or a string
export interface Remind {
  at: Date | string;
}
export interface Jobs {
  remind: Remind;
}
