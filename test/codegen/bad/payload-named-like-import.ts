// expect: 2:13 type JobHandle is imported by the generated module, where JobHandle is a name the generated module imports from @later/runtime
export type JobHandle = { id: string };
export interface Jobs {
  handle: JobHandle;
}
