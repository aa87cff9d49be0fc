// expect: 4:3 field render of "report" is a method
export interface Report {
  title: string;
  render(): string;
}
export interface Jobs {
  report: Report;
}
