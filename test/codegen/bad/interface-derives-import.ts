// expect: 3:18 interface TypedServer would generate TypedServerBuilder, which is a name the generated module imports from @later/runtime; rename the interface
// interface: TypedServer
export interface TypedServer {
  restart: { host: string };
}
