// expect: 2:18 type JobsBuilder is imported by the generated module, where JobsBuilder is a name the generated module declares
export interface JobsBuilder { plan: string }
export interface Jobs {
  build: JobsBuilder;
}
